"""The KL estimators against the exact KL (issue 26): ``core.exact_kl``, what the
estimators' values and gradients are in expectation (from the maths, checked on a small
categorical by sampling and by exact enumeration), the workbook's measurement
(:mod:`rlalgos.workbook.kl_estimators`) on the tiny model, and the logged ``kl_exact``:
the exact KL of the very pass that measures ``entropy``, which changes no other
number of a run. (verl's and TRL's formulas themselves: tests/test_loss_modes.py.)
"""

import math
import random

import pandas as pd
import pytest
import torch
from torch.testing import assert_close

from rlalgos import core, rollout as rollout_module
from rlalgos.algorithms import make_config
from rlalgos.algorithms.grpo import GRPO
from rlalgos.engine.forward import completion_logits, logits_fit
from rlalgos.engine.sampler import SamplingConfig
from rlalgos.model import frozen_copy
from rlalgos.rollout import rollout
from rlalgos.train import TrainConfig, train
from rlalgos.workbook.kl_estimators import (
    ESTIMATORS,
    EXACT,
    FORWARD,
    PER_ROLLOUT,
    bias_effect,
    expected_gradients,
    kl_estimator_table,
    per_rollout,
    rollout_effect,
)
from rlalgos.workbook.stats import verdict_line

PI = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -2.0])  # logits of pi, V = 6
FAR = torch.tensor([0.0, 0.5, 2.0, 0.5, 0.0, -0.5])  # a reference far from pi (KL ~ 1 nat)
NEAR = PI + torch.tensor([0.1, -0.2, 0.15, 0.0, -0.1, 0.2])  # one close to it


def by_hand(z, zr):
    p, q = torch.softmax(z, -1).tolist(), torch.softmax(zr, -1).tolist()
    return sum(a * math.log(a / b) for a, b in zip(p, q))


# --------------------------------------------------------------------------- #
# The exact KL
# --------------------------------------------------------------------------- #


def test_exact_kl_by_hand_and_its_properties():
    z = torch.stack([PI, NEAR, FAR]).view(1, 3, 6)  # (B=1, T=3, V=6)
    zr = torch.stack([FAR, PI, FAR]).view(1, 3, 6)
    kl = core.exact_kl(z, zr)
    assert kl.shape == (1, 3)
    assert kl[0, 0].item() == pytest.approx(by_hand(PI, FAR), abs=1e-6)
    assert kl[0, 1].item() == pytest.approx(by_hand(NEAR, PI), abs=1e-6)
    assert kl[0, 2].item() == 0.0  # the same distribution: exactly 0
    assert_close(core.exact_kl(z + 3.0, zr - 1.0), kl)  # logits, not probabilities: a shift changes nothing
    assert_close(core.exact_kl(z, zr, temperature=2.0), core.exact_kl(z / 2, zr / 2))
    assert core.exact_kl(zr, z)[0, 0].item() == pytest.approx(by_hand(FAR, PI), abs=1e-6)  # swapped: the forward KL
    assert by_hand(FAR, PI) != pytest.approx(by_hand(PI, FAR), rel=0.05)  # which is another number


# --------------------------------------------------------------------------- #
# Values: E_pi[k1] = E_pi[k3] = KL, k2 biased (by sampling, tolerance from the standard error)
# --------------------------------------------------------------------------- #


def samples(z, zr, n=200_000, seed=0):
    """(logp, ref_logp) of n tokens drawn from softmax(z), each (1, n)."""
    logp, ref = torch.log_softmax(z, -1), torch.log_softmax(zr, -1)
    tok = torch.multinomial(logp.exp(), n, replacement=True, generator=torch.Generator().manual_seed(seed))
    return logp[tok].view(1, -1), ref[tok].view(1, -1)


@pytest.mark.parametrize("ref_logits", [FAR, NEAR], ids=["far", "near"])
def test_k1_and_k3_are_unbiased_k2_is_not(ref_logits):
    exact = by_hand(PI, ref_logits)
    logp, ref = samples(PI, ref_logits)
    n = logp.numel()
    est = {k: core.kl_estimate(logp, ref, k).double() for k in ("k1", "k2", "k3")}
    for k in ("k1", "k3"):
        se = est[k].std().item() / math.sqrt(n)
        assert abs(est[k].mean().item() - exact) < 4 * se, (k, est[k].mean().item(), exact, se)
    # k2's expectation, by enumeration, is another number; the sample mean sits on it, many standard errors from the KL
    p, d = torch.softmax(PI, -1).double(), (torch.log_softmax(ref_logits, -1) - torch.log_softmax(PI, -1)).double()
    e_k2 = (p * d**2 / 2).sum().item()
    se2 = est["k2"].std().item() / math.sqrt(n)
    assert abs(est["k2"].mean().item() - e_k2) < 4 * se2
    assert abs(e_k2 - exact) > 10 * se2
    if ref_logits is NEAR:  # close distributions: k3 (~ d^2/2 per token) spreads far less than k1 (= -d)
        assert est["k3"].std() < 0.3 * est["k1"].std()
    assert (est["k3"] >= 0).all() and (est["k1"] < 0).any()


