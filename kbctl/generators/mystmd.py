"""MyST (mystmd, the engine of Jupyter Book 2): a ``myst.yml`` with a ``project``.

Its pages are the ``.md`` and ``.ipynb`` files that ``project.toc`` lists (``file``
entries and ``pattern`` globs, in order), or a Jupyter Book 1 ``_toc.yml`` beside it
does (``root`` and ``file`` entries), or without a toc every such file of the project
(not hidden ones, ``node_modules``, ``_build``, ``project.exclude`` matches or a folder
holding a project of its own). Each is published at a slug of its file name: the
leading numbering cut (``01_first_Page.md`` → ``first-page``), lowercased, each run of
other characters a ``-``, 50 characters at most, a repeat numbered (``intro-1``) in the
order mystmd reads the project: the index first (``index``, ``readme`` or ``main``, else
the first markdown file), then each folder's files before its subfolders, index files
first and the rest in natural order. URLs are flat (``/first-page``) unless
``site.options.folders`` keeps the folders (``/sub/first-page``); the index is the site's
root.

Heading ids are mystmd's: the text with quotes dropped and lowercased, every character
but ``a-z``, ``0-9`` and ``-`` a ``-``, ``id-`` before a leading digit or dash, runs of
``-`` joined and trimmed; a ``(label)=`` target before a heading names it instead; a
repeat gets ``-1``, ``-2``. ``{#id}`` is text. A page's first heading is its title, not a
section, when it is an H1 that opens the page (and matches a front matter title).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import CountingIds
from ..chunk.slug import myst_html_id
from ..extract import dialects
from ..extract.dialects import PageFile
from ..projectfiles import first_config, matches_any
from ..yamlfile import load_yaml_config
from .base import Generator, Site
from .jupyterbook import toc_entries

_MARKER = "myst.yml"
_PAGE_SUFFIXES = (".md", ".ipynb")
_INDEX_NAMES = ("index", "readme", "main")
_SKIPPED = {"node_modules", "_build"}
_MAX_FILES = 20_000  # a project walked past this is read as far as it got
_MAX_DEPTH = 30
_MAX_TOC_ENTRIES = 5000
_MAX_TOC_PATTERNS = 200  # each is matched against every file of the project
_SLUG_CHARS = re.compile(r"[^a-z0-9-]+")
_NUMBERING = re.compile(r"^[0-9_.-]+")
_YEAR = re.compile(r"^[12][0-9]{3}(?:[^0-9]|$)")
_NATURAL = re.compile(r"(\d+)")
_INLINE_MATH = re.compile(r"\$([^$\n]+)\$")  # its text is the TeX: "$x^2$" → "x^2"


def create_slug(name: str) -> str:
    """mystmd's slug of a file or folder name (without its extension)."""
    if not _YEAR.match(name) and not re.match(r"^[0-9]{5}", name):
        name = _NUMBERING.sub("", name) or name
    slug = _SLUG_CHARS.sub("-", name.replace("&", "-and-").lower()).strip("-")
    return re.sub(r"-{2,}", "-", slug)[:50]


class Mystmd(Generator):
    name = "mystmd"
    markers = (_MARKER,)
    rank = 80

    def detect(self, folder: Path) -> Site | None:
        found = first_config(folder, (_MARKER,))
        if found is None:
            return None
        config = load_yaml_config(found[1])
        project = config.get("project")
        if config and not isinstance(project, Mapping):
            return None  # a myst.yml of a site alone (its projects elsewhere)
        project = project if isinstance(project, Mapping) else {}  # unreadable: defaults
        site = config.get("site") if isinstance(config.get("site"), Mapping) else {}
        options = site.get("options") if isinstance(site.get("options"), Mapping) else {}
        folders = options.get("folders") is True
        return Site(self.name, folder, found[0], {
            "notebooks": "mystmd", "dollarmath": True, "amsmath": True,
            "pages": _pages(folder, project, folders)})

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, settings={
            "notebooks": "mystmd", "dollarmath": True, "amsmath": True,
            "pages": _pages(root, {}, False)})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        pages = site.settings.get("pages") or {}
        return pages.get(rel.as_posix())

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.mystmd(text, page)

    def heading_ids(self, site: Site) -> CountingIds:
        # every id in page order, a label's too, made unique; a heading of no text has none
        return CountingIds(lambda text: myst_html_id(_INLINE_MATH.sub(r"\1", text)),
                           empty=None, number_explicit=True)


