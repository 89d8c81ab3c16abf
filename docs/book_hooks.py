"""mkdocs hooks for the book (mkdocs.yml: hooks): links written for GitHub work in the book.

In the repository a page docs/x.md links a notebook as ../notebooks/03_grpo.ipynb and a
notebook links a page as ../docs/speed.md or a sibling as 04_improved_grpo.ipynb. The book
(staged by docs/build_book.py) holds docs/* at its root and the notebooks in notebooks/,
so each relative link is resolved against the repository layout and pointed at the same
file in the book: in a page's markdown before mkdocs converts it (mkdocs then turns links
to pages into their URLs and checks them), and in a notebook's HTML (which mkdocs does
not check) straight to the rendered page; a notebook's picture (``![...](../docs/figures/...)``)
the same way.

It also mends the sidebar of contents of a notebook page: mkdocs-jupyter builds it with
python-markdown's slugs, which drop code spans ("### Everything together: `dapo`" ->
#everything-together), while nbconvert's headings keep them (#everything-together-dapo);
each entry is pointed at the id its heading really has.
"""

from __future__ import annotations

import posixpath
import re

# where a repository folder sits in the book
BOOK_PLACE = {"docs": "", "notebooks": "notebooks"}

MD_LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")
HTML_LINK = re.compile(r'(<a\s[^>]*?href=")([^"#:]+)(#[^"]*)?(")')
HTML_IMG = re.compile(r'(<img\s[^>]*?src=")([^"#:]+)()(")')  # a notebook's picture from docs/figures
HEADING = re.compile(r'<h([1-6])\b[^>]*\bid="([^"]+)"[^>]*>(.*?)</h\1>', re.S)
TAG = re.compile(r"<[^>]+>")


def repo_path(src_path: str) -> str:
    """The repository path of a file the book was staged from."""
    return src_path if src_path.startswith("notebooks/") else "docs/" + src_path


def book_path(repo_target: str) -> str | None:
    top, _, rest = repo_target.partition("/")
    if top not in BOOK_PLACE or not rest:
        return None
    return posixpath.join(BOOK_PLACE[top], rest) if BOOK_PLACE[top] else rest


def relink(target: str, src_path: str) -> str | None:
    """A relative link in the file staged as src_path, as a path in the book (None: leave it)."""
    if target.startswith("/") or re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None
    here = posixpath.dirname(repo_path(src_path))
    resolved = posixpath.normpath(posixpath.join(here, target))
    return book_path(resolved)


def on_page_markdown(markdown, page, config, files):
    src = page.file.src_uri

    def fix(m):
        new = relink(m.group(2), src)
        if new is None:
            return m.group(0)
        rel = posixpath.relpath(new, posixpath.dirname(src) or ".")
        return m.group(1) + rel + (m.group(3) or "") + m.group(4)

    return MD_LINK.sub(fix, markdown)


def on_page_content(html, page, config, files):
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    src = page.file.src_uri

    def fix(m):
        new = relink(m.group(2), src)
        target = files.get_file_from_path(new) if new else None
        if target is None:
            return m.group(0)
        url = target.url_relative_to(page.file)
        return m.group(1) + url + (m.group(3) or "") + m.group(4)

    html = HTML_IMG.sub(fix, HTML_LINK.sub(fix, html))
    mend_toc(page.toc, html)
    return html


def _plain(fragment: str) -> str:
    import html as html_lib

    return " ".join(html_lib.unescape(TAG.sub("", fragment)).replace("\u00b6", "").split())


def mend_toc(toc, html: str) -> None:
    """Point each table-of-contents entry at the id its heading has in the notebook's HTML."""
    headings = [(int(level), hid, _plain(text)) for level, hid, text in HEADING.findall(html)]
    ids = {hid for _, hid, _ in headings}
    used: set[str] = set()
    items = []

    def walk(entries):
        for item in entries:
            items.append(item)
            walk(item.children)

    walk(toc)
    for item in items:
        if item.id in ids:
            used.add(item.id)
    for item in items:
        if item.id in ids:
            continue
        title = _plain(item.title).rstrip(":").strip()
        for level, hid, text in headings:
            if hid not in used and level == item.level and text.startswith(title):
                item.id = hid
                used.add(hid)
                break
