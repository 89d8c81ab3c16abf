"""The four other policy-loss modes (``loss_mode`` clip_cov, kl_cov, cispo, sapo), exact
against the engines: each loss value and its gradient w.r.t. the log-probs equal verl
0.9.1's ``compute_policy_loss_*`` and, for cispo and sapo, TRL 1.16's
``GRPOTrainer._compute_loss`` branch, on fixed random tensors (B=4, T=7, a ragged
mask, advantages of both signs, ratios well beyond the clip range). The KL estimators
the same way: ``core.kl_estimate`` (k1, k2, k3 and the straight-through k1+, k3+)
against verl's ``kl_penalty``, and ``core.bias_corrected_kl`` against TRL's KL term with
``use_bias_correction_kl``. Then the covariance itself, the presets from the command
line, and the one-line errors.

verl is installed without its dependencies (``pip install --no-deps verl``, for the
export tests), so its ``core_algos`` is imported in a subprocess in which the few
packages it needs only at import time (ray, tensordict, codetiming, orjson) are
stubbed; the stubs never reach the test process. TRL's loss is a method of the
trainer: it is called unbound on a stand-in trainer holding exactly the attributes
that method reads, with the model's forward pass replaced by the test's log-probs.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
from torch.testing import assert_close

from rlalgos import core
from rlalgos.config import make_config
from rlalgos.losses import get_policy_loss
from rlalgos.losses.common import aggregate
from rlalgos.tools import cli

TIGHT = dict(rtol=1e-6, atol=1e-7)
"""float32 loss and gradient: the same operations, at most a rounding apart (the aggregations sum in another order)."""

B, T = 4, 7
LENGTHS = [7, 5, 3, 6]


def inputs(seed: int = 0, per_answer: bool = False, weighted: bool = False):
    """(logp, old_logp, advantages, mask): log-probs in [-3, 0], log-ratios ~ N(0, 0.6) plus one
    at +2 and one at -2 (ratios 7.4 and 0.14), advantages of both signs, a ragged mask."""
    g = torch.Generator().manual_seed(seed)
    logp = -3.0 * torch.rand(B, T, generator=g)  # (B, T)
    old = logp - 0.6 * torch.randn(B, T, generator=g)
    old[0, 1], old[2, 0] = logp[0, 1] - 2.0, logp[2, 0] + 2.0
    adv = 1.5 * torch.randn(B, 1 if per_answer else T, generator=g)
    mask = (torch.arange(T) < torch.tensor(LENGTHS).unsqueeze(-1)).float()  # (B, T)
    if weighted:
        mask[1] *= 0.5  # a per-answer weight (dapo's downweight)
    return logp, old, adv, mask


# --------------------------------------------------------------------------- #
# verl, in a subprocess
# --------------------------------------------------------------------------- #

CASES = {
    # name: (loss_mode, our function's keyword arguments (those verl's config also takes), agg, inputs' options, global seed)
    # clip_cov: each case draws fewer tokens than there are candidates, so which ones is the random draw's
    "clip_cov": ("clip_cov", dict(clip_low=0.2, clip_high=0.2), "token-mean", {}, 0),  # 1 of 3 candidates
    "clip_cov-many": (
        "clip_cov",
        dict(clip_low=0.2, clip_high=0.28, clip_cov_ratio=0.15, clip_cov_lb=0.2),
        "token-mean",
        dict(seed=3),
        1,
    ),
    "clip_cov-seqmean": (
        "clip_cov",
        dict(clip_low=0.2, clip_high=0.2, clip_cov_ratio=0.15, clip_cov_lb=0.2, clip_cov_ub=3.0),
        "seq-mean-token-mean",
        {},
        2,
    ),
    "clip_cov-weighted": (
        "clip_cov",
        dict(clip_low=0.2, clip_high=0.2, clip_cov_ratio=0.15, clip_cov_lb=0.2),
        "token-mean",
        dict(seed=2, weighted=True, per_answer=True),
        3,
    ),
    "kl_cov": ("kl_cov", dict(), "token-mean", {}, None),
    "kl_cov-many": ("kl_cov", dict(kl_cov_ratio=0.25, kl_cov_coef=1.0), "seq-mean-token-mean", dict(seed=1), None),
    "kl_cov-weighted": ("kl_cov", dict(kl_cov_ratio=0.25), "token-mean", dict(weighted=True, per_answer=True), None),
    "cispo": ("cispo", dict(clip_low=0.2, clip_high=0.2), "token-mean", {}, None),
    "cispo-asym": (
        "cispo",
        dict(clip_low=0.1, clip_high=0.28),
        "seq-mean-token-mean",
        dict(seed=2, per_answer=True),
        None,
    ),
    "sapo": ("sapo", dict(tau_pos=1.0, tau_neg=1.05), "seq-mean-token-mean", {}, None),
    "sapo-taus": ("sapo", dict(tau_pos=0.5, tau_neg=2.0), "seq-mean-token-mean", dict(seed=3, per_answer=True), None),
    "gpg": ("gpg", dict(), "token-mean", {}, None),
    "gpg-seqmean": ("gpg", dict(), "seq-mean-token-mean", dict(seed=1, per_answer=True), None),
    "gpg-weighted": ("gpg", dict(), "token-mean", dict(seed=2, weighted=True, per_answer=True), None),
}

VERL_PRELUDE = r"""
import importlib.util, sys, types
from unittest import mock