def _pages(root: Path, project: Mapping[str, Any], folders: bool) -> dict[str, str]:
    """{a page's path from the project: its URL path} in the order mystmd numbers slugs."""
    exclude = tuple("/" + p.strip().removeprefix("./").lstrip("/")
                    for p in project.get("exclude", []) if isinstance(p, str) and p.strip()
                    ) if isinstance(project.get("exclude"), list) else ()
    toc = project.get("toc")
    if isinstance(toc, list) and toc:
        ordered = _toc_files(root, toc, exclude)
        index = ordered[0] if ordered else None
        slugs = {"index": 1}
    elif (root / "_toc.yml").is_file():  # Jupyter Book 1's table of contents, still read
        ordered = _legacy_toc_files(root)
        index = ordered[0] if ordered else None
        slugs = {}
    else:
        ordered = list(_walk(root, exclude))
        index = _index_of(ordered)
        slugs = {}
    urls: dict[str, str] = {}
    if index is None:
        return urls
    if not slugs:
        _slug(index, slugs, folders)
    urls[index] = ""
    for rel in ordered:
        if rel not in urls:
            urls[rel] = _slug(rel, slugs, folders).removesuffix(".index").replace(".", "/")
    return {rel: url for rel, url in urls.items() if rel.lower().endswith(_PAGE_SUFFIXES)}


def _slug(rel: str, counts: dict[str, int], folders: bool) -> str:
    path = PurePosixPath(rel)
    name = path.name[: -len(_suffix(path.name))] if _suffix(path.name) else path.stem
    slug = create_slug(name)
    if folders:
        slug = ".".join([*(create_slug(part) for part in path.parent.parts), slug])
    folder_index = slug.endswith(".index")
    key = slug[:-6] if folder_index else slug
    if key in counts:
        counts[key] += 1
        return f"{key}-{counts[key] - 1}" + (".index" if folder_index else "")
    counts[key] = 1
    return slug


def _suffix(name: str) -> str:
    lowered = name.lower()
    return next((s for s in (*_PAGE_SUFFIXES, ".tex", ".myst.json") if lowered.endswith(s)), "")


def _natural(name: str) -> tuple[Any, ...]:
    """A sort key near ``localeCompare`` with numeric order and punctuation ignored."""
    squeezed = "".join(c for c in name.lower() if c.isalnum())
    return tuple(int(part) if part.isdigit() else part for part in _NATURAL.split(squeezed))


def _in_order(names: list[str]) -> list[str]:
    """One folder's entries as mystmd sorts them: index files first, then naturally."""
    index_names = {f"{n}{s}" for n in _INDEX_NAMES for s in (".md", ".ipynb", ".myst.json")}
    return sorted(names, key=lambda n: (n not in index_names, _natural(n), n))


def _walk(root: Path, exclude: tuple[str, ...]) -> Iterator[str]:
    """The project's page files, each folder's files before its subfolders'."""
    seen = 0

    def folder(path: Path, rel: str, depth: int) -> Iterator[str]:
        nonlocal seen
        try:
            with os.scandir(path) as entries:
                names = [e.name for e in entries if not e.name.startswith(".")
                         and e.name not in _SKIPPED]
        except OSError:
            return
        if depth and _MARKER in names:
            return  # a project of its own
        files, dirs = [], []
        for name in _in_order(names):
            seen += 1
            if seen > _MAX_FILES:
                break  # read as far as it got
            child = f"{rel}{name}"
            if exclude and matches_any(exclude, child):
                continue
            full = path / name
            if full.is_dir():
                dirs.append((full, child))
            elif _suffix(name):
                files.append(child)
        yield from files
        for full, child in dirs:
            if depth >= _MAX_DEPTH or seen > _MAX_FILES:
                return
            yield from folder(full, child + "/", depth + 1)

    yield from folder(root, "", 0)


