"""Reading the small files a docs project carries beside its pages (a generator's config,
a ``.gitignore``) and matching gitignore patterns, for the generator profiles and the
files source alike.

Patterns are matched by pathspec (what MkDocs itself matches ``exclude_docs`` with) on its
RE2 backend: the default backend's regexes backtrack, and ``*a*a*a*a*a*a*a*a*a*ab`` in a
hostile config would never finish matching one long file name. pathspec is imported when
patterns show up: most runs match none.
"""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pathspec

MAX_CONFIG_BYTES = 1024 * 1024
# More lines than any real .gitignore has; a hostile one is read this far.
MAX_IGNORE_PATTERNS = 2000
# How many folders above a walked folder are searched for its repository's top.
MAX_REPO_DEPTH = 12


def read_config_text(path: Path) -> str | None:
    """A project file as text, or None when unreadable, oversized or not a regular file
    (reading a FIFO or a device named ``SUMMARY.md`` would block or never end)."""
    try:
        # O_NONBLOCK: a FIFO (at rest, or swapped in after a check) opens at once, and
        # fstat refuses it; a check by name before opening could not stop the swap
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_CONFIG_BYTES:
                return None
            # at most the cap, should the file grow meanwhile
            return handle.read(MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None


def read_config_json(path: Path) -> Any:
    """A project's JSON file (``package.json``, ``versions.json``, ``hugo.json``) as data;
    None when it cannot be read or does not parse (nested past the stack included)."""
    text = read_config_text(path)
    try:
        return json.loads(text) if text else None
    except (ValueError, RecursionError):
        return None


class OutsideBase(OSError):
    """A path that resolves outside the folder it was found in."""

    def __init__(self, real: Path) -> None:
        super().__init__(f"it resolves outside its folder ({real})")
        self.real = real


def open_within(path: Path, base: Path) -> int:
    """A read-only descriptor of ``path``, opened only where it resolves to inside ``base``
    (a resolved folder): the resolved file is opened with ``O_NOFOLLOW``, so a link swapped
    in after the folder was listed is not followed out of it, and ``O_NONBLOCK``, so a FIFO
    swapped in opens at once (the caller's ``fstat`` refuses it). Raises ``OutsideBase``,
    ``OSError``, or ``RuntimeError`` for a symlink loop."""
    real = path.resolve()
    if real != base and base not in real.parents:
        raise OutsideBase(real)
    return os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)


