"""Re-embed a KB in place from its stored chunk text (no refetch), swapping atomically.

Vectors are staged in a session table while the old ones keep serving; the swap (column
width, every vector, the recorded identity) is one transaction, so a failure at any point
before it leaves the old KB exactly as it was.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..embed.base import NO_EMBEDDER, Embedder
from ..store.knowledge import KnowledgeStore
from .cached_embedder import CachedEmbedder
from .chunk_vectors import embed_pages
from .progress import Progress, ProgressEvent, no_progress

BATCH = 256
PAGES = 32  # pages re-embedded per batch
_STAGE = "kbctl_reembed_stage"
_MEMORY_STAGE = "kbctl_reembed_memory_stage"


@dataclass
class ReembedReport:
    previous: str
    embedder: str
    chunks: int = 0
    memory_chunks: int = 0
    embedded: int = 0
    cache_hits: int = 0
    changed: bool = True
    seconds: float = 0.0


def reembed(store: KnowledgeStore, embedder: Embedder | None, *,
            endpoint: str | None = None, private_network: bool = False,
            window: int | None = None, again: bool = False,
            progress: Progress = no_progress) -> ReembedReport:
    """``again``: re-embed even with the KB's own embedder (its vectors came from another
    ``window``, or from a version that sent long chunks whole); ``private_network``: the
    ``endpoint`` was reached with the private-network opt-in, recorded with it.
    Knowledge-base chunks are embedded page by page, as ingest embeds them."""
    started = time.perf_counter()
    previous = store.embedder.identity() or NO_EMBEDDER
    identity = embedder.identity if embedder is not None else NO_EMBEDDER
    report = ReembedReport(previous=str(previous), embedder=str(identity))
    if previous == identity and not again:
        report.changed = False
        return report
    cached = CachedEmbedder(embedder, store, window=window) if embedder is not None else None
    try:
        progress(ProgressEvent("total", total=store.documents.chunk_count()))
        report.chunks = _stage_pages(store, cached, progress)
        report.memory_chunks = _stage(store, cached, "memory_chunks", _MEMORY_STAGE, progress)
        store.embedder.swap(identity, _STAGE, _MEMORY_STAGE, endpoint=endpoint,
                            private_network=private_network)
    finally:
        for table in (_STAGE, _MEMORY_STAGE):
            store.embedder.drop_stage(table)
    if cached is not None:
        report.embedded = cached.provider_texts
        report.cache_hits = cached.cache_hits
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _stage_pages(store: KnowledgeStore, cached: CachedEmbedder | None,
                 progress: Progress) -> int:
    """Embed the knowledge base's chunks page by page into ``_STAGE``; the count."""
    store.embedder.create_stage(_STAGE)
    done, after = 0, ("", "")
    while cached is not None:
        pages = store.documents.page_texts(after, PAGES)
        if not pages:
            break
        vectors = embed_pages(cached, [(title, [t for _, t in chunks])
                                       for _, _, title, chunks in pages])
        ids = [cid for *_, chunks in pages for cid, _ in chunks]
        store.embedder.stage(_STAGE, ids, vectors)
        after = pages[-1][:2]
        done += len(ids)
        for cid in ids:
            progress(ProgressEvent("written", ref=str(cid)))
    return done


def _stage(store: KnowledgeStore, cached: CachedEmbedder | None, source: str, stage: str,
           progress: Progress) -> int:
    """Embed every row of ``source`` (agent memory) into the session table ``stage``;
    returns the count."""
    store.embedder.create_stage(stage)
    done, last = 0, 0
    while cached is not None:
        batch = store.documents.chunk_texts(last, BATCH, table=source)
        if not batch:
            break
        vectors = cached.embed([t for _, t, _ in batch], [ti or None for _, _, ti in batch])
        store.embedder.stage(stage, [cid for cid, _, _ in batch], vectors)
        last = batch[-1][0]
        done += len(batch)
    return done
