"""Each algorithm's full loss on a fixed hand-made batch, smoke runs, and the DAPO switches."""

import dataclasses
import math

import pytest
import torch

from rlalgos.algorithms import ALGORITHMS, get_algorithm, make_config
from rlalgos.algorithms.dapo import DAPO
from rlalgos.algorithms.grpo import GRPO
from rlalgos.algorithms.ppo import PPO
from rlalgos.algorithms.reinforce import Reinforce
from rlalgos.config import parse_stages
from rlalgos.record import Diagnostics, Rollout
from rlalgos.train import TrainConfig, train

# A fixed batch: 2 prompts x G=2 answers, T=3 tokens; answer 1 is 2 tokens long.
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
REWARDS = torch.tensor([1.0, 0.0, 1.0, 1.0])
OLD = torch.log(torch.tensor([[0.5, 0.5, 0.5], [0.4, 0.4, 0.4], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]))
NEW = torch.log(torch.tensor([[0.65, 0.5, 0.55], [0.2, 0.4, 0.4], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]))
REF = torch.log(torch.tensor([[0.5, 0.25, 0.5], [0.4, 0.4, 0.4], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]))


def fixed_rollout(**kw) -> Rollout:
    N, T = MASK.shape
    fields = dict(
        prompts=["p0", "p0", "p1", "p1"],
        completions=["a", "b", "c", "d"],
        rows=[{}] * 4,
        prompt_ids=torch.ones(N, 1, dtype=torch.long),
        prompt_mask=torch.ones(N, 1, dtype=torch.long),
        completion_ids=torch.ones(N, T, dtype=torch.long),
        completion_mask=MASK.clone(),
        truncated=torch.tensor([True, False, False, False]),
        old_logprobs=OLD.clone(),
        ref_logprobs=REF.clone(),
        rewards=REWARDS.clone(),
        reward_parts={"correct": REWARDS.clone()},
        group_size=2,
    )
    fields.update(kw)
    return Rollout(**fields)


def _declared(rec) -> dict:
    """Every tensor or list field of ``rec`` and of its nested records, by name: what it holds and how it is declared."""
    out = {}
    for f in dataclasses.fields(rec):
        v = getattr(rec, f.name)
        if dataclasses.is_dataclass(v):
            out.update(_declared(v))
        elif isinstance(v, (torch.Tensor, list)) or f.name == "reward_parts":
            out[f.name] = (v, f.metadata.get("columns"), f.metadata.get("rows", False))
    return out


def test_every_row_and_token_field_is_declared_and_selected_trimmed_and_concatenated():
    """A (N, T, ...) field is declared once (record.per_token), an (N,) one too (record.per_row), in the
    rollout or its diagnostics: select() picks them, trimmed() cuts and concat() re-pads or joins them."""
    N, T = MASK.shape
    diagnostics = Diagnostics(
        old_entropy=torch.rand(N, T),
        old_kl_exact=torch.rand(N, T),
        ref_logits=torch.rand(N, T, 5),
        ref_rows=torch.tensor([True, False, True, False]),
        seconds={"generate": 1.0},
    )
    ro = fixed_rollout(
        rollout_logprobs=OLD.clone(),
        diagnostics=diagnostics,
        completion_mask=MASK * torch.tensor([[1.0], [1.0], [1.0], [0.0]]),
        prompt_ids=torch.ones(N, 2, dtype=torch.long),
        prompt_mask=torch.tensor([[0, 1]] * N),
    )
    fields = _declared(ro)
    assert {k for k, (v, cols, _) in fields.items() if isinstance(v, torch.Tensor) and v.dim() >= 2} == {
        k for k, (_, cols, _) in fields.items() if cols
    }  # every per-token tensor is declared as one
    assert all(cols or rows for _, cols, rows in fields.values())  # every (N,) one as per-row
    completion = {k for k, (_, cols, _) in fields.items() if cols == "completion"}
    assert {"old_entropy", "old_kl_exact", "ref_logits", "rollout_logprobs"} <= completion
    get = lambda r, k: getattr(r.diagnostics, k) if hasattr(r.diagnostics, k) else getattr(r, k)  # noqa: E731
    short = ro.select([1]).trimmed()  # answer 1 is 2 tokens long, its prompt 1
    assert all(get(short, k).shape[1] == 2 for k in completion) and short.prompt_ids.shape[1] == 1
    assert short.diagnostics.ref_rows.tolist() == [False] and short.completions == ["b"]
    both = Rollout.concat([short, ro.select([0])])
    for k in completion:
        assert get(both, k).shape[:2] == (2, T), k
        torch.testing.assert_close(get(both, k)[1], get(ro, k)[0])
        assert get(both, k)[0, 2:].eq(0).all(), k  # right-padded
    assert both.prompt_ids.shape == (2, 2) and both.prompt_mask[0].tolist() == [0, 1]  # left-padded
    assert both.diagnostics.ref_rows.tolist() == [False, True] and both.diagnostics.seconds == {"generate": 2.0}
    plain = Rollout.concat([short, fixed_rollout().select([2])])  # a part without diagnostics
    assert plain.diagnostics.ref_rows.tolist() == [False, True]  # no ref_rows: every row was measured
    assert plain.diagnostics.old_entropy is None and plain.rollout_logprobs is None  # not every part has them
    assert plain.rewards.tolist() == [0.0, 1.0] and plain.reward_parts["correct"].tolist() == [0.0, 1.0]


