"""TOML config files of generators (``book.toml``, ``hugo.toml``), read leniently: a file
that does not parse counts as empty settings, so detection falls back to defaults."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def load_toml(text: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
