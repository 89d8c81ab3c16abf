"""Exact tests for the two follow-ups of the clipped loss: dual-clip PPO and GSPO.

Expected numbers are worked out by hand (the arithmetic is in a comment next to
them) or come from a plain per-answer reference written here.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from rlalgos import core
from rlalgos.algorithms import get_algorithm
from rlalgos.config import LOSS_AGG_MODES, make_config

# --------------------------------------------------------------------------- #
# Dual clip
# --------------------------------------------------------------------------- #

# one answer, 4 valid tokens and one padding token; clip 0.2, so the range is [0.8, 1.2]
DUAL_RATIOS = [5.0, 2.0, 5.0, 0.5, 10.0]
DUAL_ADV = [-1.0, -1.0, 1.0, 1.0, -1.0]
DUAL_MASK = [1.0, 1.0, 1.0, 1.0, 0.0]


def _dual_inputs():
    logp = torch.log(torch.tensor([DUAL_RATIOS])).requires_grad_(True)
    return logp, torch.zeros(1, 5), torch.tensor([DUAL_ADV]), torch.tensor([DUAL_MASK])


def test_dual_clip_by_hand():
    logp, old, adv, mask = _dual_inputs()
    loss, met = core.policy_loss(logp, old, adv, mask, 0.2, 0.2, clip_c=3.0)
    # token 0: A=-1, r=5: clipped loss max(5, 1.2) = 5 > -A*c = 3 -> 3 (the dual bound)
    # token 1: A=-1, r=2: max(2, 1.2) = 2 < 3 -> 2
    # token 2: A=+1, r=5: max(-5, -1.2) = -1.2 (ordinary clip; the dual bound is for A<0 only)
    # token 3: A=+1, r=0.5: max(-0.5, -0.8) = -0.5
    # token-mean over 4 tokens: (3 + 2 - 1.2 - 0.5) / 4 = 0.825
    assert loss.item() == pytest.approx(0.825, abs=1e-6)
    assert met["clip_frac_dual"] == 0.25  # token 0 of the 4 valid ones (the padding token, r=10, A<0, does not count)
    assert met["clip_frac"] == 0.25 and met["clip_frac_high"] == 0.25 and met["clip_frac_low"] == 0.0
    loss.backward()
    # d l / d logp = -A r where the unclipped term is in force, 0 where a bound is; / 4 tokens
    assert_close(logp.grad, torch.tensor([[0.0, 2.0 / 4, 0.0, -0.5 / 4, 0.0]]))


def test_dual_clip_token_loss_is_exactly_minus_a_c():
    logp, old, adv, mask = _dual_inputs()
    only_first = torch.tensor([[1.0, 0.0, 0.0, 0.0, 0.0]])
    loss, met = core.policy_loss(logp, old, adv * 0.75, only_first, 0.2, 0.2, clip_c=3.0)
    assert loss.item() == 0.75 * 3.0  # -A * c with A = -0.75: a constant, whatever the ratio
    assert met["clip_frac_dual"] == 1.0
    loss.backward()
    assert logp.grad.abs().sum().item() == 0.0


@pytest.mark.parametrize("agg", LOSS_AGG_MODES)
def test_dual_clip_off_is_todays_loss_bit_for_bit(agg):
    g = torch.Generator().manual_seed(3)
    logp = (torch.randn(3, 6, generator=g) * 0.8 - 1).requires_grad_(True)
    old = logp.detach() + torch.randn(3, 6, generator=g)
    adv = torch.randn(3, 6, generator=g)
    mask = torch.tensor([[1.0] * 6, [1.0] * 4 + [0.0] * 2, [1.0] * 2 + [0.0] * 4])
    # today's clipped loss, written out: max(-A r, -A clip(r, 0.8, 1.28)), aggregated
    ratio = torch.exp((logp - old).clamp(-20.0, 20.0))
    ref = core.aggregate_loss(torch.maximum(-adv * ratio, -adv * ratio.clamp(0.8, 1.28)), mask, agg)
    (ref_grad,) = torch.autograd.grad(ref, logp)
    for clip_c in (None, 1e9):  # off, and a bound that never binds
        loss, met = core.policy_loss(logp, old, adv, mask, 0.2, 0.28, agg, clip_c=clip_c)
        (grad,) = torch.autograd.grad(loss, logp)
        assert torch.equal(loss, ref) and torch.equal(grad, ref_grad)
        assert met["clip_frac_dual"] == 0.0


def test_clip_c_config_error():
    with pytest.raises(ValueError, match=r"clip_c must be 0 \(off\) or > 1 \(verl uses 3\), got 0.5"):
        make_config("grpo", clip_c=0.5).validate(8, 32)
    make_config("grpo", clip_c=0.0).validate(8, 32)
    assert make_config("dualclip").clip_c == 3.0


# --------------------------------------------------------------------------- #
# GSPO: the sequence ratio
# --------------------------------------------------------------------------- #

# two answers: 3 tokens, and 2 tokens + padding (whose log-ratio is junk)
SEQ_LOG_RATIOS = [[0.3, -0.1, 0.4], [0.5, 0.1, 7.0]]
SEQ_MASK = [[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]


def _seq_inputs():
    old = torch.log(torch.tensor([[0.5, 0.25, 0.5], [0.4, 0.4, 0.4]], dtype=torch.float64))
    logp = (old + torch.tensor(SEQ_LOG_RATIOS, dtype=torch.float64)).requires_grad_(True)
    return logp, old, torch.tensor(SEQ_MASK, dtype=torch.float64)


def test_sequence_ratio_by_hand():
    logp, old, mask = _seq_inputs()
    s = core.sequence_ratio(logp, old, mask)
    # answer 0: mean(0.3, -0.1, 0.4) = 0.2; answer 1: mean(0.5, 0.1) = 0.3 (the padding's 7.0 is ignored)
    assert s.shape == (2, 1)
    assert s[:, 0].tolist() == pytest.approx([math.exp(0.2), math.exp(0.3)], abs=1e-12)
    # a per-answer loss weight (DAPO's downweight) does not change the mean
    assert_close(core.sequence_ratio(logp, old, mask * torch.tensor([[0.1], [1.0]], dtype=torch.float64)), s)


def test_gspo_loss_by_hand_clipped_and_unclipped():
    logp, old, mask = _seq_inputs()
    adv = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    loss, met = core.policy_loss(logp, old, adv, mask, 0.2, 0.2, "seq-mean-token-mean", ratio_level="sequence")
    # answer 0: A=+1, s = e^0.2 = 1.2214 > 1.2 -> clipped: l = -1.2, no gradient
    # answer 1: A=-1, s = e^0.3 = 1.3499: max(1.3499, 1.2) = 1.3499, unclipped
    # mean over answers: (-1.2 + e^0.3) / 2
    assert loss.item() == pytest.approx((-1.2 + math.exp(0.3)) / 2, abs=1e-12)
    # the clip fractions count the tokens of clipped answers: answer 0's 3 of the 5 valid tokens
    assert met["clip_frac"] == pytest.approx(3 / 5) and met["clip_frac_high"] == pytest.approx(3 / 5)
    assert met["clip_frac_low"] == 0.0
    loss.backward()
    # answer 1: d/d logp_t of -A e^{mean} / 2 = e^0.3 / 2 / 2 on each of its 2 tokens
    expected = torch.tensor([[0.0, 0.0, 0.0], [math.exp(0.3) / 4, math.exp(0.3) / 4, 0.0]], dtype=torch.float64)
    assert_close(logp.grad, expected)


def _gspo_reference(logp, old, adv, mask, lo, hi):
    """GSPO's objective per answer, written out: mean_i max(-A_i s_i, -A_i clip(s_i))."""
    losses = []
    for i in range(logp.shape[0]):
        n = mask[i].sum()
        s = torch.exp(((logp[i] - old[i]) * mask[i]).sum() / n)
        a = adv[i, 0]
        losses.append(torch.maximum(-a * s, -a * torch.clamp(s, 1 - lo, 1 + hi)))
    return torch.stack(losses).mean()