import torch

# verl/__init__.py imports ray; core_algos needs only verl's own modules and, at import time, these
spec = importlib.util.find_spec("verl")
pkg = types.ModuleType("verl")
pkg.__path__ = list(spec.submodule_search_locations)
sys.modules["verl"] = pkg
for name in ("ray", "tensordict", "codetiming", "orjson"):
    if importlib.util.find_spec(name) is None:
        sys.modules[name] = mock.MagicMock()
if isinstance(sys.modules.get("tensordict"), mock.MagicMock):
    sys.modules["tensordict.tensorclass"] = sys.modules["tensordict"].tensorclass
"""

VERL_SCRIPT = (
    VERL_PRELUDE
    + r"""
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.workers.config import ActorConfig, PolicyLossConfig

PL = {"clip_cov_ratio": "clip_cov_ratio", "clip_cov_lb": "clip_cov_lb", "clip_cov_ub": "clip_cov_ub", "kl_cov_ratio": "kl_cov_ratio", "kl_cov_coef": "ppo_kl_coef"}
ACTOR = {"clip_low": "clip_ratio_low", "clip_high": "clip_ratio_high", "tau_pos": "tau_pos", "tau_neg": "tau_neg"}
cases, out = torch.load(sys.argv[1]), {}
for name, (mode, kw, agg, (logp, old, adv, mask), seed) in cases.items():
    actor = {ACTOR[k]: v for k, v in kw.items() if k in ACTOR}
    config = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, clip_ratio=actor.get("clip_ratio_low", 0.2), **actor,
                         policy_loss=PolicyLossConfig(loss_mode=mode, **{PL[k]: v for k, v in kw.items() if k in PL}))
    logp = logp.clone().requires_grad_(True)
    if seed is not None:
        torch.manual_seed(seed)
    loss, metrics = get_policy_loss_fn(mode)(old_log_prob=old, log_prob=logp, advantages=adv, response_mask=mask, loss_agg_mode=agg, config=config)
    loss.backward()
    out[name] = (loss.detach(), logp.grad, metrics)
