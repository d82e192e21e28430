"""The operations behind each command: settings in, a result dataclass out.

These are the library surface too: ``kbctl.pipeline.api.query(settings, "…")`` does what
``kbctl query`` does, minus the rendering.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..config import Settings
from ..sources.base import SourceSpec
from .ingest import ChunkingOptions, IngestReport, ingest
from .progress import Progress, no_progress
from .query import retrieve
from .results import QueryResult
from .runtime import open_store, resolve_embedder


def ingest_sources(
    settings: Settings,
    specs: Sequence[SourceSpec],
    *,
    progress: Progress = no_progress,
    announce: Callable[[str], None] = lambda _m: None,
    wait: bool = True,
) -> IngestReport:
    """Ingest ``specs`` into the configured namespace, holding its write lock."""
    with open_store(settings) as store:
        embedder = resolve_embedder(store, settings, writing=True, announce=announce)
        with store.namespace_lock(settings.namespace, wait=wait):
            return ingest(
                store, specs, namespace=settings.namespace, embedder=embedder,
                chunking=ChunkingOptions(settings.max_tokens, settings.overlap_tokens),
                progress=progress,
                adapter_context={"allow_private_network": settings.allow_private_network},
            )


def query(
    settings: Settings,
    question: str,
    *,
    k: int = 5,
    min_score: float | None = None,
    filters: dict[str, str] | None = None,
    vector_weight: float | None = None,
    fusion: str = "weighted",
) -> QueryResult:
    """Retrieve the best chunks for ``question`` from the configured namespace."""
    with open_store(settings) as store:
        embedder = resolve_embedder(store, settings, writing=False)
        return retrieve(
            store, question, namespace=settings.namespace, k=k, min_score=min_score,
            filters=filters, embedder=embedder,
            vector_weight=settings.vector_weight if vector_weight is None else vector_weight,
            fusion=fusion,
        )
