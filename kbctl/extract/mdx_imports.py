"""MDX partials, put in the page where it renders them, so a page reads with the shared
steps it shows.

``import Install from './_install.mdx'`` (or ``.md``; Docusaurus' ``@site/`` is the
project folder) names a markdown file, and a line that is only ``<Install />`` (props
aside) renders it there: its front matter aside, its own partials in turn. Files are read
under ``includes``' rules; a partial that cannot be read shows nothing, one inside itself
is left as written, and partials nest ten levels deep at most. Code is left as written.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..frontmatter import without_front_matter
from .includes import IncludedFiles, normalized
from .inline_html import code_lines

MAX_DEPTH = 10
_IMPORT = re.compile(r"""import\s+([A-Z]\w*)\s+from\s+(['"])([^'"\n]+\.mdx?)\2\s*;?\s*""")
_USE = re.compile(r"([ \t]*)<([A-Z]\w*)(?:\s[^<>]*)?/>[ \t]*")


def expand_partials(text: str, *, page: Path, project: Path,
                    reads: list[Path] | None = None) -> str:
    """The MDX ``text`` of the file ``page`` with its partials in place (see above); each
    file read is appended to ``reads``, once."""
    if "import" not in text:
        return text
    return _Partials(IncludedFiles(project, [] if reads is None else reads), project).expand(
        text, page, (normalized(page),))


class _Partials:
    """One page's partials; each read and expanded once however often it is used."""

    def __init__(self, files: IncludedFiles, project: Path) -> None:
        self.files = files
        self.project = project
        self.expanded: dict[tuple[Path, ...], str] = {}

    def expand(self, text: str, file: Path, within: tuple[Path, ...]) -> str:
        lines = text.split("\n")
        code = code_lines(text)
        imported: dict[str, Path] = {}
        import_lines: set[int] = set()
        for n, line in enumerate(lines):
            if n not in code and line.startswith("import") and (m := _IMPORT.fullmatch(line)):
                written = m.group(3)
                imported[m.group(1)] = normalized(
                    self.project / written.removeprefix("@site/")
                    if written.startswith("@site/") else file.parent / written)
                import_lines.add(n)
        if not imported:
            return text
        out: list[str] = []
        for n, line in enumerate(lines):
            if n in import_lines:
                continue  # shows nothing, and a partial's own would land mid-page
            use = _USE.fullmatch(line) if n not in code and "/>" in line else None
            path = imported.get(use.group(2)) if use else None
            if use is None or path is None or path in within:
                out.append(line)  # not a partial, or one inside itself: as written
                continue
            partial = self._partial((*within, path))
            if partial and self.files.take(partial):
                out.extend(use.group(1) + part if part else ""
                           for part in partial.split("\n"))
        return "\n".join(out)

    def _partial(self, chain: tuple[Path, ...]) -> str:
        """The partial at the end of ``chain`` (the files that led to it), expanded."""
        if chain not in self.expanded:
            text = self.files.read(chain[-1]) if len(chain) <= MAX_DEPTH + 1 else None
            if text is None and len(chain) > 1:
                self.files.unresolved(chain[-2], None, chain[-1].name, chain[-1])
            if text is not None:
                text = without_front_matter(text)
                text = self.expand(text, chain[-1], chain)
            self.expanded[chain] = text or ""
        return self.expanded[chain]