def make(algo_cls, **cfg):
    policy = torch.nn.Linear(1, 1)  # the loss tests never call the model
    policy.config = None
    return algo_cls(policy, algo_cls.Config(**cfg))


def test_reinforce_loss_by_hand():
    algo = make(Reinforce, baseline="leave_one_out")
    ro = fixed_rollout()
    adv = algo.advantages(ro)
    # rloo: group 0 rewards (1, 0) -> baselines (0, 1) -> advantages (1, -1); group 1 all 1 -> 0
    torch.testing.assert_close(adv.values.squeeze(-1), torch.tensor([1.0, -1.0, 0.0, 0.0]))
    loss, m = algo.loss(ro, {"logprobs": NEW.requires_grad_()}, adv, NEW.detach())
    # ratio 1: loss = mean over the 11 tokens of -A = (-1*3 + 1*2) / 11
    assert loss.item() == pytest.approx(-1 / 11)
    loss.backward()
    # gradient of -A * ratio at ratio 1 is -A / 11 on each valid token
    torch.testing.assert_close(NEW.grad, -adv.values * MASK / 11)
    NEW.grad = None


def test_reinforce_kl_penalty_in_reward():
    algo = make(Reinforce, baseline="none", kl_coef=0.5, kl_estimator="k1")
    ro = fixed_rollout()
    adv = algo.advantages(ro).values.squeeze(-1)
    # answer 0: k1 = old - ref summed = (0) + log(0.5/0.25) + 0 = log 2 -> 1 - 0.5 log 2
    assert adv[0].item() == pytest.approx(1 - 0.5 * math.log(2))
    assert adv[1:].tolist() == pytest.approx([0.0, 1.0, 1.0])


def test_grpo_loss_by_hand():
    algo = make(GRPO, kl_coef=0.1)  # seq-mean-token-mean, clip 0.2, k3
    ro = fixed_rollout()
    adv = algo.advantages(ro)
    # group (1, 0): mean 0.5, unbiased std sqrt(0.5) -> +-0.5/(0.70711 + 1e-6)
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    torch.testing.assert_close(adv.values.squeeze(-1), torch.tensor([a, -a, 0.0, 0.0]))
    loss, m = algo.loss(ro, {"logprobs": NEW}, adv, OLD)
    # answer 0 (A=a): ratios 1.3, 1.0, 1.1 -> clipped 1.2, 1.0, 1.1 -> -a * 3.3 / 3
    # answer 1 (A=-a): ratios 0.5, 1.0 -> max(0.5a, 0.8a), max(a, a) -> (0.8a + a) / 2
    pg = ((-a * (1.2 + 1.0 + 1.1)) / 3 + (0.8 * a + a) / 2 + 0 + 0) / 4
    assert m["pg_loss"] == pytest.approx(pg, abs=1e-6)

    # k3 per token, d = ref - new: answer 0: log(.5/.65), log(.25/.5), log(.5/.55); answer 1: log 2, 0
    def k3(d):
        return math.exp(d) - d - 1

    kl0 = (k3(math.log(0.5 / 0.65)) + k3(math.log(0.5)) + k3(math.log(0.5 / 0.55))) / 3
    kl1 = (k3(math.log(0.4 / 0.2)) + 0) / 2
    assert m["kl_loss"] == pytest.approx((kl0 + kl1) / 4, abs=1e-6)
    assert loss.item() == pytest.approx(pg + 0.1 * (kl0 + kl1) / 4, abs=1e-6)
    # clip fractions over 11 tokens: one high (1.3 with A>0), one low (0.5 with A<0)
    assert m["clip_frac_high"] == pytest.approx(1 / 11) and m["clip_frac_low"] == pytest.approx(1 / 11)