torch.save(out, sys.argv[2])
"""
)


def run_verl(script: str, cases, d):
    """``script`` (verl's functions, imported after :data:`VERL_PRELUDE`) on ``cases`` in a subprocess: what it saved."""
    if importlib.util.find_spec("verl") is None:
        pytest.skip("verl is not installed (pip install --no-deps verl)")
    torch.save(cases, d / "cases.pt")
    proc = subprocess.run(
        [sys.executable, "-c", script, str(d / "cases.pt"), str(d / "out.pt")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return torch.load(d / "out.pt")


@pytest.fixture(scope="module")
def verl_results(tmp_path_factory):
    """{case: (loss, grad, metrics)} from verl's own functions, all cases in one subprocess."""
    cases = {}
    for name, (mode, kw, agg, opts, seed) in CASES.items():
        logp, old, adv, mask = inputs(**opts)
        cases[name] = (mode, kw, agg, (logp, old, adv.expand(B, T).contiguous(), mask), seed)
    return run_verl(VERL_SCRIPT, cases, tmp_path_factory.mktemp("verl"))


def ours(mode, kw, agg, opts, seed, generator=None):
    """The registered loss on the case's inputs, aggregated as training aggregates it: (loss, grad w.r.t. logp, metrics)."""
    logp, old, adv, mask = inputs(**opts)
    logp.requires_grad_(True)
    if seed is not None:
        torch.manual_seed(seed)
    extra = {"generator": generator} if generator is not None else {}
    loss_mat, metrics = get_policy_loss(mode).token_loss(logp, old, adv, mask, **kw, **extra)
    loss = aggregate(loss_mat, mask, agg)
    loss.backward()
    return loss.detach(), logp.grad, metrics


@pytest.mark.parametrize("case", list(CASES))
def test_loss_and_gradient_equal_verl(case, verl_results):
    mode, kw, agg, opts, seed = CASES[case]
    loss, grad, met = ours(mode, kw, agg, opts, seed)
    v_loss, v_grad, v_met = verl_results[case]
    assert_close(loss, v_loss, **TIGHT)
    assert_close(grad, v_grad, **TIGHT)
    assert grad.abs().sum() > 0
    if mode == "clip_cov":  # verl's pg_clipfrac is the share Clip-Cov cut
        assert met["cov_selected_frac"] == pytest.approx(v_met["actor/pg_clipfrac"], abs=1e-7)
        assert met["cov_selected_frac"] > 0, "no token was a candidate: the case does not test the selection"
    if mode == "cispo":
        assert met["clip_frac"] == pytest.approx(v_met["actor/pg_clipfrac"], abs=1e-7) and 0 < met["clip_frac"] < 1
    if mode in ("cispo", "sapo"):  # verl's ppo_kl is the mean of -log r (the k1 estimate; rlalgos logs k3)
        logp, old, _, mask = inputs(**opts)
        assert v_met["actor/ppo_kl"] == pytest.approx(core.masked_mean(old - logp, mask).item(), abs=1e-6)


def test_clip_cov_generator_draws_as_the_seeded_global_generator():
    mode, kw, agg, opts, seed = CASES["clip_cov-many"]
    by_global = ours(mode, kw, agg, opts, seed)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    by_generator = ours(mode, kw, agg, opts, None, generator=torch.Generator().manual_seed(seed))
    assert torch.equal(torch.get_rng_state(), state)  # the global stream is untouched
    assert torch.equal(by_global[0], by_generator[0]) and torch.equal(by_global[1], by_generator[1])
    others = [
        ours(mode, kw, agg, opts, None, generator=torch.Generator().manual_seed(s))[1]
        for s in range(seed + 1, seed + 6)
    ]
    assert any(not torch.equal(by_global[1], g) for g in others)  # other draws cut other tokens


def test_clip_cov_cuts_only_candidates_and_keeps_the_ordinary_clip():
    """int(ratio x tokens) tokens are cut, all of them valid, not clipped already, with covariance
    in (lb, ub); every other token has PPO's gradient."""
    logp, old, adv, mask = inputs()
    logp.requires_grad_(True)
    loss, met = core.clip_cov_loss(logp, old, adv, mask, clip_cov_ratio=0.2, clip_cov_lb=0.2)
    loss.backward()
    ref_logp = logp.detach().clone().requires_grad_(True)
    ref, ref_met = core.policy_loss(ref_logp, old, adv, mask, 0.2, 0.2)
    ref.backward()
    cut = (logp.grad == 0) & (ref_logp.grad != 0)  # (B, T)
    cov = core.token_covariance(logp.detach(), adv, mask)
    candidates = (
        (mask > 0) & (ref_logp.grad != 0) & (cov > 0.2) & (cov < 5.0)
    )  # (B, T): valid, not clipped, cov in range
    n = int(mask.sum().item())
    assert candidates.sum().item() > int(0.2 * n) == cut.sum().item() == round(met["cov_selected_frac"] * n) == 4
    assert bool(candidates[cut].all())
    assert met["clip_frac"] == ref_met["clip_frac"] and met["clip_frac_high"] == ref_met["clip_frac_high"]
    assert_close(logp.grad[~cut], ref_logp.grad[~cut])


# --------------------------------------------------------------------------- #
# TRL: GRPOTrainer._compute_loss itself
# --------------------------------------------------------------------------- #


def trl_loss(args, logp, old_logp, advantages, mask, ref_logp=None):
    """TRL 1.16's GRPOTrainer._compute_loss on a stand-in trainer: the loss, as TRL backpropagates it.

    ``epsilon_low`` / ``epsilon_high`` are set as GRPOTrainer.__init__ sets them
    (trl/trainer/grpo_trainer.py, lines 945-946 in 1.16.0); the model's forward pass returns ``logp``;
    ``old_logp`` None: on-policy (TRL then takes ``logp.detach()``); ``ref_logp``: the reference's, for ``beta`` > 0."""
    from trl.trainer.grpo_trainer import GRPOTrainer

    accelerator = SimpleNamespace(
        num_processes=1,
        sync_gradients=True,
        reduce=lambda t, reduction="sum": t,
        gather=lambda t: t,
        gather_for_metrics=lambda t: t,
    )
    trainer = SimpleNamespace(
        args=args,
        loss_type=args.loss_type,
        beta=args.beta,
        importance_sampling_level=args.importance_sampling_level,
        epsilon_low=args.epsilon,
        epsilon_high=args.epsilon_high if args.epsilon_high is not None else args.epsilon,
        top_entropy_quantile=args.top_entropy_quantile,
        off_policy_mask_threshold=None,
        use_vllm=False,
        model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1,
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        accelerator=accelerator,
        _metrics={"train": defaultdict(list)},
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
    )
    batch = {
        "prompt_ids": torch.zeros(B, 1, dtype=torch.long),
        "prompt_mask": torch.ones(B, 1, dtype=torch.long),
        "completion_ids": torch.zeros(B, T, dtype=torch.long),
        "completion_mask": mask,
        "advantages": advantages,
        "old_per_token_logps": old_logp,
        "num_items_in_batch": mask.sum(),
        "ref_per_token_logps": ref_logp,
    }
    return GRPOTrainer._compute_loss(trainer, None, batch), trainer._metrics["train"]


@pytest.mark.parametrize(
    "loss_type,trl_kw,seed",
    [
        ("cispo", {"epsilon_high": 5.0}, 0),  # TRL's recommended eps_max: only the ratio of 7.4 is capped
        ("cispo", {"epsilon_high": 1.3}, 1),
        ("sapo", {}, 0),  # TRL's default temperatures, 1.0 and 1.05 (rlalgos's and verl's)
        ("sapo", {"sapo_temperature_pos": 0.5, "sapo_temperature_neg": 2.0}, 2),
    ],
)
def test_loss_and_gradient_equal_trl(loss_type, trl_kw, seed, tmp_path):
    trl = pytest.importorskip("trl")
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), loss_type=loss_type, beta=0.0, use_cpu=True, report_to="none", **trl_kw
    )
    logp, old, adv, mask = inputs(seed, per_answer=True)  # TRL's advantages: one per answer
    mine = logp.clone().requires_grad_(True)
    if loss_type == "cispo":  # TRL's convention: no lower bound, the ratio capped at epsilon_high itself
        loss, met = core.cispo_loss(
            mine, old, adv, mask, clip_low=None, clip_high=args.epsilon_high - 1.0, agg="token-mean"
        )
    else:
        loss, met = core.sapo_loss(
            mine,
            old,
            adv,
            mask,
            tau_pos=args.sapo_temperature_pos,
            tau_neg=args.sapo_temperature_neg,
            agg="seq-mean-token-mean",
        )
    loss.backward()
    theirs = logp.clone().requires_grad_(True)
    t_loss, t_met = trl_loss(args, theirs, old, adv.squeeze(-1), mask)
    t_loss.backward()
    assert_close(loss.detach(), t_loss.detach(), **TIGHT)
    assert_close(mine.grad, theirs.grad, **TIGHT)
    if loss_type == "cispo":
        assert met["clip_frac_low"] == 0.0 and met["clip_frac_high"] > 0  # no lower bound; some weights capped
        ratio, pos = torch.exp(logp - old), (adv > 0).expand(B, T)
        assert t_met["cispo_clip_ratio"][0] == pytest.approx(
            core.masked_mean(((ratio > args.epsilon_high) & pos).float(), mask).item()
        )


# --------------------------------------------------------------------------- #
# The KL estimators: verl's kl_penalty, TRL's use_bias_correction_kl
# --------------------------------------------------------------------------- #

VERL_KL = {
    "k1": ["k1", "kl"],
    "k2": ["k2", "mse"],
    "k3": ["k3", "low_var_kl"],
    "k1+": ["k1+", "kl+"],
    "k3+": ["k3+", "low_var_kl+"],
}
"""Each of rlalgos's kinds and verl's names for it (verl's ``kl_penalty`` strips a trailing ``+``)."""

VERL_KL_SCRIPT = (
    VERL_PRELUDE
    + r"""
from verl.trainer.ppo.core_algos import kl_penalty

(logp, ref), names = torch.load(sys.argv[1])
out = {}
for name in names:
    lp = logp.clone().requires_grad_(True)
    value = kl_penalty(lp, ref, name)
    value.sum().backward()  # per element: d value_t / d logp_t
    out[name] = (value.detach(), lp.grad)
torch.save(out, sys.argv[2])
"""
)


def kl_inputs(clamped: bool = True):
    """(logp, ref_logp): log-probs in [-3, 0], log-ratios d = ref_logp - logp ~ N(0, 0.8), one at
    -2 and (``clamped``) one at +3, where k3 = 16.1 is clamped to 10 (verl clamps, TRL does not)."""
    logp, _, _, _ = inputs(4)
    ref = logp + 0.8 * torch.randn(B, T, generator=torch.Generator().manual_seed(5))
    ref[3, 4] = logp[3, 4] - 2.0
    if clamped:
        ref[1, 2] = logp[1, 2] + 3.0
    return logp, ref


@pytest.fixture(scope="module")
def verl_kl(tmp_path_factory):
    """{verl name: (value, d value / d logp)} from verl's kl_penalty, in one subprocess."""
    return run_verl(
        VERL_KL_SCRIPT,
        (kl_inputs(), [n for names in VERL_KL.values() for n in names]),
        tmp_path_factory.mktemp("verl_kl"),
    )


@pytest.mark.parametrize("kind", list(VERL_KL))
def test_kl_estimate_value_and_gradient_equal_verl(kind, verl_kl):
    logp, ref = kl_inputs()
    mine = logp.clone().requires_grad_(True)
    value = core.kl_estimate(mine, ref, kind)
    value.sum().backward()
    for name in VERL_KL[kind]:
        v_value, v_grad = verl_kl[name]
        assert torch.equal(value.detach(), v_value), name  # the same operations: bit for bit
        assert_close(mine.grad, v_grad, **TIGHT)
    if kind.endswith(
        "+"
    ):  # straight-through: the base kind's value, k2's gradient (logp - ref), even where k3 is clamped
        assert torch.equal(value.detach(), core.kl_estimate(logp, ref, kind[:-1]))
        assert_close(mine.grad, logp - ref, **TIGHT)
    if kind == "k3":
        assert value[1, 2].item() == 10.0 and mine.grad[1, 2].item() == 0.0  # clamped: no gradient (as verl)


@pytest.mark.parametrize("bias_correction,off_policy", [(True, False), (True, True), (False, False), (False, True)])
def test_bias_corrected_kl_equals_trl(bias_correction, off_policy, tmp_path):
    """TRL's GRPO loss with beta > 0 and zero advantages is beta x the per-answer mean of its KL term:
    core.bias_corrected_kl (k3 x ratio) with use_bias_correction_kl, k3 without, value and gradient."""
    trl = pytest.importorskip("trl")
    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        loss_type="grpo",
        beta=0.04,
        use_bias_correction_kl=bias_correction,
        use_cpu=True,
        report_to="none",
    )
    logp, ref = kl_inputs(
        clamped=True
    )  # one d at +3: k3 = 16.1, which verl clamps and TRL does not (nor does bias_corrected_kl)
    old = logp - 0.3 * torch.randn(
        B, T, generator=torch.Generator().manual_seed(6)
    )  # off-policy: ratios ~ exp(N(0, 0.3))
    mask = inputs()[3]
    adv = torch.zeros(B)  # the policy-gradient term is 0, value and gradient: only the KL term remains
    mine = logp.clone().requires_grad_(True)
    old_mine = old if off_policy else mine.detach()
    kl = (
        core.bias_corrected_kl(mine, ref, old_mine)
        if bias_correction
        else core.kl_estimate(mine, ref, "k3", clamp=False)
    )
    loss = args.beta * core.aggregate_loss(kl, mask, "seq-mean-token-mean")
    loss.backward()
    theirs = logp.clone().requires_grad_(True)
    t_loss, t_met = trl_loss(args, theirs, old if off_policy else None, adv, mask, ref_logp=ref)
    t_loss.backward()
    assert_close(loss.detach(), t_loss.detach(), **TIGHT)
    assert_close(mine.grad, theirs.grad, **TIGHT)
    assert t_met["kl"][0] == pytest.approx(core.masked_mean(kl.detach(), mask).item(), rel=1e-6)
    if bias_correction and not off_policy:  # on-policy the correction keeps k3's value and gives k2's gradient
        assert_close(kl.detach(), core.kl_estimate(logp, ref, "k3", clamp=False))
        assert kl[1, 2].item() > 16
        assert_close(mine.grad, args.beta * (logp - ref) * mask / mask.sum(-1, keepdim=True) / B, **TIGHT)


