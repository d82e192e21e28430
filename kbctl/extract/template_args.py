"""The arguments of a template tag or a component that its page shows as text, for the
dialects that drop the tag itself (Hugo's shortcodes, Jekyll's Liquid includes, MDX and
HTML components)."""

from __future__ import annotations

import re

# Named arguments whose value the rendered page shows as text.
VISIBLE = ("title", "caption", "summary", "content", "label", "text")
# From a word's start only (the lookbehind), so a long word is scanned once, not once per
# letter.
_NAMED = re.compile(
    r"(?<![\w-])([A-Za-z_][\w-]*)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*'|`[^`]*`|\S+)")
_ESCAPE = re.compile(r"\\(.)")


def visible_values(args: str) -> list[str]:
    """The texts of ``args``' named arguments in ``VISIBLE``, in order, unquoted; a bare
    ``true`` or ``false`` is a switch (Docsy's ``text=true``), not text."""
    values = [_unquoted(raw) for key, raw in _NAMED.findall(args)
              if key.lower() in VISIBLE and raw.lower() not in ("true", "false")]
    return [v for v in values if v.strip()]


def named_arguments(args: str) -> dict[str, str]:
    """Every named argument of ``args``, a string literal's quotes taken off (its
    backslashes left for the caller's own escapes), anything else as written."""
    return {key: raw[1:-1] if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "\"'`"
            else raw for key, raw in _NAMED.findall(args)}


def named_values(args: str) -> dict[str, str]:
    """Every named argument of ``args`` whose value is a string literal, unquoted (a
    variable's value is the site's, which kbctl does not have)."""
    return {key: _unquoted(raw) for key, raw in _NAMED.findall(args)
            if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "\"'`"}


def unescaped(text: str) -> str:
    """A double-quoted string's text: each backslash escape as the character it escapes."""
    return _ESCAPE.sub(r"\1", text)


def _unquoted(raw: str) -> str:
    """A string literal's text: single- and backquoted as written, double-quoted unescaped;
    anything else (a variable) as written."""
    if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "`'":
        return raw[1:-1]
    if len(raw) > 1 and raw[0] == raw[-1] == '"':
        return unescaped(raw[1:-1])
    return raw