# --------------------------------------------------------------------------- #
# Gradients: exact expectations by enumeration over the vocabulary (workbook.kl_estimators.expected_gradients)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("ref_logits", [FAR, NEAR], ids=["far", "near"])
def test_expected_gradients_follow_the_maths(ref_logits):
    """In the loss, on-policy, w.r.t. the logits z of pi (closed forms: grad KL(pi || q) =
    pi (log pi - log q - KL), grad KL(q || pi) = pi - q): k1's gradient is 0 in expectation
    (E[grad log pi] = 0); k2's, and so k1+'s, k3+'s and TRL's k3 x ratio's, is the gradient
    of the reverse KL(pi || ref); k3's is the gradient of the forward KL(ref || pi)
    (arXiv:2506.09477), a different vector."""
    g = expected_gradients(PI, ref_logits)
    p, q = torch.softmax(PI.double(), -1), torch.softmax(ref_logits.double(), -1)
    kl = (p * (p.log() - q.log())).sum()
    reverse, forward = p * (p.log() - q.log() - kl), p - q  # (V,) each
    tight = dict(atol=1e-12, rtol=1e-9)
    assert_close(g["reverse"], reverse, **tight) and assert_close(g["forward"], forward, **tight)
    assert_close(g["k1"], torch.zeros(6, dtype=torch.float64), **tight)
    for kind in ("k2", "k1+", "k3+", "k3 x ratio"):
        assert_close(g[kind], reverse, **tight)
    assert_close(g["k3"], forward, **tight)
    gap = ((forward - reverse).norm() / reverse.norm()).item()
    assert gap > (0.3 if ref_logits is FAR else 0.01)  # far apart: a large difference; near: small, yet there
    if ref_logits is NEAR:
        assert gap < 0.2  # to second order in the drift the two KLs agree


def test_exercise_03_4_is_judged_by_the_maths():
    from rlalgos.workbook.exercises import judge

    ok, line = judge("03.4", {"k1": "zero", "k2": "reverse", "k3": "forward"})
    assert ok and "k3 forward" in line
    ok, line = judge(
        "03.4", {"k1": "zero", "k2": "reverse", "k3": "reverse"}
    )  # k3 is an unbiased estimate of the reverse KL's value, not of its gradient
    assert not ok and line.startswith("✗ 03.4") and "k3 not right" in line
    assert not judge("03.4", {"k1": "zero", "k2": "reverse"})[0]


# --------------------------------------------------------------------------- #
# The workbook's table, on the tiny model
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def rows():
    from rlalgos.tasks import addition_task

    task = addition_task()
    return task, random.Random(0).sample(task.train, 3)


def moved(model, scale=0.3, seed=0):
    """A copy of ``model`` with every weight perturbed (trainable)."""
    out = frozen_copy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in out.parameters():
            p.add_(scale * p.abs().mean() * torch.randn(p.shape, generator=g))
            p.requires_grad_(True)
    return out


def table(policy, ref, tok, rows, **kw):
    task, prompts = rows
    return kl_estimator_table(policy, ref, tok, task, prompts, group_size=2, rollouts=2, max_new_tokens=6, **kw)


def test_at_the_reference_every_value_is_zero(tiny, rows):
    policy, tok = tiny
    t = table(policy, frozen_copy(policy), tok, rows)
    assert list(t.index) == [EXACT, *ESTIMATORS, FORWARD]
    for col in ("mean", "exact", "bias", "bias_se", "sd_token", "sd_answer", "neg_frac"):
        assert (t[col] == 0).all(), col
    assert (
        t.loc[["k2", "k3", "k1+", "k3+", "k3 x ratio"], "grad_norm"] == 0
    ).all()  # per token the gradient coefficient is 0
    assert t.loc[EXACT, "grad_norm"] < 1e-6 * t.loc["k1", "grad_norm"]  # 0 up to rounding
    assert t.loc["k1", "grad_norm"] > 0  # grad log pi itself: 0 only in expectation


