"""The titles Sphinx shows for ``:doc:`guide/install``` and ``:ref:`label``` written
without one: the document's title, and the title of the section the label stands before.

Sphinx knows them from the whole project; a page read alone does not. So the project's
reStructuredText sources are scanned once, lazily, the first time a page needs a title:
a document's title is its first section title (a line with an adornment under it, or
over and under it), a label (``.. _name:``, matched as Sphinx matches it: case and runs
of spaces ignored) is the section title that follows it, past blank lines and further
labels, or the caption of the figure, table or code block it stands before. Inline
markup in a title is reduced to its text. What the scan cannot settle (a document named
nowhere, a label before a plain paragraph) falls back to the target as written.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from ..chunk.model import MAX_TITLE_CHARS
from ..projectfiles import NEVER_DOCS, read_config_text

MAX_FILES = 20_000
# (MAX_TITLE_CHARS: longer is no title anyone reads, and keeps the patterns linear)
_ADORNMENT = re.compile(r"""([!-/:-@\[-`{-~])\1{2,}\s*""")
_LABEL = re.compile(r"\.\.\s+_(`[^`]+`|[^:`][^:]*):\s*")
_CAPTIONED = re.compile(r"\.\.\s+(figure|table|code-block|code|sourcecode|literalinclude)::"
                        r"\s*(.*)")
_CAPTION_OPTION = re.compile(r"\s+:caption:\s*(.+)")
_OPTION = re.compile(r"\s+:[\w-]+:")
_ROLE = re.compile(r":[\w:.+-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_MARKUP = re.compile(r"``|\*\*|[*`]|\\(?=.)")
_DASHES = (("---", "\u2014"), ("--", "\u2013"))  # Sphinx's smart quotes


class SphinxTitles:
    """The titles of one Sphinx project's documents and labelled sections."""

    def __init__(self, source_dir: Path, suffixes: tuple[str, ...] = (".rst",)) -> None:
        self.source_dir = source_dir
        self.suffixes = suffixes
        self._docs: dict[str, str] | None = None
        self._labels: dict[str, str] = {}

    def doc(self, target: str, current: str) -> str | None:
        """The title of the document ``target`` names from the document ``current``
        (both without suffix, ``/``-separated; ``/x`` is from the source folder)."""
        target = target.strip().lstrip("~!")
        name = target.lstrip("/") if target.startswith("/") else posixpath.join(
            posixpath.dirname(current), target)
        return self._scanned().get(posixpath.normpath(name))

    def ref(self, label: str) -> str | None:
        """The title of the section ``label`` stands before."""
        self._scanned()
        return self._labels.get(normalized_label(label.strip().lstrip("~!")))

    def _scanned(self) -> dict[str, str]:
        if self._docs is None:
            self._docs = {}
            for path in _sources(self.source_dir, self.suffixes):
                text = read_config_text(path)
                if text is None:
                    continue
                rel = path.relative_to(self.source_dir).as_posix()
                docname = rel[:-len(next(s for s in self.suffixes if rel.endswith(s)))]
                title = _scan(text, self._labels)
                if title:
                    self._docs[docname] = title
        return self._docs


def normalized_label(name: str) -> str:
    """A label as Sphinx keys it: lower case, runs of white space as one space."""
    return " ".join(name.strip("`").split()).lower()


def _sources(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith((".", "_build")) and d not in NEVER_DOCS)
        found += [Path(folder) / f for f in sorted(files) if f.endswith(suffixes)]
        if len(found) >= MAX_FILES:
            return found[:MAX_FILES]
    return found


def _scan(text: str, labels: dict[str, str]) -> str | None:
    """The document's title; each label standing before a section title is added to
    ``labels``."""
    lines = text.split("\n")
    first: str | None = None
    waiting: list[str] = []  # labels not yet followed by their target
    i = 0
    while i < len(lines):
        line = lines[i]
        label = _LABEL.fullmatch(line)
        if label:
            waiting.append(normalized_label(label.group(1)))
            i += 1
            continue
        title, used = _title_at(lines, i)
        if title is not None:
            first = first or title
            for name in waiting:
                labels.setdefault(name, title)
            waiting = []
            i += used
            continue
        if line.strip():
            captioned = _CAPTIONED.match(line) if waiting else None
            caption = _caption(lines, i, captioned) if captioned else None
            for name in waiting if caption else ():
                labels.setdefault(name, caption)
            waiting = []  # a label before anything else names nothing Sphinx can show
        i += 1
    return first


def _caption(lines: list[str], i: int, directive: re.Match[str]) -> str | None:
    """The caption Sphinx shows for a reference to the figure, table or code block whose
    directive is at line ``i``: a figure's first paragraph, a table's argument, a code
    block's ``:caption:``."""
    kind, argument = directive.group(1), directive.group(2).strip()
    if kind == "table":
        return _plain(argument) if argument else None
    j = i + 1
    while j < len(lines) and _OPTION.match(lines[j]):
        option = _CAPTION_OPTION.fullmatch(lines[j])
        if option and kind != "figure":
            return _plain(option.group(1))
        j += 1
    if kind != "figure":
        return None
    while j < len(lines) and not lines[j].strip():
        j += 1
    paragraph: list[str] = []
    while j < len(lines) and lines[j].strip() and lines[j][:1].isspace():
        paragraph.append(lines[j].strip())
        j += 1
    return _plain(" ".join(paragraph)) if paragraph else None


def _title_at(lines: list[str], i: int) -> tuple[str | None, int]:
    """(the section title that starts at line ``i``, its line count), or (None, 0)."""
    line = lines[i]
    below = lines[i + 1] if i + 1 < len(lines) else ""
    if _ADORNMENT.fullmatch(line) and i + 2 < len(lines):  # over and under
        text, under = lines[i + 1], lines[i + 2]
        if text.strip() and under.strip() == line.strip() and not _ADORNMENT.fullmatch(text):
            return _plain(text), 3
        return None, 0
    if (line.strip() and not line[:1].isspace() and len(line) <= MAX_TITLE_CHARS
            and _ADORNMENT.fullmatch(below) and len(below.rstrip()) >= len(line.rstrip())):
        return _plain(line), 2
    return None, 0


def _plain(title: str) -> str:
    """A title's inline markup reduced to the text Sphinx shows."""
    text = title.strip()[:MAX_TITLE_CHARS]
    text = _MARKUP.sub("", _ROLE.sub(lambda m: m.group(1).lstrip("~!"), text))
    for written, shown in _DASHES:
        text = text.replace(f" {written} ", f" {shown} ")
    return text
