"""The logged KL measured on a subsample of answers (``TrainConfig.kl_sample_rows``).

What must hold: the estimate's stated standard error is the real spread of the
estimator; the training run itself is unchanged (only ``kl``, ``kl_stderr`` and
``kl_exact``, measured on the same rows, differ); a KL the algorithm trains on is never subsampled; the reference pass
runs on the subsample only.
"""

import math

import pandas as pd
import pytest
import torch

from rlalgos.engine import diagnostics
from rlalgos.algorithms import make_config
from rlalgos.engine.forward import batched_logprobs
from rlalgos.model import frozen_copy
from rlalgos.rollout import rollout
from rlalgos.engine.sampler import SamplingConfig
from rlalgos.train import TrainConfig, train


def test_subsample_rows_spread_over_groups():
    idx = diagnostics.subsample_rows(128, 32)
    assert idx.tolist() == sorted(set(idx.tolist())) and len(idx) == 32 and idx[0] == 0 and idx[-1] == 127
    assert set((idx // 8).tolist()) == set(range(16))  # every group of 8 is measured
    assert diagnostics.subsample_rows(128, 0).tolist() == list(range(128))  # 0 = all
    assert diagnostics.subsample_rows(10, 50).tolist() == list(range(10))


def test_ratio_estimate_stderr_is_the_estimators_spread():
    """Over many random subsamples of a fixed population of answers, the estimates
    spread by the standard error the formula states, and centre on the exact value."""
    g = torch.Generator().manual_seed(0)
    N, m = 128, 32
    n = torch.randint(3, 48, (N,), generator=g).double()  # tokens per answer
    y = (
        n * torch.rand(N, generator=g).double() * 0.05 + torch.rand(N, generator=g).double() ** 4
    )  # summed KL per answer, skewed
    exact = (y.sum() / n.sum()).item()
    est, ses = [], []
    for _ in range(4000):
        s = torch.randperm(N, generator=g)[:m]
        ys, ns = y[s], n[s]
        R, se = diagnostics.ratio_estimate(
            ys.sum().item(),
            ns.sum().item(),
            (ys * ys).sum().item(),
            (ys * ns).sum().item(),
            (ns * ns).sum().item(),
            m,
            N,
        )
        est.append(R)
        ses.append(se)
    est, ses = torch.tensor(est), torch.tensor(ses)
    assert abs(est.mean().item() - exact) < 0.05 * est.std().item() + 0.02 * exact  # (nearly) unbiased
    assert est.std().item() == pytest.approx(ses.mean().item(), rel=0.1)  # the stated noise is the real noise
    coverage = ((est - exact).abs() <= 1.96 * ses).double().mean().item()
    assert 0.9 < coverage < 0.98
    assert diagnostics.ratio_estimate(1.0, 10.0, 0.2, 2.0, 20.0, N, N) == (0.1, 0.0)  # every answer measured: exact


def test_rollout_scores_only_the_subsample_with_the_reference(base, task):
    policy, tok = base
    ref = frozen_copy(policy)
    calls = []
    inner = ref.forward
    ref.forward = lambda *a, **k: calls.append(k["input_ids"].shape[0]) or inner(*a, **k)
    torch.manual_seed(0)
    ro = rollout(
        policy,
        tok,
        task.train[:8],
        4,
        task.rewards,
        SamplingConfig(max_new_tokens=16),
        ref_model=ref,
        old_logprobs=False,
        ref_sample=8,
    )
    assert sum(calls) == 8 and ro.diagnostics.ref_rows.sum().item() == 8
    full = batched_logprobs(ref, ro)
    rows = ro.diagnostics.ref_rows
    torch.testing.assert_close(ro.ref_logprobs[rows], full[rows])
    assert (ro.ref_logprobs[~rows] == 0).all()
    sub = ro.select(torch.arange(4, 12)).trimmed()  # rows follow select and trim
    assert sub.diagnostics.ref_rows.tolist() == ro.diagnostics.ref_rows[4:12].tolist()


def _cfg(tmp_path, name, algo, **kw):
    base = dict(
        steps=4,
        prompts_per_step=8,
        group_size=4,
        max_new_tokens=24,
        eval_every=0,
        eval_prompts=4,
        eval_samples=1,
        save_every=0,
        progress=False,
    )
    return TrainConfig(**{**base, **kw}, algo=algo, out_dir=str(tmp_path / name))


def test_subsampled_kl_changes_nothing_but_the_kl_columns(tmp_path):
    """dapo trains no KL: with kl_sample_rows the run is the same run (same rows, same
    weights), its kl an estimate within a few standard errors of the exact one."""
    algo = make_config("dapo", lr=1e-3, dynamic_sampling="off")  # a high lr, so the KL grows within 4 steps
    exact = train(_cfg(tmp_path, "exact", "dapo"), algo)
    est = train(_cfg(tmp_path, "est", "dapo", kl_sample_rows=8), algo)
    timing = [c for c in exact.columns if c.endswith("_seconds") or c == "tokens_per_second"]
    same = [
        c for c in exact.columns if c not in timing + ["kl", "kl_exact"]
    ]  # kl_exact: measured on the same subsample as kl
    pd.testing.assert_frame_equal(exact[same], est[same])
    steps = est[est.step >= 1]
    assert (
        "kl_stderr" not in exact.columns and (steps.kl_stderr[steps.step >= 2] > 0).all()
    )  # step 1: the policy is the reference, KL 0

    last = steps.iloc[-1]
    assert exact.kl.iloc[-1] > 1e-3  # the policy moved: there is a KL to estimate
    for (_, e), (_, x) in zip(steps.iterrows(), exact[exact.step >= 1].iterrows()):
        assert abs(e.kl - x.kl) <= 4 * e.kl_stderr + 1e-6, (e.step, e.kl, x.kl, e.kl_stderr)
    assert math.isfinite(last.kl)


def test_a_trained_kl_is_never_subsampled(tmp_path):
    """grpo's KL is in its loss: kl_sample_rows is ignored, every number is exact."""
    algo = make_config("grpo", lr=1e-3)
    exact = train(_cfg(tmp_path, "exact", "grpo", steps=2), algo)
    asked = train(_cfg(tmp_path, "asked", "grpo", steps=2, kl_sample_rows=4), algo)
    cols = [c for c in exact.columns if not (c.endswith("_seconds") or c == "tokens_per_second")]
    pd.testing.assert_frame_equal(exact[cols], asked[cols])
    assert "kl_stderr" not in asked.columns


def test_bad_kl_sample_rows_is_one_line(tmp_path):
    with pytest.raises(ValueError, match="kl_sample_rows must be >= 0"):
        _cfg(tmp_path, "bad", "dapo", kl_sample_rows=-1).validate()
