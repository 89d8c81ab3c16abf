"""The exploration regime's parts: the trap task, metrics split by level, the entropy
probe, the trap model's recipe, and pass@k from many samples."""

import json
import math

import pandas as pd
import pytest
import torch

from rlalgos import core
from rlalgos.config import TrainConfig, make_config
from rlalgos.workbook.configs import TrapConfig
from rlalgos.tasks import breakdown_metrics, get_task
from rlalgos.train import train


def test_trap_task_has_both_levels_and_unseen_hard_test_prompts():
    t = get_task("trap")
    levels = pd.Series([r["level"] for r in t.train]).value_counts(normalize=True)
    assert 0.45 < levels["easy"] < 0.55 and 0.45 < levels["hard"] < 0.55
    easy = [r for r in t.train if r["level"] == "easy"]
    assert all(r["n_terms"] == 2 and max(map(int, r["prompt"][:-1].split("+"))) <= 9 for r in easy)
    hard_train = {r["prompt"] for r in t.train if r["level"] == "hard"}
    hard_test = [r for r in t.test if r["level"] == "hard"]
    assert hard_test and not hard_train & {r["prompt"] for r in hard_test}
    assert all(r["n_terms"] in (3, 4) for r in hard_test)
    assert t.breakdown == "level"


def test_breakdown_metrics_are_sums_per_level():
    t = get_task("trap")
    rows = [{"level": "easy"}, {"level": "hard"}, {"level": "hard"}]
    got = breakdown_metrics(t, rows, ["#9", "1+2=3;3+4=7#7", "#7"], [1.0, 1.0, 0.0])
    assert got["accuracy/easy"] == (1.0, 1.0) and got["accuracy/hard"] == (1.0, 2.0)
    assert got["scratchpad_frac/hard"] == (1.0, 2.0) and got["scratchpad_frac/easy"] == (0.0, 1.0)
    assert breakdown_metrics(get_task("addition"), rows, ["#1"] * 3, [0.0] * 3) == {}


@pytest.mark.parametrize("minibatches", [1, 2])
def test_entropy_probe_logs_the_mechanism_and_the_level_split(tmp_path, minibatches):
    """The probe's 'before' entropy is the sampling policy's, the same number the step logs
    as ``entropy``; the change is measured after the update, on the same states."""
    cfg = TrainConfig(
        algo="grpo",
        task="trap",
        steps=2,
        prompts_per_step=4,
        group_size=4,
        eval_every=0,
        eval_prompts=8,
        eval_samples=2,
        out_dir=str(tmp_path / "run"),
        progress=False,
        entropy_probe=True,
    )
    df = train(cfg, make_config("grpo", kl_coef=0.0, minibatches=minibatches))
    steps = df[df["step"] > 0]
    for key in ("entropy_cov", "entropy_before", "entropy_after", "entropy_change"):
        assert steps[key].map(math.isfinite).all(), key
    assert steps["entropy_before"].tolist() == pytest.approx(steps["entropy"].tolist(), rel=1e-5)
    assert steps["entropy_change"].tolist() == pytest.approx(
        (steps["entropy_after"] - steps["entropy_before"]).tolist(), abs=1e-6
    )
    assert (steps["entropy_change"] != 0).all()  # the update moved the policy
    last = df.iloc[-1]
    assert {"eval_accuracy/easy", "eval_accuracy/hard", "eval_scratchpad_frac/hard"} <= set(df.columns)
    assert 0 <= last["eval_accuracy/hard"] <= 1
    assert any(c.startswith("accuracy/") for c in df.columns)


def test_entropy_probe_off_changes_nothing(tmp_path):
    """Same seed, same numbers with and without the probe (it only reads the policy)."""
    runs = []
    for probe in (False, True):
        cfg = TrainConfig(
            algo="grpo",
            steps=2,
            prompts_per_step=4,
            group_size=4,
            eval_every=0,
            eval_prompts=4,
            eval_samples=2,
            out_dir=str(tmp_path / f"p{probe}"),
            progress=False,
            entropy_probe=probe,
        )
        runs.append(train(cfg, make_config("grpo", minibatches=2)))
    a, b = (r[r["step"] > 0] for r in runs)
    for key in ("reward_mean", "entropy", "kl", "pg_loss", "grad_norm", "eval_accuracy"):
        assert a[key].fillna(-1).tolist() == b[key].fillna(-1).tolist(), key


