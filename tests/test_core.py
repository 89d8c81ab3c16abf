"""Exact-value tests for ``rlalgos.core``.

Every expected number is either worked out by hand (the arithmetic is in a
comment next to it) or computed by a second, deliberately plain implementation
written here with Python loops over lists and the ``math`` module, never a copy
of the vectorised code under test.
"""

from __future__ import annotations

import math
import statistics

import pytest
import torch
from torch.testing import assert_close

from rlalgos import core

# --------------------------------------------------------------------------- #
# Plain reference implementations (lists + math only)
# --------------------------------------------------------------------------- #


def _softmax_list(z):
    m = max(z)
    e = [math.exp(v - m) for v in z]
    s = sum(e)
    return [v / s for v in e]


def _ref_logprob(logit_row, token, temperature):
    z = [v / temperature for v in logit_row]
    p = _softmax_list(z)
    return math.log(p[token])


def _ref_entropy(logit_row, temperature):
    z = [v / temperature for v in logit_row]
    p = _softmax_list(z)
    return -sum(pi * math.log(pi) for pi in p if pi > 0)


def _ref_gae(rewards, values, mask, gamma, lam):
    """Right-padded rows: the first sum(mask) tokens are real."""
    adv_out, ret_out = [], []
    for r, v, m in zip(rewards, values, mask):
        T = len(r)
        L = int(sum(m))
        assert all(x == 1 for x in m[:L]) and all(x == 0 for x in m[L:])
        adv = [0.0] * T
        ret = [0.0] * T
        running = 0.0
        for t in reversed(range(L)):
            next_v = v[t + 1] if t + 1 < L else 0.0  # no bootstrap past the last real token
            delta = r[t] + gamma * next_v - v[t]
            running = delta + gamma * lam * running
            adv[t] = running
            ret[t] = running + v[t]
        adv_out.append(adv)
        ret_out.append(ret)
    return adv_out, ret_out


def _ref_clipped_token_loss(logp, old_logp, adv, clip_low, clip_high):
    r = math.exp(logp - old_logp)
    lo = 1 - clip_low
    hi = 1 + clip_high
    rc = min(max(r, lo), hi)
    unclipped = -adv * r
    clipped = -adv * rc
    return max(unclipped, clipped), clipped > unclipped


def _ref_overlong(length, max_len, buffer):
    if length <= max_len - buffer:
        return 0.0
    if length <= max_len:
        return (max_len - buffer - length) / buffer
    return -1.0


def _t(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


# --------------------------------------------------------------------------- #
# token_logprobs / entropy_from_logits
# --------------------------------------------------------------------------- #


def test_token_logprobs_by_hand():
    # logits [0, 0, ln 2] -> exp = [1, 1, 2] -> p = [1/4, 1/4, 1/2]
    logits = _t([[[0.0, 0.0, math.log(2.0)], [0.0, 0.0, math.log(2.0)]]])  # (1, 2, 3)
    tokens = torch.tensor([[2, 0]])
    out = core.token_logprobs(logits, tokens)
    assert_close(out, _t([[math.log(0.5), math.log(0.25)]]))
    # temperature 2: z = [0, 0, ln2/2] -> exp = [1, 1, sqrt 2] -> p(2) = sqrt2 / (2 + sqrt2)
    out_t = core.token_logprobs(logits, tokens, temperature=2.0)
    s2 = math.sqrt(2.0)
    assert_close(out_t, _t([[math.log(s2 / (2 + s2)), math.log(1 / (2 + s2))]]))


@pytest.mark.parametrize("temperature", [1.0, 0.7, 2.5])
def test_token_logprobs_vs_plain_and_log_softmax(temperature):
    g = torch.Generator().manual_seed(0)
    B, T, V = 2, 3, 5
    logits = torch.randn(B, T, V, generator=g) * 3
    tokens = torch.randint(0, V, (B, T), generator=g)
    out = core.token_logprobs(logits, tokens, temperature=temperature)
    assert out.shape == (B, T)
    expected = [
        [_ref_logprob(logits[b, t].tolist(), int(tokens[b, t]), temperature) for t in range(T)] for b in range(B)
    ]
    assert_close(out, _t(expected), atol=1e-5, rtol=1e-5)
    # and agrees with a full log_softmax + gather
    ls = torch.log_softmax(logits / temperature, dim=-1)
    assert_close(out, ls.gather(-1, tokens.unsqueeze(-1)).squeeze(-1), atol=1e-5, rtol=1e-5)


def test_token_logprobs_upcasts_half_precision():
    logits = _t([[[1.0, 2.0, 3.0]]]).to(torch.bfloat16)
    out = core.token_logprobs(logits, torch.tensor([[2]]))
    assert out.dtype == torch.float32
    # p(2) = e^3 / (e + e^2 + e^3)
    expected = 3 - math.log(math.e + math.e**2 + math.e**3)
    assert out.item() == pytest.approx(expected, abs=1e-6)


def test_entropy_by_hand():
    # uniform over V=4 -> ln 4, at any temperature
    uniform = torch.zeros(1, 1, 4)
    assert core.entropy_from_logits(uniform).item() == pytest.approx(math.log(4), abs=1e-6)
    assert core.entropy_from_logits(uniform, temperature=0.3).item() == pytest.approx(math.log(4), abs=1e-6)
    # p = [1/4, 1/4, 1/2]: H = 2 * (1/4) ln 4 + (1/2) ln 2 = ln 2 + 0.5 ln 2 = 1.5 ln 2
    logits = _t([[[0.0, 0.0, math.log(2.0)]]])
    assert core.entropy_from_logits(logits).item() == pytest.approx(1.5 * math.log(2), abs=1e-6)
    # a near-one-hot distribution has (almost) zero entropy
    peaked = _t([[[0.0, 100.0, 0.0]]])
    assert core.entropy_from_logits(peaked).item() == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("temperature", [1.0, 0.5, 3.0])
def test_entropy_vs_explicit_p_log_p(temperature):
    g = torch.Generator().manual_seed(1)
    B, T, V = 2, 4, 6
    logits = torch.randn(B, T, V, generator=g) * 2
    out = core.entropy_from_logits(logits, temperature=temperature)
    expected = [[_ref_entropy(logits[b, t].tolist(), temperature) for t in range(T)] for b in range(B)]
    assert_close(out, _t(expected), atol=1e-5, rtol=1e-5)
    # explicit -sum p log p in torch
    p = torch.softmax(logits / temperature, -1)
    assert_close(out, -(p * torch.log(p)).sum(-1), atol=1e-5, rtol=1e-5)


def test_entropy_temperature_direction():
    logits = _t([[[0.0, 1.0, 2.0]]])
    h1 = core.entropy_from_logits(logits).item()
    assert (
        core.entropy_from_logits(logits, temperature=2.0).item()
        > h1
        > core.entropy_from_logits(logits, temperature=0.5).item()
    )


# --------------------------------------------------------------------------- #
# Masked reductions
# --------------------------------------------------------------------------- #

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
M = [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 1.0]]  # middle row all padding
# valid entries: 1, 2, 7, 9 -> sum 19, mean 4.75
# deviations -3.75, -2.75, 2.25, 4.25 -> squares 14.0625 + 7.5625 + 5.0625 + 18.0625 = 44.75
VAR_UNBIASED = 44.75 / 3
VAR_BIASED = 44.75 / 4


