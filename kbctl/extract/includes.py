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
above). An include that names a file the project does not have (or one it may not read)
is left out too, never shown as its directive; ``unresolved_includes`` collects each one,
with the file and line that wrote it, for the ingest report.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..projectfiles import is_regular, read_config_text, repository_top

MAX_INCLUDED_CHARS = 5 * 1024 * 1024
_OUTSIDE: ContextVar[set[Path] | None] = ContextVar("kbctl_outside_includes", default=None)
# Unresolved includes kept per page, at most: a generated page of 10,000 broken includes
# reports the first ones and a count.
MAX_UNRESOLVED = 100


@dataclass(frozen=True)
class Unresolved:
    """An include left out of a page: the file and line (1-based) that wrote it, the
    target as written, and why it was not read."""

    file: Path
    line: int
    target: str
    reason: str


class _Unresolved(list):  # type: ignore[type-arg]
    """The unresolved includes of the pages read in one block, and how many past the cap."""

    more = 0


_UNRESOLVED: ContextVar[_Unresolved | None] = ContextVar("kbctl_unresolved_includes",
                                                         default=None)


@contextmanager
def unresolved_includes() -> Iterator[_Unresolved]:
    """The includes the pages read in this block could not resolve (``Unresolved``)."""
    found = _Unresolved()
    token = _UNRESOLVED.set(found)
    try:
        yield found
    finally:
        _UNRESOLVED.reset(token)


def line_at(text: str, offset: int) -> int:
    """The 1-based line of ``text`` that holds the character at ``offset``."""
    return text.count("\n", 0, offset) + 1


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
        self._pages: dict[Path, str] = {}  # pages read again to find a failed include's line

    def unresolved(self, file: Path, line: int | Callable[[], int] | None, target: str,
                   path: Path | None, reason: str | None = None) -> None:
        """Record that the include of ``target`` at ``file``:``line`` was left out;
        ``path`` is the file it names (None: a target that names no file). ``line`` may be
        a function, called only when the include is recorded (a page of 100,000 failed
        includes counts no lines past the cap); None: the first line of ``file`` that
        names ``target`` (0 when none does). A file outside the project is not recorded
        here: ``outside_project`` names those."""
        found = _UNRESOLVED.get()
        if found is None:
            return
        if path is not None and _outside_known(path):
            return
        if len(found) >= MAX_UNRESOLVED:
            found.more += 1
            return
        if line is None:
            line = self._line_naming(file, target)
        elif callable(line):
            line = line()
        found.append(Unresolved(file, line, target, reason or self._why(path)))

    def _line_naming(self, file: Path, target: str) -> int:
        key = normalized(file)
        text = self._files.get(key)
        if text is None:  # the page itself: read once, for its first few failed includes
            text = self._pages.get(key)
            if text is None:
                text = self._pages[key] = read_config_text(file) or ""
        at = text.find(target) if target else -1
        return line_at(text, at) if at >= 0 else 0

    def _why(self, path: Path | None) -> str:
        if path is None:
            return "names no file"
        key = normalized(path)
        if key in self._files and self._files[key] is not None:
            return "over the size a page may take in"
        try:
            exists = path.exists()
        except (OSError, ValueError):
            exists = False
        if not exists:
            return "no such file"
        return "not a file of the project kbctl may read (hidden, or unreadable)"

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


def _outside_known(path: Path) -> bool:
    outside = _OUTSIDE.get()
    return outside is not None and path in outside


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
