"""Jupyter Book (1.x): a ``_toc.yml`` beside a ``_config.yml``. It is Sphinx with MyST-NB
underneath, so pages map as Sphinx's ``html`` builder maps them (``guide/intro.md`` →
``guide/intro.html``), markdown and notebooks are read with MyST, and ids are docutils'.
``_config.yml`` gives ``exclude_patterns`` and MyST's settings under ``parse``; without
them the book's defaults hold (MyST's ``substitution`` extension among them). With
``only_build_toc_files: true`` only the files ``_toc.yml`` names (``root``, ``file``, or a
``glob``) are pages (all are, when it cannot be read).

Its ``_config.yml`` would read as Jekyll's; the ``_toc.yml`` tells them apart.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..projectfiles import first_config, matches_any
from ..yamlfile import load_yaml_config
from .base import Site
from .sphinx import Sphinx, exclude_patterns, myst_settings, source_stem

# Jupyter Book's default ``parse.myst_enable_extensions``
_DEFAULT_MYST = ("colon_fence", "dollarmath", "linkify", "substitution", "tasklist")
# What Jupyter Book never builds as pages, whatever the config says
_ALWAYS_EXCLUDED = ("/_build", "/.*", "**/.ipynb_checkpoints")
# A table of contents is a few hundred entries; a hostile one is read this far
_MAX_TOC_ENTRIES = 10_000
_MAX_TOC_DEPTH = 50
_MAX_TOC_GLOBS = 1000  # a real book has a few; each is a pattern every file is matched to


class JupyterBook(Sphinx):
    markers = ("_toc.yml",)
    rank = 120

    def __init__(self) -> None:
        super().__init__("jupyter-book")

    def detect(self, folder: Path) -> Site | None:
        toc = folder / "_toc.yml"
        if not toc.is_file():
            return None
        found = first_config(folder, ("_config.yml",))
        config = load_yaml_config(found[1]) if found is not None and found[1] else {}
        parse = config.get("parse") if isinstance(config.get("parse"), dict) else {}
        extensions = parse.get("myst_enable_extensions", list(_DEFAULT_MYST))
        settings: dict[str, Any] = {
            "html_file_suffix": ".html", "markdown": True, "notebooks": "myst_nb",
            "exclude": _ALWAYS_EXCLUDED + exclude_patterns(config.get("exclude_patterns")),
            **myst_settings(extensions, lambda: parse.get("myst_substitutions"))}
        if config.get("only_build_toc_files") is True:
            found = first_config(folder, ("_toc.yml",))
            files, globs = _toc_files_and_globs(load_yaml_config(found[1]) if found else {})
            if files or globs:  # a table of contents that cannot be read leaves out nothing
                settings["toc"] = (files, globs)
        return Site(self.name, folder, toc, settings)

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        listed = site.settings.get("toc")
        if listed is not None:
            stem = source_stem(rel)
            files, globs = listed
            if stem is None or not (stem.as_posix() in files or matches_any(
                    globs, stem.as_posix())):
                return None  # a file the table of contents does not name is not built
        return super().page(site, rel, front_matter)


def _toc_files_and_globs(toc: Any) -> tuple[frozenset[str], tuple[str, ...]]:
    """The docnames ``_toc.yml`` names (``root`` and ``file``, their suffix dropped) and
    its ``glob`` patterns, as patterns anchored at the book (``*`` within a folder, ``**``
    across, as Sphinx matches docnames)."""
    files: set[str] = set()
    globs: list[str] = []
    for key, value in toc_entries(toc):
        if not isinstance(value, str) or not value.strip():
            continue
        name = posixpath.normpath(value.strip().lstrip("/"))
        if key == "glob":
            if len(globs) < _MAX_TOC_GLOBS:
                globs.append("/" + name)
        else:
            stem = source_stem(PurePosixPath(name))
            files.add(stem.as_posix() if stem is not None else name)
        if len(files) + len(globs) >= _MAX_TOC_ENTRIES:
            break
    return frozenset(files), tuple(globs)


def toc_entries(node: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(key, value) of each ``root``, ``file`` and ``glob`` entry, however nested."""
    if depth > _MAX_TOC_DEPTH:
        return
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key in ("root", "file", "glob"):
                yield key, value
            else:
                yield from toc_entries(value, depth + 1)
    elif isinstance(node, list):
        for item in node:
            yield from toc_entries(item, depth + 1)


GENERATOR = JupyterBook()