def test_masked_sum_and_mean():
    x, m = _t(X), _t(M)
    assert core.masked_sum(x, m).item() == pytest.approx(19.0)
    assert_close(core.masked_sum(x, m, dim=-1), _t([3.0, 0.0, 16.0]))  # 1+2, nothing, 7+9
    assert core.masked_mean(x, m).item() == pytest.approx(4.75)
    # per row: 3/2, empty row -> 0 (not nan), 16/2
    assert_close(core.masked_mean(x, m, dim=-1), _t([1.5, 0.0, 8.0]))
    # bool mask gives the same
    assert core.masked_mean(x, m.bool()).item() == pytest.approx(4.75)
    assert_close(core.masked_mean(x, m.bool(), dim=-1), _t([1.5, 0.0, 8.0]))
    # fully empty mask -> 0
    assert core.masked_mean(x, torch.zeros(3, 3)).item() == 0.0


def test_masked_var():
    x, m = _t(X), _t(M)
    assert core.masked_var(x, m).item() == pytest.approx(VAR_UNBIASED)
    assert core.masked_var(x, m, unbiased=False).item() == pytest.approx(VAR_BIASED)
    assert VAR_UNBIASED == pytest.approx(statistics.variance([1.0, 2.0, 7.0, 9.0]))
    assert VAR_BIASED == pytest.approx(statistics.pvariance([1.0, 2.0, 7.0, 9.0]))
    assert core.masked_var(x, m.bool()).item() == pytest.approx(VAR_UNBIASED)
    # a single valid entry: no Bessel correction possible -> 0, not nan/inf
    one = torch.zeros(3, 3)
    one[0, 1] = 1
    assert core.masked_var(x, one).item() == 0.0
    assert core.masked_var(x, torch.zeros(3, 3)).item() == 0.0


def test_masked_whiten():
    x, m = _t(X), _t(M)
    eps = 1e-8
    out = core.masked_whiten(x, m)
    sd = math.sqrt(VAR_UNBIASED + eps)
    expected = [[(v - 4.75) / sd for v in row] for row in X]  # padding comes out the same way
    assert_close(out, _t(expected))
    valid = [out[i, j].item() for i in range(3) for j in range(3) if M[i][j]]
    assert statistics.mean(valid) == pytest.approx(0.0, abs=1e-6)
    assert statistics.variance(valid) == pytest.approx(1.0, abs=1e-5)
    # shift_mean=False adds the mean back: scaled, not centred
    out2 = core.masked_whiten(x, m, shift_mean=False)
    assert_close(out2, _t([[(v - 4.75) / sd + 4.75 for v in row] for row in X]))


