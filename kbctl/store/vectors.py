"""Vectors between Python and pgvector: one text form for writes, one list form for reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def as_floats(v: Any) -> list[float]:
    """A stored vector (pgvector's ``Vector``, a numpy array, a list) as plain floats."""
    if hasattr(v, "to_list"):
        v = v.to_list()
    elif hasattr(v, "tolist"):
        v = v.tolist()
    return [float(x) for x in v]


def vector_text(v: Sequence[float] | Any | None) -> str | None:
    """pgvector's text form ``[x,y,…]`` (cast with ``::vector``); None stays NULL."""
    if v is None:
        return None
    return "[" + ",".join(repr(x) for x in as_floats(v)) + "]"