def test_on_a_moved_policy(tiny, rows):
    policy, tok = tiny
    ref = moved(policy)
    before = [p.detach().clone() for p in policy.parameters()]
    t = table(policy, ref, tok, rows, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(before, policy.parameters()))  # the policy is not changed
    assert (t.exact > 1e-3).all() and t.loc[EXACT, "bias"] == 0 and t.loc[EXACT, "grad_cos"] == pytest.approx(1.0)
    assert t.loc["k3", "neg_frac"] == 0 and t.loc["k2", "neg_frac"] == 0 and t.loc["k1", "neg_frac"] > 0
    for plus, base in (("k1+", "k1"), ("k3+", "k3"), ("k3 x ratio", "k3")):  # the value of one estimator ...
        assert t.loc[plus, ["mean", "bias", "sd_token", "sd_answer"]].tolist() == pytest.approx(
            t.loc[base, ["mean", "bias", "sd_token", "sd_answer"]].tolist(), rel=1e-5
        )
        grads = [
            "grad_cos",
            "grad_cos_pooled",
            "grad_norm",
            "grad_rel_norm",
            "grad_cos_forward",
        ]  # ... the gradient of k2
        assert t.loc[plus, grads].tolist() == pytest.approx(t.loc["k2", grads].tolist(), rel=1e-4, abs=1e-6)
    assert t.loc["k3", "grad_norm"] != pytest.approx(t.loc["k2", "grad_norm"], rel=1e-3)
    assert t.loc[FORWARD, "grad_cos_forward"] == pytest.approx(1.0) and t.loc[FORWARD, "mean"] > 0
    assert (t.bias_se.drop([EXACT]) > 0).all() and (t.sd_token > 0).all()


def test_the_per_rollout_values_and_the_verdict_rows(tiny, rows):
    """The table keeps each rollout's cosines (their mean is the table's), and turns a bias or a paired
    per-rollout difference into a row that the course's verdict line prints."""
    policy, tok = tiny
    t = table(policy, moved(policy), tok, rows, seed=3)
    for col in PER_ROLLOUT:
        runs = per_rollout(t, col)
        assert list(runs.columns) == list(t.index) and len(runs) == t.loc[EXACT, "rollouts"] == 2
        assert runs.mean().tolist() == pytest.approx(t[col].tolist())
    assert per_rollout(t, "grad_cos_forward").std().tolist() == pytest.approx(t.grad_cos_forward_sd.tolist())
    b = bias_effect(t, "k1")
    assert b["diff"] == t.loc["k1", "bias"] and b["seeds"] == t.loc["k1", "answers"] > 0
    assert b["ci_high"] - b["diff"] == pytest.approx(1.96 * t.loc["k1", "bias_se"])
    assert f"{b['seeds']} answers;" in verdict_line(b, "k1", "exact", units="answers")
    r = rollout_effect(t, "k2", "k3", "grad_cos")
    assert r["diff"] == pytest.approx(t.loc["k3", "grad_cos"] - t.loc["k2", "grad_cos"]) and r["seeds"] == 2
    assert "2 rollouts;" in verdict_line(r, "k3", "k2", units="rollouts")


# --------------------------------------------------------------------------- #
# The logged kl_exact
# --------------------------------------------------------------------------- #


def direct_kl_exact(policy, ref, ro, rows=None):
    """Token-mean over the completion tokens (of ``rows``) of the exact KL, from two plain passes."""
    args = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
    with torch.no_grad():
        kl = core.exact_kl(
            completion_logits(policy.eval(), *args), completion_logits(ref.eval(), *args), ro.temperature
        )  # (N, T)
    mask = ro.completion_mask if rows is None else ro.completion_mask * rows.unsqueeze(1)
    return core.masked_mean(kl, mask).item()


