"""Retrieval metrics over the cases that declare ``sourceIncludes``.

Each ``sourceIncludes`` pattern names one relevant source. Per case, at its ``topK``:
- hit: some retrieved chunk matches a pattern; MRR: 1 / rank of the first such chunk;
- recall@k: the share of the case's patterns that some retrieved chunk matches;
- nDCG@k: binary gain, each pattern counted once at the first rank that matches it (more
  chunks of a page already found add nothing), over the ideal of every pattern at the top,
  at most 1: a chunk that matches two patterns at once (``guide/install`` and
  ``guide/install#pip``) gains both where it stands, so finding it first is perfect.
A suite's figure is the mean over its scored cases; ``by_tag`` repeats them per case tag.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kbctl.evals.checks.base import Retrieved, matches
from kbctl.evals.model import Case


class Judged(Protocol):
    """What the metrics read of a case result."""

    @property
    def case(self) -> Case: ...

    @property
    def retrieved(self) -> tuple[Retrieved, ...]: ...

    @property
    def first_match_rank(self) -> int | None: ...


@dataclass(frozen=True)
class Metrics:
    """Means over ``scored`` cases; every figure is ``None`` when none is scored."""

    scored: int
    hits: int
    hit_rate: float | None
    mrr: float | None
    ndcg: float | None = None
    recall: float | None = None
    by_tag: tuple[tuple[str, Metrics], ...] = ()


def _discount(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def case_gains(result: Judged) -> tuple[float, float]:
    """(nDCG@k, recall@k) of one scored case."""
    patterns = tuple(dict.fromkeys(result.case.expect.source_includes))  # a repeat is one
    found: set[str] = set()
    dcg = 0.0
    for chunk in result.retrieved:
        new = [p for p in patterns if p not in found and matches(chunk, p)]
        if new:
            found.update(new)
            dcg += len(new) * _discount(chunk.rank)
    ideal = sum(_discount(rank) for rank in range(1, min(len(patterns),
                                                          result.case.top_k) + 1))
    return (min(1.0, dcg / ideal) if ideal else 0.0), len(found) / len(patterns)


def compute_metrics(results: Sequence[Judged], *, per_tag: bool = True) -> Metrics:
    """Hit rate, MRR, nDCG@k and recall@k over the cases declaring ``sourceIncludes``, and
    per tag. Each case is judged once and filed under its tags in one pass, so a suite with
    thousands of tags costs what its size does."""
    scored = [r for r in results if r.case.expect.source_includes]
    gains = [case_gains(r) for r in scored]
    by_tag: tuple[tuple[str, Metrics], ...] = ()
    if per_tag:
        members: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(scored):
            for tag in r.case.tags:
                members[tag].append(i)
        by_tag = tuple((tag, _summary([scored[i] for i in members[tag]],
                                      [gains[i] for i in members[tag]]))
                       for tag in sorted(members))
    return _summary(scored, gains, by_tag)


def _summary(scored: Sequence[Judged], gains: Sequence[tuple[float, float]],
             by_tag: tuple[tuple[str, Metrics], ...] = ()) -> Metrics:
    if not scored:
        return Metrics(scored=0, hits=0, hit_rate=None, mrr=None, by_tag=by_tag)
    ranks = [r.first_match_rank for r in scored]
    hits = sum(1 for rank in ranks if rank is not None)
    n = len(scored)
    return Metrics(
        scored=n, hits=hits, hit_rate=hits / n,
        mrr=sum(1.0 / rank for rank in ranks if rank is not None) / n,
        ndcg=sum(g[0] for g in gains) / n, recall=sum(g[1] for g in gains) / n,
        by_tag=by_tag)
