"""YAML front matter: the ``---`` block at the very top of a page, which markdown readers
and the generators that publish page templates (Jekyll, Hugo) both split off.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from kbctl.errors import ExtractError
from kbctl.linefile import LoadError, construct_bounded

# Front matter is a page's few settings, not content: a block past this many characters is
# refused before YAML builds it (a 2 MB flow list took 22 s and 824 MB to be refused as
# too many nodes), and a page's own file fails, named.
MAX_FRONT_MATTER_CHARS = 256 * 1024
# What of it each chunk carries for ``--filter``: a field's value is copied into every chunk
# of the page, so a long one (a 4 MB description) made one page's rows pass PostgreSQL's
# 1 GB message limit, and the run ended with a lost connection.
MAX_FILTER_FIELDS = 64
MAX_FILTER_CHARS = 1000

_OPENING = re.compile(r"---[ \t]*\r?\n")
_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)


def split_front_matter(text: str) -> tuple[dict[str, Any], str, bool]:
    """(front matter, the text after it, whether there was a block): what a page template
    (HTML, a section page) needs, without reading the body. Raises ``ExtractError`` when
    the block is not valid YAML; a block that is valid YAML but not a mapping yields no
    metadata."""
    text = text.removeprefix("\ufeff")
    opening = _OPENING.match(text)
    closing = _CLOSING.search(text, opening.end()) if opening else None
    if not (opening and closing):
        return {}, text, False
    size = closing.start() - opening.end()
    if size > MAX_FRONT_MATTER_CHARS:
        raise ExtractError(f"front matter of {size:,} characters, more than "
                           f"{MAX_FRONT_MATTER_CHARS:,}",
                           hint="front matter holds a page's settings: move content into "
                                "the page, or data into a file of its own")
    return _load_yaml(text[opening.end():closing.start()]), text[closing.end():], True


def filterable(front_matter: dict[str, Any]) -> dict[str, Any]:
    """The fields chunks carry for ``--filter``: scalars under short names, short values,
    at most ``MAX_FILTER_FIELDS`` of them (the rest are settings of the page, not
    something to filter on)."""
    kept: dict[str, Any] = {}
    for key, value in front_matter.items():
        if len(kept) >= MAX_FILTER_FIELDS:
            break
        if isinstance(key, str) and len(key) <= 100 and isinstance(
                value, str | int | float | bool) and len(str(value)) <= MAX_FILTER_CHARS:
            kept[key] = value
    return kept


def without_front_matter(text: str) -> str:
    """The text after its front matter block, the block not read: a file another page
    takes in shows its body only."""
    text = text.removeprefix("\ufeff")
    opening = _OPENING.match(text)
    closing = _CLOSING.search(text, opening.end()) if opening else None
    return text[closing.end():] if opening and closing else text


def _load_yaml(raw: str) -> dict[str, Any]:
    """The block as a mapping, read as every YAML input of kbctl is: an alias bomb or a
    nesting past the stack is an input error naming the file, never a crash of the run."""
    hint = "fix the block between the leading '---' lines, or remove it"
    try:
        data = construct_bounded(yaml.SafeLoader(raw))
    except LoadError as exc:
        where = f" at line {exc.line + 1}" if exc.line is not None else ""
        raise ExtractError(f"front matter{where}: {exc.message}", hint=hint) from None
    except RecursionError:
        raise ExtractError("invalid YAML front matter: nested too deeply", hint=hint) from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        # +2: the opening `---` is line 1 and YAML marks count from 0.
        where = f" at line {mark.line + 2}, column {mark.column + 1}" if mark else ""
        raise ExtractError(f"invalid YAML front matter{where}: {problem}", hint=hint) from exc
    return data if isinstance(data, dict) else {}