# --------------------------------------------------------------------------- #
# group_advantages / leave_one_out_baseline
# --------------------------------------------------------------------------- #


def test_group_advantages_by_hand():
    rewards = _t([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    # group 1: mean 0.5, deviations +-0.5, sum of squares 1, unbiased var 1/3 -> std sqrt(1/3) = 0.57735
    # group 2: all equal -> centred 0 -> advantage 0
    eps = 1e-6
    a = 0.5 / (math.sqrt(1 / 3) + eps)  # 0.866024...
    out = core.group_advantages(rewards, group_size=4, eps=eps)
    assert_close(out, _t([a, -a, -a, a, 0.0, 0.0, 0.0, 0.0]))
    # not the population std (0.5 -> 0.5/0.5 = 1.0)
    assert abs(out[0].item() - 1.0) > 0.1


def test_group_advantages_eps_outside_sqrt():
    rewards = _t([1.0, 0.0, 0.0, 1.0])
    out = core.group_advantages(rewards, group_size=4, eps=1.0)
    # eps outside:  0.5 / (sqrt(1/3) + 1) = 0.5 / 1.57735 = 0.316987
    outside = 0.5 / (math.sqrt(1 / 3) + 1.0)
    # eps inside:   0.5 / sqrt(1/3 + 1) = 0.5 / 1.154701 = 0.433013 (must NOT be this)
    inside = 0.5 / math.sqrt(1 / 3 + 1.0)
    # population std: 0.5 / (0.5 + 1) = 0.333333 (must NOT be this)
    assert out[0].item() == pytest.approx(outside, abs=1e-6)
    assert out[0].item() == pytest.approx(0.316987, abs=1e-6)
    assert abs(out[0].item() - inside) > 0.1
    assert abs(out[0].item() - 1 / 3) > 0.01
    assert_close(out, _t([outside, -outside, -outside, outside]))


def test_group_advantages_dr_grpo_scale_none():
    rewards = _t([1.0, 0.0, 0.0, 1.0, 3.0, 3.0, 3.0, 3.0, 2.0, 0.0, 0.0, 0.0])
    out = core.group_advantages(rewards, group_size=4, scale="none")
    # group 3: mean 0.5 -> [1.5, -0.5, -0.5, -0.5]
    assert_close(out, _t([0.5, -0.5, -0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 1.5, -0.5, -0.5, -0.5]))


def test_group_advantages_vs_plain_statistics():
    g = torch.Generator().manual_seed(2)
    rewards = torch.rand(12, generator=g) * 4
    G, eps = 3, 1e-4
    out = core.group_advantages(rewards, group_size=G, eps=eps)
    r = rewards.tolist()
    expected = []
    for p in range(len(r) // G):
        grp = r[p * G : (p + 1) * G]
        mu, sd = statistics.mean(grp), statistics.stdev(grp)
        expected += [(x - mu) / (sd + eps) for x in grp]
    assert_close(out, _t(expected), atol=1e-5, rtol=1e-5)


def test_group_advantages_all_equal_and_group_of_one():
    assert_close(core.group_advantages(_t([0.7] * 6), group_size=3), torch.zeros(6))
    assert_close(core.group_advantages(_t([0.0] * 4), group_size=4), torch.zeros(4))
    # group of one: nothing to compare with -> 0
    assert_close(core.group_advantages(_t([1.0, 5.0, -2.0]), group_size=1), torch.zeros(3))


def test_group_advantages_errors():
    with pytest.raises(ValueError):
        core.group_advantages(torch.zeros(7), group_size=4)
    with pytest.raises(ValueError):
        core.group_advantages(torch.zeros(8), group_size=4, scale="mad")


def test_leave_one_out_baseline_by_hand():
    rewards = _t([1.0, 0.0, 0.0, 1.0, 2.0, 4.0, 6.0, 8.0])
    out = core.leave_one_out_baseline(rewards, group_size=4)
    # group 1: (0+0+1)/3, (1+0+1)/3, (1+0+1)/3, (1+0+0)/3
    # group 2: sum 20 -> (20-2)/3=6, (20-4)/3, (20-6)/3, (20-8)/3=4
    assert_close(out, _t([1 / 3, 2 / 3, 2 / 3, 1 / 3, 6.0, 16 / 3, 14 / 3, 4.0]))
    # group of 2: the baseline is the other answer's reward
    assert_close(core.leave_one_out_baseline(_t([3.0, -1.0]), group_size=2), _t([-1.0, 3.0]))
    with pytest.raises(ValueError):
        core.leave_one_out_baseline(_t([1.0, 2.0]), group_size=1)


# --------------------------------------------------------------------------- #
# GAE
# --------------------------------------------------------------------------- #


def test_gae_by_hand_small():
    rewards = _t([[0.0, 0.0, 1.0]])
    values = _t([[0.5, 0.6, 0.7]])
    mask = torch.ones(1, 3)
    # gamma=1, lam=1: A_t = return-to-go (1 everywhere) - V_t = [0.5, 0.4, 0.3]; returns = 1
    adv, ret = core.gae(rewards, values, mask, gamma=1.0, lam=1.0)
    assert_close(adv, _t([[0.5, 0.4, 0.3]]))
    assert_close(ret, _t([[1.0, 1.0, 1.0]]))
    # lam=0: one-step TD  A0 = 0 + 0.6 - 0.5 = 0.1; A1 = 0 + 0.7 - 0.6 = 0.1; A2 = 1 + 0 - 0.7 = 0.3
    adv, ret = core.gae(rewards, values, mask, gamma=1.0, lam=0.0)
    assert_close(adv, _t([[0.1, 0.1, 0.3]]))
    assert_close(ret, _t([[0.6, 0.7, 1.0]]))
    # gamma=0.5, lam=0.5:
    # d2 = 1 - 0.7 = 0.3; d1 = 0 + 0.5*0.7 - 0.6 = -0.25; d0 = 0 + 0.5*0.6 - 0.5 = -0.2
    # A2 = 0.3; A1 = -0.25 + 0.25*0.3 = -0.175; A0 = -0.2 + 0.25*(-0.175) = -0.24375
    adv, ret = core.gae(rewards, values, mask, gamma=0.5, lam=0.5)
    assert_close(adv, _t([[-0.24375, -0.175, 0.3]]))
    assert_close(ret, _t([[0.25625, 0.425, 1.0]]))


def _gae_case():
    g = torch.Generator().manual_seed(3)
    B, T = 4, 5
    rewards = torch.randn(B, T, generator=g)
    values = torch.randn(B, T, generator=g)  # padding positions hold garbage on purpose
    lengths = [5, 3, 1, 0]  # right padding, including an all-padding row
    mask = torch.zeros(B, T)
    for b, L in enumerate(lengths):
        mask[b, :L] = 1
    return rewards, values, mask


@pytest.mark.parametrize("gamma,lam", [(1.0, 0.95), (0.9, 0.8), (1.0, 1.0), (0.99, 0.0), (1.0, 0.0)])
def test_gae_vs_plain_double_loop(gamma, lam):
    rewards, values, mask = _gae_case()
    adv, ret = core.gae(rewards, values, mask, gamma=gamma, lam=lam)
    ref_adv, ref_ret = _ref_gae(rewards.tolist(), values.tolist(), mask.tolist(), gamma, lam)
    assert_close(adv, _t(ref_adv), atol=1e-5, rtol=1e-5)
    assert_close(ret, _t(ref_ret), atol=1e-5, rtol=1e-5)
    # padding is exactly 0 in both outputs
    assert (adv[mask == 0] == 0).all() and (ret[mask == 0] == 0).all()


def test_gae_gamma1_lam1_is_return_to_go_minus_value():
    rewards, values, mask = _gae_case()
    adv, ret = core.gae(rewards, values, mask, gamma=1.0, lam=1.0)
    R, V, Mk = rewards.tolist(), values.tolist(), mask.tolist()
    for b in range(len(R)):
        L = int(sum(Mk[b]))
        for t in range(L):
            rtg = sum(R[b][t:L])
            assert adv[b, t].item() == pytest.approx(rtg - V[b][t], abs=1e-5)
            assert ret[b, t].item() == pytest.approx(rtg, abs=1e-5)


def test_gae_lam0_is_one_step_td():
    rewards, values, mask = _gae_case()
    gamma = 0.9
    adv, _ = core.gae(rewards, values, mask, gamma=gamma, lam=0.0)
    R, V, Mk = rewards.tolist(), values.tolist(), mask.tolist()
    for b in range(len(R)):
        L = int(sum(Mk[b]))
        for t in range(L):
            nv = V[b][t + 1] if t + 1 < L else 0.0
            assert adv[b, t].item() == pytest.approx(R[b][t] + gamma * nv - V[b][t], abs=1e-5)


# --------------------------------------------------------------------------- #
# KL estimators
# --------------------------------------------------------------------------- #


def test_kl_estimators_by_hand():
    logp = _t([[-1.0, -2.0, -0.5]])
    ref = _t([[-1.5, -1.0, -0.5]])
    # d = ref - logp = [-0.5, 1.0, 0.0]
    assert_close(core.kl_estimate(logp, ref, "k1"), _t([[0.5, -1.0, 0.0]]))  # -d
    assert_close(core.kl_estimate(logp, ref, "k2"), _t([[0.125, 0.5, 0.0]]))  # d^2/2
    # k3 = e^d - d - 1: e^-0.5 + 0.5 - 1 = 0.1065307; e - 2 = 0.7182818; 0
    assert_close(core.kl_estimate(logp, ref, "k3"), _t([[math.exp(-0.5) - 0.5, math.e - 2.0, 0.0]]))
    assert_close(core.kl_estimate(logp, ref), _t([[0.1065307, 0.7182818, 0.0]]))  # default k3
    with pytest.raises(ValueError):
        core.kl_estimate(logp, ref, "k4")


def test_kl_k3_nonnegative_and_zero_on_equal():
    g = torch.Generator().manual_seed(4)
    logp = torch.randn(6, 7, generator=g) * 3
    ref = torch.randn(6, 7, generator=g) * 3
    assert (core.kl_estimate(logp, ref, "k3") >= 0).all()
    assert (core.kl_estimate(logp, ref, "k2") >= 0).all()
    assert (core.kl_estimate(logp, ref, "k1") < 0).any()  # k1 can be negative per token
    assert_close(core.kl_estimate(logp, logp, "k3"), torch.zeros(6, 7))


def test_kl_clamps():
    logp = _t([[0.0, 0.0, 0.0, 0.0]])
    ref = _t([[30.0, -30.0, 20.0, 3.0]])
    # d clamped to [-20, 20]: [20, -20, 20, 3]
    assert_close(core.kl_estimate(logp, ref, "k1"), _t([[-20.0, 20.0, -20.0, -3.0]]))
    assert_close(core.kl_estimate(logp, ref, "k2"), _t([[200.0, 200.0, 200.0, 4.5]]))
    # k3: e^20 - 21 -> 10 (clamped); e^-20 + 19 -> 10 (clamped); e^3 - 4 = 16.09 -> 10
    k3 = core.kl_estimate(logp, ref, "k3")
    assert_close(k3, _t([[10.0, 10.0, 10.0, 10.0]]))
    assert torch.isfinite(k3).all()
    # small d is not clamped: d = 1.5 -> e^1.5 - 2.5 = 1.981689
    assert core.kl_estimate(_t([[0.0]]), _t([[1.5]]), "k3").item() == pytest.approx(math.exp(1.5) - 2.5, abs=1e-5)


def test_kl_k1_k3_expectations_equal_true_kl():
    # Weight every token of a small categorical by pi: E_pi[k1] = E_pi[k3] = KL(pi || ref) exactly.
    pi = [0.5, 0.3, 0.2]
    q = [0.2, 0.2, 0.6]
    kl = sum(p * math.log(p / r) for p, r in zip(pi, q))
    logp = torch.log(_t([pi]))
    ref = torch.log(_t([q]))
    w = _t([pi])
    for kind in ("k1", "k3"):
        assert (core.kl_estimate(logp, ref, kind) * w).sum().item() == pytest.approx(kl, abs=1e-6)
    # k2 is biased: E_pi[d^2/2] != KL here
    assert abs((core.kl_estimate(logp, ref, "k2") * w).sum().item() - kl) > 1e-3


# --------------------------------------------------------------------------- #
# Loss aggregation
# --------------------------------------------------------------------------- #

LOSS = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
LMASK = [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]  # ragged: lengths 3 and 1


def test_aggregate_loss_modes_by_hand():
    lm, m = _t(LOSS), _t(LMASK)
    # token-mean: (1 + 2 + 3 + 4) / 4 = 2.5
    tm = core.aggregate_loss(lm, m, "token-mean").item()
    assert tm == pytest.approx(2.5)
    # seq-mean-token-mean: ((1+2+3)/3 + 4/1) / 2 = (2 + 4) / 2 = 3.0
    sm = core.aggregate_loss(lm, m, "seq-mean-token-mean").item()
    assert sm == pytest.approx(3.0)
    # seq-mean-token-sum-norm: 10 / (B * T) = 10 / 6
    assert core.aggregate_loss(lm, m, "seq-mean-token-sum-norm").item() == pytest.approx(10 / 6)
    # with L_max = 5: 10 / (2 * 5) = 1.0
    assert core.aggregate_loss(lm, m, "seq-mean-token-sum-norm", max_len=5).item() == pytest.approx(1.0)
    # the two "mean" modes really differ on a ragged batch
    assert tm != pytest.approx(sm)
    # default is token-mean; bool mask works
    assert core.aggregate_loss(lm, m.bool()).item() == pytest.approx(2.5)
    with pytest.raises(ValueError):
        core.aggregate_loss(lm, m, "sum")


def test_aggregate_loss_modes_agree_on_full_equal_lengths():
    lm = _t(LOSS)
    m = torch.ones(2, 3)
    # all 21/6 = 3.5 when every answer has all T tokens
    for mode in core.LOSS_AGG_MODES:
        assert core.aggregate_loss(lm, m, mode).item() == pytest.approx(3.5)


def test_aggregate_loss_per_answer_weights_scale_their_answers():
    """A weight w_i on every token of answer i (dapo's downweight) makes its share w_i
    times what it was, in every mode (in seq-mean-token-mean it used to cancel out)."""
    lm = _t(LOSS)
    w = _t([[0.1, 0.1, 0.1], [1.0, 0.0, 0.0]])  # answer 0 down-weighted to 0.1
    # ((1+2+3) * 0.1 / 3 + 4 / 1) / 2 = (0.2 + 4) / 2
    assert core.aggregate_loss(lm, w, "seq-mean-token-mean").item() == pytest.approx(2.1)
    # token-mean: a weighted mean over tokens: (0.6 + 4) / (0.3 + 1)
    assert core.aggregate_loss(lm, w, "token-mean").item() == pytest.approx(4.6 / 1.3)
    assert core.aggregate_loss(lm, w, "seq-mean-token-sum-norm").item() == pytest.approx(4.6 / 6)
    # weight 0 = the answer only counts as one answer of B (as an empty answer does)
    z = _t([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    assert core.aggregate_loss(lm, z, "seq-mean-token-mean").item() == pytest.approx(2.0)


def test_aggregate_loss_empty_rows():
    lm = _t(LOSS)
    m = _t([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    assert core.aggregate_loss(lm, m, "token-mean").item() == pytest.approx(1.5)  # (1+2)/2
    # the empty answer contributes 0 but still counts: (1.5 + 0) / 2
    assert core.aggregate_loss(lm, m, "seq-mean-token-mean").item() == pytest.approx(0.75)
    assert core.aggregate_loss(lm, torch.zeros(2, 3), "token-mean").item() == 0.0


# --------------------------------------------------------------------------- #
# Policy loss
# --------------------------------------------------------------------------- #

RATIOS = [0.5, 0.9, 1.1, 1.25, 1.3]


def _policy_inputs():
    logp = torch.log(_t([RATIOS, RATIOS]))
    old = torch.zeros(2, 5)
    adv = _t([[1.0], [-1.0]])  # (B, 1): row 0 positive, row 1 negative advantage
    return logp, old, adv


def test_policy_loss_symmetric_clip_by_hand():
    logp, old, adv = _policy_inputs()
    loss, met = core.policy_loss(logp, old, adv, torch.ones(2, 5), 0.2, 0.2)
    # clip range [0.8, 1.2]
    # A=+1: l = max(-r, -clip r): 0.5->-0.5, 0.9->-0.9, 1.1->-1.1, 1.25->-1.2 (clip), 1.3->-1.2 (clip)
    #       row sum -4.9
    # A=-1: l = max(r, clip r):   0.5->0.8 (clip), 0.9, 1.1, 1.25, 1.3 (unclipped: r > clip r)
    #       row sum 0.8+0.9+1.1+1.25+1.3 = 5.35
    # token-mean: (-4.9 + 5.35) / 10 = 0.045
    assert loss.item() == pytest.approx(0.045, abs=1e-6)
    assert met["clip_frac"] == pytest.approx(3 / 10)
    assert met["clip_frac_low"] == pytest.approx(1 / 10)  # (A<0, r=0.5)
    assert met["clip_frac_high"] == pytest.approx(2 / 10)  # (A>0, r=1.25, 1.3)
    # ratio_mean: (0.5+0.9+1.1+1.25+1.3)/5 = 1.01
    assert met["ratio_mean"] == pytest.approx(1.01, abs=1e-6)
    # approx_kl = mean(r - 1 - ln r)
    akl = statistics.mean(
        [r - 1 - math.log(r) for r in RATIOS]
    )  # (0.193147 + 0.005361 + 0.004690 + 0.026856 + 0.037636) / 5 = 0.053538
    assert met["approx_kl"] == pytest.approx(akl, abs=1e-6)
    assert met["approx_kl"] == pytest.approx(0.0535379, abs=1e-6)


def test_policy_loss_clip_higher_asymmetric():
    logp, old, adv = _policy_inputs()
    loss, met = core.policy_loss(logp, old, adv, torch.ones(2, 5), clip_low=0.2, clip_high=0.28)
    # clip range [0.8, 1.28]
    # A=+1: 1.25 now inside (-1.25, not clipped); 1.3 -> -1.28 (clipped)
    #       row sum -0.5-0.9-1.1-1.25-1.28 = -5.03
    # A=-1: unchanged, 0.5 -> 0.8 clipped, row sum 5.35
    # token-mean: (-5.03 + 5.35) / 10 = 0.032
    assert loss.item() == pytest.approx(0.032, abs=1e-6)
    assert met["clip_frac"] == pytest.approx(2 / 10)
    assert met["clip_frac_low"] == pytest.approx(1 / 10)
    assert met["clip_frac_high"] == pytest.approx(1 / 10)


def test_policy_loss_masked_ragged():
    logp, old, adv = _policy_inputs()
    mask = _t([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    loss, met = core.policy_loss(logp, old, adv, mask, 0.2, 0.2)
    # row 1 drops r=1.3 (1.3): (-4.9 + 5.35 - 1.3) / 9 = -0.85 / 9
    assert loss.item() == pytest.approx(-0.85 / 9, abs=1e-6)
    assert met["clip_frac"] == pytest.approx(3 / 9)
    assert met["clip_frac_low"] == pytest.approx(1 / 9)
    assert met["clip_frac_high"] == pytest.approx(2 / 9)
    # seq-mean-token-mean: (-4.9/5 + 4.05/4) / 2 = (-0.98 + 1.0125) / 2 = 0.01625
    loss_s, _ = core.policy_loss(logp, old, adv, mask, 0.2, 0.2, agg="seq-mean-token-mean")
    assert loss_s.item() == pytest.approx(0.01625, abs=1e-6)


def test_policy_loss_vs_plain_reference():
    g = torch.Generator().manual_seed(7)
    B, T = 3, 6
    logp = torch.randn(B, T, generator=g) * 0.3 - 1
    old = logp + torch.randn(B, T, generator=g) * 0.5
    adv = torch.randn(B, T, generator=g)
    mask = _t([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4])
    cl, ch = 0.2, 0.28
    loss, met = core.policy_loss(logp, old, adv, mask, cl, ch)
    tot, n, nclip, nlow, nhigh = 0.0, 0, 0, 0, 0
    for b in range(B):
        for t in range(T):
            if not mask[b, t]:
                continue
            a = adv[b, t].item()
            loss_t, c = _ref_clipped_token_loss(logp[b, t].item(), old[b, t].item(), a, cl, ch)
            tot += loss_t
            n += 1
            nclip += c
            nlow += c and a < 0
            nhigh += c and a > 0
    assert loss.item() == pytest.approx(tot / n, abs=1e-5)
    assert met["clip_frac"] == pytest.approx(nclip / n)
    assert met["clip_frac_low"] == pytest.approx(nlow / n)
    assert met["clip_frac_high"] == pytest.approx(nhigh / n)
    assert nlow > 0 and nhigh > 0 and nclip < n  # the case exercises both clip sides and unclipped tokens


def test_policy_loss_gradient_zero_on_clipped_tokens():
    logp0, old, adv = _policy_inputs()
    logp = logp0.clone().requires_grad_(True)
    loss, _ = core.policy_loss(logp, old, adv, torch.ones(2, 5), 0.2, 0.2)
    loss.backward()
    # d l / d logp = -A * r on unclipped tokens, 0 on clipped ones; / 10 tokens
    expected = [
        [-r / 10 if r <= 1.2 else 0.0 for r in RATIOS],  # A=+1: 1.25, 1.3 clipped
        [r / 10 if r >= 0.8 else 0.0 for r in RATIOS],  # A=-1: 0.5 clipped
    ]
    assert_close(logp.grad, _t(expected))


def test_policy_loss_no_clip_is_reinforce():
    g = torch.Generator().manual_seed(6)
    B, T = 3, 4
    logp = (torch.randn(B, T, generator=g) - 1).requires_grad_(True)
    adv = torch.randn(B, T, generator=g)
    mask = _t([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    loss, met = core.policy_loss(logp, logp.detach(), adv, mask, None, None)
    # ratio is exactly 1: loss = -sum(A m) / sum(m)
    n = 7
    assert loss.item() == pytest.approx(-(adv * mask).sum().item() / n, abs=1e-6)
    assert met["clip_frac"] == 0.0 and met["clip_frac_low"] == 0.0 and met["clip_frac_high"] == 0.0
    assert met["approx_kl"] == pytest.approx(0.0, abs=1e-7)
    assert met["ratio_mean"] == pytest.approx(1.0)
    (grad,) = torch.autograd.grad(loss, logp)
    # REINFORCE: -A * grad log pi, token-mean over the 7 valid tokens
    logp2 = logp.detach().clone().requires_grad_(True)
    (-(adv * logp2 * mask).sum() / n).backward()
    assert_close(grad, logp2.grad)
    assert_close(grad, -adv * mask / n)


def test_policy_loss_no_clip_large_ratio_unclipped():
    logp, old, adv = _policy_inputs()
    loss, met = core.policy_loss(logp, old, adv, torch.ones(2, 5), None, None)
    # l = -A r: row sums -5.05 and +5.05 -> 0
    assert loss.item() == pytest.approx(0.0, abs=1e-6)
    assert met["clip_frac"] == 0.0


def test_policy_loss_one_sided_clip():
    logp, old, adv = _policy_inputs()
    # only an upper bound 1.28; no lower bound: A=-1, r=0.5 is no longer clipped
    loss, met = core.policy_loss(logp, old, adv, torch.ones(2, 5), clip_low=None, clip_high=0.28)
    # row 0 sum -5.03 (as in clip-higher); row 1 = sum r = 5.05 -> 0.02 / 10 = 0.002
    assert loss.item() == pytest.approx(0.002, abs=1e-6)
    assert met["clip_frac"] == pytest.approx(1 / 10)
    assert met["clip_frac_low"] == 0.0
    assert met["clip_frac_high"] == pytest.approx(1 / 10)


# --------------------------------------------------------------------------- #
# Value loss and explained variance
# --------------------------------------------------------------------------- #

V_NEW = [[1.0, 2.0, 0.0, 3.0]]
V_OLD = [[0.5, 2.0, 0.5, 2.5]]
V_RET = [[2.0, 1.0, 0.0, 2.0]]


def test_value_loss_clipped_by_hand():
    v, vo, R = _t(V_NEW), _t(V_OLD), _t(V_RET)
    # t0: v_clip = 0.5 + clip(0.5) = 0.7; err = (1-2)^2 = 1; err_clip = (0.7-2)^2 = 1.69 -> 1.69 (clipped)
    # t1: v_clip = 2.0;                    err = 1;         err_clip = 1               -> 1 (tie: not clipped)
    # t2: v_clip = 0.5 - 0.2 = 0.3;        err = 0;         err_clip = 0.09            -> 0.09 (clipped)
    # t3: v_clip = 2.5 + 0.2 = 2.7;        err = 1;         err_clip = 0.49            -> 1 (not clipped)
    # 0.5 * [1.69, 1, 0.09, 1] = [0.845, 0.5, 0.045, 0.5]; mean = 1.89 / 4 = 0.4725
    loss, met = core.value_loss(v, vo, R, torch.ones(1, 4), clip=0.2)
    assert loss.item() == pytest.approx(0.4725, abs=1e-6)
    assert met["value_clip_frac"] == pytest.approx(0.5)
    # mask out t0: (0.5 + 0.045 + 0.5) / 3 = 0.348333; clip_frac 1/3
    loss, met = core.value_loss(v, vo, R, _t([[0, 1, 1, 1]]), clip=0.2)
    assert loss.item() == pytest.approx(1.045 / 3, abs=1e-6)
    assert met["value_clip_frac"] == pytest.approx(1 / 3)


def test_value_loss_unclipped_by_hand():
    v, vo, R = _t(V_NEW), _t(V_OLD), _t(V_RET)
    # 0.5 * [1, 1, 0, 1] -> mean 0.375
    loss, met = core.value_loss(v, vo, R, torch.ones(1, 4), clip=None)
    assert loss.item() == pytest.approx(0.375, abs=1e-6)
    assert met["value_clip_frac"] == 0.0


def test_explained_variance():
    R = _t([[1.0, 2.0, 3.0, 4.0, 99.0]])
    mask = _t([[1, 1, 1, 1, 0]])
    # perfect critic -> 1
    assert core.explained_variance(R.clone(), R, mask) == pytest.approx(1.0)
    # constant critic: Var(R - c) = Var(R) -> 0
    assert core.explained_variance(torch.full_like(R, 5.0), R, mask) == pytest.approx(0.0, abs=1e-6)
    # V = [1, 2, 3, 3]: R - V = [0, 0, 0, 1], var = (3*0.0625 + 0.5625)/3 = 0.25
    # Var(R) = (2.25 + 0.25 + 0.25 + 2.25)/3 = 5/3 -> EV = 1 - 0.25 / (5/3) = 0.85
    V = _t([[1.0, 2.0, 3.0, 3.0, -50.0]])  # padding garbage ignored
    assert core.explained_variance(V, R, mask) == pytest.approx(0.85, abs=1e-6)
    # worse than constant -> negative: V = -R -> Var(2R)/Var(R) = 4 -> 1 - 4 = -3
    assert core.explained_variance(-R, R, mask) == pytest.approx(-3.0, abs=1e-5)
    # constant returns: undefined
    assert math.isnan(core.explained_variance(R, torch.ones_like(R), mask))


# --------------------------------------------------------------------------- #
# Overlong penalty and pass@k
# --------------------------------------------------------------------------- #


def test_overlong_penalty_by_hand():
    # L_max = 20, L_c = 4 -> no penalty up to 16
    lengths = torch.tensor([10, 16, 17, 18, 19, 20, 21, 50])
    out = core.overlong_penalty(lengths, max_len=20, buffer=4)
    # 17: (16-17)/4 = -0.25; 18: -0.5; 19: -0.75; 20: (16-20)/4 = -1; beyond: -1
    assert_close(out, _t([0.0, 0.0, -0.25, -0.5, -0.75, -1.0, -1.0, -1.0]))
    assert out.dtype.is_floating_point


def test_overlong_penalty_vs_plain_piecewise():
    for max_len, buffer in [(20, 4), (10, 10), (7, 1), (100, 37)]:
        lengths = list(range(0, max_len + 5))
        out = core.overlong_penalty(torch.tensor(lengths), max_len, buffer)
        assert_close(out, _t([_ref_overlong(L, max_len, buffer) for L in lengths]))
        assert (out <= 0).all() and (out >= -1).all()


def test_overlong_penalty_bad_buffer():
    for buffer in (0, -3, 21):
        with pytest.raises(ValueError):
            core.overlong_penalty(torch.tensor([5]), max_len=20, buffer=buffer)


def test_pass_at_k_by_hand():
    # n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5
    assert core.pass_at_k(4, 1, 2) == pytest.approx(0.5)
    # k=1 is the plain success rate c/n
    assert core.pass_at_k(10, 3, 1) == pytest.approx(0.3)
    # no correct -> 0; too few wrong to fill k -> 1
    assert core.pass_at_k(5, 0, 3) == 0.0
    assert core.pass_at_k(5, 3, 3) == 1.0
    assert core.pass_at_k(5, 5, 5) == 1.0
    with pytest.raises(ValueError):
        core.pass_at_k(3, 1, 4)


def test_pass_at_k_vs_math_comb():
    for n in range(1, 13):
        for c in range(0, n + 1):
            for k in range(1, n + 1):
                expected = 1.0 - math.comb(n - c, k) / math.comb(n, k)
                assert core.pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12), (n, c, k)