@pytest.mark.parametrize(
    "minibatches,ref_sample", [(1, 0), (2, 0), (1, 4)], ids=["update-pass", "rollout-pass", "subsample"]
)
def test_kl_exact_is_the_exact_kl_of_the_sampling_policy(tiny, rows, minibatches, ref_sample):
    """Measured in the pass that sees the sampling policy's logits: the update's first (one
    minibatch), or the rollout's own no-grad pass (several); on the KL's rows when subsampled."""
    policy, tok = tiny
    policy = frozen_copy(policy)
    for p in policy.parameters():
        p.requires_grad_(True)
    ref = moved(policy, seed=1)
    algo = GRPO(policy, make_config("grpo", minibatches=minibatches, kl_coef=0.0 if ref_sample else 0.04))
    torch.manual_seed(0)
    ro = rollout(
        policy,
        tok,
        rows[1],
        4,
        rows[0].rewards,
        SamplingConfig(max_new_tokens=6),
        ref_model=ref,
        old_logprobs=algo.needs_old_logprobs,
        ref_sample=ref_sample,
    )
    assert (ro.diagnostics.ref_logits is None) == (minibatches > 1) and (ro.diagnostics.old_kl_exact is None) == (
        minibatches == 1
    )
    want = direct_kl_exact(policy, ref, ro, ro.diagnostics.ref_rows)
    got = algo.update(ro)["kl_exact"]
    assert want > 1e-3 and got == pytest.approx(want, rel=1e-4)


