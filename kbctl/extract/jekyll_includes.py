"""Jekyll's includes, put in the page as Jekyll renders them, so a page reads with the
notes and steps it takes in.

``{% include note.md level="warning" %}`` reads ``note.md`` from the includes folder
(``includes_dir``, ``_includes`` under the site's source), ``{% include_relative
parts/x.md %}`` from beside the page; the file's ``{{ include.level }}`` reads as the value
given, and the file is read as Liquid in turn. A name held in a variable, or a file that
cannot be read, leaves the tag read as any other (its ``content=``-like arguments as
text). Files are read under ``includes``' rules; an include inside itself reads as any
other tag, and includes nest ten levels deep at most.
"""

from __future__ import annotations

import re
from pathlib import Path

from .includes import IncludedFiles, normalized
from .liquid import liquid_to_markdown
from .template_args import named_values

MAX_DEPTH = 10
# ``{{ include.name }}``, filters aside: a tag cannot hold a brace, so the scan is linear.
_PARAMETER = re.compile(r"\{\{-?\s*include\.([\w-]+)[^{}]*\}\}")


def liquid_with_includes(text: str, *, page: Path, includes_dir: Path, project: Path,
                         reads: list[Path] | None = None) -> str:
    """The page's Liquid read as ``liquid_to_markdown`` reads it, its includes in place;
    each file read is appended to ``reads``, once."""
    files = IncludedFiles(project, [] if reads is None else reads)
    return _Includes(files, includes_dir).read(text, page, (normalized(page),))


class _Includes:
    def __init__(self, files: IncludedFiles, includes_dir: Path) -> None:
        self.files = files
        self.folder = includes_dir

    def read(self, text: str, file: Path, within: tuple[Path, ...]) -> str:
        def include(name: str, args: str) -> str | None:
            written, _, rest = args.strip().partition(" ")
            if not written or "{" in written or len(within) > MAX_DEPTH:
                return None
            path = normalized((self.folder if name == "include" else file.parent) / written)
            content = self.files.read(path) if path not in within else None
            if content is None:
                if path not in within:
                    self.files.unresolved(file, None, written, path)
                return None
            given = named_values(rest)
            content = _PARAMETER.sub(lambda m: given.get(m.group(1), ""), content)
            return self.read(content, path, (*within, path))

        return liquid_to_markdown(text, include)
