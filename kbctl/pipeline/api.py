"""The operations behind each command: settings in, a result dataclass out.

These are the library surface too: ``kbctl.pipeline.api.ingest_sources(settings, specs)``
does what ``kbctl ingest`` does, minus the rendering. The reading operations sit beside
what they use, so that a reading command loads no ingest machinery:
``kbctl.pipeline.query.query``, ``kbctl.pipeline.evals.evaluate`` and ``eval_init``,
``kbctl.pipeline.status.status`` and ``doctor``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..config import Settings
from ..errors import InputError
from ..net.endpoint import public_endpoint
from ..sources.base import SourceSpec
from ..store.db import describe
from ..store.knowledge import KnowledgeStore
from ..wiring import (
    input_window,
    open_store,
    open_writers,
    private_opt_in,
    remember_endpoint,
    resolve_embedder,
)
from . import cache_carry
from .cached_embedder import CachedEmbedder, with_cache
from .forget import ForgetReport, forget
from .ingest import ChunkingOptions, IngestReport, ingest
from .progress import Progress, ProgressEvent, no_progress
from .reembed import ReembedReport, reembed
from .resync import ResyncOptions, ResyncReport, require_recorded, resync


def ingest_sources(
    settings: Settings,
    specs: Sequence[SourceSpec],
    *,
    progress: Progress = no_progress,
    announce: Callable[[str], None] = lambda _m: None,
    wait: bool = True,
) -> IngestReport:
    """Ingest ``specs`` into the configured namespace, holding its write lock."""
    specs = _with_opt_in(settings, specs)
    missing = []
    for spec in specs:  # a mistyped folder makes no knowledge base
        try:
            spec.options.check_present(spec.target)
        except InputError as exc:
            missing.append(exc)
    if missing and len(missing) == len(specs):  # else those fail alone, and the rest run
        raise missing[0]
    with open_store(settings, writes=True) as store, \
            store.locks.embedder(waiting=announce):  # resolved under it: reembed waits
        embedder = resolve_embedder(store, settings, writing=True, announce=announce)
        cached = with_cache(embedder, store, settings)
        carry_note = _carry_in(store, cached, settings)
        with store.locks.namespace(settings.namespace, wait=wait, waiting=announce), \
                open_writers(settings) as writers:
            report = ingest(
                store, specs, namespace=settings.namespace, embedder=cached,
                writer_stores=writers,
                chunking=ChunkingOptions(settings.max_tokens, settings.overlap_tokens),
                progress=progress,
                adapter_context={
                    "allow_private_network": settings.allow_private_network,
                    # a crawl finds its pages as it goes: the progress total grows with it
                    "on_discovered": lambda n: progress(ProgressEvent("total", total=n)),
                },
            )
        if carry_note:
            report.notes.insert(0, carry_note)
        if cached is not None:
            report.embedded = cached.provider_texts
            report.embedding_cache_hits = cached.cache_hits
            if cached.provider_texts:
                remember_endpoint(store, settings, announce)
            store.embedder.ensure_vector_index()
            _carry_out(store, cached, settings, [settings.namespace])
        store.documents.make_durable()  # what the report says was written survives a crash
        return report


def _carry_in(store: KnowledgeStore, cached: CachedEmbedder | None,
              settings: Settings) -> str | None:
    """Load the embedding cache file, when one is set and the KB embeds; a note."""
    if cached is None or settings.embedding_cache is None:
        return None
    return cache_carry.load(store, cached, settings.embedding_cache)


def _carry_out(store: KnowledgeStore, cached: CachedEmbedder, settings: Settings,
               namespaces: Sequence[str]) -> None:
    """Replace the embedding cache file with the vectors ``namespaces`` are made of."""
    if settings.embedding_cache is not None:
        cache_carry.save(store, cached, settings.embedding_cache, namespaces)


def reembed_kb(
    settings: Settings,
    spec: str,
    *,
    again: bool = False,
    progress: Progress = no_progress,
) -> ReembedReport:
    """Re-embed every chunk with the embedder ``spec`` and make it the KB's embedder
    (``again``: even when it already is)."""
    from ..embed.registry import create_embedder

    with open_store(settings, existing=True, writes=True) as store:
        private = private_opt_in(store, settings, settings.embedder_base_url)
        embedder = create_embedder(spec, base_url=settings.embedder_base_url,
                                   allow_private_network=private)
        namespaces = store.status.namespaces()
        def said(message: str) -> None:
            progress(ProgressEvent("note", message=message))

        endpoint = (public_endpoint(settings.embedder_base_url)
                    if settings.embedder_base_url and embedder is not None else None)
        with store.locks.embedder(exclusive=True, waiting=said), \
                store.locks.namespaces(namespaces):
            report = reembed(store, embedder, endpoint=endpoint, private_network=private,
                             progress=progress, window=input_window(settings, embedder),
                             again=again)
            remember_endpoint(store, settings, said)  # an unchanged embedder's new address
        return report


def resync_kb(
    settings: Settings,
    *,
    namespaces: Sequence[str] | None = None,
    all_namespaces: bool = False,
    options: ResyncOptions = ResyncOptions(),
    progress: Progress = no_progress,
    announce: Callable[[str], None] = lambda _m: None,
) -> ResyncReport:
    """Resync recorded sources: of ``namespaces``, of every namespace, or of the configured
    one. A kbctl.yaml that lists sources gives the definitions of its namespace (the one
    the settings name); every other namespace syncs the definitions it recorded."""
    with open_store(settings, existing=True, writes=True) as store:
        if all_namespaces:
            targets = [s.namespace for s in store.status.per_namespace() if s.definitions]
            if settings.sources and settings.namespace not in targets:
                targets.append(settings.namespace)
        else:
            targets = list(namespaces or [settings.namespace])
        if not settings.sources:
            require_recorded(store, targets, every=all_namespaces,
                             where=describe(settings.db_url, settings.data_dir))
        with store.locks.embedder(waiting=announce), open_writers(settings) as writers:
            embedder = resolve_embedder(store, settings, writing=True, announce=announce)
            cached = with_cache(embedder, store, settings)
            carry_note = _carry_in(store, cached, settings)
            if carry_note:
                announce(carry_note)
            report = resync(
                store, targets, embedder=cached, options=options, writer_stores=writers,
                chunking=ChunkingOptions(settings.max_tokens, settings.overlap_tokens),
                context={"allow_private_network": settings.allow_private_network},
                specs_override={settings.namespace: _with_opt_in(settings, settings.sources)}
                if settings.sources else None,
                progress=progress, announce=announce)
        if cached is not None:
            if cached.provider_texts:
                remember_endpoint(store, settings, announce)
            store.embedder.ensure_vector_index()
            _carry_out(store, cached, settings, targets)
        store.documents.make_durable()  # what the report says was written survives a crash
        return report


def _with_opt_in(settings: Settings, specs: Sequence[SourceSpec]) -> list[SourceSpec]:
    """Definitions given ``--allow-private-network`` remember it, so a resync that is not
    told again may reach the same private host."""
    if not settings.allow_private_network:
        return list(specs)
    return [spec.allowing_private_network() for spec in specs]


def forget_source(settings: Settings, target: str, *, keep_pages: bool = False,
                  wait: bool = True, lock_timeout: float = 600.0,
                  announce: Callable[[str], None] = lambda _m: None) -> ForgetReport:
    """Forget a recorded source of the configured namespace (``kbctl.pipeline.forget``),
    under the namespace's write lock."""
    with open_store(settings, existing=True, writes=True) as store, store.locks.namespace(
            settings.namespace, wait=wait, timeout_s=lock_timeout, waiting=announce):
        return forget(store, settings.namespace, target, keep_pages=keep_pages)


