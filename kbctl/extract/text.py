"""Cleaning text before hashing, so cosmetic differences do not look like changes."""

from __future__ import annotations

import re

_BLANK_RUNS = re.compile(r"\n{3,}")
_TRAILING_WS = re.compile(r"[ \t]+\n")


def clean_text(text: str) -> str:
    """Normalise newlines, drop NULs and BOMs, trailing spaces and runs of blank lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = text.lstrip("\ufeff")
    text = _TRAILING_WS.sub("\n", text)
    text = _BLANK_RUNS.sub("\n\n", text)
    return text.strip()
