"""What tests/test_distributed.py runs under ``torchrun --nproc_per_node 2`` (and the
single-process references it compares with).

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/dist_worker.py grads OUT
    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/dist_worker.py train OUT MODEL
    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/dist_worker.py learn OUT MODEL STEPS LR SEED
    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/dist_worker.py all OUT MODEL   # the three, in one launch

The tests use ``all``: one launch, so the launcher and both workers start once (each start loads
torch and transformers, ~10 s of CPU) instead of three times.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import torch

from rlalgos.engine import batch, distributed
from rlalgos.config import make_config
from rlalgos.algorithms import get_algorithm
from rlalgos.model import char_tokenizer, tiny_model
from rlalgos.record import Rollout

G = 4
# (algorithm, loss_agg, groups on process 0 / process 1): the even split gives the
# processes different token counts, the uneven one different answer counts too
CASES = [
    (algo, agg, split)
    for algo, agg in [
        ("grpo", "token-mean"),
        ("grpo", "seq-mean-token-mean"),
        ("grpo", "seq-mean-token-sum-norm"),
        ("ppo", "token-mean"),
    ]
    for split in ((2, 2), (1, 3))
]


def case_name(case) -> str:
    algo, agg, split = case
    return f"{algo}-{agg}-{split[0]}+{split[1]}"


def fixed_rollout(groups: int = 4, P: int = 5, T: int = 10, seed: int = 0) -> Rollout:
    """A made-up rollout of ``groups`` x G answers with many different lengths, left-padded prompts
    and 0/1 rewards that vary inside every group (the same on every process)."""
    g = torch.Generator().manual_seed(seed)
    N = groups * G
    tok = char_tokenizer()
    prompt_len = torch.randint(2, P + 1, (N,), generator=g)
    prompt_mask = (torch.arange(P).unsqueeze(0) >= (P - prompt_len).unsqueeze(1)).long()  # (N, P) left padding
    prompt_ids = torch.where(prompt_mask.bool(), torch.randint(4, len(tok), (N, P), generator=g), tok.pad_token_id)
    lengths = torch.randint(1, T + 1, (N,), generator=g)
    completion_mask = (torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)).float()  # (N, T)
    completion_ids = torch.where(
        completion_mask.bool(), torch.randint(4, len(tok), (N, T), generator=g), tok.pad_token_id
    )
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0] * groups)[torch.randperm(N, generator=g)]
    rewards.view(groups, G)[:, 0], rewards.view(groups, G)[:, 1] = 1.0, 0.0  # no group has one reward only
    return Rollout(
        prompts=["p"] * N,
        completions=["c"] * N,
        rows=[{}] * N,
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        truncated=lengths == T,
        old_logprobs=None,
        ref_logprobs=None,
        rewards=rewards,
        reward_parts={"correct": rewards},
        group_size=G,
        pad_token_id=tok.pad_token_id,
    )


def make_algo(algo: str, agg: str):
    """A tiny model and ``algo`` set up so that one update's gradient is exactly the batch's:
    one epoch, one minibatch, no clipping of the gradient norm; micro-batches of 3 rows in 2 length buckets."""
    policy = tiny_model(char_tokenizer(), seed=0, hidden=32, layers=1, heads=2, intermediate=64)
    cfg = make_config(
        algo,
        loss_agg=agg,
        epochs=1,
        minibatches=1,
        kl_coef=0.0,
        max_grad_norm=1e9,
        micro_batch_size=3,
        length_buckets=2,
    )
    return get_algorithm(algo)(policy, cfg, max_new_tokens=10)


def gradient(case, ro: Rollout) -> dict[str, torch.Tensor]:
    """Every trained parameter's gradient after one update on ``ro`` (summed over processes under torchrun)."""
    algo = make_algo(case[0], case[1])
    algo.update(ro)
    return {f"{i}": p.grad.clone() for i, p in enumerate(algo.parameters())}


def my_groups(ro: Rollout, split: tuple[int, int], rank: int) -> Rollout:
    start = sum(split[:rank])
    return ro.select(torch.arange(start * G, (start + split[rank]) * G))


def run_grads(out: Path) -> None:
    """For every case: the gradient of the 2-process update (each process its groups of one fixed
    rollout), and the gradient of the naive version (per-process normalisers, gradients averaged as DDP does)."""
    rank, ro = distributed.rank(), fixed_rollout()
    res = {}
    for case in CASES:
        mine = my_groups(ro, case[2], rank)
        res[case_name(case)] = gradient(case, mine)
        real = batch.counts
        batch.counts = lambda tokens, rows: (tokens, rows)  # the classic bug: each process its own token/answer count
        try:
            res["naive/" + case_name(case)] = {k: g / distributed.world_size() for k, g in gradient(case, mine).items()}
        finally:
            batch.counts = real
    torch.save(res, out / f"grads-{rank}.pt")


def weights_hash(model) -> str:
    h = hashlib.sha256()
    for k, v in sorted(model.state_dict().items()):
        h.update(k.encode() + v.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def run_train(out: Path, model: str) -> None:
    """A 4-step DAPO run, the same run stopped after 2 steps and resumed to 4, and each process's
    weights after the full run."""
    from rlalgos.model import load_policy
    from rlalgos.train import TrainConfig, resume, train

    cfg = dict(
        model=model,
        steps=4,
        prompts_per_step=4,
        group_size=4,
        max_new_tokens=12,
        eval_every=2,
        eval_prompts=4,
        eval_samples=1,
        progress=False,
        save_every=2,
        seed=3,
        algo="dapo",
    )
    policy, tok = load_policy(model, "cpu")
    train(TrainConfig(**cfg, out_dir=str(out / "full")), policy=policy, tokenizer=tok)
    (out / f"weights-{distributed.rank()}.txt").write_text(weights_hash(policy))
    train(TrainConfig(**{**cfg, "steps": 2}, out_dir=str(out / "cut")))
    resume(out / "cut", steps=4)


LEARN = (
    "15",
    "3e-4",
    "0",
)  # the learning check's steps, lr and seed (test_two_processes_learn sizes its threshold for these)


def run_learn(out: Path, model: str, steps: str, lr: str, seed: str) -> None:
    """GRPO from the shipped model on 16 fixed training prompts, all of them every step (x 8 answers)."""
    from dataclasses import replace

    from rlalgos.config import make_config
    from rlalgos.tasks import get_task
    from rlalgos.train import TrainConfig, train

    task = get_task("addition")
    task = replace(task, train=task.train[:16], test=task.train[:16])
    cfg = TrainConfig(
        model=model,
        algo="grpo",
        steps=int(steps),
        prompts_per_step=16,
        group_size=8,
        eval_every=0,
        eval_prompts=16,
        eval_samples=4,
        progress=False,
        save_every=0,
        seed=int(seed),
        out_dir=str(out / "learn"),
    )
    train(cfg, make_config("grpo", lr=float(lr)), task=task)


if __name__ == "__main__":
    distributed.setup("cpu", 2)
    what, out = sys.argv[1], Path(sys.argv[2])
    jobs = {
        "grads": lambda: run_grads(out),
        "train": lambda: run_train(out, sys.argv[3]),
        "learn": lambda: run_learn(out, *sys.argv[3:]),
    }
    jobs["all"] = lambda: (run_grads(out), run_train(out, sys.argv[3]), run_learn(out, sys.argv[3], *LEARN))
    jobs[what]()
    (out / f"done-{distributed.rank()}.json").write_text(json.dumps({"world": distributed.world_size()}))
