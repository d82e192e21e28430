"""MkDocs' indented blocks → markdown: admonitions, collapsible details and content tabs
read as the labelled paragraphs their readers see.

Python-Markdown's ``admonition`` (``!!! note "Title"``), ``pymdownx.details``
(``??? note``, ``???+ note``) and ``pymdownx.tabbed`` (``=== "Tab"``) open a block whose
content is indented by four spaces under the marker. Read as CommonMark, that content is an
indented code block: prose shown as code, fences inside it as literal backticks. Here the
marker becomes ``**Note: Title**`` (``**Tab**`` for a tab, the title alone for a type
with an empty title ``""``) and the content is dedented, nested blocks too.

``pymdownx.blocks`` fences the same blocks instead (``/// note | Title`` … ``///``, the
closing line as many slashes as the opening, options indented under the opening line):
the marker reads as the same label (``**Title**`` for an ``admonition``, ``details`` or
``tab``; nothing for a ``caption`` or an ``html`` wrapper), the options are left out, and
the fences go. An API block of mkdocstrings or mkautodoc (``::: package.Name`` and its
indented options) reads as the object's name. Fenced code is left as it is.
"""

from __future__ import annotations

import re

from ..chunk.headings import normalize_source
from .inline_html import FENCE, fence_end
from .template_args import unescaped

# Each pattern is matched once a line and backtracks at most over one run: linear time.
# (Python-Markdown takes ``!!!note`` without a space too; a tab's marker needs one.)
_OPEN = re.compile(r"([ \t]*)(!!!|\?\?\?\+?|===[!+]?[ \t])[ \t]*(.*)")
# Python-Markdown's own shape: type words (``note``, ``info inline end``), then a title.
_KIND = re.compile(r'([A-Za-z][\w-]*(?: +[\w-]+)*)(?: +"(.*)")?')
_TAB = re.compile(r'"(.*)"')
# An API block of mkdocstrings or mkautodoc (``::: package.Name``, its options indented
# under it): the documentation is generated from code kbctl does not run; the name stays.
_AUTODOC = re.compile(r"([ \t]*):::[ \t]+([A-Za-z_][\w.:]*)[ \t]*")
# pymdownx.blocks' fences (its own patterns, as lines): a name, then ``| argument``.
# Indented, they sit in a list item, as Python-Markdown reads them there.
_FENCED_OPEN = re.compile(r"([ \t]*)(/{3,}) *([\w-]+) *(?:\|(.*))?")
_FENCED_CLOSE = re.compile(r"[ \t]*(/{3,}) *")
# Blocks whose argument is their whole title, and blocks that show no title at all.
_TITLED_BY_ARGUMENT = frozenset({"admonition", "details", "tab"})
_UNTITLED = frozenset({"caption", "figure-caption", "table-caption", "html", "define"})
_INDENT = "    "
# Blocks nested deeper than this are left as they are: each level re-reads its content.
MAX_DEPTH = 32


def admonitions_to_markdown(text: str) -> str:
    """The page's markdown with its admonitions, details and tabs read as text."""
    if not any(marker in text for marker in ("!!!", "???", "===", ":::", "///")):
        return text
    return "\n".join(_read(normalize_source(text).split("\n"), 0))


def _read(lines: list[str], depth: int) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if fence := FENCE.match(line):  # code, as written
            end = fence_end(lines, i + 1, fence.group(1), fence.start(1))
            out.extend(lines[i:end + 1])
            i = end + 1
            continue
        if auto := _AUTODOC.fullmatch(line):
            indent = auto.group(1)
            out.append(f"{indent}`{auto.group(2)}`")
            i = _block_end(lines, i, indent)
            continue
        if (fenced := _FENCED_OPEN.fullmatch(line)) and depth < MAX_DEPTH:
            indent = fenced.group(1)
            end = _fenced_end(lines, i + 1, len(fenced.group(2)), depth)
            body = i + 1
            while body < end and lines[body].startswith(indent + _INDENT) and lines[body].strip():
                body += 1  # the block's options
            if label := _fenced_label(fenced.group(3), (fenced.group(4) or "").strip()):
                out.append(f"{indent}{label}")
            out.extend(_read(lines[body:end], depth + 1))
            i = end + 1
            continue
        m = _OPEN.fullmatch(line)
        label = _label(m.group(2), (m.group(3) or "").strip()) if m else None
        if m is None or label is None or depth >= MAX_DEPTH:
            out.append(line)
            i += 1
            continue
        indent = m.group(1)
        end = _block_end(lines, i, indent)
        if label:
            out.append(f"{indent}{label}")
        body = [_dedent(b, indent) for b in lines[i + 1:end]]
        out.extend(f"{indent}{b}" if b else "" for b in _read(body, depth + 1))
        i = end
    return out


def _block_end(lines: list[str], opening: int, indent: str) -> int:
    """The end of the block opened at line ``opening``: its lines are indented four more
    than ``indent``, or blank (but blank lines after it are outside it)."""
    inner = indent + _INDENT
    end = opening + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(
            (inner, indent + "\t"))):
        end += 1
    while end > opening + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def _fenced_end(lines: list[str], start: int, slashes: int, depth: int) -> int:
    """The line closing a fenced block opened with ``slashes`` slashes, or
    ``len(lines)``: an unclosed block runs to the end. A closing line closes the innermost
    open block, when its slashes match that block's; code fences are skipped."""
    opened = [slashes]
    j = start
    while j < len(lines):
        if fence := FENCE.match(lines[j]):
            j = fence_end(lines, j + 1, fence.group(1), fence.start(1)) + 1
            continue
        close = _FENCED_CLOSE.fullmatch(lines[j])
        if close is not None and len(close.group(1)) == opened[-1]:
            opened.pop()
            if not opened:
                return j
        elif (inner := _FENCED_OPEN.fullmatch(lines[j])) and depth + len(opened) < MAX_DEPTH:
            opened.append(len(inner.group(2)))
        j += 1
    return len(lines)


def _fenced_label(name: str, argument: str) -> str:
    if name in _UNTITLED:
        return ""
    if name in _TITLED_BY_ARGUMENT:
        return f"**{argument}**" if argument else ""
    return _titled(name, argument)


def _dedent(line: str, indent: str) -> str:
    if not line.strip():
        return ""
    rest = line[len(indent):]
    return rest[1:] if rest.startswith("\t") else rest[len(_INDENT):]


def _label(marker: str, rest: str) -> str | None:
    """The line a block's marker reads as ("" for none); None when it opens no block."""
    if marker.startswith("==="):
        tab = _TAB.fullmatch(rest)
        return None if tab is None else (f"**{unescaped(tab.group(1))}**" if tab.group(1)
                                         else "")
    m = _KIND.fullmatch(rest)
    if m is None:
        return None
    kind, title = m.group(1).split()[0], m.group(2)
    if title is not None and not title.strip():
        return ""  # an empty title hides the title bar
    return _titled(kind, unescaped(title).strip() if title else "")


def _titled(kind: str, title: str) -> str:
    """A typed block's label: ``**Note: Title**``, or ``**Note:**`` without a title."""
    label = kind.replace("-", " ").replace("_", " ").capitalize()
    return f"**{label}: {title}**" if title else f"**{label}:**"

