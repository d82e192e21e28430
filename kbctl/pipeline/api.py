"""The operations behind each command: settings in, a result dataclass out.

These are the library surface too: ``kbctl.pipeline.api.query(settings, "…")`` does what
``kbctl query`` does, minus the rendering.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..embed.base import Embedder
from ..errors import EnvironmentFailure, InputError
from ..evals import CaseResult, Retriever, parse_suite, run_suites
from ..evals.model import DEFAULT_TOP_K
from ..net.endpoint import public_endpoint
from ..rerank.base import Reranker
from ..results import EMPTY_NAMESPACE_HINT, QueryResult
from ..sources.base import SourceSpec
from ..sources.webopts import allowing_private_network
from ..store.db import describe
from ..store.knowledge import KnowledgeStore
from ..store.server import DoctorReport
from ..store.server import doctor as diagnose
from ..wiring import (
    input_window,
    open_store,
    open_writers,
    remember_endpoint,
    resolve_embedder,
    resolve_reranker,
)
from . import cache_carry
from .cached_embedder import CachedEmbedder, with_cache
from .evals import EvalOutcome, plan_eval, run_plan, scaffold_suite
from .forget import ForgetReport, forget
from .ingest import ChunkingOptions, IngestReport, ingest
from .progress import Progress, ProgressEvent, no_progress
from .query import retrieve
from .reembed import ReembedReport, reembed
from .resync import ResyncOptions, ResyncReport, require_recorded, resync
from .status import DefinitionStatus, StatusReport


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
            store.embedder_lock(waiting=announce):  # resolved under it: reembed waits
        embedder = resolve_embedder(store, settings, writing=True, announce=announce)
        cached = with_cache(embedder, store, settings)
        carry_note = _carry_in(store, cached, settings)
        with store.namespace_lock(settings.namespace, wait=wait, waiting=announce), \
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
            store.ensure_vector_index()
            _carry_out(store, cached, settings, [settings.namespace])
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
        cache_carry.save(store, cached, settings.embedding_cache, namespaces,
                         settings.max_tokens)


def query(
    settings: Settings,
    question: str,
    *,
    k: int = 5,
    min_score: float | None = None,
    filters: dict[str, str] | None = None,
    vector_weight: float | None = None,
    fusion: str | None = None,
) -> QueryResult:
    """Retrieve the best chunks for ``question`` from the configured namespace;
    ``vector_weight`` and ``fusion`` override the settings'."""
    with open_store(settings, existing=True) as store:
        embedder = resolve_embedder(store, settings, writing=False)
        reranker = resolve_reranker(store, settings)
        _require_chunks(store, settings.namespace)
        return retrieve(
            store, question, namespace=settings.namespace, k=k, min_score=min_score,
            filters=filters, embedder=embedder,
            vector_weight=settings.vector_weight if vector_weight is None else vector_weight,
            fusion=settings.fusion if fusion is None else fusion, reranker=reranker,
            rerank_top=settings.rerank_top, typo_tolerance=settings.typo_tolerance,
            thesaurus=settings.thesaurus,
        )


class _BrokenFromStart(BaseException):
    """Carries an environment failure out of the eval runner, which keeps ordinary
    exceptions to the failing case (so it must not be an ``Exception``)."""

    def __init__(self, error: EnvironmentFailure) -> None:
        super().__init__(error.message)
        self.error = error


def evaluate(
    settings: Settings,
    suites: Sequence[str | Path],
    *,
    baseline: str | Path | None = None,
    rank_tolerance: int = 0,
    score_tolerance: float | None = None,
    fail_on: str = "any",
    on_result: Callable[[CaseResult], None] | None = None,
    reports: Mapping[str, str | Path | None] | None = None,
) -> EvalOutcome:
    """Run eval suites against the configured namespace and judge them.

    Suites, baseline and policy are checked before the database is opened, so a bad file is
    a usage error (exit 2) even where no database is reachable. An environment failure
    (no API key, embedder or database unreachable) before any retrieval has succeeded ends
    the run with that error (exit 3): it says nothing about retrieval quality. Once a
    retrieval has worked, a failure fails its case only.
    """
    plan = plan_eval(suites, baseline=baseline, rank_tolerance=rank_tolerance,
                     score_tolerance=score_tolerance, fail_on=fail_on, reports=reports)
    with open_store(settings, existing=True) as store:
        embedder = resolve_embedder(store, settings, writing=False)
        reranker = resolve_reranker(store, settings)
        _require_chunks(store, settings.namespace)
        worked = False

        plain = _retriever(store, settings, embedder, reranker)

        def retriever(question: str, top_k: int, min_score: float | None,
                      filters: dict[str, str]) -> QueryResult:
            nonlocal worked
            try:
                found = plain(question, top_k, min_score, filters)
            except EnvironmentFailure as exc:
                if not worked:
                    raise _BrokenFromStart(exc) from exc
                raise
            worked = True
            return found

        try:
            return run_plan(
                plan, retriever, namespace=settings.namespace,
                embedder=embedder.identity if embedder is not None else "none",
                reranker=reranker.identity if reranker is not None else "none",
                on_result=on_result,
            )
        except _BrokenFromStart as broken:
            raise broken.error from None


@dataclass(frozen=True)
class SuiteScaffold:
    """A starter suite's text, and the cases left out because they fail today."""

    text: str
    failing: tuple[str, ...]


