"""Build the book: the pages in docs/ and the notebooks, with their committed outputs.

    python docs/build_book.py                  # stage into build/book_src, build into build/book
    python docs/build_book.py --site-dir DIR   # build somewhere else (tests/test_book.py does)
    python -m http.server -d build/book        # then open http://localhost:8000

mkdocs-jupyter renders only files inside mkdocs' docs_dir, and the notebooks stay in
notebooks/, so this script stages a copy first, laid out as the book is:

    docs/*.md          -> STAGE/*.md           (the pages; links are fixed up by docs/book_hooks.py)
    docs/figures/      -> STAGE/figures/
    notebooks/NN_*.ipynb -> STAGE/notebooks/     (never executed: the committed outputs are what is shown)
    MathJax            -> STAGE/assets/mathjax/ (from the jupyter-server-mathjax package: no CDN)

and then runs mkdocs with mkdocs.yml (strict: any warning fails the build). Two things
make the book work offline: MathJax is served from the book itself, and the notebooks'
ipywidgets outputs (tqdm progress bars, which would need a widget manager from a CDN)
are shown as the text of their saved final state. Nothing else in a notebook is changed.

    python docs/build_book.py --settle notebooks/04_improved_grpo.ipynb   # the same text, in the .ipynb itself
"""

from __future__ import annotations

import argparse
import html
import json
import logging
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "mkdocs.yml"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def widget_text(model_id: str, state: dict) -> str | None:
    """The text a saved widget showed last: a tqdm bar's HBox(HTML, FloatProgress, HTML)."""
    model = state.get(model_id)
    if model is None:
        return None
    name, st = model.get("model_name", ""), model.get("state", {})
    if name == "HTMLModel" or name == "LabelModel":
        return html.unescape(str(st.get("value", ""))).replace("\u2007", " ")
    if name == "FloatProgressModel" or name == "IntProgressModel":
        total = float(st.get("max") or 0) or 1.0
        filled = round(10 * float(st.get("value") or 0) / total)
        return "|" + "█" * filled + " " * (10 - filled) + "|"
    if name in ("HBoxModel", "VBoxModel", "BoxModel"):
        parts = [widget_text(c.removeprefix("IPY_MODEL_"), state) for c in st.get("children", [])]
        if any(p is None for p in parts):
            return None
        return ("" if name == "HBoxModel" else "\n").join(parts)
    return None


def settle_widget_text(nb: dict) -> int:
    """Set each widget output's ``text/plain`` (what a viewer without widgets, such as a code-hosting
    site, shows) to the text of the widget's saved final state. Jupyter saves the text of a tqdm bar as
    it was drawn, at 0%, and only the widget state knows the end. Returns how many outputs changed."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    changed = 0
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                text = widget_text(data[WIDGET_VIEW].get("model_id", ""), state)
                plain = data.get("text/plain", "")
                if text is not None and ("".join(plain) if isinstance(plain, list) else plain) != text:
                    data["text/plain"] = [text]
                    changed += 1
    return changed


def settle(paths: list[Path]) -> int:
    """:func:`settle_widget_text` of each notebook file, written back in place (only when something changed)."""
    total = 0
    for path in paths:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
        if n := settle_widget_text(nb):
            Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"{path}: {n} progress bar(s) set to their final state")
        total += n
    return total


def stage_notebook(src: Path, dst: Path) -> None:
    """Copy a notebook, replacing widget outputs by the text of their saved state."""
    nb = json.loads(src.read_text(encoding="utf-8"))
    settle_widget_text(nb)
    if nb.get("metadata", {}).pop("widgets", None) is not None:
        for cell in nb.get("cells", []):
            for out in cell.get("outputs", []):
                if WIDGET_VIEW in out.get("data", {}):
                    out["data"] = {"text/plain": out["data"].get("text/plain", "")}
    dst.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")


def mathjax_dir() -> Path:
    try:
        import jupyter_server_mathjax
    except ImportError:
        sys.exit('the book needs jupyter-server-mathjax (MathJax served from the book): pip install -e ".[docs]"')
    return Path(jupyter_server_mathjax.__file__).parent / "static"


def stage(stage_dir: Path) -> Path:
    """Lay out docs/ and notebooks/ in stage_dir as the book's source; returns stage_dir."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    for page in sorted((ROOT / "docs").glob("*.md")):
        shutil.copy2(page, stage_dir / page.name)
    shutil.copytree(ROOT / "docs" / "figures", stage_dir / "figures")
    (stage_dir / "notebooks").mkdir()
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")):
        stage_notebook(nb, stage_dir / "notebooks" / nb.name)
    shutil.copytree(
        mathjax_dir(),
        stage_dir / "assets" / "mathjax",
        ignore=shutil.ignore_patterns("localization", "*.py", "__pycache__"),
    )
    return stage_dir


def build(
    site_dir: Path | str = ROOT / "build" / "book", stage_dir: Path | str | None = None, strict: bool = True
) -> Path:
    """Stage the sources and build the book into site_dir; returns site_dir."""
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # mkdocs-material's end-of-life banner
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    # nbconvert warns about every matplotlib figure without alt text: quiet it (not a build problem)
    logging.getLogger("traitlets").setLevel(logging.ERROR)
    site_dir = Path(site_dir).resolve()
    stage_dir = Path(stage_dir).resolve() if stage_dir else site_dir.parent / (site_dir.name + "_src")
    stage(stage_dir)
    cfg = load_config(str(CONFIG), docs_dir=str(stage_dir), site_dir=str(site_dir), strict=strict)
    mkdocs_build(cfg)
    # the download button serves the notebook as committed (the staged copy's widgets are text)
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")):
        shutil.copy2(nb, site_dir / "notebooks" / nb.name)
    return site_dir


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site-dir", default=str(ROOT / "build" / "book"), help="where the book goes")
    ap.add_argument("--stage-dir", default=None, help="where the sources are staged (default: SITE_DIR_src)")
    ap.add_argument("--no-strict", action="store_true", help="do not fail on mkdocs warnings")
    ap.add_argument(
        "--settle",
        nargs="+",
        metavar="NOTEBOOK",
        help="only set these notebooks' saved progress bars to their final state (make notebooks does), then stop",
    )
    args = ap.parse_args(argv)
    if args.settle:
        settle([Path(p) for p in args.settle])
        return
    site = build(args.site_dir, args.stage_dir, strict=not args.no_strict)
    print(f"the book is in {site}: view it with  python -m http.server -d {site}  and open http://localhost:8000")


if __name__ == "__main__":
    main()
