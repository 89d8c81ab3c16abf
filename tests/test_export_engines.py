"""The export's engines as modules: every field named by every engine, an engine registered from one
module (a small fake engine, declared here, goes through the same ``register`` the package's own
engines do), the one-line errors for an engine that is not there, the task's own columns in the
export, and the rule that makes the copied tasks.py run anywhere (standard library only)."""

import ast
import dataclasses
import fnmatch
import json
import re
import sys
import types
import typing

import pytest

from rlalgos import tasks
from rlalgos.config import ALGORITHMS, TrainConfig, make_config
from rlalgos.tools import export as ex
from rlalgos.tools.export.base import Engine, Name, differs, make_ctx, same, write_run_sh
from rlalgos.tools.export.fields import FIELDS
from rlalgos.tools.export.verl import MASK_NO_LOWER


def test_every_config_field_has_one_field_and_every_engine_names_each():
    options = {f.name for f in dataclasses.fields(TrainConfig)} | {
        f.name for s in ALGORITHMS.values() for f in dataclasses.fields(s.config)
    }
    names = [f.name for f in FIELDS]
    assert len(names) == len(set(names))
    assert options <= set(names), f"fields with no line in the export table: {sorted(options - set(names))}"
    assert not {f.name for f in FIELDS if f.fixed} & options  # a fixed behaviour's key is no config field
    assert list(ex.ENGINES) == ["trl", "verl"]
    for engine in ex.ENGINES.values():
        assert ex.missing_names(engine) == [], engine.name
        assert set(engine.names) <= set(names), (
            f"{engine.name} names what the table lacks: {set(engine.names) - set(names)}"
        )
    assert f'"{MASK_NO_LOWER:g}_C"' in next(f.conversion for f in FIELDS if f.name == "rollout_correction_threshold")


RUNS = [
    (TrainConfig(algo=name, **train), make_config(name, **algo))
    for name in ALGORITHMS
    if name != "ei"
    for train, algo in [
        ({}, {}),
        (
            dict(eval_every=5, save_every=5, lora_rank=8, rollout_correction="token_mask", report_to="all"),
            {"kl_coef": 0.1} if name != "ppo" else {},
        ),
    ]
] + [
    (TrainConfig(algo="dapo"), make_config("dapo", dynamic_sampling="resample", entropy_threshold=0.2)),
    (TrainConfig(algo="grpo", rollout_dtype="bfloat16"), make_config("grpo", clip_c=3.0, micro_batch_size=8)),
]
"""Runs that between them take every conversion's branches that set values."""


def named(key: str, prose: str, engine: Engine) -> bool:
    """Whether a table cell names ``key``: a `pattern` in it matches the key's end (``*`` a wildcard,
    the engine's abbreviations applied), or the key's last part is in its text."""
    for long, short in engine.abbreviations:
        key = key.replace(long, short)
    patterns = re.findall(r"`([^`]+)`", prose)
    return any(fnmatch.fnmatch(key, "*" + p) for p in patterns) or key.split(".")[-1].lower() in prose.lower()


def test_each_value_an_engine_sets_is_named_in_its_table_cell():
    """The table's prose and the conversions state an engine's names twice: every key a conversion sets
    for these runs is in the same field's cell."""
    unnamed = set()
    for engine in ex.ENGINES.values():
        for cfg, algo in RUNS:
            c = make_ctx(cfg, algo)
            if engine.name == "trl" and algo.__class__.__name__ == "PPOConfig":
                continue
            for f in FIELDS:
                name = engine.names[f.name]
                if f.applies(c) and name.convert:
                    unnamed |= {
                        (engine.name, f.name, k) for k in name.convert(c).values if not named(k, name.prose, engine)
                    }
    assert not unnamed, sorted(unnamed)


def test_the_cli_offers_the_registered_engines(capsys):
    from rlalgos.tools.cli import ExportArgs, main

    hint = typing.get_type_hints(ExportArgs, include_extras=True)["to"]
    assert typing.get_args(typing.get_args(hint)[0]) == tuple(ex.ENGINES)
    for argv in (["--to", "openrlhf", "grpo"], ["--to=openrlhf", "grpo"]):
        assert main(["export", *argv]) == 2
        assert capsys.readouterr().err == (
            "rlalgos: error: unknown engine 'openrlhf': no export module declares it; use trl or verl\n"
        )


def fake_engine_module() -> types.ModuleType:
    """An engine in one module: a name for every field (most with no equivalent), a writer."""

    def write(out, ctx, mapping, train, test):
        (out / "fake.json").write_text(json.dumps(mapping.values, sort_keys=True))
        write_run_sh(out, ["fake-train fake.json"])
        return "fake-train fake.json", []

    names = {f.name: Name("") for f in FIELDS}
    names["lr"] = Name("`rate`", lambda c: same(rate=c.algo.lr))
    names["group_size"] = Name(
        "`samples`", lambda c: differs("fake samples one answer fewer", samples=c.cfg.group_size - 1)
    )
    module = types.ModuleType("fake_engine")
    module.ENGINE = Engine(
        name="fake",
        title="Fake",
        checked_against="0.1",
        summary="fake-train",
        header="Fake 0.1",
        names=names,
        write=write,
        own_files=("fake.json",),
        needs=("json", "json"),
        install="pip install fake",
        files="fake.json",
    )
    return module