def eval_init(settings: Settings, *, top_k: int = DEFAULT_TOP_K, fmt: str = "yaml",
              on_result: Callable[[CaseResult], None] | None = None) -> SuiteScaffold:
    """A starter suite (``yaml`` or ``json`` text) with one case per top-level section of
    the namespace, each run once against the KB: a case the KB fails today is left out,
    so the suite passes on the KB it was made from (a committed scaffold failed the first
    build)."""
    with open_store(settings, existing=True) as store:
        sections = store.top_sections(settings.namespace)
        if not sections:
            raise InputError(f"nothing to scaffold: namespace '{settings.namespace}' holds "
                             "no documents", hint="ingest your docs first (kbctl ingest files "
                             "docs/), or pick the namespace with -n")
        draft = parse_suite(scaffold_suite(sections, top_k=top_k, fmt="json"), "scaffold.json")
        embedder = resolve_embedder(store, settings, writing=False)
        reranker = resolve_reranker(store, settings)
        report = run_suites([draft], _retriever(store, settings, embedder, reranker),
                            namespace=settings.namespace, embedder="-", on_result=on_result)
    failing = tuple(r.case.id for r in report.results if not r.passed)
    if len(failing) == len(report.results):
        raise InputError("nothing to scaffold: no section is found by its own heading",
                         hint="write the suite's questions by hand")
    return SuiteScaffold(scaffold_suite(sections, top_k=top_k, fmt=fmt, without=failing),
                         failing)


def _retriever(store: KnowledgeStore, settings: Settings, embedder: Embedder | None,
               reranker: Reranker | None) -> Retriever:
    """Eval's retrieval: the namespace's, with the settings' fusion and reranking."""
    def retriever(question: str, top_k: int, min_score: float | None,
                  filters: dict[str, str]) -> QueryResult:
        return retrieve(store, question, namespace=settings.namespace, k=top_k,
                        min_score=min_score, filters=filters, embedder=embedder,
                        vector_weight=settings.vector_weight, fusion=settings.fusion,
                        reranker=reranker, rerank_top=settings.rerank_top,
                        typo_tolerance=settings.typo_tolerance,
                        thesaurus=settings.thesaurus)
    return retriever


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

    embedder = create_embedder(spec, base_url=settings.embedder_base_url)
    with open_store(settings, existing=True, writes=True) as store:
        namespaces = store.namespaces()
        def said(message: str) -> None:
            progress(ProgressEvent("note", message=message))

        endpoint = (public_endpoint(settings.embedder_base_url)
                    if settings.embedder_base_url and embedder is not None else None)
        with store.embedder_lock(exclusive=True, waiting=said), \
                store.all_namespace_locks(namespaces):
            report = reembed(store, embedder, endpoint=endpoint, progress=progress,
                             window=input_window(settings, embedder), again=again,
                             max_tokens=settings.max_tokens)
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
            targets = [s.namespace for s in store.namespace_status() if s.definitions]
            if settings.sources and settings.namespace not in targets:
                targets.append(settings.namespace)
        else:
            targets = list(namespaces or [settings.namespace])
        if not settings.sources:
            require_recorded(store, targets, every=all_namespaces,
                             where=describe(settings.db_url, settings.data_dir))
        with store.embedder_lock(waiting=announce), open_writers(settings) as writers:
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
            store.ensure_vector_index()
            _carry_out(store, cached, settings, targets)
        return report


def _with_opt_in(settings: Settings, specs: Sequence[SourceSpec]) -> list[SourceSpec]:
    """Definitions given ``--allow-private-network`` remember it, so a resync that is not
    told again may reach the same private host."""
    if not settings.allow_private_network:
        return list(specs)
    return [allowing_private_network(spec) for spec in specs]


def forget_source(settings: Settings, target: str, *, keep_pages: bool = False,
                  wait: bool = True, lock_timeout: float = 600.0,
                  announce: Callable[[str], None] = lambda _m: None) -> ForgetReport:
    """Forget a recorded source of the configured namespace (``kbctl.pipeline.forget``),
    under the namespace's write lock."""
    with open_store(settings, existing=True, writes=True) as store, store.namespace_lock(
            settings.namespace, wait=wait, timeout_s=lock_timeout, waiting=announce):
        return forget(store, settings.namespace, target, keep_pages=keep_pages)


def _require_chunks(store: KnowledgeStore, namespace: str) -> None:
    """Refuse to read a namespace that holds no chunks (bad input, exit 2): a mistyped
    ``--namespace`` answered nothing with exit 0 from query and failed every case of a
    suite with exit 1, which reads as a retrieval regression."""
    if not store.has_chunks(namespace):
        raise InputError(f"namespace '{namespace}' holds no chunks (namespaces: "
                         f"{_known_namespaces(store)})", hint=EMPTY_NAMESPACE_HINT)


def _known_namespaces(store: KnowledgeStore) -> str:
    return ", ".join(f"'{n}'" for n in store.namespaces()[:20]) or "none"


def status(settings: Settings, namespace: str | None = None) -> StatusReport:
    """Per-namespace sources, chunks, embedder and sync history. A ``namespace`` that
    holds nothing and records nothing is bad input naming those that do (a typo must not
    read as an empty table)."""
    with open_store(settings, existing=True) as store:
        ident, endpoint = store.embedder_state()
        if namespace is not None and not store.namespace_status(namespace) \
                and not store.list_defs(namespace):
            raise InputError(f"namespace '{namespace}' holds nothing (namespaces: "
                             f"{_known_namespaces(store)})", hint=EMPTY_NAMESPACE_HINT)
        return StatusReport(embedder=str(ident) if ident else "none",
                            namespaces=store.namespace_status(namespace),
                            source_definitions=[DefinitionStatus.of(d)
                                                for d in store.list_defs(namespace)],
                            embedder_endpoint=endpoint,
                            database=describe(settings.db_url, settings.data_dir),
                            config=str(settings.config_path) if settings.config_path else None)


def doctor(settings: Settings, *, fix: bool = True) -> DoctorReport:
    """The embedded server's data directory: its state, and with ``fix`` its repairs."""
    return diagnose(settings.data_dir, fix=fix)
