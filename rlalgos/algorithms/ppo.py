"""PPO with a learned critic (the classic RLHF recipe).

The diff from REINFORCE (``reinforce.py``):

* a **critic** V(s_t) predicts, at every completion token, the reward still to
  come. It is a *copy* of the policy's transformer trunk with a scalar head, not
  a head on the shared trunk: value-loss gradients then cannot disturb the
  policy's features, and the two learning rates are independent. The price is a
  second model's memory and a second forward/backward per step (notebook 02
  measures it);
* **per-token rewards**: the sequence score sits on the last real token, and
  every token pays ``kl_coef * (log pi - log pi_ref)`` (k1): the KL penalty is
  folded into the reward, per token instead of per answer;
* **GAE** turns rewards and values into per-token advantages (gamma, lambda),
  whitened over the batch: a different advantage for every token;
* **the clipped ratio** ``max(-A r, -A clip(r, 1-eps, 1+eps))`` makes it safe to
  run several epochs of shuffled minibatches over one rollout, and a clipped
  value loss trains the critic alongside. ``clip_c`` > 1 adds the dual clip
  (Ye et al. 2020): where A < 0 the loss is at most ``-A * clip_c``. ``loss_mode``
  swaps the clipped loss for another of :mod:`rlalgos.losses` (Clip-Cov, KL-Cov, CISPO,
  SAPO, ...; the presets ``clipcov``, ``klcov``, ``cispo``, ``sapo`` are GRPO with them).

In code, two classes as in the configs: :class:`Clipped` is REINFORCE's loss
with the clipped ratio (``ClippedConfig``, which GRPO shares), and :class:`PPO`
adds the critic and GAE to it (``PPOConfig``).
Hyperparameters: :class:`rlalgos.config.PPOConfig`.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from .. import core
from ..config import ClippedConfig, PPOConfig
from ..engine import batch
from ..engine.forward import head_on_completion
from ..engine.settings import EngineSettings
from ..losses import get_policy_loss
from ..record import Rollout
from .base import Advantages, Algorithm


class Clipped(Algorithm):
    """The clipped objective PPO adds to REINFORCE's update, and GRPO keeps.

    REINFORCE's loss ``-A * r`` with the ratio ``r = pi / pi_old`` clipped: once a
    token's ratio has left ``[1 - clip_low, 1 + clip_high]`` in the direction its
    advantage pushes, its term is constant and its own gradient is zero, so
    several optimizer steps on one rollout cannot move it far. Both PPO and GRPO
    are this class plus their own advantages (:class:`rlalgos.config.ClippedConfig`).
    """

    Config = ClippedConfig

    def policy_loss(self, out: dict, adv: Advantages, old_logp: torch.Tensor, ratio_level: str = "token"):
        """The per-token loss of ``loss_mode`` (a module of :mod:`rlalgos.losses`; ``clip``:
        ``max(-A r, -A clip(r, 1 - clip_low, 1 + clip_high))``, at most ``-A * clip_c`` where
        A < 0 when ``clip_c`` > 0), aggregated by :meth:`aggregate`."""
        spec = get_policy_loss(self.cfg.loss_mode)
        if ratio_level not in spec.ratio_levels:
            raise ValueError(
                f"loss_mode {spec.name} works on token ratios only, not ratio_level {ratio_level!r}; use loss_mode clip"
            )
        level = {"ratio_level": ratio_level} if len(spec.ratio_levels) > 1 else {}
        loss_mat, m = spec.token_loss(
            out["logprobs"], old_logp, adv.values, adv.mask, **spec.options(self.cfg), **level
        )  # (n, T)
        return self.aggregate(loss_mat, adv), m

    def loss(self, mb: Rollout, out: dict, adv: Advantages, old_logp: torch.Tensor):
        pg, m = self.policy_loss(out, adv, old_logp)
        m["pg_loss"] = pg.item()
        return pg, m


class ValueModel(nn.Module):
    """A scalar head on a copy of the policy's trunk: V(s_t) for every completion position."""

    def __init__(self, policy, autocast_dtype: torch.dtype | None = None):
        super().__init__()
        self.trunk = copy.deepcopy(policy.base_model)  # the transformer without the LM head
        self.head = nn.Linear(policy.config.hidden_size, 1, dtype=next(policy.parameters()).dtype)
        nn.init.zeros_(self.head.weight)  # start by predicting 0 everywhere
        nn.init.zeros_(self.head.bias)
        self.autocast_dtype = autocast_dtype  # the policy's mixed precision, if any

    def forward(self, prompt_ids, prompt_mask, completion_ids, completion_mask) -> torch.Tensor:
        """Values at the positions that predict each completion token. Returns (N, T) floats."""
        return head_on_completion(
            self.trunk, self.head, prompt_ids, prompt_mask, completion_ids, completion_mask, self.autocast_dtype
        )


class PPO(Clipped):
    Config = PPOConfig

    def __init__(self, policy, cfg: PPOConfig, max_new_tokens: int = 0, engine: EngineSettings | None = None):
        super().__init__(policy, cfg, max_new_tokens, engine)
        self.critic = self.make_critic(policy)

    def make_critic(self, policy) -> ValueModel:
        """The critic, with its own parameter group (lr ``critic_lr``) in the optimizer."""
        critic = ValueModel(policy, self.engine.autocast_dtype).to(next(policy.parameters()).device).train()
        self.optimizer.add_param_group(
            {"params": list(critic.parameters()), "lr": self.cfg.critic_lr, "weight_decay": 0.0}
        )
        return critic

    def values(self, mb: Rollout) -> torch.Tensor:
        return self.critic(mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask)  # (N, T)

    @torch.no_grad()
    def advantages(self, ro: Rollout) -> Advantages:
        mask = ro.completion_mask  # (N, T)
        values = self.values(ro) * mask  # (N, T) V(s_t) before any update
        # per-token reward: -beta * KL_t everywhere, + the score on the last real token
        rewards = torch.zeros_like(values)  # (N, T)
        if self.cfg.kl_coef > 0:
            rewards -= self.cfg.kl_coef * core.kl_estimate(self.sampling_logprobs(ro), ro.ref_logprobs, "k1") * mask
        last = (mask.sum(-1).long() - 1).clamp(min=0)  # (N,) index of the last real token
        rewards[torch.arange(len(ro)), last] += ro.rewards
        adv, returns = core.gae(rewards, values, mask, self.cfg.gamma, self.cfg.lam)  # (N, T) each
        ev = batch.explained_variance(values, returns, mask)  # over the whole batch
        if self.cfg.whiten:
            adv = batch.whiten(adv, mask) * mask  # with the whole batch's mean and variance
        return Advantages(
            adv, mask, extras={"old_values": values, "returns": returns}, metrics={"explained_variance": ev}
        )

    def loss(self, mb: Rollout, out: dict, adv: Advantages, old_logp: torch.Tensor):
        pg, m = self.policy_loss(out, adv, old_logp)
        vl, vm = core.value_loss(
            self.values(mb),
            adv.extras["old_values"],
            adv.extras["returns"],
            adv.mask,
            self.cfg.value_clip,
            self.cfg.loss_agg,
            self.max_len,
        )
        m.update(vm, pg_loss=pg.item(), value_loss=vl.item())
        return pg + self.cfg.vf_coef * vl, m

    def state_dict(self) -> dict:
        return {**super().state_dict(), "critic": self.critic.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.critic.load_state_dict(state["critic"])
        super().load_state_dict(state)
