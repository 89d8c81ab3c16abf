"""The teaching pictures (rlalgos.workbook.diagrams, rlalgos.workbook.loss_weights): their labels,
no overlapping text, and token weights equal to the hand-computed ones."""

import importlib.util
import json
from itertools import combinations
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from rlalgos.workbook.diagrams import COURSE, course_map, dataflow, failure_chain, family_tree
from rlalgos.workbook.loss_weights import token_view, token_view_from_rollout, token_weights

ROOT = Path(__file__).resolve().parent.parent

# One group of three: two short answers (4 tokens + EOS) and one long one (9 + EOS), rewards 1, 0, 0.
LENGTHS = (5, 5, 10)
MASK = np.array([[1.0] * n + [0.0] * (10 - n) for n in LENGTHS])  # (3, 10)
ADV = np.array([1.0, -0.5, -0.5])
TOKENS = [list("#204") + ["<eos>"], list("#214") + ["<eos>"], list("12+34=46;") + ["<eos>"]]


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes on the canvas intersect (a few pixels of slack)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    drawn = [
        t
        for t in list(fig.texts) + [t for ax in fig.axes for t in ax.texts]
        if t.get_text().strip() and t.get_visible()
    ]
    boxes = [(t.get_text(), t.get_window_extent(renderer).expanded(1.0, 1.0).padded(-1.5)) for t in drawn]
    return [(a, b) for (a, ba), (b, bb) in combinations(boxes, 2) if ba.overlaps(bb)]


def test_failure_chain_draws_every_failure_and_every_cut():
    fig = failure_chain()
    assert len(fig.axes) == 1
    drawn = "\n".join(texts(fig))
    for label in (
        "entropy collapse",
        "zero-variance groups",
        "long answers diluted",
        "truncation",
        "noisy rewards",
        "clip-higher",
        "from ×1.2 to ×1.28",
        "2nd optimizer",
        "per rollout",
        "dynamic sampling",
        "token-level loss (token-mean)",
        "overlong penalty",
        "overlong filter",
        "KL off",
        "entropy monitor",
    ):
        assert label in drawn, label
    assert overlaps(fig) == []
    plt.close(fig)


def test_failure_chain_draws_on_a_given_axis():
    fig, ax = plt.subplots(figsize=(10, 5.5))
    assert failure_chain(ax) is fig and len(fig.axes) == 1
    plt.close(fig)


def test_family_tree_places_every_algorithm_and_cites_its_paper():
    """Every registered algorithm preset has its place in the picture, and every variant its arXiv id."""
    fig = family_tree()
    drawn = "\n".join(texts(fig))
    for label in (
        "REINFORCE",
        "PPO",
        "GRPO",
        "DAPO",
        "RLOO",
        "expert iteration (ei)",
        "Dr. GRPO",
        "GSPO",
        "dual-clip",
        "Clip-Cov",
        "KL-Cov",
        "CISPO",
        "SAPO",
        "TIS",
        "MIS",
    ):
        assert label in drawn, label
    for arxiv in (
        "1707.06347",
        "2402.03300",
        "2503.14476",
        "2402.14740",
        "2203.14465",
        "2304.06767",
        "2503.20783",
        "2507.18071",
        "1912.09729",
        "2505.22617",
        "2506.13585",
        "2511.20347",
    ):
        assert arxiv in drawn, arxiv
    assert overlaps(fig) == []
    plt.close(fig)


def test_dataflow_shows_the_models_of_each_algorithm():
    fig = dataflow()
    assert len(fig.axes) == 2
    ppo, grpo = ("\n".join(t.get_text() for t in ax.texts) for ax in fig.axes)
    for label in (
        "policy",
        "reference",
        "critic",
        "reward fn",
        "GAE",
        "value loss",
        "policy, reference, critic (3 models)",
    ):
        assert label in ppo, label
    for label in (
        "policy",
        "reference",
        "no critic",
        "replaced by the group",
        "group statistics",
        "k3 KL",
        "(2 models; no critic)",
    ):
        assert label in grpo, label
    assert "GAE" not in grpo
    assert overlaps(fig) == []
    plt.close(fig)


