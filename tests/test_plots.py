"""The side-by-side plots: every group in the legend, flags not smoothed, binomial error bars, units."""

import json

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pytest

from rlalgos.workbook.plots import eval_sample_count, figure_colors, is_binary, plot_runs, run_facts, summary_table
from rlalgos.engine.runs import run_metrics


def fake_run(tmp_path, name, steps=10, with_kl_loss=False, eval_prompts=50, eval_samples=4):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(
        json.dumps({"train": {"algo": name, "eval_prompts": eval_prompts, "eval_samples": eval_samples}})
    )
    rows = [{"step": 0, "eval_accuracy": 0.4, "eval_greedy_accuracy": 0.6}]
    for s in range(1, steps + 1):
        row = {
            "step": s,
            "reward_mean": s / steps,
            "entropy": 0.2 - 0.01 * s,
            "kl": 0.001 * s,
            "entropy_monitor_fired": float(s % 3 == 0),
            "completion_len": 20.0,
        }
        if with_kl_loss:
            row["kl_loss"] = 0.002 * s
        rows.append(row)
    rows[-1].update(eval_accuracy=0.5, eval_greedy_accuracy=0.7)
    return run_metrics(rows, d)


def test_legend_collects_groups_from_every_panel(tmp_path):
    a, b = fake_run(tmp_path, "dapo"), fake_run(tmp_path, "grpo", with_kl_loss=True)
    fig = plot_runs({"dapo": [a], "grpo": [b]}, keys=["kl_loss", "entropy"])  # dapo has no kl_loss: absent from panel 1
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["grpo", "dapo"]


def test_flags_are_not_smoothed_and_units_are_labelled(tmp_path):
    df = fake_run(tmp_path, "dapo")
    assert is_binary(df["entropy_monitor_fired"]) and not is_binary(df["entropy"])
    fig = plot_runs([df], keys=["entropy_monitor_fired", "entropy"], smooth=5)
    flag_line, ent_line = fig.axes[0].lines[0], fig.axes[1].lines[0]
    assert set(flag_line.get_ydata()) == {0.0, 1.0}  # drawn as logged
    assert ent_line.get_ydata()[-1] == pytest.approx(
        np.mean([0.2 - 0.01 * s for s in range(6, 11)])
    )  # rolling mean of 5
    assert fig.axes[1].get_ylabel() == "nats / token"


def test_single_run_eval_accuracy_carries_binomial_error_bars(tmp_path):
    df = fake_run(tmp_path, "grpo", eval_prompts=50, eval_samples=4)
    assert eval_sample_count(df, "eval_accuracy") == 200 and eval_sample_count(df, "eval_greedy_accuracy") == 50
    assert eval_sample_count(df, "entropy") is None
    fig = plot_runs([df], keys=["eval_accuracy"])
    bars = fig.axes[0].collections[0].get_segments()  # the error bars, one per eval point
    assert len(bars) == 2
    half = (bars[1][1][1] - bars[1][0][1]) / 2
    assert half == pytest.approx(np.sqrt(0.5 * 0.5 / 200))


def test_log_axis_has_plain_number_ticks(tmp_path):
    fig = plot_runs([fake_run(tmp_path, "grpo")], keys=["kl"], log_keys=["kl"])
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert ax.yaxis.get_major_formatter()(0.001, 0) == "0.001"


def test_summary_table_means_over_seeds(tmp_path):
    table = summary_table({"grpo": [fake_run(tmp_path, "a"), fake_run(tmp_path, "b")]})
    assert table.loc["grpo", "seeds"] == 2 and table.loc["grpo", "eval_acc_end"] == pytest.approx(0.5)


def test_one_colour_per_label_in_every_figure(tmp_path):
    from rlalgos.workbook.plots import PALETTE, figure_colors, label_color

    runs = {name: [fake_run(tmp_path, name)] for name in ("clip_higher", "dapo", "grpo")}
    first = plot_runs(runs, keys=["entropy"])
    second = plot_runs(
        {"grpo": runs["grpo"], "clip_higher": runs["clip_higher"]}, keys=["entropy"]
    )  # other order, other company
    colour = lambda fig, label: next(ln.get_color() for ln in fig.axes[0].lines if ln.get_label() == label)  # noqa: E731
    for label in ("grpo", "clip_higher"):
        assert colour(first, label) == colour(second, label) == label_color(label)
    assert colour(first, "grpo") == PALETTE["grpo"] == PALETTE["vanilla"]  # vanilla GRPO is orange everywhere
    many = figure_colors([f"arm{i}" for i in range(20)] + list(PALETTE))
    assert len(set(many.values())) == len(many)  # two curves of one figure never share a colour
    from rlalgos.workbook.plots import _near

    mixed = figure_colors(["grpo", "vanilla_36_prompts", "dapo", "kl", "dynamic_sampling", "grpo_push"])
    for label, c in mixed.items():  # an arm's colour is never one hard to tell from another curve's
        others = [o for lab, o in mixed.items() if lab != label and (lab not in PALETTE or label not in PALETTE)]
        assert not any(_near(c, o) for o in others), (label, c, mixed)
    styles = {ln.get_linestyle() for ln in first.axes[0].lines}
    assert len(styles) == 3  # coinciding curves stay visible