# --------------------------------------------------------------------------- #
# What the modes do to the gradient
# --------------------------------------------------------------------------- #


def test_token_covariance_is_the_covariance_of_logp_and_advantage():
    logp, _, adv, mask = inputs()
    logp.requires_grad_(True)
    cov = core.token_covariance(logp, adv, mask)  # (B, T)
    valid = mask > 0
    a, lp = adv[valid], logp.detach()[valid]
    assert core.masked_mean(cov, mask).item() == pytest.approx(
        ((a - a.mean()) * (lp - lp.mean())).mean().item(), abs=1e-6
    )
    core.masked_sum(cov, mask).backward()  # the means are constants: d cov_t / d logp_t = A_t - mean(A)
    assert_close(logp.grad, (adv - core.masked_mean(adv, mask)) * mask)
    one = core.token_covariance(logp.detach(), adv[:, :1], mask)  # (B, 1) advantages broadcast over tokens
    assert one.shape == (B, T)


def test_cispo_keeps_the_gradient_of_clipped_tokens():
    logp, old, adv, mask = inputs()
    logp.requires_grad_(True)
    loss, met = core.cispo_loss(logp, old, adv, mask, 0.2, 0.2)
    loss.backward()
    ratio = torch.exp(logp.detach() - old)
    n = mask.sum()
    # d/dlogp of -w A logp with w = sg(clip(r)): -w A, over the n valid tokens
    assert_close(logp.grad, -ratio.clamp(0.8, 1.2) * adv * mask / n)
    clipped = ((ratio < 0.8) | (ratio > 1.2)) & (mask > 0)
    assert met["clip_frac"] == pytest.approx(clipped.sum().item() / n.item())
    assert bool((logp.grad[clipped] != 0).all())  # PPO's clip would zero these


