"""Resync: re-run every recorded source definition of one or more namespaces.

Cheap when nothing changed (conditional fetches, size/mtime checks, content hashes), exact
when something did (one transaction per changed source), and careful with deletions: only
complete listings and 404/410 answers delete, and the mass-delete guard stops a run that
would remove too much of a namespace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..embed.base import Embedder
from ..errors import DefinitionError, InputError
from ..sources.base import GONE_STATUSES, BrokenDefinition, SourceSpec
from ..sources.registry import recorded_spec
from ..store.knowledge import KnowledgeStore
from ..store.records import SourceDef
from .ingest import ChunkingOptions, IngestReport, SyncPolicy, ingest
from .progress import Progress, no_progress

_TOTALS = {"added": "added", "updated": "updated", "unchanged": "unchanged",
           "not_modified": "notModified", "deleted": "deleted", "failed": "failed",
           "chunks_written": "chunksWritten", "chunks_deleted": "chunksDeleted",
           "embedded": "embedded"}


@dataclass
class ResyncReport:
    """One report per namespace plus the totals a cron log wants on one line."""

    namespaces: list[IngestReport] = field(default_factory=list)
    plan: bool = False
    seconds: float = 0.0
    # when the run began (UTC, ISO 8601): a cron log of reports can be dated
    started_at: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    __json_properties__ = ("ok", "totals")

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.namespaces)

    @property
    def exit_code(self) -> int:
        """The worst of the namespaces' (``IngestReport.exit_code``)."""
        return max((r.exit_code for r in self.namespaces), default=0)

    @property
    def totals(self) -> dict[str, int]:
        """Counts summed over namespaces, keyed like the JSON report (camelCase)."""
        return {key: sum(getattr(r, name) for r in self.namespaces)
                for name, key in _TOTALS.items()}


@dataclass(frozen=True)
class ResyncOptions:
    full: bool = False
    plan: bool = False
    max_delete: float = 0.2
    force: bool = False
    wait: bool = True
    lock_timeout: float = 600.0



def resync(
    store: KnowledgeStore,
    namespaces: Sequence[str],
    *,
    embedder: Embedder | None,
    options: ResyncOptions = ResyncOptions(),
    chunking: ChunkingOptions = ChunkingOptions(),
    context: dict[str, Any] | None = None,
    specs_override: Mapping[str, Sequence[SourceSpec | BrokenDefinition]] | None = None,
    progress: Progress = no_progress,
    writer_stores: Sequence[KnowledgeStore] | None = None,
    announce: Callable[[str], None] | None = None,
) -> ResyncReport:
    """Resync each namespace under its write lock; ``specs_override`` replaces the recorded
    definitions of the namespaces it names (a kbctl.yaml's sources, for its namespace)."""
    if not 0.0 <= options.max_delete <= 1.0:
        raise InputError(f"--max-delete must be within 0..1, got {options.max_delete}")
    started = time.perf_counter()
    report = ResyncReport(plan=options.plan)
    policy = SyncPolicy(prune=True, max_delete=options.max_delete, force=options.force,
                        dry_run=options.plan, vanish_statuses=GONE_STATUSES, recorded=True)
    ctx = dict(context or {}) | {"full": options.full}
    for ns in namespaces:
        specs = list(specs_override[ns]) if specs_override and ns in specs_override else [
            _recorded(d) for d in store.definitions.recorded(ns)]
        with store.locks.namespace(ns, wait=options.wait, timeout_s=options.lock_timeout,
                                   waiting=announce):
            before = _embedding_counts(embedder)
            done = ingest(store, specs, namespace=ns, embedder=embedder, chunking=chunking,
                          progress=progress, adapter_context=ctx, policy=policy,
                          writer_stores=writer_stores)
            after = _embedding_counts(embedder)
            done.embedded, done.embedding_cache_hits = (after[0] - before[0],
                                                        after[1] - before[1])
            report.namespaces.append(done)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _embedding_counts(embedder: Embedder | None) -> tuple[int, int]:
    """Texts the provider embedded and cache hits so far, when ``embedder`` counts them (the
    ``CachedEmbedder`` every command wraps its embedder in, shared by all namespaces)."""
    return (int(getattr(embedder, "provider_texts", 0)), int(getattr(embedder, "cache_hits", 0)))


def require_recorded(store: KnowledgeStore, namespaces: Sequence[str], *, where: str,
                     every: bool = False) -> None:
    """Refuse a resync with nothing recorded to run: a cron line pointed at the wrong data
    directory or namespace would otherwise report a clean sync every night while the
    knowledge base it meant goes stale. ``every``: the namespaces came from ``--all``."""
    if every:  # the namespaces --all found are those with recorded sources
        if not namespaces:
            raise InputError(f"nothing to resync: no namespace in {where} has recorded "
                             "sources", hint=_RECORD_HINT)
        return
    empty = [ns for ns in namespaces if not store.definitions.recorded(ns)]
    if empty:
        names = ", ".join(repr(ns) for ns in empty)
        raise InputError(f"nothing to resync: namespace {names} in {where} has no recorded "
                         "sources", hint=_RECORD_HINT)


_RECORD_HINT = ("a resync re-runs what `kbctl ingest` recorded: ingest first, or pass the "
                "--namespace and --data-dir (or --db) the ingest used; `kbctl status` lists "
                "what a knowledge base holds")


def _recorded(definition: SourceDef) -> SourceSpec | BrokenDefinition:
    """A recorded definition, checked again; one that no longer validates fails alone."""
    try:
        return recorded_spec(definition.kind, definition.target, definition.options)
    except DefinitionError as exc:
        return BrokenDefinition(definition.id, definition.kind, definition.target,
                                dict(definition.options), exc)
