"""Text hygiene: characters that may not enter kbctl, and those that may not leave it raw.

NUL bytes and lone surrogates cannot be stored (PostgreSQL refuses both) and never belong in
a query, a name or a config value, so in arguments and files they are input errors. Control
characters may sit in stored text and file names, but printed raw they forge lines or
terminal colours, so human output shows them escaped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InputError

_BAD = re.compile("[\x00\ud800-\udfff]")
# C0 controls, DEL, C1 controls, and the bidi overrides that reorder what a reader sees.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def describe_bad_char(text: str) -> str | None:
    """"a NUL byte" or "a lone surrogate (U+D800)" for the first one in ``text``, else None."""
    match = _BAD.search(text)
    if match is None:
        return None
    char = match.group()
    return "a NUL byte" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})"


# An agent's or a user's id: it scopes memory rows, so it is compared exactly.
MAX_ID_CHARS = 200


def id_problem(value: str) -> str | None:
    """What is wrong with an agent or user id, or None: long ones, control characters and
    surrounding spaces (``" alice"`` would be a user of its own)."""
    if len(value) > MAX_ID_CHARS or _CONTROL.search(value) or value != value.strip():
        return (f"at most {MAX_ID_CHARS} characters, no control characters or surrounding "
                f"spaces")
    return None


def require_clean(name: str, value: Any) -> None:
    """Refuse (exit 2) an argument whose text holds a NUL byte or a lone surrogate.

    Strings inside lists and mappings are checked too; ``name`` says which argument.
    """
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            bad = describe_bad_char(item)
            if bad:
                raise InputError(f"{name}: {bad} is not allowed in {escape_control(item)[:60]!r}")
        elif isinstance(item, Mapping):
            stack.extend(part for pair in item.items() for part in pair)
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)


def drop_bad_chars(text: str) -> tuple[str, int]:
    """``text`` without NUL bytes and lone surrogates, and how many were removed."""
    cleaned, count = _BAD.subn("", text)
    return cleaned, count


def dropped_note(where: str, removed: int) -> str:
    """The note for a page whose NULs and lone surrogates ``drop_bad_chars`` removed."""
    return f"{where}: removed {removed} NUL byte(s) or lone surrogate(s), which cannot be stored"


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters shown as ``\\xNN``/``\\uNNNN`` escapes.

    ``keep_newlines`` leaves line feeds and tabs alone, for multi-line snippets.
    """
    pattern = _CONTROL_KEEP_LINES if keep_newlines else _CONTROL
    return pattern.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def counted(n: int, noun: str) -> str:
    """``1 page``, ``2 pages``: a count with its noun in the number it takes."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def first_few(items: Sequence[str], most: int = 3) -> str:
    """The first ``most`` of ``items``, comma-joined, and how many more: a note that names
    what it is about (gone pages, empty sitemaps) stays one line however many there are."""
    more = len(items) - most
    return ", ".join(items[:most]) + (f" and {more} more" if more > 0 else "")


# A line of an error or a note longer than this loses its middle: a message may quote what
# it refuses (a suite's unknown key, a mistyped path), and that can be megabytes long.
MAX_MESSAGE_LINE = 400


def clipped(message: str) -> str:
    """``message`` with each line over ``MAX_MESSAGE_LINE`` characters cut in its middle
    (its start and its end, which says what is wrong, kept), saying how much went."""
    if len(message) <= MAX_MESSAGE_LINE:
        return message
    half = MAX_MESSAGE_LINE // 2
    return "\n".join(
        line if len(line) <= MAX_MESSAGE_LINE
        else f"{line[:half]}…({len(line) - 2 * half:,} characters)…{line[-half:]}"
        for line in message.split("\n"))