def inside(folder: Path, path: Path) -> bool:
    """Whether ``path``, links followed, lies in ``folder``: a setting naming a folder
    elsewhere (``../..``) is not the project's to read."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a symlink loop
        return False


#: Folders that hold no project's pages, however deep (a JavaScript project's packages).
NEVER_DOCS = frozenset({"node_modules"})


def is_folder(path: Path) -> bool:
    """``path.is_dir()`` for a path a config names: one no file system can hold (a name too
    long) is no folder, not an error."""
    try:
        return path.is_dir()
    except OSError:
        return False


def is_regular(path: Path) -> bool:
    """``path.is_file()``, likewise."""
    try:
        return path.is_file()
    except OSError:
        return False


def repository_top(folder: Path) -> Path | None:
    """The top of the git repository ``folder`` lies in (``folder`` itself, or one of the
    ``MAX_REPO_DEPTH`` folders above it), resolved; None outside a repository."""
    try:
        real = folder.resolve()
    except (OSError, RuntimeError):
        return None
    for candidate in (real, *list(real.parents)[:MAX_REPO_DEPTH]):
        if (candidate / ".git").exists():
            return candidate
    return None


def first_config(folder: Path, names: Sequence[str]) -> tuple[Path, str] | None:
    """The first of ``names`` in ``folder`` that is a file, with its text (empty when it
    cannot be read); None when there is none."""
    for name in names:
        marker = folder / name
        if marker.is_file():
            return marker, read_config_text(marker) or ""
    return None


def matches_any(patterns: tuple[str, ...], path: str) -> bool:
    """Whether gitignore ``patterns`` match ``path`` (relative, ``/``-separated)."""
    return bool(patterns) and gitignore_spec(patterns).match_file(path)


class Patterns:
    """Gitignore patterns compiled in consecutive pieces: RE2 compiles a set within a
    memory budget, and a few hundred costly patterns (``*a*a*…``) pass it only in parts.
    The last piece that decides a path decides it, as the last pattern that matches it
    would in one set; a pattern that cannot compile on its own is left out."""

    def __init__(self, pieces: Sequence[pathspec.GitIgnoreSpec]) -> None:
        self._pieces = tuple(pieces)

    def verdict(self, path: str) -> bool | None:
        """True when the patterns exclude ``path``, False when a ``!pattern`` includes it
        again, None when none matches."""
        for piece in reversed(self._pieces):
            include = piece.check_file(path).include
            if include is not None:
                return include
        return None

    def match_file(self, path: str) -> bool:
        return self.verdict(path) is True


@lru_cache(maxsize=64)
def gitignore_spec(patterns: tuple[str, ...]) -> Patterns:
    """Compiled gitignore ``patterns`` (cached: a site's settings are matched per file).
    A pattern that cannot be compiled (``[z-a]``, a lone ``!``, a trailing ``\\``) is
    left out, as git leaves it out, instead of ending the run."""
    return Patterns(_pieces(patterns))


def _pieces(patterns: tuple[str, ...]) -> list[pathspec.GitIgnoreSpec]:
    """``patterns`` compiled whole, or halved until each half compiles (a few compiles
    per pattern in all: a failing set fails fast)."""
    import pathspec

    with warnings.catch_warnings():  # re's FutureWarning on "[[": no concern of the user
        warnings.simplefilter("ignore")
        try:
            return [pathspec.GitIgnoreSpec.from_lines(patterns, backend="re2")]
        except Exception:  # noqa: BLE001 - pathspec, re and re2 each raise their own
            if len(patterns) <= 1:
                return []
    half = len(patterns) // 2
    return _pieces(patterns[:half]) + _pieces(patterns[half:])


class IgnoreFiles:
    """The ``.gitignore`` files of a folder being walked, as git applies them: each to its
    own folder and below, the deepest file that matches a path deciding (a ``!pattern``
    there takes back what a shallower file ignores). In a git repository the files of the
    folders above ``root``, up to the repository's top, count too, except one that ignores
    ``root`` itself: a folder named on purpose is read whatever its parent ignores."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._specs: dict[Path, Patterns | None] = {}
        self._above = self._specs_above(root)

    def ignored(self, folder: Path, name: str, *, is_dir: bool) -> bool:
        """Whether the entry ``name`` of ``folder`` (``root`` or below) is ignored."""
        rel = name + "/" if is_dir else name
        current = folder
        while True:
            spec = self._spec(current)
            if spec is not None:
                verdict = spec.verdict(rel)
                if verdict is not None:
                    return verdict
            if current == self._root or current.parent == current:
                break
            rel = f"{current.name}/{rel}"
            current = current.parent
        for prefix, spec in self._above:  # the nearest folder's file first
            verdict = spec.verdict(prefix + rel)
            if verdict is not None:
                return verdict
        return False

    def _specs_above(self, root: Path) -> list[tuple[str, Patterns]]:
        """(``root``'s path from the folder, with a trailing ``/``; the folder's patterns)
        for each folder above ``root`` up to the top of its git repository, nearest
        first; none outside a repository."""
        top = repository_top(root)
        if top is None:
            return []  # not in a repository: the files above are no concern of this folder
        real = root.resolve()
        chain = [folder for folder in real.parents if folder.is_relative_to(top)]
        out = []
        for folder in chain:
            spec = self._spec(folder)
            prefix = real.relative_to(folder).as_posix() + "/"
            if spec is not None and not spec.match_file(prefix):
                out.append((prefix, spec))
        return out

    def ignored_path(self, parts: Sequence[str], *, is_dir: bool) -> bool:
        """Whether ``root/parts…`` is ignored, itself or through a folder above it."""
        folder = self._root
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if self.ignored(folder, part, is_dir=is_dir or not last):
                return True
            folder = folder / part
        return False

    def _spec(self, folder: Path) -> Patterns | None:
        if folder not in self._specs:
            text = read_config_text(folder / ".gitignore")
            lines = tuple(text.splitlines()[:MAX_IGNORE_PATTERNS]) if text else ()
            self._specs[folder] = gitignore_spec(lines) if any(
                line.strip() and not line.startswith("#") for line in lines) else None
        return self._specs[folder]
