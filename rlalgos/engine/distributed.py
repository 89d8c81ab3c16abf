"""Several processes, one run: data parallel training through ``torch.distributed``.

Launch with ``torchrun --nproc_per_node N -m rlalgos.tools.cli train ...`` (or
``accelerate launch``, which sets the same variables). Without a launcher
(``WORLD_SIZE`` unset or 1) nothing here talks to anything, and every function
returns its input unchanged: one process gives the same numbers, bit for bit,
as before this module existed.

With N processes:

* :func:`setup` joins the group from the launcher's environment (``WORLD_SIZE``,
  ``RANK``, ``LOCAL_RANK``, ``MASTER_ADDR``/``PORT``): gloo on CPU, nccl on CUDA,
  device ``cuda:LOCAL_RANK``;
* every process draws the same ``prompts_per_step`` prompts and samples answers
  to its own ``1/N`` of them (:func:`my_share`: prompts are split, never groups),
  from its own random stream (:func:`rank_seed`);
* the update loop weights each micro-batch by its share of the minibatch's tokens
  or answers *over all processes* (:func:`rlalgos.engine.batch.counts`), so the gradients
  summed over processes (:func:`sync_gradients`) are the gradient of one process
  on the whole batch: token-mean is the global token-mean, not a mean of
  per-process means;
* the statistics an algorithm takes over its batch (a mean, a whitening, a
  baseline, the metric row) are over every process's rows (:mod:`rlalgos.engine.batch`); process 0 alone writes the run folder, evaluates and
  checkpoints; every process loads the checkpoint to resume.

The gradients are summed with one explicit all-reduce per optimizer step rather
than DDP: the update loop runs a different number of micro-batches on each
process (length buckets, dynamic sampling's uneven batches), its log-prob pass
calls the model's trunk and LM head separately (chunked logits), and PPO's critic
is a second model in the same optimizer; one flat all-reduce after the last
backward serves all three. What it gives up is DDP's overlap of communication
with the backward pass.
"""

from __future__ import annotations

import atexit
import hashlib
import os

import torch
import torch.distributed as dist

from .precision import resolve_device

LAUNCHER_VARS = ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def launched_world() -> int:
    """The number of processes the launcher started (``WORLD_SIZE``; 1 without one)."""
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def is_main() -> bool:
    """Process 0, the one that writes the run folder (always True in one process)."""
    return rank() == 0


def setup(device: str, prompts_per_step: int):
    """Join the process group the launcher describes and return the device to train on.

    One process: ``device`` itself, untouched. Several: ``cuda:LOCAL_RANK`` on
    CUDA (``auto`` or ``cuda``), the CPU otherwise; raises ``ValueError`` with one
    line when the environment or ``prompts_per_step`` does not fit.
    """
    world = launched_world()
    if world <= 1:
        return device
    missing = [v for v in LAUNCHER_VARS if not os.environ.get(v)]
    if missing:
        raise ValueError(
            f"WORLD_SIZE={world} but {', '.join(missing)} not set; launch several processes with "
            f"`torchrun --nproc_per_node {world} -m rlalgos.tools.cli train ...` (or accelerate launch), or unset WORLD_SIZE"
        )
    if prompts_per_step % world:
        raise ValueError(
            f"prompts_per_step={prompts_per_step} does not split over {world} processes (each samples prompts_per_step / {world}); "
            f"use a multiple of {world}"
        )
    dev = resolve_device(device)
    local = int(os.environ["LOCAL_RANK"])
    if dev.type == "cuda":
        if dev.index is not None and dev.index != local:
            raise ValueError(
                f"--device {device} under a launcher: each process takes cuda:LOCAL_RANK; pass --device cuda (or auto)"
            )
        dev = resolve_device(f"cuda:{local}")
        torch.cuda.set_device(dev)
    if not dist.is_initialized():
        cuda = dev.type == "cuda"
        dist.init_process_group(
            "nccl" if cuda else "gloo", init_method="env://", **({"device_id": dev} if cuda else {})
        )
        atexit.register(shutdown)
    if dist.get_world_size() != world:
        raise ValueError(f"WORLD_SIZE={world} but the process group has {dist.get_world_size()} processes")
    return dev


def shutdown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def rank_seed(seed: int) -> int:
    """This process's seed: ``seed`` itself on process 0 (one process: the run's own
    stream), a hash of (seed, rank) on the others, so they sample different answers."""
    r = rank()
    if r == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"rlalgos:{seed}:{r}".encode()).digest()[:8], "little") >> 1


def barrier() -> None:
    if active():
        dist.barrier()


def main_first(fn):
    """``fn()`` on process 0, then on the others (process 0 may repair files they read)."""
    if is_main():
        out = fn()
    barrier()
    if not is_main():
        out = fn()
    return out


# --------------------------------------------------------------------------- #
# Splitting the batch
# --------------------------------------------------------------------------- #