def _random_answers(seed):
    g = torch.Generator().manual_seed(seed)
    B, T = 6, 5
    old = torch.randn(B, T, generator=g) * 0.5 - 1.5
    logp = (old + torch.randn(B, T, generator=g) * 0.15).requires_grad_(True)
    adv = torch.randn(B, 1, generator=g)
    lengths = torch.tensor([5, 3, 1, 4, 2, 5])
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).float()
    return logp, old, adv, mask


def test_gspo_gradient_equals_per_answer_reference():
    logp, old, adv, mask = _random_answers(11)
    lo, hi = 0.05, 0.05
    loss, met = core.policy_loss(logp, old, adv, mask, lo, hi, "seq-mean-token-mean", ratio_level="sequence")
    (grad,) = torch.autograd.grad(loss, logp)
    ref = _gspo_reference(logp, old, adv, mask, lo, hi)
    (ref_grad,) = torch.autograd.grad(ref, logp)
    assert loss.item() == pytest.approx(ref.item(), abs=1e-6)
    assert_close(grad, ref_grad, atol=1e-6, rtol=0)
    assert 0 < met["clip_frac"] < 1  # some answers clipped, some not


@pytest.mark.parametrize("agg", LOSS_AGG_MODES)
def test_gspo_matches_verls_gspo_token_form(agg):
    """verl: log s_it = sg[log s_i] + logp_t - sg[logp_t]. Same value, same gradient (0/1 mask)."""
    logp, old, adv, mask = _random_answers(12)
    loss, _ = core.policy_loss(logp, old, adv, mask, 0.05, 0.05, agg, ratio_level="sequence")
    (grad,) = torch.autograd.grad(loss, logp)
    log_s = core.masked_mean(logp - old, mask, dim=-1).unsqueeze(-1)  # (B, 1)
    s_t = torch.exp(log_s.detach() + logp - logp.detach())  # (B, T)
    verl = core.aggregate_loss(torch.maximum(-adv * s_t, -adv * s_t.clamp(0.95, 1.05)), mask, agg)
    (verl_grad,) = torch.autograd.grad(verl, logp)
    assert loss.item() == pytest.approx(verl.item(), abs=1e-6)
    assert_close(grad, verl_grad, atol=1e-6, rtol=0)


