"""The Reranker seam: retrieval talks to every cross-encoder through this protocol."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

#: How many fused candidates the reranker re-scores by default.
DEFAULT_TOP_N = 50


@dataclass(frozen=True)
class RerankerIdentity:
    """Provider and model: what a cached score was computed with."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each document answers a query."""

    @property
    def identity(self) -> RerankerIdentity: ...

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in input order, within 0..1."""
        ...


def sigmoid(x: float) -> float:
    """Map a raw cross-encoder logit to 0..1 (what hosted APIs already return)."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
