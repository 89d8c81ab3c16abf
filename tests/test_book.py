"""The book (make docs): built the way `make docs` builds it, served on localhost, every page
loaded in headless Chromium.

Checks: each notebook page shows its figures (loaded <img> elements, at least as many as the
notebook's committed image outputs), the learner's path links on the home page resolve, no
link or image inside the site is broken (every internal <a href> and <img src>, fragments
included), and no page fetches anything from outside the site (the book works offline).

Needs the docs extra (mkdocs, mkdocs-material, mkdocs-jupyter, jupyter-server-mathjax),
playwright (the Python package only: it drives Debian's /usr/bin/chromium, no browser
download) and Chromium itself (`make browser`, or `apt-get install -y chromium`).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import shutil
import sys
import threading
import urllib.error
import urllib.request
from collections import deque
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")


def _require(module: str, install: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"the book test needs {module}: {install}")


def _build_book():
    """docs/build_book.py as a module (docs/ is not a package)."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import build_book
    finally:
        sys.path.remove(str(ROOT / "docs"))
    return build_book


def image_outputs(nb_path: Path) -> int:
    """How many image outputs a notebook's committed cells hold."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    return sum(
        any(m in out.get("data", {}) for m in IMAGE_MIMES)
        for cell in nb.get("cells", [])
        for out in cell.get("outputs", [])
    )


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no access log on the test's output
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # the browser drops connections it no longer needs (a page left mid-load): not an error
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def site(built_once):
    """The book built by docs/build_book.py (make docs' code path) and served on a free port."""
    if not CHROMIUM.exists():
        pytest.skip(
            "Chromium is not installed (no /usr/bin/chromium): run `make browser` "
            "or `apt-get install -y chromium` to run the book test"
        )
    for module in ("mkdocs", "material", "mkdocs_jupyter", "jupyter_server_mathjax"):
        _require(module, 'pip install -e ".[docs]"')
    _require("playwright", 'pip install -e ".[test]" (the Python package only; no `playwright install`)')

    build_book = _build_book()
    # built once per session (conftest's built_once: under pytest-xdist the first worker builds, the other waits)
    site_dir = built_once("book", lambda out: build_book.build(out / "site", out / "src")) / "site"

    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", site_dir
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(site, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh, empty --user-data-dir
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS, timeout=180_000
        )  # a loaded 2-core machine (the suite beside it) can take more than the default 30 s
        context.set_default_timeout(120_000)  # page loads too
        try:
            yield context
        finally:
            context.close()
    shutil.rmtree(profile, ignore_errors=True)


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _is_internal(url: str, base: str) -> bool:
    return url.startswith(base)


@pytest.fixture(scope="module")
def crawl(site, browser):
    """Every page reachable from the home page: its links, images, fragments and outside requests."""
    base, _ = site
    page = browser.new_page()
    outside: list[tuple[str, str]] = []
    current = {"url": ""}

    def on_request(req):
        if not req.url.startswith(base) and not req.url.startswith(("data:", "blob:", "about:")):
            outside.append((current["url"], req.url))

    page.on("request", on_request)
    pages: dict[str, dict] = {}
    queue = deque([base + "index.html"])
    while queue:
        url = queue.popleft()
        if url in pages:
            continue
        current["url"] = url
        response = page.goto(url, wait_until="load")
        assert response is not None and response.status == 200, f"{url}: HTTP {response and response.status}"
        if "/notebooks/" in url:  # MathJax loads its parts after the load event: let it finish
            page.wait_for_load_state("networkidle")
        info = page.evaluate("""() => ({
            links: [...document.querySelectorAll('a[href]')].map(a => a.href),
            images: [...document.querySelectorAll('img')].map(i => ({
                src: i.currentSrc || i.src, loaded: i.complete && i.naturalWidth > 0})),
            ids: [...document.querySelectorAll('[id]')].map(e => e.id)
                .concat([...document.querySelectorAll('a[name]')].map(a => a.name)),
        })""")
        pages[url] = info
        for link in info["links"]:
            target, _ = urldefrag(link)
            if _is_internal(target, base) and target.endswith(".html") and target not in pages:
                queue.append(target)
    page.close()
    return {"pages": pages, "outside": outside}


MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize(
    "md", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_relative_links_in_the_markdown_exist(md):
    """Every relative link in README.md and docs/*.md names a file in the repository (as on GitHub)."""
    text = re.sub(r"```.*?```", "", md.read_text(encoding="utf-8"), flags=re.S)
    missing = []
    for target in MD_LINK.findall(text):
        path = target.split("#")[0]
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        if not (md.parent / path).exists():
            missing.append(target)
    assert not missing, f"{md.name}: links to files that do not exist: {missing}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_saved_progress_bars_show_where_they_ended(nb):
    """A tqdm bar is saved as text at 0% and as a widget state at its end: a viewer without widgets
    (a code-hosting site) shows the text, so the text must be the end (make notebooks settles it)."""
    build_book = _build_book()
    assert build_book.settle_widget_text(json.loads(nb.read_text(encoding="utf-8"))) == 0, (
        f"{nb.name}: a progress bar's saved text is not its final state; run python docs/build_book.py --settle {nb.relative_to(ROOT)}"
    )


def _notebook_url(base: str, nb: Path) -> str:
    return f"{base}notebooks/{nb.stem}.html"


def test_every_notebook_is_in_the_book(site, crawl):
    base, _ = site
    missing = [nb.name for nb in NOTEBOOKS if _notebook_url(base, nb) not in crawl["pages"]]
    assert len(NOTEBOOKS) == 17 and not missing, f"notebook pages not reachable from the home page: {missing}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_page_shows_its_figures(site, crawl, nb):
    base, _ = site
    info = crawl["pages"][_notebook_url(base, nb)]
    expected = image_outputs(nb)
    loaded = sum(img["loaded"] for img in info["images"])
    broken = [img["src"][:80] for img in info["images"] if not img["loaded"]]
    assert not broken, f"{nb.name}: images that did not load: {broken}"
    assert loaded >= expected, f"{nb.name}: {loaded} figures shown, the notebook holds {expected} image outputs"
    if expected:
        assert loaded >= 1


def test_home_page_learner_path_links_resolve(site, crawl):
    base, _ = site
    links = crawl["pages"][base + "index.html"]["links"]
    path = sorted(
        {urldefrag(u)[0] for u in links if re.search(r"/notebooks/\d\d[a-z]?_[a-z_]+\.html$", urldefrag(u)[0])}
    )
    assert path == sorted(_notebook_url(base, nb) for nb in NOTEBOOKS), path
    for url in path:
        assert status(url) == 200, url


def test_no_broken_internal_links_or_images(site, crawl):
    base, _ = site
    pages = crawl["pages"]
    checked: dict[str, int] = {}
    broken = []
    for page_url, info in pages.items():
        targets = [(link, "link") for link in info["links"]]
        targets += [(img["src"], "img") for img in info["images"] if not img["src"].startswith("data:")]
        for url, kind in targets:
            target, fragment = urldefrag(url)
            if not _is_internal(target, base):
                continue
            if target not in checked:
                checked[target] = status(target)
            if checked[target] != 200:
                broken.append(f"{page_url} -> {kind} {url}: HTTP {checked[target]}")
            elif fragment and target in pages and fragment not in pages[target]["ids"]:
                broken.append(f"{page_url} -> {kind} {url}: no element with id {fragment!r}")
    assert len(checked) > len(pages)
    assert not broken, "broken links in the book:\n" + "\n".join(broken)


def test_the_book_needs_nothing_from_outside(crawl):
    assert not crawl["outside"], "pages fetched from outside the site:\n" + "\n".join(
        f"{page} -> {url}" for page, url in crawl["outside"]
    )


def test_math_is_typeset_offline(site, browser):
    """MathJax comes from the book itself and typesets the notebooks' $...$ maths."""
    base, _ = site
    page = browser.new_page()
    page.goto(base + "notebooks/03_grpo.html", wait_until="load")
    page.wait_for_function(
        "() => window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0"
        " && document.querySelectorAll('.MathJax, .MathJax_CHTML, mjx-container').length > 0",
        timeout=30_000,
    )
    page.close()