def my_share(rows: list) -> list:
    """This process's contiguous ``1/N`` of ``rows`` (all of them in one process)."""
    n = len(rows) // world_size()
    return rows if world_size() == 1 else rows[rank() * n : (rank() + 1) * n]


def minibatches(order: torch.Tensor, n: int) -> list[torch.Tensor]:
    """``order.chunk(n)``, padded with empty chunks to exactly ``n`` with several
    processes: every process then takes the same number of optimizer steps, also
    when its share of the batch is small or empty (dynamic sampling)."""
    chunks = list(order.chunk(n))
    if world_size() > 1:
        chunks += [order[:0]] * (n - len(chunks))
    return chunks


# --------------------------------------------------------------------------- #
# Sums over processes
# --------------------------------------------------------------------------- #


def gather(obj) -> list:
    """``obj`` of every process, in rank order (``[obj]`` in one process)."""
    if world_size() == 1:
        return [obj]
    out = [None] * world_size()
    dist.all_gather_object(out, obj)
    return out


def broadcast(obj):
    """Process 0's ``obj`` on every process."""
    if world_size() == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def reduce_sums(d: dict) -> dict:
    """Per key, the sum over processes of ``d``'s values (a key missing on a process counts 0).
    Summed in rank order on every process, so every process gets the same bits."""
    if world_size() == 1:
        return d
    out: dict = {}
    for part in gather(d):
        for k, v in part.items():
            out[k] = out.get(k, 0.0) + v
    return out


# --------------------------------------------------------------------------- #
# Gradients and weights
# --------------------------------------------------------------------------- #


def sync_gradients(params, finite: bool, logs: dict, bucket_numel: int = 1 << 24):
    """After a minibatch's backward passes: sum every parameter's gradient over
    processes (the weights already divide by the global counts, so the sum is the
    whole batch's gradient), and sum the weighted metric ``logs`` and AND the
    ``finite`` flags likewise. Returns ``(finite, logs)``; unchanged in one process.

    A gradient that is ``None`` on every process stays ``None`` (the optimizer skips
    that parameter, as in one process); on some only, it counts as zeros there.
    """
    if world_size() == 1:
        return finite, logs
    params = [p for p in params if p.requires_grad]
    summary = reduce_sums(
        {
            **{f"m/{k}": v for k, v in logs.items()},
            "nonfinite": float(not finite),
            **{f"g/{i}": 1.0 for i, p in enumerate(params) if p.grad is not None},
        }
    )
    grads = []
    for i, p in enumerate(params):
        if f"g/{i}" in summary:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            grads.append(p.grad)
    for bucket in _buckets(grads, bucket_numel):
        flat = torch.cat([g.reshape(-1) for g in bucket])
        dist.all_reduce(flat)
        for g, part in zip(bucket, flat.split([g.numel() for g in bucket])):
            g.copy_(part.view_as(g))
    logs = {k[2:]: v for k, v in summary.items() if k.startswith("m/")}
    return summary["nonfinite"] == 0, logs


def _buckets(tensors, numel: int):
    """Runs of ``tensors`` of one dtype and device, about ``numel`` elements each."""
    run, size = [], 0
    for t in tensors:
        if run and (size + t.numel() > numel or (t.dtype, t.device) != (run[0].dtype, run[0].device)):
            yield run
            run, size = [], 0
        run.append(t)
        size += t.numel()
    if run:
        yield run


def broadcast_parameters(params) -> None:
    """Process 0's values for ``params``: every process starts from the same weights."""
    if world_size() == 1:
        return
    with torch.no_grad():
        for p in params:
            dist.broadcast(p.data, src=0)


# --------------------------------------------------------------------------- #
# Checkpoints
# --------------------------------------------------------------------------- #


def rng_states() -> dict:
    """Every process's random state, for process 0's checkpoint (``{}`` in one process)."""
    if world_size() == 1:
        return {}
    mine = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        mine["cuda"] = torch.cuda.get_rng_state()
    return {"world_size": world_size(), "rank_rng": gather(mine)}


def restore_rng(state: dict) -> None:
    """Put back this process's random state from a checkpoint; a checkpoint written
    by another number of processes is refused (each process has its own stream)."""
    saved = state.get("world_size", 1)
    if saved != world_size():
        raise ValueError(
            f"the checkpoint was written by {saved} process(es); resume it with {saved} "
            f"({'torchrun --nproc_per_node ' + str(saved) if saved > 1 else 'no launcher'}): each process has its own random stream"
        )
    if world_size() == 1:
        return
    mine = state["rank_rng"][rank()]
    torch.set_rng_state(mine["torch"])
    if "cuda" in mine and torch.cuda.is_available():
        torch.cuda.set_rng_state(mine["cuda"])


class NullLog:
    """What processes other than 0 write their logs to."""

    def write(self, row: dict) -> None:
        pass

    def close(self) -> None:
        pass