def test_the_reference_logits_are_kept_only_when_small(tiny):
    policy, _ = tiny
    V = policy.get_output_embeddings().weight.shape[0]
    assert logits_fit(policy, 256 * 48) and not logits_fit(policy, 2**25 // V + 1)


def _run(tiny_dir, tmp_path, name, **algo_kw):
    """3 steps of dapo on the tiny model. Its answers never score, so only the entropy bonus
    (on below an entropy of 5 nats, i.e. always) moves the policy away from the reference."""
    cfg = TrainConfig(
        algo="dapo",
        model=str(tiny_dir),
        steps=3,
        prompts_per_step=4,
        group_size=4,
        max_new_tokens=8,
        eval_every=0,
        eval_prompts=4,
        eval_samples=1,
        save_every=0,
        progress=False,
        device="cpu",
        seed=1,
        out_dir=str(tmp_path / name),
    )
    return train(
        cfg, make_config("dapo", lr=1e-3, entropy_threshold=5.0, dynamic_sampling="off", **algo_kw)
    ), tmp_path / name / "checkpoint"


@pytest.mark.parametrize("minibatches", [1, 2])
def test_kl_exact_changes_no_other_number(tiny_dir, tmp_path, monkeypatch, minibatches):
    """The same run with the reference's logits never kept (so no kl_exact): every other logged
    number, every checkpoint weight and every sample are the same, bit for bit."""
    with_exact, ck1 = _run(tiny_dir, tmp_path, "with", minibatches=minibatches)
    monkeypatch.setattr(rollout_module, "logits_fit", lambda model, n: False)
    without, ck2 = _run(tiny_dir, tmp_path, "without", minibatches=minibatches)
    assert "kl_exact" not in without.columns
    steps = with_exact[with_exact.step >= 1]
    assert (
        steps.kl_exact.notna().all() and steps.kl_exact.iloc[-1] > 0 and abs(steps.kl_exact.iloc[0]) < 1e-6
    )  # step 1: the policy is the reference
    timing = [c for c in without.columns if c.endswith("_seconds") or c == "tokens_per_second"]
    cols = [c for c in without.columns if c not in timing]
    pd.testing.assert_frame_equal(with_exact[cols], without[cols])
    for f in sorted(ck1.glob("*.safetensors")):
        assert f.read_bytes() == (ck2 / f.name).read_bytes()
    assert (tmp_path / "with" / "samples.jsonl").read_bytes() == (tmp_path / "without" / "samples.jsonl").read_bytes()


def test_k3_clamp_is_verls_and_can_be_turned_off():
    """verl clamps k3 at 10 (and d at +-20); ``clamp=False`` gives the plain formula, which the
    notebook's "k3 no clamp" row uses to show the clamp's bias."""
    logp = torch.tensor([[-6.0, -0.1, -30.0]])
    ref_logp = torch.tensor([[-0.5, -0.2, -1.0]])  # d = 5.5, -0.1, 29
    d = ref_logp - logp
    plain = torch.exp(d) - d - 1
    assert torch.equal(core.kl_estimate(logp, ref_logp, "k3", clamp=False), plain)
    clamped = core.kl_estimate(logp, ref_logp, "k3")
    assert clamped[0, 0] == 10.0 and clamped[0, 2] == 10.0 and torch.isclose(clamped[0, 1], plain[0, 1])
    assert torch.equal(core.kl_estimate(logp, ref_logp, "k1", clamp=False), -d)  # d = 29 is beyond verl's +-20
    assert core.kl_estimate(logp, ref_logp, "k1")[0, 2] == -20.0


def test_grpo_trains_with_verls_straight_through_k3(tmp_path):
    """``kl_estimator="k3+"`` in GRPO's loss: the same logged values as k3 (its value is k3's), a
    different gradient once the policy has left the reference (k2's); an unknown one is one line.
    The verl export passes it through as ``kl_loss_type: k3+``."""
    from rlalgos.config import TrainConfig, make_config
    from rlalgos.tools.export.verl import verl_overrides
    from rlalgos.train import train

    def run(kind):
        cfg = TrainConfig(
            algo="grpo",
            steps=2,
            prompts_per_step=4,
            group_size=4,
            eval_every=0,
            eval_prompts=4,
            eval_samples=2,
            out_dir=str(tmp_path / kind.replace("+", "plus")),
            progress=False,
            save_every=0,
        )
        return train(cfg, make_config("grpo", kl_estimator=kind, kl_coef=0.5)).set_index("step")

    k3, k3plus = run("k3"), run("k3+")
    assert k3.loc[1, "grad_norm"] == k3plus.loc[1, "grad_norm"]  # step 1: policy == reference, both gradients 0
    assert k3.loc[2, "loss"] == pytest.approx(k3plus.loc[2, "loss"], rel=1e-6)  # the same value ...
    assert k3.loc[2, "grad_norm"] != k3plus.loc[2, "grad_norm"]  # ... not the same gradient
    with pytest.raises(ValueError, match="unknown kl_estimator 'k4'; use one of k1, k2, k3, k1\\+, k3\\+"):
        make_config("grpo", kl_estimator="k4").validate(4, 16)
    values, _ = verl_overrides(TrainConfig(algo="grpo"), make_config("grpo", kl_estimator="k3+"))
    assert values["actor_rollout_ref.actor.kl_loss_type"] == "k3+"


def test_kl_rollouts_adds_the_lean_and_the_answers_to_the_same_table(tiny, rows):
    """kl_lean's table is kl_estimator_table's (same rollouts, same numbers) plus each answer's kind, length,
    summed k3 and first-token values; the exact KLs' own leans have the sign the maths gives, the aggregation
    split adds up, the kinds' token-means recombine into the table's means, and every answer to one prompt
    has the same exact KL at its first token (the state is the prompt alone)."""
    from rlalgos.workbook.kl_lean import aggregation_split, answer_kinds, grad_lean, kl_rollouts, lean_effect

    policy, tok = tiny
    ref = moved(policy)
    task, prompts = rows
    kw = dict(group_size=2, rollouts=2, max_new_tokens=6, seed=3)
    plain, t = table(policy, ref, tok, rows, seed=3), kl_rollouts(policy, ref, tok, task, prompts, **kw)
    assert t["mean"].tolist() == pytest.approx(plain["mean"].tolist())
    lean = grad_lean(t)
    assert (lean[FORWARD] > 0).all() and (lean[EXACT] < 0).all()  # 1 - cos(fwd, rev) and cos(fwd, rev) - 1
    row = lean_effect(t, "k3", "k2")
    assert row["diff"] == pytest.approx((lean["k3"] - lean["k2"]).mean()) and row["seeds"] == 2
    answers = t.attrs["answers"]
    assert len(answers) == 2 * 2 * len(prompts) and (answers.tokens > 0).all()
    split = aggregation_split(t)
    assert split["answers"].sum() == len(answers)
    assert split["kl"].tolist() == pytest.approx([d.k3.sum() / d.tokens.sum() for _, d in answers.groupby("rollout")])
    kinds = answer_kinds(t)
    assert kinds.loc["answers"].sum() == len(answers)
    assert kinds.loc["share of kl"].sum() == pytest.approx(1.0)
    tokens = kinds.loc["answers"] * kinds.loc["tokens per answer"].fillna(0)
    for row, name in (("k3, token-mean", "k3"), ("exact KL, token-mean", EXACT)):
        assert (kinds.loc[row].fillna(0) * tokens).sum() / tokens.sum() == pytest.approx(t.loc[name, "mean"])
    assert (answers.k3_first <= answers.k3 + 1e-6).all() and (answers.k3_first <= answers.k3_no_clamp_first).all()
    prompt = answers.index % (2 * len(prompts)) // 2  # each rollout: every prompt's group_size answers, adjacent
    first = answers.groupby(prompt).exact_first
    assert (first.max() - first.min()).max() < 1e-4
    with pytest.raises(ValueError, match="grad_lean"):
        lean_effect(t, "k3", column="bias")