@pytest.mark.parametrize("mode", ["kl_cov", "cispo", "sapo"])
def test_on_policy_the_gradient_is_reinforce(mode):
    """At ratio 1 (the first minibatch of a rollout) kl_cov's penalty, cispo's weight and
    sapo's gate all leave REINFORCE's gradient -A grad log pi."""
    logp, _, adv, mask = inputs()
    fn = {"kl_cov": core.kl_cov_loss, "cispo": core.cispo_loss, "sapo": core.sapo_loss}[mode]
    a = logp.clone().requires_grad_(True)
    loss, met = fn(a, a.detach(), adv, mask, agg="token-mean")
    loss.backward()
    assert_close(a.grad, -adv * mask / mask.sum())
    assert met["ratio_mean"] == 1.0 and met["approx_kl"] == 0.0
    if mode == "sapo":
        assert met["sapo_grad_weight"] == 1.0


def test_sapo_gradient_is_the_gate_derivative():
    """One token, A = +1 (tau 1.0) or -1 (tau 1.05): the gradient w.r.t. log pi is -A f'(r) r,
    f'(r) = 4 s (1 - s), s = sigmoid(tau (r - 1)): 1 at r = 1, smaller (never 0) away from it."""
    for r in (0.5, 1.0, 1.5, 3.0):
        for a, tau in ((1.0, 1.0), (-1.0, 1.05)):
            logp = torch.tensor([[0.0]], requires_grad=True)
            loss, met = core.sapo_loss(logp, torch.tensor([[-math.log(r)]]), torch.tensor([[a]]), torch.ones(1, 1))
            loss.backward()
            s = 1 / (1 + math.exp(-tau * (r - 1)))
            assert logp.grad.item() == pytest.approx(-a * 4 * s * (1 - s) * r, rel=1e-5)
            assert met["sapo_grad_weight"] == pytest.approx(4 * s * (1 - s), rel=1e-5)


