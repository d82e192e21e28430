"""The files a page takes in from its project (mdBook's include links, MkDocs' snippets),
read under the rules every such dialect shares.

Only the project's own files are read: a path that leads out of the folder holding the
generator's config (``../..``, an absolute path, a symlink elsewhere), or a missing or
oversized file, reads as nothing. Each file is read once however often a page names it,
under its normalised path (``a.md``, ``./a.md`` and ``x/../a.md`` are one file), and a
page grows by at most ``MAX_INCLUDED_CHARS`` in all: a file included twice at each of ten
levels would otherwise be copied a thousand times.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..projectfiles import inside, read_config_text

MAX_INCLUDED_CHARS = 5 * 1024 * 1024


class IncludedFiles:
    """One page's includes: the files read (appended to ``reads``, once each, so the page
    is read again when one changes) and what the page may still grow by."""

    def __init__(self, project: Path, reads: list[Path]) -> None:
        self.project = project
        self.reads = reads
        self.budget = MAX_INCLUDED_CHARS
        self._files: dict[Path, str | None] = {}

    def read(self, path: Path) -> str | None:
        """The file's text; None when it is not the project's or cannot be read."""
        key = Path(os.path.normpath(path))
        if key not in self._files:
            text = read_config_text(path) if inside(self.project, path) else None
            self._files[key] = text
            if text is not None:
                self.reads.append(key)
        return self._files[key]

    def take(self, text: str) -> bool:
        """Whether ``text`` still fits in the page's budget (which it then uses up)."""
        if len(text) > self.budget:
            return False
        self.budget -= len(text)
        return True
