"""Re-ranking for memory search: temporal decay of dated notes, and MMR for diversity.

Decay is computed in SQL (so it can reorder the whole candidate set, not just a top-k)
from ``decay_sql``; ``decay_factor`` is the same formula for callers outside the database.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from datetime import date
from operator import mul
from typing import TypeVar

T = TypeVar("T")

_TOKEN = re.compile(r"\w+", re.UNICODE)


# Ages beyond this many half-lives weigh 0.5 ** 300 (~5e-91): as good as zero, yet far from
# float8's underflow, so neither power() nor the product with a score can raise in SQL.
MAX_HALF_LIVES = 300.0


def decay_factor(file_date: date | None, today: date, half_life_days: float) -> float:
    """``0.5 ** (age / half_life)`` for a dated file; 1 for undated or future-dated files.

    Non-increasing in age, never below ``0.5 ** MAX_HALF_LIVES``.
    """
    if file_date is None:
        return 1.0
    age = max(0, (today - file_date).days)
    return 0.5 ** min(age / half_life_days, MAX_HALF_LIVES)


def decay_sql(file_date: str, today: str, half_life: str) -> str:
    """SQL for ``decay_factor``; ``half_life`` NULL turns decay off.

    The age is capped at ``MAX_HALF_LIVES * half_life`` before dividing, so a tiny
    half-life cannot overflow the quotient either.
    """
    age = f"greatest({today} - {file_date}, 0)::float8"
    return (f"(CASE WHEN {file_date} IS NULL OR {half_life} IS NULL THEN 1.0::float8 "
            f"ELSE power(0.5::float8, least({age}, {MAX_HALF_LIVES} * {half_life}) "
            f"/ {half_life}) END)")


def unit(v: Sequence[float]) -> list[float]:
    """``v`` scaled to length 1 (a zero vector stays zero), so cosine is a dot product."""
    norm = math.sqrt(sum(map(mul, v, v)))
    return [x / norm for x in v] if norm else [0.0] * len(v)


def tokens(text: str) -> frozenset[str]:
    """Lower-cased word tokens: the similarity basis when there are no embeddings."""
    return frozenset(t.lower() for t in _TOKEN.findall(text))


def token_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two token sets, 0..1."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def mmr(items: Sequence[T], k: int, lam: float, relevance: Callable[[T], float],
        similarity: Callable[[T, T], float]) -> list[T]:
    """Maximal marginal relevance: repeatedly pick ``argmax lam*rel - (1-lam)*max sim``.

    ``lam=1`` keeps the relevance order; lower values trade relevance for novelty. Ties go
    to the earlier item, so the input order (best first) breaks them.
    """
    remaining = list(items)
    selected: list[T] = []
    closest = [0.0] * len(remaining)  # max similarity of each remaining item to the picks
    while remaining and len(selected) < k:
        best = max(range(len(remaining)),
                   key=lambda i: (lam * relevance(remaining[i]) - (1 - lam) * closest[i], -i))
        pick = remaining.pop(best)
        closest.pop(best)
        selected.append(pick)
        closest = [max(c, similarity(item, pick)) for c, item in zip(closest, remaining,
                                                                      strict=True)]
    return selected