def test_default_clip_path_is_unchanged():
    """loss_mode clip calls core.policy_loss exactly as before (the same numbers, bit for bit)."""
    from rlalgos.algorithms.base import Advantages
    from rlalgos.algorithms.grpo import GRPO

    logp, old, adv, mask = inputs(per_answer=True)
    policy = torch.nn.Linear(1, 1)
    algo = GRPO(policy, make_config("grpo", clip_high=0.28))
    got = algo.policy_loss({"logprobs": logp}, Advantages(adv, mask), old)
    want = core.policy_loss(
        logp, old, adv, mask, 0.2, 0.28, "seq-mean-token-mean", None, clip_c=None, ratio_level="token"
    )
    assert torch.equal(got[0], want[0]) and got[1] == want[1]
    for name, fn in (
        ("clipcov", core.clip_cov_loss),
        ("klcov", core.kl_cov_loss),
        ("cispo", core.cispo_loss),
        ("sapo", core.sapo_loss),
    ):
        torch.manual_seed(0)
        got = GRPO(policy, make_config(name)).policy_loss({"logprobs": logp}, Advantages(adv, mask), old)
        torch.manual_seed(0)
        assert torch.equal(got[0], fn(logp, old, adv, mask, agg="seq-mean-token-mean")[0]), (
            name
        )  # the presets: the functions' defaults


