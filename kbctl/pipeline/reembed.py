"""Re-embed a KB in place from its stored chunk text (no refetch), swapping atomically.

Vectors are staged in a session table while the old ones keep serving; the swap (column
width, every vector, the recorded identity) is one transaction, so a failure at any point
before it leaves the old KB exactly as it was.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from ..embed.base import NO_EMBEDDER, Embedder
from ..store.knowledge import KnowledgeStore
from .cached_embedder import CachedEmbedder
from .progress import Progress, ProgressEvent, no_progress

BATCH = 256
_STAGE = "kbctl_reembed_stage"


@dataclass
class ReembedReport:
    previous: str
    embedder: str
    chunks: int = 0
    embedded: int = 0
    cache_hits: int = 0
    changed: bool = True
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reembed(store: KnowledgeStore, embedder: Embedder | None, *,
            progress: Progress = no_progress) -> ReembedReport:
    started = time.perf_counter()
    previous = store.embedder_identity() or NO_EMBEDDER
    identity = embedder.identity if embedder is not None else NO_EMBEDDER
    report = ReembedReport(previous=str(previous), embedder=str(identity))
    if previous == identity:
        report.changed = False
        return report
    cached = CachedEmbedder(embedder, store) if embedder is not None else None
    store.conn.execute(f"DROP TABLE IF EXISTS {_STAGE}")
    store.conn.execute(f"CREATE TEMP TABLE {_STAGE} (chunk_id bigint PRIMARY KEY, "
                       f"embedding vector)")
    try:
        total = store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        progress(ProgressEvent("total", total=total))
        last = 0
        while cached is not None:
            batch = store.chunk_texts(last, BATCH)
            if not batch:
                break
            vectors = cached.embed([t for _, t, _ in batch], [ti or None for _, _, ti in batch])
            store.conn.execute(
                f"""INSERT INTO {_STAGE} (chunk_id, embedding)
                    SELECT i, v::vector FROM unnest(%s::bigint[], %s::text[]) AS u(i, v)""",
                ([cid for cid, _, _ in batch],
                 ["[" + ",".join(repr(float(x)) for x in v) + "]" for v in vectors]))
            last = batch[-1][0]
            report.chunks += len(batch)
            for cid, _, _ in batch:
                progress(ProgressEvent("written", ref=str(cid)))
        store.swap_embeddings(identity, _STAGE)
    finally:
        store.conn.execute(f"DROP TABLE IF EXISTS {_STAGE}")
    if cached is not None:
        report.embedded = cached.provider_texts
        report.cache_hits = cached.cache_hits
    report.seconds = round(time.perf_counter() - started, 3)
    return report
