"""Several runs side by side: algorithms x seeds x settings in worker processes.

Two 1-thread runs side by side on 2 cores give 1.2-1.5x the throughput of
running them one after another with 2 threads (``make bench-sweep``), while two
busy 2-thread processes slow each other ~10x: so each lane is pinned to
``cores // jobs`` threads. The
calling process is one of the lanes, so the first runs start at once instead
of after the workers' imports, and every lane takes the next run as soon as it
is free. A run gives exactly the numbers the same run gives alone with the same
thread count, in whichever lane it ran (tested). A run that fails is reported
and the others go on.
"""

from __future__ import annotations

import ast
import os
import sys
import threading
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from multiprocessing import get_context
from pathlib import Path

import torch

from ..config import AlgoConfig, TrainConfig, algorithm_config


def threads_per_job(jobs: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(jobs, 1))


def uses_cuda(cfg: TrainConfig) -> bool:
    return cfg.device.startswith("cuda") or (cfg.device == "auto" and torch.cuda.is_available())


def auto_jobs(runs: list[tuple[TrainConfig, AlgoConfig]]) -> int:
    """The fastest way measured: on CPU one lane per core, 1 thread each (2 cores:
    1.47x the throughput of one run after another at 2 threads, ``make bench-sweep``),
    at most one lane per run; on a GPU one lane (runs side by side would share it).
    Each lane holds its own copy of the model: for a big model on CPU pass 1."""
    if any(uses_cuda(cfg) for cfg, _ in runs):
        return 1
    return max(1, min(len(runs), os.cpu_count() or 1))


# seconds per step relative to grpo's at the same batch (notebook 05's side-by-side
# table measured 3.99x / 1.31x on 2026-12-01 and 3.65x / 1.45x on 2026-12-02: the
# ratios move by ~0.2 between runs); used only to start the longest runs first
RELATIVE_STEP_COST = {"ppo": 3.99, "dapo": 1.31}


# seconds per sampled answer per step, one run alone on one core of this project's machine, the shipped
# model at 48 new tokens, evaluations included (make bench-sweep: 6 runs x 20 steps x 32 x 8 answers in
# 64.2 s two at a time, ~3.3 ms; docs/speed.md); only for the rough estimate printed before long jobs
SECONDS_PER_ANSWER = 0.0035


def estimate_seconds(runs: list[tuple[TrainConfig, AlgoConfig]], jobs: int) -> float:
    """A rough wall time for training ``runs`` ``jobs`` at a time on CPU: every run's
    steps x answers x the algorithm's relative cost, spread over the lanes."""
    total = (
        sum(c.steps * c.prompts_per_step * c.group_size * RELATIVE_STEP_COST.get(c.algo, 1.0) for c, _ in runs)
        * SECONDS_PER_ANSWER
    )
    lanes = max(1, min(jobs, len(runs)))
    return total / lanes * (1.2 if lanes > 1 else 1.0)  # lanes side by side: 1.2-1.5x the throughput, not 2x


def plan_line(runs: list[tuple[TrainConfig, AlgoConfig]], jobs: int) -> str:
    """``training 6 runs, 2 at a time: about 4 min on this machine's CPUs`` (``jobs`` 0 = auto)."""
    jobs = auto_jobs(runs) if jobs == 0 else jobs
    if any(uses_cuda(c) for c, _ in runs):
        return f"training {len(runs)} run{'s' if len(runs) != 1 else ''}, {jobs} at a time (on the GPU)"
    minutes = estimate_seconds(runs, jobs) / 60
    when = f"about {minutes:.0f} min" if minutes >= 1.5 else "about a minute or less"
    return f"training {len(runs)} run{'s' if len(runs) != 1 else ''}, {jobs} at a time: {when} on 2 CPU cores (a rough estimate from measured seconds per answer)"


def longest_first(runs: list[tuple[TrainConfig, AlgoConfig]]) -> list[int]:
    """Run indices, the most expensive first (steps x answers per step x the
    algorithm's relative step cost; ties keep their order), so that the runs left
    when the queue empties are short ones and the lanes finish together."""
    cost = [c.steps * c.prompts_per_step * c.group_size * RELATIVE_STEP_COST.get(c.algo, 1.0) for c, _ in runs]
    return sorted(range(len(runs)), key=lambda i: -cost[i])


def failure_text(error: BaseException, index: int | None = None) -> str:
    """``run i (folder) failed: Type: message`` for the exception :func:`run_many` returned in place of a run."""
    i = getattr(error, "run_index", index)
    where = f" ({error.run_dir})" if getattr(error, "run_dir", None) else ""
    return f"run {i}{where} failed: {type(error).__name__}: {error}"


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = {ast.unparse(test.left), ast.unparse(test.comparators[0])}
    return sides in ({"__name__", "'__main__'"}, {"__name__", '"__main__"'})