def test_dapo_loss_by_hand():
    algo = make(DAPO, overlong_penalty=False)  # token-mean, clip 0.2 / 0.28, no KL
    ro = fixed_rollout()
    adv = algo.advantages(ro)
    loss, m = algo.loss(ro, {"logprobs": NEW}, adv, OLD)
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    # clip-higher: 1.3 is clipped at 1.28 now; token-mean over 11 tokens
    pg = (-a * (1.28 + 1.0 + 1.1) + (0.8 * a + a)) / 11
    assert loss.item() == pytest.approx(pg, abs=1e-6)
    assert m["kl_coef"] == 0.0


def test_dapo_overlong_penalty_and_filter():
    algo = make(DAPO, overlong_buffer=2, overlong_filter=True)
    algo.max_new_tokens = 3
    ro = fixed_rollout()
    adv = algo.advantages(ro)
    # lengths 3, 2, 3, 3 with L_max 3, L_c 2: penalties (1 - |y|) / 2 = -1, -0.5, -1, -1 -> rewards 0, -0.5, 0, 0
    a = 0.25 / (math.sqrt(0.125) + 1e-6)  # group 0: +-0.25 around its mean, unbiased std sqrt(0.125)
    torch.testing.assert_close(adv.values.squeeze(-1), torch.tensor([a, -a, 0.0, 0.0]), atol=1e-5, rtol=0)
    # the truncated answer 0 is masked out of the loss
    assert adv.mask[0].sum() == 0 and adv.mask[1].sum() == 2
    assert adv.metrics["overlong_penalty"] == pytest.approx(-3.5 / 4)


class FixedCriticPPO(PPO):
    """PPO whose critic is a fixed table of values (the loss tests never call a model)."""

    table = torch.zeros(4, 3)

    def make_critic(self, policy):
        return None

    def values(self, mb):
        return self.table[: len(mb)] * mb.completion_mask


