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
  folded into the reward, not the loss;
* **GAE** turns rewards and values into per-token advantages (gamma, lambda),
  whitened over the batch;
* **the clipped ratio** ``max(-A r, -A clip(r, 1-eps, 1+eps))`` makes it safe to
  run several epochs of shuffled minibatches over one rollout, and a clipped
  value loss trains the critic alongside.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from .. import core
from ..rollout import Rollout, sequence_inputs
from .base import AlgoConfig
from .reinforce import Reinforce


class ValueModel(nn.Module):
    """A scalar head on a copy of the policy's trunk: V(s_t) for every completion position."""

    def __init__(self, policy):
        super().__init__()
        self.trunk = copy.deepcopy(policy.base_model)  # the transformer without the LM head
        self.head = nn.Linear(policy.config.hidden_size, 1, dtype=next(policy.parameters()).dtype)
        nn.init.zeros_(self.head.weight)  # start by predicting 0 everywhere
        nn.init.zeros_(self.head.bias)

    def forward(self, prompt_ids, prompt_mask, completion_ids, completion_mask) -> torch.Tensor:
        """Values at the positions that predict each completion token. Returns (N, T) floats."""
        T = completion_ids.shape[1]
        input_ids, attn, position_ids = sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask)
        h = self.trunk(input_ids=input_ids, attention_mask=attn, position_ids=position_ids, use_cache=False).last_hidden_state  # (N, P+T, H)
        return self.head(h[:, -T - 1 : -1]).squeeze(-1).float()  # (N, T)


@dataclass
class PPOConfig(AlgoConfig):
    """PPO: critic, GAE, clipped ratio, several epochs over minibatches."""

    lr: float = 1e-4
    """AdamW learning rate of the policy."""
    critic_lr: float = 3e-4
    """AdamW learning rate of the critic."""
    epochs: int = 2
    """Passes over each rollout (the ratio moves away from 1 after the first minibatch)."""
    minibatches: int = 4
    """Optimizer steps per epoch."""
    clip_low: float = 0.2
    """The ratio is clipped at 1 - clip_low where A < 0."""
    clip_high: float = 0.2
    """The ratio is clipped at 1 + clip_high where A > 0 (symmetric in PPO)."""
    value_clip: float = 0.2
    """The new value may move at most this far from the rollout-time value in the clipped value loss."""
    vf_coef: float = 0.5
    """Weight of the value loss in the total loss."""
    gamma: float = 1.0
    """Discount per token (1.0: a reasoning answer is one episode)."""
    lam: float = 0.95
    """GAE lambda: 1 = Monte-Carlo return minus V (unbiased, noisy), 0 = one-step TD (biased by V, quiet)."""
    whiten: bool = True
    """Normalise advantages to zero mean and unit variance over the batch."""
    kl_coef: float = 0.05
    """Per-token KL penalty (k1) to the reference, subtracted from the reward."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        if not (0 < self.clip_low < 1) or not self.clip_high > 0 or not self.value_clip > 0:
            raise ValueError("clip_low must be in (0, 1), clip_high and value_clip > 0")
        if not (0 <= self.gamma <= 1 and 0 <= self.lam <= 1):
            raise ValueError(f"gamma and lam must be in [0, 1], got {self.gamma} and {self.lam}")
        if not self.critic_lr > 0 or self.vf_coef < 0:
            raise ValueError("critic_lr must be > 0 and vf_coef >= 0")


class PPO(Reinforce):
    name = "ppo"
    Config = PPOConfig

    def __init__(self, policy, cfg: PPOConfig, ref_model=None, tokenizer=None):
        super().__init__(policy, cfg, ref_model, tokenizer)
        self.critic = ValueModel(policy).to(next(policy.parameters()).device)
        self.optimizer.add_param_group({"params": list(self.critic.parameters()), "lr": cfg.critic_lr, "weight_decay": 0.0})

    def values(self, mb: Rollout) -> torch.Tensor:
        return self.critic(mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask)  # (N, T)

    @torch.no_grad()
    def advantages(self, ro: Rollout) -> torch.Tensor:
        mask = ro.completion_mask  # (N, T)
        values = self.values(ro) * mask  # (N, T) V(s_t) before any update
        # per-token reward: -beta * KL_t everywhere, + the score on the last real token
        rewards = torch.zeros_like(values)  # (N, T)
        if self.cfg.kl_coef > 0:
            rewards -= self.cfg.kl_coef * core.kl_estimate(ro.old_logprobs, ro.ref_logprobs, "k1") * mask
        last = (mask.sum(-1).long() - 1).clamp(min=0)  # (N,) index of the last real token
        rewards[torch.arange(len(ro)), last] += ro.rewards
        adv, returns = core.gae(rewards, values, mask, self.cfg.gamma, self.cfg.lam)  # (N, T) each
        ro.extras["old_values"], ro.extras["returns"] = values, returns
        self._ev = core.explained_variance(values, returns, mask)
        if self.cfg.whiten:
            adv = core.masked_whiten(adv, mask) * mask
        return adv  # (N, T): a different advantage for every token

    def loss(self, mb: Rollout, out: dict, adv: torch.Tensor, old_logp: torch.Tensor):
        mask = mb.completion_mask
        pg, m = core.policy_loss(out["logprobs"], old_logp, adv, mask, self.cfg.clip_low, self.cfg.clip_high, self.cfg.loss_agg, self.max_len)
        vl, vm = core.value_loss(self.values(mb), mb.extras["old_values"], mb.extras["returns"], mask, self.cfg.value_clip, self.cfg.loss_agg, self.max_len)
        m.update(vm, pg_loss=pg.item(), value_loss=vl.item())
        return pg + self.cfg.vf_coef * vl, m

    def update(self, ro: Rollout) -> dict:
        self.critic.train()
        m = super().update(ro)
        m["explained_variance"] = self._ev
        return m

    @property
    def needs_old_logprobs(self) -> bool:
        return True  # the KL reward and the ratio both need them

    def state_dict(self) -> dict:
        return {**super().state_dict(), "critic": self.critic.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.critic.load_state_dict(state["critic"])
        super().load_state_dict(state)
