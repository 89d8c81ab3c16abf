import os
import shutil
from pathlib import Path

import pytest
import torch
from filelock import FileLock

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get(
    "PYTEST_XDIST_WORKER"
):  # `make test` runs 2 workers on 2 cores: one thread each (two busy 2-thread processes slow each other ~10x)
    torch.set_num_threads(int(os.environ.get("RLALGOS_TEST_THREADS", "1")))

SLOW_FIRST = (
    "tests/test_learning.py",
    "notebooks/",
    "tests/test_distributed.py",
    "tests/test_benchmarks.py",
    "tests/test_gpu_check.py",
    "tests/test_trust.py",
    "tests/test_newcomer.py",
)
"""Where the minutes-long items are, longest first: collected first, so that parallel workers
start on them and end together instead of one finishing a long item alone."""


def pytest_collection_modifyitems(config, items):
    rank = lambda item: next((i for i, p in enumerate(SLOW_FIRST) if item.nodeid.startswith(p)), len(SLOW_FIRST))  # noqa: E731
    items.sort(key=rank)  # stable: the order within each file is kept


@pytest.fixture(scope="session")
def built_once(tmp_path_factory):
    """``built_once(name, build) -> Path``: the folder that ``build(folder)`` fills, built once per
    test session even across pytest-xdist workers. A module-scoped fixture runs once in every
    worker that runs one of its tests (measured: test_distributed's 2-process runs, ~40 s,
    ran twice); here the first caller builds under a file lock and the others wait for it and
    read the same folder. A build that raises leaves nothing behind, and the next caller tries again."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own

    def get(name: str, build) -> Path:
        out = root / f"once-{name}"
        with FileLock(f"{out}.lock"):
            if not (out / ".built").exists():
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                try:
                    build(out)
                except BaseException:
                    shutil.rmtree(out, ignore_errors=True)
                    raise
                (out / ".built").touch()
        return out

    return get


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    """A randomly initialised tiny model + char tokenizer saved with save_pretrained."""
    from rlalgos.model import char_tokenizer, tiny_model

    d = tmp_path_factory.mktemp("tiny")
    tok = char_tokenizer()
    model = tiny_model(tok, seed=0, hidden=32, layers=1, heads=2, intermediate=64)
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def tiny(tiny_dir):
    from rlalgos.model import load_policy

    return load_policy(tiny_dir, device="cpu")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def base():
    """The shipped base model (about 40% right; its answers end at different lengths). Tests must not train it in place."""
    from rlalgos.model import load_policy

    return load_policy(None, device="cpu")


@pytest.fixture(scope="session")
def task():
    from rlalgos.tasks import addition_task

    return addition_task()
