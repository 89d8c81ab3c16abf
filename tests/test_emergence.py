"""The emergence experiments' parts (notebooks 12 and 13): the base models' recipe, the
strategy profile, the two takeover laws, and the claims' runs being the notebooks' runs."""

from __future__ import annotations

import math
import random
from dataclasses import asdict

import pandas as pd
import pytest

from rlalgos.workbook.configs import EmergenceConfig
from rlalgos.workbook import emergence as em


def test_wrong_trace_keeps_the_structure_and_gets_every_sum_wrong():
    rng = random.Random(0)
    row = {"prompt": "15+1+12+7=", "target": "15+1=16;16+12=28;28+7=35#35"}
    for _ in range(50):
        trace = em.wrong_trace(row, rng)
        steps, answer = trace.split("#")
        parts = steps.split(";")
        assert len(parts) == 3 and answer == parts[-1].split("=")[1]
        acc = 15
        for part, term in zip(parts, (1, 12, 7)):
            lhs, got = part.split("=")
            assert lhs == f"{acc}+{term}" and int(got) != acc + term  # the structure of the right trace, a wrong sum
            acc = int(got)


def test_signal_chance_and_the_two_laws():
    assert em.signal_chance(0.03, 0.5, 8) == pytest.approx(1 - (1 - 0.015) ** 8)
    assert em.batch_chance(0.01, 0.5, 8, 16) == pytest.approx(
        em.batch_chance(0.01, 0.5, 16, 8)
    )  # only G x prompts counts
    for law in (None, 16):
        rate = em.fit_rate(0.1, 0.5, 8, 7.0, law)
        assert em.predicted_takeover(0.1, 0.5, 8, rate, law) == pytest.approx(7.0, abs=0.01)
        steps = [em.predicted_takeover(p, 0.5, 8, rate, law) for p in (0.3, 0.1, 0.03, 0.01)]
        assert steps == sorted(steps)  # rarer starts take longer
    slow = em.predicted_takeover(0.003, 0.5, 8, em.fit_rate(0.1, 0.5, 8, 7.0))
    fast = em.predicted_takeover(0.003, 0.5, 8, em.fit_rate(0.1, 0.5, 8, 7.0, 16), 16)
    assert fast < slow  # the per-batch law forgives rarity; the per-group law does not
    assert math.isinf(em.predicted_takeover(1e-6, 0.5, 8, 0.1, max_steps=50))


def test_takeover_step_is_the_first_step_at_half():
    df = pd.DataFrame({"step": [0, 1, 2, 3, 4], "scratchpad_frac": [float("nan"), 0.2, 0.49, 0.5, 0.9]})
    assert em.takeover_step(df) == 3
    assert math.isinf(em.takeover_step(df.assign(scratchpad_frac=0.1)))


def test_a_rare_model_builds_bit_for_bit_and_its_profile_adds_up(tmp_path):
    cfg = EmergenceConfig(kind="rare", share=0.6, out_dir=str(tmp_path / "a"), progress=False)
    a = em.make_model(cfg, profile_prompts=8, profile_samples=2)
    assert a["share"] < 0.7 and a["shifted_share"] <= 0.6 and a["choice_steps"] >= 1
    assert a["predicted_accuracy"] == pytest.approx(
        a["share"] * a["competence"] + (1 - a["share"]) * a["direct_accuracy"], abs=1e-4
    )
    b = em.make_model(
        EmergenceConfig(**{**asdict(cfg), "out_dir": str(tmp_path / "b")}), profile_prompts=8, profile_samples=2
    )
    assert a["sha256"] == b["sha256"] == em.folder_sha256(tmp_path / "a")
    with pytest.raises(FileExistsError):  # never over a model without --overwrite
        em.make_model(cfg, profile_prompts=8, profile_samples=2)
    assert em.ensure_model(cfg)[1]["sha256"] == a["sha256"]  # the same settings: reused, not rebuilt


def test_the_command_line_refuses_bad_settings_in_one_line(tmp_path, capsys):
    from rlalgos.tools.cli import main

    out = tmp_path / "m"
    for args, words in [
        (["--share", "0.9"], "share must be in (0, 0.7)"),
        (["--kind", "rare", "--max-steps", "0"], "max_steps >= 1"),
    ]:
        assert main(["emergence-model", *args, "--out-dir", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists()


def test_the_claims_train_exactly_the_notebooks_runs(monkeypatch):
    """Every run an emergence claim trains is one that notebooks 12 and 13 (and benchmarks/emergence.py) train
    through emergence's run builders: the same folder, the same settings, the same base model (no model is built)."""
    from rlalgos.workbook import experiments as xp
    from rlalgos.workbook.claims import CLAIMS

    monkeypatch.setattr(
        em,
        "model_dir",
        lambda kind, share=None: None if kind == "default" else xp.model_cfg(kind, share, fast=False).folder(),
    )
    notebooks = em.curve_runs() + em.grid_runs() + em.limit_runs() + em.rung_runs("rare") + em.rung_runs("default")
    by_folder = {cfg.out_dir: (cfg, algo_cfg) for cfg, algo_cfg in notebooks}
    mine = [c for c in CLAIMS if c.prepare]
    assert mine, "the emergence claims are registered"
    ignored = ("out_dir", "overwrite", "progress")  # where, not what: the settings that change no number
    for claim in mine:
        for arm, _, cfg, algo_cfg in claim.train_configs(claim.seeds):
            assert cfg.out_dir in by_folder, (claim.id, arm, cfg.out_dir)
            want_cfg, want_algo = by_folder[cfg.out_dir]
            got = {k: v for k, v in asdict(cfg).items() if k not in ignored}
            assert got == {k: v for k, v in asdict(want_cfg).items() if k not in ignored}, (claim.id, arm)
            assert asdict(algo_cfg) == asdict(want_algo) and type(algo_cfg) is type(want_algo), (claim.id, arm)