def test_gspo_on_policy_is_grpo():
    logp, _, adv, mask = _random_answers(13)
    s = core.sequence_ratio(logp, logp.detach(), mask)
    assert torch.equal(s, torch.ones_like(s))  # exactly 1 on-policy
    gspo, met = core.policy_loss(
        logp, logp.detach(), adv, mask, 3e-4, 4e-4, "seq-mean-token-mean", ratio_level="sequence"
    )
    grpo, _ = core.policy_loss(logp, logp.detach(), adv, mask, 0.2, 0.2, "seq-mean-token-mean")
    (g_gspo,) = torch.autograd.grad(gspo, logp)
    (g_grpo,) = torch.autograd.grad(grpo, logp)
    assert gspo.item() == pytest.approx(grpo.item(), abs=1e-7)
    assert_close(g_gspo, g_grpo)
    assert met["clip_frac"] == 0.0


def test_unknown_ratio_level():
    logp, old, adv, mask = _random_answers(14)
    with pytest.raises(ValueError, match="unknown ratio_level 'answer'"):
        core.policy_loss(logp, old, adv, mask, ratio_level="answer")


# --------------------------------------------------------------------------- #
# The registered names reach the loss
# --------------------------------------------------------------------------- #


def _algo(name):
    policy = torch.nn.Linear(1, 1)  # the loss is never asked for the model
    policy.config = None
    return get_algorithm(name)(policy, make_config(name))


def test_gspo_and_dualclip_presets_wire_the_loss():
    from rlalgos.algorithms.base import Advantages

    logp, old, adv, mask = _random_answers(15)
    a = Advantages(adv, mask)
    gspo_loss, _ = _algo("gspo").policy_loss({"logprobs": logp}, a, old)
    expected, _ = core.policy_loss(logp, old, adv, mask, 3e-4, 4e-4, "seq-mean-token-mean", ratio_level="sequence")
    assert torch.equal(gspo_loss, expected)
    # dualclip: one A<0 token whose ratio is 5, so the bound -A*3 is in force
    logp, old, adv, mask = _dual_inputs()
    _, met = _algo("dualclip").policy_loss({"logprobs": logp}, Advantages(adv, mask), old)
    _, met_grpo = _algo("grpo").policy_loss({"logprobs": logp}, Advantages(adv, mask), old)
    assert met["clip_frac_dual"] == 0.25 and met_grpo["clip_frac_dual"] == 0.0