# --------------------------------------------------------------------------- #
# Presets and errors
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "name,key",
    [
        ("clipcov", "cov_selected_frac"),
        ("klcov", "cov_selected_frac"),
        ("cispo", "clip_frac"),
        ("sapo", "sapo_grad_weight"),
    ],
)
def test_preset_trains_two_steps_from_the_cli(name, key, tmp_path, tiny_dir, capsys):
    run = tmp_path / name
    argv = [
        "train",
        name,
        "--model",
        str(tiny_dir),
        "--steps",
        "2",
        "--prompts-per-step",
        "2",
        "--group-size",
        "2",
        "--max-new-tokens",
        "6",
        "--minibatches",
        "2",
        "--eval-every",
        "0",
        "--eval-prompts",
        "2",
        "--eval-samples",
        "2",
        "--save-every",
        "0",
        "--out-dir",
        str(run),
        "--no-progress",
    ]
    assert cli.main(argv) == 0
    assert json.loads((run / "config.json").read_text())["algo"]["loss_mode"] == make_config(name).loss_mode
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    train_rows = [r for r in rows if "pg_loss" in r]
    assert len(train_rows) == 2 and all(key in r and r["clip_frac"] >= 0 for r in train_rows)
    capsys.readouterr()
    assert cli.main(["algos"]) == 0
    assert name in capsys.readouterr().out


@pytest.mark.parametrize(
    "bad,msg",
    [
        (dict(loss_mode="ppo2"), "unknown loss_mode 'ppo2'; use one of clip, clip_cov, kl_cov, cispo, sapo, gpg"),
        (dict(clip_cov_ratio=0.0), "clip_cov_ratio must be in (0, 1]"),
        (dict(kl_cov_ratio=1.5), "kl_cov_ratio must be in (0, 1]"),
        (dict(clip_cov_lb=-1.0), "must satisfy 0 <= lb < ub"),
        (dict(clip_cov_lb=5.0, clip_cov_ub=5.0), "must satisfy 0 <= lb < ub"),
        (dict(sapo_tau_neg=0.0), "sapo_tau_pos and sapo_tau_neg must be > 0"),
        (dict(kl_cov_coef=-0.1), "kl_cov_coef must be >= 0"),
        (dict(loss_mode="cispo", clip_c=3.0), "clip_c (the dual clip) works only with loss_mode clip"),
    ],
)
def test_bad_loss_mode_settings_are_one_line(bad, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("]", r"\]")):
        make_config("grpo", **bad).validate(8, 32)


def test_gspo_takes_loss_mode_clip_only():
    with pytest.raises(ValueError, match="gspo clips one ratio per answer"):
        make_config("gspo", loss_mode="sapo").validate(8, 32)
    make_config("gspo").validate(8, 32)


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["train", "grpo", "--clip-cov-ratio", "1.5"], "clip_cov_ratio must be in (0, 1]"),
        (["train", "cispo", "--sapo-tau-pos", "-1"], "sapo_tau_pos and sapo_tau_neg must be > 0"),
        (["train", "gspo", "--loss-mode", "kl_cov"], "gspo clips one ratio per answer"),
    ],
)
def test_cli_bad_loss_mode_is_one_line_exit_2_and_touches_no_run_folder(argv, msg, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main([*argv, "--out-dir", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err
    assert not run.exists()
