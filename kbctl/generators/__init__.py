"""Docs generator profiles: {name: generator}, detection from marker files, and the one
place that turns a content file into its published URL.

Adding a generator means one module with a ``GENERATOR`` (a ``base.Generator``: its
detection, page URLs, heading ids, markdown dialect, landing text and templates) and one
line in ``GENERATORS``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import HeadingIds
from ..errors import InputError, SourceError
from ..extract import dialects
from ..extract.dialects import PageFile
from ..projectfiles import inside, repository_top
from . import (
    docsify,
    docusaurus,
    hugo,
    jekyll,
    jupyterbook,
    mdbook,
    mkdocs,
    mystmd,
    plain,
    quarto,
    sphinx,
    starlight,
    vitepress,
    vuepress,
)
from .base import UNREAD, Generator, Site

GENERATORS: dict[str, Generator] = {
    "mdbook": mdbook.GENERATOR,
    "mkdocs": mkdocs.GENERATOR,
    "sphinx": sphinx.GENERATOR,
    "sphinx-dirhtml": sphinx.DIRHTML,
    "jupyter-book": jupyterbook.GENERATOR,
    "mystmd": mystmd.GENERATOR,
    "docusaurus": docusaurus.GENERATOR,
    "hugo": hugo.GENERATOR,
    "vitepress": vitepress.GENERATOR,
    "vuepress": vuepress.GENERATOR,
    "starlight": starlight.GENERATOR,
    "jekyll": jekyll.GENERATOR,
    "quarto": quarto.GENERATOR,
    "docsify": docsify.GENERATOR,
    "plain": plain.GENERATOR,
}
# Detection tries the profiles by their rank: the most specific markers first (see
# ``Generator.rank``).
_DETECTION_ORDER = tuple(name for name, generator in sorted(
    GENERATORS.items(), key=lambda item: item[1].rank or 0) if generator.rank is not None)
_MAX_PARENTS = 3
_MAX_SIBLINGS = 64
_MAX_ENTRIES = 4096
_NOT_PROJECTS = frozenset({"node_modules", "__pycache__", "site-packages"})
AUTO = "auto"
# Layouts read without their marker file. mdBook's is applied: a SUMMARY.md linking its
# chapters is the book's own table of contents. The others are only named, with what they
# would cite: a docs/ folder, a conf.py or a sidebars file one level down say less.
_GUESSED = ("mdbook",)
_HINTED = ("sphinx", "docusaurus", "mkdocs")

__all__ = ["AUTO", "GENERATORS", "HeadingIds", "Site", "detect_site", "likely_site",
           "resolve_site"]


def check_name(name: str) -> str:
    """The generator name, or an input error listing the known ones."""
    if name != AUTO and name not in GENERATORS:
        raise InputError(f"unknown generator '{name}' (expected {AUTO} or one of "
                         f"{', '.join(GENERATORS)})", hint="see the README's generator list")
    return name


def _folders_up(root: Path) -> Iterator[Path]:
    """``root`` and its nearest parents, stopping at a repository root."""
    folder = root.resolve()
    for _ in range(_MAX_PARENTS + 1):
        yield folder
        if (folder / ".git").exists() or folder.parent == folder:
            return
        folder = folder.parent


def detect_site(root: Path) -> Site | None:
    """The site whose marker is in ``root`` or one of its nearest parents (the folder
    ingested is often ``docs/`` inside the project); None when no generator claims it."""
    for folder in _folders_up(root):
        for name in _DETECTION_ORDER:
            site = _detect(name, folder)
            if site is not None:
                return site
    return _beside(root, _DETECTION_ORDER)


def _beside(root: Path, names: tuple[str, ...]) -> Site | None:
    """The site whose marker is in a folder beside ``root`` (or beside one of its parents)
    and whose content folder holds ``root``: the layout where ``website/`` holds the
    Docusaurus config and ``docs/`` next to it the pages (``path: '../docs'``). Inside a
    git repository, beside any folder up to its top; outside one (a tarball, a ``git
    archive``), beside ``root`` only: a home folder's other folders are not searched. A
    folder there that is some other project, with settings that cannot be read, is
    skipped."""
    target = root.resolve()
    ups = list(_folders_up(root))[1:]
    for folder in ups if repository_top(root) is not None else ups[:1]:
        for child in _subfolders(folder):
            if target.is_relative_to(child):
                continue  # on the way up from root: searched already
            for name in names:
                try:
                    site = _detect(name, child)
                except InputError:
                    break
                if site is not None and inside(site.content, target):
                    return replace(site, content=site.content.resolve())
    return None


def _subfolders(folder: Path) -> list[Path]:
    """The first folders in ``folder`` by name, from at most ``_MAX_ENTRIES`` of its
    entries: a folder of a million files is not listed whole to find a sibling."""
    names: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in itertools.islice(entries, _MAX_ENTRIES):
                if (not entry.name.startswith(".") and entry.name not in _NOT_PROJECTS
                        and entry.is_dir()):
                    names.append(entry.name)
    except OSError:
        return []
    return [folder / name for name in sorted(names)[:_MAX_SIBLINGS]]


def _detect(name: str, folder: Path) -> Site | None:
    """One profile's detection; settings it cannot make sense of are the user's to fix,
    named as such, never a crash of the run."""
    try:
        return GENERATORS[name].detect(folder)
    except Exception as exc:  # noqa: BLE001 - a config no profile foresaw
        raise InputError(f"{folder}: the {name} settings there cannot be read "
                         f"({type(exc).__name__}: {exc})",
                         hint="fix them, or choose another rule with --generator "
                              "(plain cites files by their paths)") from exc


def resolve_site(root: Path, name: str | None = None) -> Site:
    """The site for a files source: the named generator (with the settings its marker
    gives, if one is found) or the detected one; the plain rule when nothing matches."""
    name = check_name(name or AUTO)
    if name == AUTO:
        return (detect_site(root) or _guess(root.resolve(), _GUESSED)
                or GENERATORS["plain"].default_site(root.resolve()))
    generator = GENERATORS[name]
    for folder in _folders_up(root):
        site = _detect(name, folder)
        if site is not None:
            return replace(site, generator=name, named=True)
    site = _beside(root, (name,))
    if site is not None:
        return replace(site, generator=name, named=True)
    return _guess(root.resolve(), (name,)) or generator.default_site(root.resolve())


def _guess(root: Path, names: tuple[str, ...]) -> Site | None:
    """The site of the first of ``names`` whose layout ``root`` has without its marker."""
    for name in names:
        site = GENERATORS[name].guess(root)
        if site is not None:
            return site
    return None


def likely_site(root: Path) -> Site | None:
    """The generator ``root`` looks like it is built with although no marker says so (a
    Sphinx ``conf.py`` one level down, Docusaurus' ``docs/`` and ``sidebars.js``,
    MkDocs' ``docs/``): named to whoever reads it with the plain rule, never applied."""
    return _guess(root.resolve(), _HINTED)


def page_path(site: Site, path: Path, front_matter: Mapping[str, Any] | None = None
              ) -> str | None:
    """Published path (relative to the base URL) of the file at ``path`` (absolute, under
    a resolved folder, as the files source walks it); None when the generator does not
    publish it (outside its content folder, a draft, not a page). Before the file is read
    (``front_matter`` None) the generator gets ``UNREAD``. A ``SourceError`` when the
    profile fails on this one file."""
    try:
        rel = path.relative_to(site.content)
    except ValueError:
        return None
    try:
        return GENERATORS[site.generator].page(
            site, PurePosixPath(rel.as_posix()), UNREAD if front_matter is None else front_matter)
    except Exception as exc:  # noqa: BLE001 - front matter or settings no profile foresaw
        raise SourceError(f"{path}: {site.generator} cannot place this page "
                          f"({type(exc).__name__}: {exc})") from exc


def page_title(site: Site, path: Path, written: str | None) -> str | None:
    """The title ``site``'s generator shows for the page at ``path`` (absolute, as for
    ``page_path``), given the one the file writes (front matter, first H1); None when it
    says nothing beyond that."""
    try:
        return GENERATORS[site.generator].title(
            site, PurePosixPath(path.relative_to(site.content).as_posix()), written)
    except ValueError:  # outside the content folder
        return written


def expiry(site: Site, front_matter: Mapping[str, Any]) -> datetime | None:
    """When ``site``'s generator stops publishing a page with this front matter (Hugo's
    ``expiryDate``); None when nothing says it will. A page stored before then must be
    read again after it, changed or not."""
    try:
        return GENERATORS[site.generator].expires(site, front_matter)
    except Exception:  # noqa: BLE001 - a date no profile foresaw: the page simply stays
        return None


def heading_ids(site: Site, *, notebook: bool = False) -> HeadingIds:
    """A fresh heading id allocator for one page of ``site``; a ``notebook``'s sections
    get ids of their own from nbsphinx and mkdocs-jupyter."""
    if notebook and site.settings.get("notebooks") == "nbsphinx":
        return sphinx.NbsphinxIds()
    if notebook and site.settings.get("notebooks") == "mkdocs-jupyter":
        return mkdocs.notebook_heading_ids(site)
    return GENERATORS[site.generator].heading_ids(site)


def page_markdown(site: Site, body: str, *, fmt: str, page: PageFile | None = None) -> str:
    """A markdown page's body as ``site``'s generator's readers see it, after the text its
    front matter shows on a landing page."""
    generator = GENERATORS[site.generator]
    if page is not None:
        body = generator.landing(page.front_matter) + body
    return dialects.page_markdown(body, fmt=fmt, dialect=generator.markdown, page=page)


def page_html(site: Site, html: str) -> str:
    """An HTML page with front matter as ``site``'s generator leaves it for the browser
    (Jekyll renders its Liquid first)."""
    return GENERATORS[site.generator].template(html)