def test_ppo_loss_by_hand():
    algo = make(FixedCriticPPO, kl_coef=0.0, whiten=False, lam=1.0, gamma=1.0, vf_coef=0.5)
    values = torch.tensor([[0.5, 0.5, 0.5], [0.2, 0.2, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    algo.table = values
    ro = fixed_rollout()
    adv = algo.advantages(ro)
    # gamma = lam = 1: A_t = R - V_t on valid tokens
    torch.testing.assert_close(adv.values, (REWARDS.unsqueeze(-1) - values) * MASK)
    torch.testing.assert_close(adv.extras["returns"], REWARDS.unsqueeze(-1) * MASK)
    loss, m = algo.loss(ro, {"logprobs": OLD}, adv, OLD)
    # ratio 1: pg = mean(-A) over 11 tokens; new values = old values -> value loss = 0.5 mean (V - R)^2
    pg = -(adv.values * MASK).sum() / 11
    vl = 0.5 * (((values - REWARDS.unsqueeze(-1)) ** 2) * MASK).sum() / 11
    assert m["pg_loss"] == pytest.approx(pg.item()) and m["value_loss"] == pytest.approx(vl.item())
    assert loss.item() == pytest.approx((pg + 0.5 * vl).item())


def test_ppo_kl_folded_into_token_rewards():
    algo = make(FixedCriticPPO, kl_coef=0.5, whiten=False, lam=1.0)
    returns = algo.advantages(fixed_rollout()).extras["returns"]
    # answer 0: return at t=0 is 1 - 0.5 * sum_t k1 = 1 - 0.5 * log 2; at t=2 it is 1 - 0
    assert returns[0, 0].item() == pytest.approx(1 - 0.5 * math.log(2))
    assert returns[0, 2].item() == pytest.approx(1.0)


def test_dynamic_sampling_leaves_no_zero_variance_group():
    algo = make(DAPO)
    calls = []

    def sample(n, temperature=None):
        calls.append(n)
        # 4 prompts, G=2: groups 0 and 2 informative, 1 and 3 all-equal
        r = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0])[: 2 * n] if n <= 4 else torch.ones(2 * n)
        N = len(r)
        return fixed_rollout(
            prompts=[f"p{i // 2}" for i in range(N)],
            completions=["x"] * N,
            rows=[{}] * N,
            prompt_ids=torch.ones(N, 1, dtype=torch.long),
            prompt_mask=torch.ones(N, 1, dtype=torch.long),
            completion_ids=torch.ones(N, 3, dtype=torch.long),
            completion_mask=torch.ones(N, 3),
            truncated=torch.zeros(N, dtype=torch.bool),
            old_logprobs=None,
            ref_logprobs=None,
            rewards=r,
            reward_parts={"correct": r},
        )

    batch, info = algo.collect(sample, 4)
    assert batch.num_groups == 4 and (batch.group_std() > 0).all()
    assert info["ds_dropped_frac"] == pytest.approx(0.5) and info["ds_extra_rounds"] == 1
    assert calls == [4, 4]
    # bounded: when nothing is ever informative it gives up after max_resample_rounds
    algo2 = make(DAPO, max_resample_rounds=2)

    def dull(n, temperature=None):
        return sample(5)  # all-ones rewards

    batch, info = algo2.collect(dull, 4)
    assert info["ds_extra_rounds"] == 2 and info["ds_short"] == 1.0


def test_kl_stages_schedule():
    assert parse_stages("40:0.02,0:0.0") == [(0, 0.0), (40, 0.02)]
    with pytest.raises(ValueError, match="STEP:COEF"):
        parse_stages("40=0.1")
    algo = make(DAPO, kl_stages="0:0.0,2:0.05")
    assert algo.needs_ref and algo.kl_coef_now() == 0.0
    algo.step_count = 2
    assert algo.kl_coef_now() == 0.05


@pytest.mark.parametrize(
    "bad,msg",
    [
        (dict(lr=-1.0), "lr must be > 0"),
        (dict(clip_low=1.5), "clip_low must be in"),
        (dict(minibatches=3), "do not split into 3 minibatches"),
        (dict(loss_agg="mean"), "unknown loss_agg"),
        (dict(kl_coef=-0.1), "kl_coef must be >= 0"),
    ],
)
def test_config_validation_messages(bad, msg):
    with pytest.raises(ValueError, match=msg):
        make_config("grpo", **bad).validate(8, 32)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_runs_a_few_steps_and_moves_the_policy(name, tmp_path):
    """On the shipped base model (about 40% right, so most groups carry signal)."""
    from rlalgos.config import BASE_MODEL_DIR
    from rlalgos.model import load_policy

    extra = {"ppo": dict(minibatches=2)}.get(name, {})
    cfg = TrainConfig(
        algo=name,
        steps=2,
        prompts_per_step=4,
        group_size=4,
        eval_every=0,
        eval_prompts=4,
        eval_samples=2,
        out_dir=str(tmp_path / name),
        progress=False,
    )
    df = train(cfg, make_config(name, **extra))
    last = df.iloc[-1]
    for key in ("reward_mean", "entropy", "kl", "clip_frac", "grad_norm", "zero_std_frac", "eval_accuracy"):
        assert math.isfinite(last[key]), key
    if name == "ppo":
        assert "value_loss" in df and "explained_variance" in df
    start, _ = load_policy(BASE_MODEL_DIR, device="cpu")
    trained, _ = load_policy(tmp_path / name / "checkpoint", device="cpu")
    moved = sum((a - b).abs().sum().item() for a, b in zip(start.parameters(), trained.parameters()))
    assert moved > 0, f"{name} did not change a single weight in 2 steps"


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_policy_gradient_comes_from_the_advantages(name, tiny):
    """On a real rollout, each algorithm's policy gradient is nonzero with its
    advantages and exactly zero when they are zeroed (on-policy, reference = policy,
    so the KL term has zero gradient too): the loss really uses the advantages."""
    from dataclasses import replace as dc_replace

    from rlalgos.algorithms.base import Advantages
    from rlalgos.model import frozen_copy
    from rlalgos.rollout import rollout
    from rlalgos.engine.sampler import SamplingConfig
    from rlalgos.tasks import addition_task

    policy, tok = tiny
    task = addition_task()
    torch.manual_seed(0)
    ro = rollout(
        policy,
        tok,
        task.train[:4],
        4,
        task.rewards,
        SamplingConfig(max_new_tokens=8, temperature=2.0),
        ref_model=frozen_copy(policy),
        old_logprobs=False,
    )
    ro = ro.with_rewards(torch.tensor([1.0, 0.0, 0.0, 1.0] * 4))  # every group informative
    cfg = make_config(name, **({"epochs": 1, "minibatches": 1} if name == "ppo" else {}))
    algo = get_algorithm(name)(policy, cfg, max_new_tokens=8)
    adv = algo.advantages(ro)

    def policy_grad(a: Advantages) -> float:
        policy.zero_grad(set_to_none=True)
        from rlalgos.engine.forward import forward_logprobs

        out = forward_logprobs(
            policy,
            ro.prompt_ids,
            ro.prompt_mask,
            ro.completion_ids,
            ro.completion_mask,
            ro.temperature,
            with_entropy=True,
        )
        loss, _ = algo.loss(ro, out, a, out["logprobs"].detach())
        loss.backward()
        return sum(p.grad.abs().sum().item() for p in policy.parameters() if p.grad is not None)

    assert adv.values.abs().sum() > 0
    assert policy_grad(adv) > 1e-6
    assert policy_grad(dc_replace(adv, values=torch.zeros_like(adv.values))) == 0.0
