"""The package's plan: which layer each module is in, and that every import points down.

    0  the loop's data and maths: core, losses/, config, record, tasks  (no model, no I/O of runs)
    1  engine/: what runs under the loop without changing its numbers
    2  model, rollout: the models, and sampling + scoring into a Rollout
    3  algorithms/: the lesson
    4  train: the one loop
    5  tools/ and workbook/: what uses the loop

A module may import from its own layer or a lower one, never a higher one, and the
imports (top-level and inside functions) form no cycle. Each module imports alone in
a fresh interpreter.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "rlalgos"


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def layer(mod: str) -> int:
    parts = mod.split(".")
    if len(parts) == 1 or parts[1] in ("core", "config", "losses", "record", "tasks", "data"):
        return 0
    return {"engine": 1, "model": 2, "rollout": 2, "algorithms": 3, "train": 4, "tools": 5, "workbook": 5}[parts[1]]


def imports(mod: str) -> set[str]:
    """The rlalgos modules ``mod`` imports anywhere in its file (resolved, not counting packages' __init__ re-exports)."""
    path = MODULES[mod]
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("rlalgos"):
                continue
            for alias in node.names:  # `from . import core`: the module rlalgos.core
                full = f"{target}.{alias.name}"
                out.add(full if full in MODULES else target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("rlalgos"))
    out.discard(mod)
    return {m for m in out if m in MODULES}


def test_the_layout_has_the_folders_of_the_plan():
    for folder in ("algorithms", "config", "engine", "losses", "tools", "workbook"):
        assert (PKG / folder / "__init__.py").is_file()
    top = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")
    assert top == ["core", "model", "record", "rollout", "tasks", "train"]


def test_every_import_points_down():
    upward = [
        f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
        for m in MODULES
        for t in sorted(imports(m))
        if layer(t) > layer(m)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    graph = {m: imports(m) for m in MODULES}
    done, path = set(), []

    def visit(m):
        if m in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(m) :] + [m]))
        if m in done:
            return
        path.append(m)
        for t in sorted(graph[m]):
            visit(t)
        path.pop()
        done.add(m)

    for m in graph:
        visit(m)


def test_the_algorithms_meet_the_engine_only_as_named_lines():
    """algorithms/ imports from the engine only the whole-batch statistics, the
    forward pass helpers, the update machinery and the run's engine settings (one record);
    never distributed, LoRA or precision."""
    allowed = {"rlalgos.engine.batch", "rlalgos.engine.forward", "rlalgos.engine.update", "rlalgos.engine.settings"}
    for m in MODULES:
        if m.startswith("rlalgos.algorithms"):
            engine = {t for t in imports(m) if t.startswith("rlalgos.engine")}
            assert engine <= allowed, f"{m} imports {sorted(engine - allowed)}"


def test_each_module_imports_alone_in_a_fresh_interpreter():
    """One interpreter, every rlalgos module imported with no other rlalgos module loaded
    before it (torch and transformers stay loaded: only the package's own order is tested).
    The workbook's exercises do not load the training loop."""
    code = f"""
import importlib, sys
mods = {sorted(MODULES)!r}
bad = []
for m in mods:
    for k in [k for k in sys.modules if k == "rlalgos" or k.startswith("rlalgos.")]:
        del sys.modules[k]
    try:
        importlib.import_module(m)
    except Exception as e:
        bad.append(f"{{m}}: {{type(e).__name__}}: {{e}}")
for k in [k for k in sys.modules if k == "rlalgos" or k.startswith("rlalgos.")]:
    del sys.modules[k]
import rlalgos.workbook.exercises
if "rlalgos.train" in sys.modules:
    bad.append("importing rlalgos.workbook.exercises loads rlalgos.train")
print("\\n".join(bad))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", out.stdout


@pytest.mark.parametrize("module", ["rlalgos", "rlalgos.config", "rlalgos.tools.cli"])
def test_light_modules_import_neither_torch_nor_transformers(module):
    code = f"import sys, {module}; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr[-1000:]


def layout_entries(folder: str) -> set[str]:
    """The entries docs/layout.md's tree lists under ``folder/`` (``name.py`` or ``name/``)."""
    tree = (PKG.parent / "docs" / "layout.md").read_text(encoding="utf-8").split("```")[1]
    out, inside = set(), False
    for line in tree.splitlines():
        if re.match(r"^  \S", line):  # a folder or file of rlalgos/ itself
            inside = line.split()[0] == f"{folder}/"
        elif inside and (m := re.match(r"^    (\w+(?:\.py|/))", line)):
            out.add(m[1])
    return out


def test_layout_md_lists_every_workbook_module():
    """docs/layout.md names each module and subpackage of workbook/ once, and nothing that is gone."""
    here = {p.name for p in (PKG / "workbook").glob("*.py") if p.stem != "__init__"}
    here |= {f"{p.name}/" for p in (PKG / "workbook").iterdir() if (p / "__init__.py").is_file()}
    listed = layout_entries("workbook")
    assert listed == here, f"not in docs/layout.md: {sorted(here - listed)}; listed but gone: {sorted(listed - here)}"