@pytest.fixture
def registry(monkeypatch):
    """The registry, restored after the test."""
    monkeypatch.setattr(ex, "ENGINES", dict(ex.ENGINES))
    return ex.ENGINES


def test_an_engine_is_one_module(registry, tmp_path):
    engine = ex.register(fake_engine_module())
    assert list(registry) == ["trl", "verl", "fake"] and ex.missing_names(engine) == []
    table = ex.mapping_table().splitlines()
    assert table[0].count("|") == 4 + 3 and "Fake 0.1" in table[0]
    assert "| `lr` | `learning_rate` | `actor.optim.lr` | `rate` |" in ex.mapping_table()
    done = ex.export(TrainConfig(algo="grpo"), make_config("grpo", lr=3e-4), "fake", tmp_path / "x")
    assert json.loads((tmp_path / "x" / "fake.json").read_text()) == {"rate": 3e-4, "samples": 7}
    assert done.command == "fake-train fake.json" and (tmp_path / "x" / "rewards.py").is_file()
    assert "differs: `group_size` = 8: fake samples one answer fewer" in done.notes
    assert any(
        n.startswith("no equivalent: `clip_high`") for n in done.notes
    )  # a field it does not name a conversion for
    readme = (tmp_path / "x" / "README.md").read_text()
    assert "# rlalgos grpo exported to Fake" in readme and "pip install fake" in readme
    assert "fake.json" in ex.export_files()  # --overwrite removes it, as the shared files


def test_an_engine_that_is_not_there_is_one_line(registry, tmp_path):
    with pytest.raises(ValueError) as e:
        ex.export(TrainConfig(algo="grpo"), make_config("grpo"), "openrlhf", tmp_path / "x")
    assert str(e.value) == "unknown engine 'openrlhf': no export module declares it; use trl or verl"
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match=r"^fake_writerless declares no ENGINE"):
        ex.register(types.ModuleType("fake_writerless"))
    module = fake_engine_module()
    module.ENGINE = dataclasses.replace(module.ENGINE, write=None)
    with pytest.raises(ValueError) as e:
        ex.register(module)
    assert str(e.value) == "engine 'fake' (fake_engine) has no writer: ENGINE.write must be a function"
    assert "fake" not in registry


def relabelled_task() -> tasks.Task:
    """The addition task with its answer in a column named ``result`` and another ability."""
    base = tasks.get_task("addition")
    rows = [
        [{("result" if k == "answer" else k): v for k, v in r.items()} for r in split]
        for split in (base.train[:50], base.test[:10])
    ]
    rewards = tasks.RewardSet([("correct", tasks.format_reward, 1.0)])  # reads no answer column
    return tasks.Task("relabelled", *rows, rewards, answer_key="result", ability="arithmetic", answer_format="#{}")


def test_the_export_takes_the_answer_column_and_ability_from_the_task(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setitem(tasks.TASKS, "relabelled", relabelled_task)
    ex.export(TrainConfig(algo="grpo", task="relabelled"), make_config("grpo"), "verl", tmp_path / "x")
    row = pq.read_table(tmp_path / "x" / "data" / "train.parquet").to_pylist()[0]
    assert row["ability"] == "arithmetic" and row["data_source"] == "rlalgos/relabelled"
    assert row["reward_model"]["ground_truth"] == relabelled_task().train[0]["result"]
    assert "result" not in row["extra_info"] and "answer" not in row["extra_info"]
    rewards_py = (tmp_path / "x" / "rewards.py").read_text()
    assert 'columns["result"] = [ground_truth]' in rewards_py
    task = relabelled_task()
    assert task.sample_answer(task.test[0]) == "#" + task.test[0]["result"]


def test_a_task_without_its_answer_column_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(tasks.TASKS, "unlabelled", lambda: dataclasses.replace(relabelled_task(), answer_key="gold"))
    with pytest.raises(ValueError, match=r"^task 'relabelled' has a row without its answer column 'gold' \(keys: "):
        ex.export(TrainConfig(algo="grpo", task="unlabelled"), make_config("grpo"), "verl", tmp_path / "x")


def guarded(node: ast.AST, parents: dict) -> bool:
    """Whether ``node`` sits in a ``try`` whose handler catches ImportError."""
    while node in parents:
        node, child = parents[node], node
        if isinstance(node, ast.Try) and child in node.body:
            caught = [h.type for h in node.handlers]
            if any(isinstance(t, ast.Name) and t.id in ("ImportError", "ModuleNotFoundError") for t in caught):
                return True
    return False


def test_tasks_py_imports_the_standard_library_only():
    """rlalgos export copies tasks.py verbatim into every export, where only the standard library is sure to be:
    anything else is imported inside a function, in a try that catches ImportError."""
    tree = ast.parse(open(tasks.__file__).read())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    stdlib, checked = set(sys.stdlib_module_names) | {"__future__"}, 0
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"tasks.py line {node.lineno}: a relative import (the copy has no package)"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            checked += 1
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            outside = [n for n in names if n.split(".")[0] not in stdlib]
            assert not outside or guarded(node, parents), f"tasks.py line {node.lineno} imports {outside} unguarded"
    assert checked, "no imports found: the check reads the wrong file"