def _index_of(ordered: list[str]) -> str | None:
    top = [rel for rel in ordered if "/" not in rel]
    for suffix in (".md", ".tex", ".ipynb", ".myst.json"):
        for name in _INDEX_NAMES:
            match = next((rel for rel in top if rel.lower() == f"{name}{suffix}"), None)
            if match:
                return match
    for suffix in (".md", ".tex", ".ipynb", ".myst.json"):
        match = next((rel for rel in top if rel.lower().endswith(suffix)), None)
        if match:
            return match
    return ordered[0] if ordered else None


def _toc_files(root: Path, toc: list[Any], exclude: tuple[str, ...]) -> list[str]:
    """The files ``project.toc`` names, in its order (patterns expanded)."""
    out: list[str] = []
    listed: set[str] = set()
    walked: list[str] = []  # the project's files, walked once for all patterns
    patterns = 0

    def entries(items: list[Any], depth: int) -> None:
        nonlocal patterns
        for item in items:
            if len(out) >= _MAX_TOC_ENTRIES or depth > _MAX_DEPTH:
                return
            if not isinstance(item, Mapping):
                continue
            if isinstance(item.get("file"), str):
                rel = _resolved(root, item["file"])
                if rel is not None and rel not in listed:
                    listed.add(rel)
                    out.append(rel)
            elif isinstance(item.get("pattern"), str) and patterns < _MAX_TOC_PATTERNS:
                patterns += 1
                if not walked:
                    walked.extend(_walk(root, ()))
                matches = [m for m in _glob(walked, item["pattern"]) if m not in listed
                           and not (exclude and matches_any(exclude, m))]
                if item.get("sort") == "descending":
                    matches.reverse()
                for rel in matches:
                    listed.add(rel)
                    out.append(rel)
            if isinstance(item.get("children"), list):
                entries(item["children"], depth + 1)

    entries(toc, 0)
    return out


def _legacy_toc_files(root: Path) -> list[str]:
    """The files a Jupyter Book 1 ``_toc.yml`` names (its ``root`` first, then each
    ``file`` in order; mystmd reads no ``glob`` there)."""
    found = first_config(root, ("_toc.yml",))
    toc = load_yaml_config(found[1]) if found else {}
    out: dict[str, None] = {}  # in order, once each
    for key, value in toc_entries(toc, 0):
        if key != "glob" and isinstance(value, str) and len(out) < _MAX_TOC_ENTRIES:
            rel = _resolved(root, value)
            if rel is not None:
                out.setdefault(rel)
    return list(out)


def _resolved(root: Path, written: str) -> str | None:
    """A toc's file path from the project, its extension added when left out."""
    rel = os.path.normpath(written.strip()).replace(os.sep, "/").lstrip("/")
    if rel.startswith("../") or rel == "..":
        return None
    if _suffix(rel):
        return rel
    return next((rel + s for s in (*_PAGE_SUFFIXES, ".tex", ".myst.json")
                 if (root / (rel + s)).is_file()), None)


def _glob(files: list[str], pattern: str) -> list[str]:
    """The ``files`` a toc pattern matches (``*`` within a folder, ``**`` across), sorted
    as mystmd sorts them."""
    if pattern.startswith(("/", "..")) or "/../" in pattern:
        return []
    anchored = ("/" + pattern.removeprefix("./"),)
    found = [rel for rel in files if matches_any(anchored, rel)]
    return sorted(found[:_MAX_TOC_ENTRIES], key=lambda rel: (_natural(rel), rel))


GENERATOR = Mystmd()
