"""The files a Sphinx page takes in, read as Sphinx reads them: ``include`` puts another
file's text in the page (``.. include::`` in reStructuredText, ``{include}`` in MyST),
``literalinclude`` shows a file as code.

A path is relative to the file that names it, or, starting with ``/``, to the source
folder (where ``conf.py`` is). ``include`` takes ``start-line``/``end-line`` (0-based, as
a Python slice), then the text after ``start-after`` and before ``end-before``.
``literalinclude`` works on lines: after the first line holding ``start-after`` (from it,
for ``start-at``), before the next holding ``end-before`` (up to it, for ``end-at``), then
the ``lines`` named (``1,3,5-10``, 1-based); its language is the ``language`` option or
the file's extension's.
Files are read under ``includes``' rules; a file that cannot be read, or one inside
itself, shows nothing, and includes nest ten levels deep at most. The text a page includes
adds at most ``MAX_BLOCK_LINES`` lines in all, the count past which a page itself is read
as plain text.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..chunk.headings import MAX_BLOCK_LINES
from .includes import IncludedFiles, normalized

MAX_DEPTH = 10
# A file's extension → the language Sphinx highlights it as, where the two differ.
_LANGUAGES = {"py": "python", "rs": "rust", "js": "javascript", "ts": "typescript",
              "sh": "bash", "yml": "yaml", "md": "markdown", "rb": "ruby", "h": "c",
              "hpp": "cpp", "cc": "cpp", "txt": "text"}


class SphinxIncludes:
    """One page's includes: what it may still take in, and which file took in which."""

    def __init__(self, *, source_dir: Path, project: Path, reads: list[Path]) -> None:
        self.source_dir = source_dir
        self.files = IncludedFiles(project, reads)
        self._parent: dict[Path, Path] = {}
        # The lines included text may still add: parsed, a short line costs docutils ~1 KB
        # (the page itself is read as plain text past the same count).
        self.lines_left = MAX_BLOCK_LINES

    def text(self, written: str, including: Path, options: Mapping[str, str]
             ) -> tuple[Path, str] | None:
        """(path, the part taken) of the file an ``include`` names; None: nothing."""
        found = self._read(written, including)
        if found is None:
            return None
        path, text = found
        part = _included_part(text, options)
        if part is None or part.count("\n") >= self.lines_left:
            return None
        self.lines_left -= part.count("\n")
        return path, part

    def code(self, written: str, including: Path, options: Mapping[str, str]
             ) -> tuple[str, str] | None:
        """(language, code) of the file a ``literalinclude`` names; None: nothing."""
        found = self._read(written, including)
        if found is None:
            return None
        path, text = found
        lines = _literal_lines(text.split("\n"), options)
        code = "\n".join(lines).rstrip("\n") if lines is not None else None
        if code is None:
            return None
        extension = path.suffix.lstrip(".").lower()
        language = (options.get("language") or "").strip() or _LANGUAGES.get(extension,
                                                                               extension)
        return language, code

    def _read(self, written: str, including: Path) -> tuple[Path, str] | None:
        written = written.strip()
        if not written or written.startswith("<"):  # docutils' own standard includes
            return None
        path = normalized(self.source_dir / written.lstrip("/") if written.startswith("/")
                          else including.parent / written)
        chain = [normalized(including)]
        while chain[-1] in self._parent and len(chain) <= MAX_DEPTH:
            chain.append(self._parent[chain[-1]])
        if path in chain or len(chain) > MAX_DEPTH:
            return None
        text = self.files.read(path)
        if text is None:
            self.files.unresolved(including, None, written, path)
            return None
        self._parent[path] = chain[0]
        return path, text


def _included_part(text: str, options: Mapping[str, str]) -> str | None:
    """The part of ``text`` an ``include`` takes (docutils' order); None when a marker is
    not found (the build stops there)."""
    if options.get("start-line") or options.get("end-line"):
        first, last = _number(options.get("start-line")), _number(options.get("end-line"))
        text = "\n".join(text.split("\n")[first:last])
    if marker := options.get("start-after"):
        at = text.find(marker)
        if at < 0:
            return None
        text = text[at + len(marker):]
    if marker := options.get("end-before"):
        at = text.find(marker)
        if at < 0:
            return None
        text = text[:at]
    return text


def _literal_lines(lines: list[str], options: Mapping[str, str]) -> list[str] | None:
    """The lines a ``literalinclude`` shows (Sphinx's order); None when a marker is not
    found (the build stops there)."""
    for key, inclusive in (("start-at", True), ("start-after", False)):
        if marker := options.get(key):
            at = next((i for i, line in enumerate(lines) if marker in line), None)
            if at is None:
                return None
            lines = lines[at if inclusive else at + 1:]
            break
    for key, inclusive in (("end-at", True), ("end-before", False)):
        if marker := options.get(key):
            at = next((i for i, line in enumerate(lines) if marker in line), None)
            if at is None:
                return None
            lines = lines[:at + 1 if inclusive else at]
            break
    if spec := options.get("lines"):
        lines = _numbered_lines(lines, spec)
    return lines


def _number(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _numbered_lines(lines: list[str], spec: str) -> list[str]:
    """The lines ``spec`` names (``1,3,5-10``, ``7-``), 1-based, in its order."""
    kept: list[str] = []
    for part in spec.replace(" ", "").split(","):
        first, dash, last = part.partition("-")
        start = _number(first) or 1
        end = (_number(last) or len(lines)) if dash else start
        kept.extend(lines[max(start - 1, 0):end])
    return kept
