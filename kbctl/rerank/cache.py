"""A Reranker wrapper that asks the KB's score cache before the provider.

The key is (reranker identity, sha256 of the query and the passage), so re-running an eval
suite, or asking the same question again, costs no provider call for pairs already scored.
Every new question adds its pairs, so a long-lived server would grow the cache without end:
each write also drops pairs older than ``KEEP_DAYS`` (scored again if asked again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..store.knowledge import KnowledgeStore
from .base import Reranker, RerankerIdentity

KEEP_DAYS = 30.0


def pair_hash(query: str, passage: str) -> bytes:
    h = hashlib.sha256()
    h.update(query.encode())
    h.update(b"\0")
    h.update(passage.encode())
    return h.digest()


class CachedReranker:
    """Same protocol as the wrapped reranker; counts the pairs it really sent."""

    def __init__(self, inner: Reranker, store: KnowledgeStore) -> None:
        self.inner = inner
        self.store = store
        self.provider_pairs = 0
        self.cache_hits = 0

    @property
    def identity(self) -> RerankerIdentity:
        return self.inner.identity

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        keys = [pair_hash(query, d) for d in documents]
        ident = str(self.identity)
        found = self.store.caches.rerank_scores(ident, keys)
        first: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in found:
                first.setdefault(key, i)  # one pair per distinct passage
        if first:
            order = list(first.values())
            scores = self.inner.score(query, [documents[i] for i in order])
            fresh = {keys[i]: s for i, s in zip(order, scores, strict=True)}
            self.store.caches.add_rerank_scores(ident, fresh)
            self.store.caches.prune("rerank_cache", KEEP_DAYS)
            found.update(fresh)
            self.provider_pairs += len(order)
        self.cache_hits += sum(1 for k in keys if k not in first)
        return [found[k] for k in keys]
