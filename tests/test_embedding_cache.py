"""The embedding cache keeps what is used and lets go of what is not: a hit renews a
vector's age, and each write drops vectors unused for ``KEEP_DAYS`` (a nightly resync of a
changing site would otherwise grow it for ever)."""

from __future__ import annotations

from kbctl.pipeline.cached_embedder import KEEP_DAYS, CachedEmbedder
from kbctl.store.knowledge import KnowledgeStore

from .conftest import rows
from .embedders import HashingEmbedder


def _age_days(db_url: str) -> list[int]:
    """Whole days since each cached vector was last used, smallest first."""
    return sorted(int(d) for (d,) in rows(
        db_url, "SELECT extract(day FROM now() - used_at) FROM embedding_cache"))


def test_hits_renew_and_writes_prune_what_went_unused(store: KnowledgeStore,
                                                      db_url: str) -> None:
    emb = HashingEmbedder()
    CachedEmbedder(emb, store).embed(["kept text", "forgotten text"])
    store.conn.execute("UPDATE embedding_cache SET used_at = now() - make_interval("
                       "days => %s)", (int(KEEP_DAYS) + 5,))
    cached = CachedEmbedder(emb, store)
    cached.embed(["kept text"])  # a hit: renewed, and nothing was written
    assert cached.cache_hits == 1 and _age_days(db_url) == [0, int(KEEP_DAYS) + 5]
    cached.embed(["new text"])  # a write: the vector nobody used is dropped
    assert _age_days(db_url) == [0, 0]
    assert len(emb.calls) == 2  # the kept text was never embedded again
    cached.embed(["forgotten text"])
    assert len(emb.calls) == 3  # gone from the cache: embedded afresh when it comes back


def test_a_hit_renews_at_most_daily(store: KnowledgeStore, db_url: str) -> None:
    emb = HashingEmbedder()
    CachedEmbedder(emb, store).embed(["text"])
    [(before,)] = rows(db_url, "SELECT xmin::text FROM embedding_cache")
    CachedEmbedder(emb, store).embed(["text"])
    assert rows(db_url, "SELECT xmin::text FROM embedding_cache") == [(before,)]  # no write
