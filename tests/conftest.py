import os

import pytest
import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


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