def test_covariance_sign_predicts_a_plain_gradient_step():
    """Cui et al.'s first-order law on a softmax bandit: one small natural step on the logits,
    ``z += lr * A``, changes the entropy by about ``-lr * Cov_pi(log pi, A)``."""
    torch.manual_seed(0)
    z = torch.randn(50)
    A = torch.randn(50)
    p = torch.softmax(z, 0)
    logp = torch.log_softmax(z, 0)
    cov = (p * (logp - (p * logp).sum()) * (A - (p * A).sum())).sum()
    H = lambda logits: -(torch.softmax(logits, 0) * torch.log_softmax(logits, 0)).sum()  # noqa: E731
    lr = 1e-3
    dH = H(z + lr * A) - H(z)
    assert dH.item() == pytest.approx(-lr * cov.item(), rel=0.02)
    # and the batch estimator in core, on tokens sampled from pi, has the same sign
    idx = torch.multinomial(p, 20000, replacement=True)
    est = core.masked_mean(
        core.token_covariance(logp[idx][None], A[idx][None], torch.ones(1, 20000)), torch.ones(1, 20000)
    )
    assert est.item() == pytest.approx(cov.item(), rel=0.1)


def test_trap_finetune_writes_a_loadable_model_and_refuses_to_overwrite(tmp_path):
    from rlalgos.model import load_policy
    from rlalgos.workbook.sft import trap_finetune

    out = tmp_path / "trap"
    report = trap_finetune(TrapConfig(steps=2, out_dir=str(out), progress=False))
    assert json.loads((out / "trap_report.json").read_text())["config"]["steps"] == 2 and report["final_loss"] > 0
    load_policy(out, device="cpu")
    with pytest.raises(Exception, match="overwrite"):
        trap_finetune(TrapConfig(steps=1, out_dir=str(out), progress=False))


def test_pass_at_k_curve_from_samples():
    from rlalgos.workbook.exploration import pass_at_k_curve, per_prompt

    # prompt 0: 2 of 4 right (one answer); prompt 1: none right, two different wrong answers
    s = pd.DataFrame(
        {
            "prompt": [0, 0, 0, 0, 1, 1, 1, 1],
            "correct": [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            "scratchpad": [True, False, True, False] + [False] * 4,
            "answer": ["7", "8", "7", "9", "1", "2", "1", "1"],
        }
    )
    p = per_prompt(s, ks=(1, 2, 4))
    assert (
        p["pass@1"].tolist() == [0.5, 0.0]
        and p["pass@2"].tolist() == pytest.approx([1 - 1 / 6, 0.0])
        and p["pass@4"].tolist() == [1.0, 0.0]
    )
    assert (
        p["distinct_right"].tolist() == [1, 0]
        and p["distinct"].tolist() == [3, 2]
        and p["scratchpad"].tolist() == [0.5, 0.0]
    )
    curve = pass_at_k_curve(p, ks=(1, 4))
    assert curve["pass"].tolist() == [0.25, 0.5] and curve["se"].tolist() == pytest.approx([0.25, 0.5])


def test_sample_many_counts_answers_per_prompt(base):
    from rlalgos.workbook.exploration import sample_many

    policy, tok = base
    t = get_task("trap")
    s = sample_many(policy, tok, t, t.test[:3], n=8, seed=0)
    assert len(s) == 24 and s.groupby("prompt").size().tolist() == [8, 8, 8] and set(s["level"]) <= {"easy", "hard"}
    assert s.equals(sample_many(policy, tok, t, t.test[:3], n=8, seed=0))  # its own RNG


def test_run_or_reuse_trains_once_and_knows_a_changed_setting(tmp_path):
    from dataclasses import replace

    from rlalgos.workbook.exploration import finished, run_or_reuse

    cfg = TrainConfig(
        algo="grpo",
        steps=1,
        prompts_per_step=2,
        group_size=2,
        eval_every=0,
        eval_prompts=2,
        eval_samples=2,
        out_dir=str(tmp_path / "r"),
        progress=False,
        overwrite=True,
    )
    algo = make_config("grpo")
    assert not finished(cfg, algo)
    run_or_reuse([(cfg, algo)], jobs=1, progress=False)
    stamp = (tmp_path / "r" / "metrics.jsonl").stat().st_mtime_ns
    assert finished(cfg, algo) and finished(replace(cfg, progress=True, out_dir=str(tmp_path / "r")), algo)
    assert not finished(replace(cfg, steps=2), algo) and not finished(cfg, make_config("grpo", lr=3e-4))
    run_or_reuse([(cfg, algo)], jobs=1, progress=False)
    assert (tmp_path / "r" / "metrics.jsonl").stat().st_mtime_ns == stamp  # reused, not retrained


def test_start_effect_pairs_each_run_with_its_own_step_0():
    """A run's end against its own first evaluation (the base model), paired by seed."""
    from rlalgos.workbook.exploration import start_effect

    def run(start, end):
        df = pd.DataFrame({"step": [0, 5, 10], "eval_accuracy": [start, float("nan"), end]})
        return df  # no run folder: its seed is its place in the list

    runs = [run(0.4, 0.2), run(0.45, 0.2), run(0.35, 0.2)]
    e = start_effect(runs, "eval_accuracy")
    assert e["seeds"] == 3 and e["base_mean"] == pytest.approx(0.4) and e["arm_mean"] == pytest.approx(0.2)
    assert e["diff"] == pytest.approx(-0.2) and e["ci_high"] < 0 and e["verdict"] == "shown"