def check_main_guard(jobs: int) -> None:
    """Worker processes are spawned, and each imports the calling script again: a script
    that calls :func:`run_many` from its top level outside ``if __name__ == "__main__":``
    would run its own code again in every worker (and train its runs twice). Raise one
    line saying so before any run starts; a notebook, ``python -c`` or a guarded script pass."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path or not str(path).endswith(".py"):
        return
    line, frame = None, sys._getframe(1)
    while frame is not None:  # the outermost line of the script's own top-level code on the stack
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            line = frame.f_lineno
        frame = frame.f_back
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return
    if line is None or any(
        isinstance(n, ast.If) and _is_main_guard(n.test) and n.lineno <= line <= n.end_lineno for n in ast.walk(tree)
    ):
        return
    raise ValueError(
        f'{path} line {line} runs {jobs} runs side by side outside `if __name__ == "__main__":`; each worker process '
        f"re-runs the script's top level (and would train again): put the script's code under that guard, or pass jobs=1"
    )


def _run_one(train_cfg: dict, algo_cfg: dict, threads: int) -> str:
    """Worker: one run with ``threads`` threads; returns its run folder."""
    torch.set_num_threads(threads)
    from ..train import train

    cfg = TrainConfig(**train_cfg)
    df = train(cfg, algorithm_config(cfg.algo).config(**algo_cfg))
    return df.run_dir


def run_many(
    runs: list[tuple[TrainConfig, AlgoConfig]], jobs: int = 1, progress: bool = True, reuse: bool = False
) -> list:
    """Train every ``(TrainConfig, algo config)`` and return, in the same order, each
    run's metrics DataFrame, or the exception that stopped it, carrying ``run_index`` and ``run_dir``
    (:func:`failure_text` says it in one line).

    ``reuse``: a run whose folder already holds that exact run, finished (:func:`rlalgos.engine.runs.finished`:
    the same settings, every step logged), is read back instead of trained, so that rerunning a notebook
    reuses what it trained; any other run is trained (its ``overwrite`` decides about an old folder).

    ``jobs`` = 0: :func:`auto_jobs`. ``jobs`` = 1: one after another in this process, with its threads.
    ``jobs`` > 1: ``jobs`` lanes, each pinned to ``threads_per_job(jobs)`` threads,
    take the next run from one shared queue as soon as they are free: this process
    is one lane (it starts at once), ``jobs - 1`` spawned worker processes are the
    others (spawned, so no thread pool is forked; they start while this process
    already trains). One combined progress bar over runs.
    """
    from tqdm.auto import tqdm

    from ..engine.runs import finished
    from ..train import load_metrics, train

    if reuse and (done := [i for i, r in enumerate(runs) if finished(*r)]):
        todo = [i for i in range(len(runs)) if i not in done]
        results: list = [None] * len(runs)
        for i in done:
            results[i] = load_metrics(runs[i][0].out_dir)
        for i, r in zip(todo, run_many([runs[i] for i in todo], jobs, progress) if todo else []):
            if isinstance(r, Exception):
                r.run_index = i  # its place in ``runs``, as without reuse
            results[i] = r
        return results
    jobs = auto_jobs(runs) if jobs == 0 else jobs
    if jobs > 1:
        check_main_guard(jobs)
    out: list = [None] * len(runs)
    bar = tqdm(total=len(runs), desc=f"runs ({jobs} at a time)", disable=not progress, dynamic_ncols=True)
    lock = threading.Lock()
    queue = deque(
        range(len(runs)) if jobs <= 1 else longest_first(runs)
    )  # results come back in the given order either way

    def next_run() -> int | None:
        with lock:
            return queue.popleft() if queue else None

    def finish(i: int, result) -> None:
        if isinstance(result, Exception):  # one failed run does not stop the others; the exception says which it was
            result.run_index, result.run_dir = i, runs[i][0].out_dir
            print(f"rlalgos: {failure_text(result)}", file=sys.stderr)
        out[i] = result
        bar.update()

    def this_process_lane(**overrides) -> None:
        while (i := next_run()) is not None:
            cfg, algo_cfg = runs[i]
            try:
                df = train(replace(cfg, **overrides), algo_cfg)
                finish(
                    i, load_metrics(df.run_dir) if overrides else df
                )  # beside workers: what every lane returns, the run folder's rows
            except Exception as e:
                finish(i, e)

    if jobs <= 1:
        this_process_lane()
        bar.close()
        return out
    threads = threads_per_job(jobs)

    def worker_lane(pool) -> None:
        while (i := next_run()) is not None:
            cfg, algo_cfg = runs[i]
            try:
                finish(
                    i,
                    load_metrics(
                        pool.submit(_run_one, asdict(replace(cfg, progress=False)), asdict(algo_cfg), threads).result()
                    ),
                )
            except Exception as e:
                finish(i, e)

    saved_threads = torch.get_num_threads()
    with ProcessPoolExecutor(jobs - 1, mp_context=get_context("spawn")) as pool:
        lanes = [threading.Thread(target=worker_lane, args=(pool,), daemon=True) for _ in range(jobs - 1)]
        for lane in lanes:
            lane.start()
        torch.set_num_threads(threads)  # this process trains like a worker meanwhile
        try:
            this_process_lane(progress=False)
        except BaseException:  # interrupted: the other lanes finish the run they are in and take no more
            with lock:
                queue.clear()
            raise
        finally:
            torch.set_num_threads(saved_threads)
            for lane in lanes:
                lane.join()
    bar.close()
    return out