def test_token_weights_equal_the_hand_computed_values():
    B, N = 3, sum(LENGTHS)
    per_answer = token_weights(ADV, MASK, "seq-mean-token-mean")
    token_level = token_weights(ADV, MASK, "token-mean")
    for i, n in enumerate(LENGTHS):
        np.testing.assert_allclose(per_answer[i, :n], ADV[i] / (B * n))
        np.testing.assert_allclose(token_level[i, :n], ADV[i] / N)
    assert (per_answer[MASK == 0] == 0).all() and (token_level[MASK == 0] == 0).all()
    # per answer: every answer's total push is A_i / B whatever its length; token-level: A_i |y_i| / N
    np.testing.assert_allclose(per_answer.sum(1), ADV / B)
    np.testing.assert_allclose(token_level.sum(1), ADV * np.array(LENGTHS) / N)
    assert (np.sign(per_answer.sum(1)) == np.sign(ADV)).all()
    # the dilution: the long wrong answer's tokens weigh half the short wrong one's per-answer, the same token-level
    assert per_answer[2, 0] == pytest.approx(per_answer[1, 0] / 2) and token_level[2, 0] == pytest.approx(
        token_level[1, 0]
    )


def test_token_weights_take_per_token_advantages():
    adv = np.arange(30, dtype=float).reshape(3, 10) - 10  # (B, T), e.g. PPO's GAE advantages
    np.testing.assert_allclose(token_weights(adv, MASK, "token-mean"), adv * MASK / MASK.sum())


def test_token_view_draws_one_panel_and_colourbar_per_mode():
    fig = token_view(TOKENS, ADV, MASK, rewards=[1, 0, 0])
    assert len(fig.axes) == 4  # two panels, two colour bars
    drawn = texts(fig)
    assert "eos" in drawn and drawn.count("#") == 4
    assert any("r = 1, 5 tokens" in t for t in drawn) and any("r = 0, 10 tokens" in t for t in drawn)
    assert overlaps(fig) == []
    plt.close(fig)


def test_token_view_from_a_rollout_draws_the_first_group():
    from rlalgos.model import char_tokenizer

    tok = char_tokenizer()
    answers = ["#204", "#214", "12+34=46;", "#9"]
    ids = [tok.convert_tokens_to_ids(list(a) + ["<eos>"]) for a in answers]
    T = max(map(len, ids))
    ro = SimpleNamespace(
        completion_ids=torch.tensor([x + [tok.pad_token_id] * (T - len(x)) for x in ids]),
        completion_mask=torch.tensor([[1.0] * len(x) + [0.0] * (T - len(x)) for x in ids]),
        rewards=torch.tensor([1.0, 0.0, 0.0, 1.0]),
        group_size=2,
    )
    fig = token_view_from_rollout(ro, tok, modes=("token-mean",))
    assert len(fig.axes) == 2
    drawn = texts(fig)
    assert drawn.count("#") == 2 and "9" not in drawn  # rows 0 and 1 only
    plt.close(fig)


def test_make_figures_writes_the_pngs(tmp_path):
    spec = importlib.util.spec_from_file_location("make_figures", ROOT / "docs" / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.main(["--out", str(tmp_path)])
    maps = sorted(f"course_map/{nb}.png" for nb, *_ in COURSE)
    assert sorted(str(p.relative_to(tmp_path)) for p in written) == maps + [
        "dataflow.png",
        "failure_chain.png",
        "family_tree.png",
        "token_view.png",
    ]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
        committed = ROOT / "docs" / "figures" / p.relative_to(tmp_path)
        assert committed.exists(), f"{committed} is not committed: run python docs/make_figures.py"


def test_the_course_map_has_every_notebook_and_marks_one():
    """One box per notebook file, no overlapping text, "you are here" on the marked one only; every
    notebook opens with its own map."""
    stems = sorted(p.name.split("_")[0] for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
    assert sorted(nb for nb, *_ in COURSE) == stems
    fig = course_map("09b")
    assert "The course: you are here, at 09b (filled)" in texts(fig) and not overlaps(fig), overlaps(fig)
    plt.close(fig)
    assert not any("you are here" in t for t in texts(course_map()))
    with pytest.raises(ValueError, match="unknown notebook '14'"):
        course_map("14")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")):
        first = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
        nb = path.name.split("_")[0]
        assert f"](../docs/figures/course_map/{nb}.png)" in first, f"{path.name}: its first cell shows no course map"
    plt.close("all")