def test_bands_of_shares_stay_in_0_1_and_the_caption_says_what_they_are(tmp_path):
    seeds = [fake_run(tmp_path, f"s{i}") for i in range(3)]
    for df, acc in zip(seeds, (0.0, 0.02, 1.0)):
        df.loc[df["step"] == 10, "eval_accuracy"] = acc
    fig = plot_runs({"grpo": seeds}, keys=["eval_accuracy"])
    ys = np.concatenate([p.vertices[:, 1] for p in fig.axes[0].collections[0].get_paths()])
    assert ys.min() >= 0 and ys.max() <= 1
    captions = [t.get_text() for t in fig.texts]
    assert any(
        "bars at dots): the seeds' range" in t and "dots where a metric has fewer than 5" in t for t in captions
    ), captions
    assert not any("smoothed" in t for t in captions), captions  # no train metric drawn, so no smoothing to name
    mixed = plot_runs({"grpo": seeds}, keys=["eval_accuracy", "reward_mean"])
    assert any("smoothed over 5 steps" in t.get_text() for t in mixed.texts)
    few = fig.axes[0].lines[0]
    assert few.get_linestyle() == "None" and few.get_marker() == "o"  # 2 evaluations: markers, not a line
    assert not any(isinstance(c, matplotlib.collections.PolyCollection) for c in fig.axes[0].collections)  # no band
    single = plot_runs([fake_run(tmp_path, "one")], keys=["eval_accuracy"])
    assert any("binomial standard error" in t.get_text() for t in single.texts)


def test_a_colour_assignment_can_be_shared_between_figures(tmp_path):
    runs = {"vanilla": [fake_run(tmp_path, "v")], "dynamic_only": [fake_run(tmp_path, "d")]}
    shared = figure_colors(["vanilla", "entropy_bonus", "dynamic_only"])  # one notebook's arms, one assignment
    fig = plot_runs(runs, keys=["reward_mean"], colors=shared)
    drawn = {ln.get_label().split(" (")[0]: matplotlib.colors.to_hex(ln.get_color()) for ln in fig.axes[0].lines}
    assert drawn == {"vanilla": shared["vanilla"], "dynamic_only": shared["dynamic_only"]}
    assert shared["dynamic_only"] != shared["entropy_bonus"]


def configured_run(tmp_path, name, seed, lr=1e-4, steps=10):
    d = tmp_path / f"{name}_s{seed}"
    d.mkdir()
    train = {
        "algo": name,
        "task": "addition",
        "steps": steps,
        "prompts_per_step": 16,
        "group_size": 8,
        "seed": seed,
        "eval_prompts": 50,
        "eval_samples": 4,
    }
    (d / "config.json").write_text(json.dumps({"train": train, "algo": {"lr": lr, "epochs": 1, "minibatches": 1}}))
    rows = [{"step": 0, "eval_accuracy": 0.4}] + [
        {"step": s, "reward_mean": 0.3 + 0.01 * s} for s in range(1, steps + 1)
    ]
    return run_metrics(rows, d)


def test_the_title_says_what_every_run_shares_and_leaves_out_what_differs(tmp_path):
    runs = {
        "grpo": [configured_run(tmp_path, "grpo", s) for s in (0, 1, 2)],
        "dapo": [configured_run(tmp_path, "dapo", s, lr=3e-4) for s in (0, 1, 2)],
    }
    assert run_facts(runs) == "addition, 10 steps of 16 prompts x 8 answers, seeds 0-2"  # lr differs: left out
    assert run_facts({"grpo": runs["grpo"][:1]}) == "addition, 10 steps of 16 prompts x 8 answers, lr 0.0001, seed 0"
    fig = plot_runs(runs, keys=["reward_mean"])
    assert fig._suptitle.get_text() == run_facts(runs)
    fig = plot_runs(runs, keys=["reward_mean"], title="the default task")
    assert fig._suptitle.get_text() == "the default task\n" + run_facts(runs)
    assert plot_runs(runs, keys=["reward_mean"], title=None)._suptitle is None


def test_a_share_whose_axis_skips_zero_says_it_is_zoomed(tmp_path):
    runs = {"grpo": [configured_run(tmp_path, "grpo", 0)]}
    fig = plot_runs(runs, keys=["reward_mean", "eval_accuracy"], caption=False)
    assert fig.axes[0].get_title().endswith("(y zoomed)")  # reward 0.31..0.40
    caption = plot_runs(runs, keys=["reward_mean"]).texts[-1].get_text()
    assert "error bars" not in caption  # no eval accuracy panel, no error bars to explain


def test_counts_start_at_zero_and_a_zoomed_entropy_says_so(tmp_path):
    runs = {"grpo": [fake_run(tmp_path, f"s{i}") for i in range(2)]}
    fig = plot_runs(runs, keys=["completion_len", "entropy", "kl"], caption=False)
    length, entropy, kl = fig.axes[:3]
    assert length.get_ylim()[0] == 0 and not length.get_title().endswith("(y zoomed)")
    assert entropy.get_title().endswith("(y zoomed)")  # entropy 0.10..0.19: the axis skips 0
    assert not kl.get_title().endswith("(y zoomed)")  # KL from 0.001: matplotlib's margin reaches below 0


def test_a_small_rate_whose_axis_skips_zero_says_it_is_zoomed(tmp_path):
    df = fake_run(tmp_path, "grpo")
    df["clip_frac"] = 0.01 + 0.001 * df["step"]  # 0.011..0.020: under 0.02, yet most of the way to 0 is cut
    fig = plot_runs({"grpo": [df]}, keys=["clip_frac"], caption=False)
    assert fig.axes[0].get_title().endswith("(y zoomed)")
