"""Quarto: a ``_quarto.yml`` (or ``_quarto.yaml``) at the project's root. Every ``.qmd``,
``.md``, ``.Rmd`` and ``.ipynb`` file is a page at the same path with ``.html``
(``guide/install.qmd`` → ``guide/install.html``), except what Quarto never renders (a
file or folder starting with ``_`` or ``.``, ``README.md``, ``AGENTS.md``/``CLAUDE.md``,
the folders of virtualenvs and R libraries). ``project: render:`` narrows that to the
files it names (literal paths from the root, globs at any depth, ``!`` excluding); a book
renders only the files its ``chapters`` and ``appendices`` list. A draft (``draft: true``,
or named in ``website: drafts:``) is rendered empty unless ``draft-mode`` says otherwise,
and ``output-dir`` holds the rendered site, not sources; front matter ``output-file``
renames a page. An nbdev project (``nbdev.yml`` beside the config) publishes
``01a_Basics.ipynb`` as ``basics.html``, as nbdev names it.

Heading ids are Pandoc's (``auto_identifiers``) of the text as Pandoc reads it (the
dialect, ``extract.quarto``, makes dashes typographic and drops shortcodes): lowercased,
every character but letters, digits, ``_``, ``-`` and ``.`` dropped, words joined by
``-``, everything before the first letter cut (``section`` when nothing is left); a
repeat gets ``-1``, ``-2``. A ``{#id .class key=value}`` list ending a heading names it
and is no text.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import CountingIds
from ..extract import dialects
from ..extract.dialects import PageFile
from ..extract.goldmark_attributes import split_pandoc_attributes
from ..projectfiles import first_config, matches_any
from ..yamlfile import load_yaml_config
from .base import Generator, Site

_MARKERS = ("_quarto.yml", "_quarto.yaml")
_SOURCES = {".qmd": "markdown", ".md": "markdown", ".markdown": "markdown",
            ".rmd": "markdown", ".rmarkdown": "markdown", ".ipynb": "notebook"}
# Never rendered (Quarto's hidden-file globs and its engines' ignored folders)
_IGNORED_NAMES = {"README.md", "README.Rmd", "README.rmd", "README.qmd", "CLAUDE.md",
                  "CLAUDE.local.md", "AGENTS.md", "AGENTS.local.md"}  # as cased
_IGNORED_FOLDERS = {"node_modules", "venv", "env", "renv", "packrat", "rsconnect"}
_GLOB_CHARS = frozenset("*?[{")
_NBDEV_PREFIX = re.compile(r"^\d+[a-zA-Z0-9]*_")  # nbdev's 01a_basics.ipynb → basics.html
# A render list or a book's chapters are tens of entries; a hostile one is read this far
_MAX_ENTRIES = 1000
_MAX_DEPTH = 50


def pandoc_slug(text: str) -> str:
    """Pandoc's identifier for a heading whose text is ``text`` ('' when nothing is
    left)."""
    kept = "".join(c for c in text.lower() if c.isspace() or c.isalnum() or c in "_-.")
    ident = "-".join(kept.split())
    start = next((i for i, c in enumerate(ident) if c.isalpha()), len(ident))
    return ident[start:]


class Quarto(Generator):
    name = "quarto"
    markers = _MARKERS
    rank = 70

    def detect(self, folder: Path) -> Site | None:
        found = first_config(folder, _MARKERS)
        if found is None:
            return None
        config = load_yaml_config(found[1])
        project = _mapping(config.get("project"))
        metadata_files = config.get("metadata-files")
        nbdev = (folder / "nbdev.yml").is_file() or (
            isinstance(metadata_files, list) and "nbdev.yml" in metadata_files)
        settings: dict[str, Any] = {
            "source_suffix": dict(_SOURCES), "notebooks": "nbdev" if nbdev else "quarto",
            "dollarmath": True, "metadata": config}
        website = _mapping(config.get("website"))
        if (project.get("type") in ("website", "book")
                and str(website.get("draft-mode", "gone")) == "gone"):  # drafts: emptied
            drafts = website.get("drafts")
            settings["drafts"] = frozenset(
                posixpath.normpath(d.strip().lstrip("/")) for d in drafts[:_MAX_ENTRIES]
                if isinstance(d, str) and d.strip()) if isinstance(drafts, list) else frozenset()
        output = project.get("output-dir")
        if isinstance(output, str) and output.strip(" ./"):
            settings["output_dir"] = posixpath.normpath(output.strip().strip("/"))
        if project.get("type") == "book":
            book = _mapping(config.get("book"))
            files = [*_book_files(book.get("chapters")), *_book_files(book.get("appendices"))]
            settings["render"] = tuple(f"/{f}" for f in files[:_MAX_ENTRIES])
        elif isinstance(project.get("render"), list):
            settings["render"] = _render_patterns(project["render"])
        return Site(self.name, folder, found[0], settings)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, settings={
            "source_suffix": dict(_SOURCES), "notebooks": "quarto", "dollarmath": True})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if rel.suffix.lower() not in _SOURCES or rel.name in _IGNORED_NAMES:
            return None
        if rel.name.lower().endswith(".llms.md") or any(
                part.startswith(("_", ".")) or part in _IGNORED_FOLDERS for part in rel.parts):
            return None
        output = site.settings.get("output_dir")
        if output is not None and (rel.as_posix() + "/").startswith(output + "/"):
            return None  # the rendered site (docs/ for GitHub Pages), not its sources
        drafts = site.settings.get("drafts")
        if drafts is not None and (front_matter.get("draft") is True
                                   or rel.as_posix() in drafts):
            return None
        render = site.settings.get("render")
        if render is not None and not matches_any(render, rel.as_posix()):
            return None
        output = front_matter.get("output-file")
        if isinstance(output, str) and output.strip() and "/" not in output:
            name = output.strip()
            return (rel.parent / (name if "." in name else name + ".html")).as_posix()
        if site.settings.get("notebooks") == "nbdev" and rel.suffix.lower() == ".ipynb":
            return (rel.parent / _NBDEV_PREFIX.sub("", rel.name.lower())).with_suffix(
                ".html").as_posix()
        return rel.with_suffix(".html").as_posix()

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.quarto(text, page)

    def heading_ids(self, site: Site) -> CountingIds:
        ids = CountingIds(pandoc_slug, empty="section")
        ids.attribute_lists = split_pandoc_attributes
        return ids


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _render_patterns(entries: list[Any]) -> tuple[str, ...]:
    """``project: render:`` as gitignore patterns (a match is rendered): a literal path
    from the project's root, a glob at any depth, ``!`` excluding at any depth (Quarto's
    "auto" globs)."""
    includes: list[str] = []
    excludes: list[str] = []
    for entry in entries[:_MAX_ENTRIES]:
        if not isinstance(entry, str) or not entry.strip():
            continue
        written = entry.strip()
        negated = written.startswith("!")
        written = written[1:] if negated else written.removeprefix("\\")
        written = written.removeprefix("./")
        if not written:
            continue
        if written.startswith("/"):
            pattern = written
        elif negated or _GLOB_CHARS & set(written):
            pattern = "**/" + written
        else:
            pattern = "/" + written
        (excludes if negated else includes).append(
            ("!" if negated else "") + pattern)
    return tuple(includes + excludes)


def _book_files(entries: Any) -> list[str]:
    """The files a book's ``chapters`` (or ``appendices``) name, parts and their
    chapters included, in order."""
    return [posixpath.normpath(value.strip().lstrip("/")) for value in _walk(entries, 0)]


def _walk(node: Any, depth: int) -> Iterator[str]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, str):
        if node.strip() and PurePosixPath(node.strip()).suffix.lower() in _SOURCES:
            yield node
    elif isinstance(node, Mapping):
        for key in ("part", "file", "href", "chapters"):
            if key in node:
                yield from _walk(node[key], depth + 1)
    elif isinstance(node, list):
        for item in node[:_MAX_ENTRIES]:
            yield from _walk(item, depth + 1)


GENERATOR = Quarto()
