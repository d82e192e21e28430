"""Display math, as the extensions that render it read it (MyST's ``dollarmath`` and
``amsmath``, MkDocs' ``pymdownx.arithmatex``), kept as ``math`` code blocks: read as
markdown, a line ``=`` inside ``$$ … $$`` would underline a heading (with an id no page
has) and ``-\\lambda & 1`` open a list.

- ``$$`` at a line's start opens a block that the first line ending in ``$$`` (MyST: or
  ``$$ (label)``) closes; one line may hold both;
- with ``amsmath``, ``\\begin{align}`` … ``\\end{align}`` (and the other environments
  MyST lists) at a line's start is a block too.

Lines inside code blocks are left alone. A ``$$`` that nothing closes is text, and so is
every later one (none could close it): one pass over the page.
"""

from __future__ import annotations

import re

from .inline_html import code_lines, fenced

_OPEN = re.compile(r" {0,3}\$\$")
_CLOSE = re.compile(r"\$\$(?:[ \t]*\([^$)\n]+\))?[ \t]*$")
_ENVIRONMENTS = ("equation|multline|gather|align|alignat|flalign|matrix|pmatrix|bmatrix|"
                 "Bmatrix|vmatrix|Vmatrix|eqnarray")
_BEGIN = re.compile(rf" {{0,3}}\\begin\{{({_ENVIRONMENTS})(\*?)\}}")
# An environment left open is looked for this far (a paragraph of them stays linear)
_MAX_ENVIRONMENT_LINES = 1000


def math_fenced(text: str, *, dollars: bool = True, amsmath: bool = False) -> str:
    """``text`` with its display math as ``math`` code blocks (see above): ``$$`` blocks
    unless ``dollars`` is off, environments with ``amsmath``."""
    if not (dollars and "$$" in text) and not (amsmath and "\\begin{" in text):
        return text
    lines = text.split("\n")
    code = code_lines(text)
    out: list[str] = []
    unclosed: dict[str, int] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        end = None
        if i not in code and dollars and _OPEN.match(line):
            end = _dollar_end(lines, i)
            dollars = end is not None  # no later $$ closes either
        elif i not in code and amsmath and (begin := _BEGIN.match(line)):
            end = _environment_end(lines, i, begin.group(1) + begin.group(2), unclosed)
        if end is None:
            out.append(line)
            i += 1
            continue
        block = "\n".join(lines[i:end + 1]).strip()
        if block.startswith("$$"):
            block = _CLOSE.sub("", block[2:]).strip()
        out.extend(fenced(block, "math"))
        i = end + 1
    return "\n".join(out)


def _dollar_end(lines: list[str], start: int) -> int | None:
    """The index of the line closing the ``$$`` block opened at ``start``."""
    first = lines[start].lstrip()[2:]
    if _CLOSE.search(first):
        return start
    for j in range(start + 1, len(lines)):
        if _CLOSE.search(lines[j]):
            return j
    return None


def _environment_end(lines: list[str], start: int, name: str,
                     unclosed: dict[str, int]) -> int | None:
    """The index of the line closing the environment begun at ``start``; ``unclosed``
    keeps, per environment, the line before which none closes (each line is read once)."""
    closing = f"\\end{{{name}}}"
    stop = min(len(lines), start + _MAX_ENVIRONMENT_LINES)
    for j in range(max(start, unclosed.get(name, start)), stop):
        if closing in lines[j]:
            return j
        if j > start and not lines[j].strip():  # amsmath blocks hold no blank line
            unclosed[name] = j
            return None
    unclosed[name] = stop
    return None
