"""The files a page takes in from its project (mdBook's include links, MkDocs' snippets,
VitePress' inclusions, MDX partials, Jekyll's and Sphinx's includes), read under the
rules every such dialect shares.

Only the project's own files are read: those of the git repository the folder holding the
generator's config lies in (``docs/index.rst`` takes in ``../README.rst``), or of that
folder alone outside a repository or in one kept at a home folder or above it (dotfiles:
the home's files are not the project's). A path that leads elsewhere (``../..``, an absolute path, a
symlink out), through a hidden folder or to a hidden file (``.git/config`` may hold a
token, ``.env`` secrets), or to a missing or oversized file, reads as nothing. Each file
is read from disk once however often a page names it, under its normalised path
(``a.md``, ``./a.md`` and ``x/../a.md`` are one file), and a page takes in at most
``MAX_INCLUDED_CHARS`` in all, a file counted each time it is taken in: a file included
twice at each of ten levels would otherwise be copied a thousand times, and a big file
named a hundred thousand times for one line of it read as often.

A file outside the project that a page names is left out without a word from the dialect;
``outside_project`` collects them for whoever reads the page (the files source says so in
its report: a docs folder copied out of its repository loses what it takes in from
above).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cached_property
from pathlib import Path

from ..projectfiles import is_regular, read_config_text, repository_top

MAX_INCLUDED_CHARS = 5 * 1024 * 1024
_OUTSIDE: ContextVar[set[Path] | None] = ContextVar("kbctl_outside_includes", default=None)


@contextmanager
def outside_project() -> Iterator[set[Path]]:
    """The existing files outside the project that the pages read in this block named."""
    found: set[Path] = set()
    token = _OUTSIDE.set(found)
    try:
        yield found
    finally:
        _OUTSIDE.reset(token)


class IncludedFiles:
    """One page's includes: the files read (appended to ``reads``, once each, so the page
    is read again when one changes) and what the page may still grow by."""

    def __init__(self, project: Path, reads: list[Path]) -> None:
        self.project = project
        self.reads = reads
        self.budget = MAX_INCLUDED_CHARS
        self._files: dict[Path, str | None] = {}

    def read(self, path: Path) -> str | None:
        """The file's text, taken from the page's budget; None when it is not the
        project's, cannot be read, or no longer fits."""
        key = normalized(path)
        if key not in self._files:
            text = read_config_text(path) if self._readable(path) else None
            self._files[key] = text
            if text is not None:
                self.reads.append(key)
        text = self._files[key]
        return text if text is not None and self.take(text) else None

    @cached_property
    def boundary(self) -> Path:
        """The folder whose files are the project's, looked up once a file is read (most
        pages take none in)."""
        return _boundary(self.project)

    def _readable(self, path: Path) -> bool:
        try:
            real = path.resolve()
            rel = real.relative_to(self.boundary)
        except (OSError, RuntimeError):  # a symlink loop
            return False
        except ValueError:  # elsewhere
            outside = _OUTSIDE.get()
            if outside is not None and len(outside) < 100 and is_regular(real):
                outside.add(path)
            return False
        return not any(part.startswith(".") for part in rel.parts)

    def take(self, text: str) -> bool:
        """Whether ``text`` still fits in the page's budget (which it then uses up)."""
        if len(text) > self.budget:
            return False
        self.budget -= len(text)
        return True


def normalized(path: Path) -> Path:
    """``path`` with its ``.`` and ``x/..`` parts resolved by name (links are not
    followed): the one file a dialect names however it writes it, for the files read and
    for telling an include of a file inside itself."""
    return Path(os.path.normpath(path))


def _boundary(project: Path) -> Path:
    """The folder whose files are the project's (see the module docstring)."""
    real = project.resolve()
    top = repository_top(real)
    try:
        home: Path | None = Path.home().resolve()
    except (OSError, RuntimeError, KeyError):  # no home to speak of
        home = None
    if top is None or (home is not None and home.is_relative_to(top)):
        return real
    return top
