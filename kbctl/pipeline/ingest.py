"""The ingest pipeline, in stages: plan → load → normalise → chunk → embed → write, then the
report. Each definition is planned (its listing, recorded for resync), its pages loaded and
normalised (cleaned, hashed, an unchanged page skipped) on the calling thread as a stream;
the documents to write go in batches to the writer threads, which chunk, embed and write
each batch in one transaction. The definitions' bookkeeping (begun, finished with their
errors) wraps the run (``_bookkeeping``). Pure orchestration over the store, the adapters
and the chunkers."""

from __future__ import annotations

import hashlib
import queue
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..chunk import chunk_markdown, chunk_text, headings
from ..chunk.model import CHARS_PER_TOKEN, Chunk, clip_title
from ..embed.base import Embedder
from ..errors import (
    AuthError,
    BlockedURL,
    DatabaseError,
    EmbedderError,
    EnvironmentFailure,
    InputError,
    KbctlError,
    ModelUnavailable,
    SourceError,
)
from ..extract.text import clean_text
from ..hygiene import clipped, drop_bad_chars, dropped_note, first_few
from ..results import NOT_IN_JSON
from ..sources.base import (
    GONE_STATUSES,
    READ_AGAIN,
    BrokenDefinition,
    Document,
    Expansion,
    Loaded,
    SourceAdapter,
    SourceSpec,
)
from ..sources.registry import adapter_for
from ..sources.robots import ROBOTS_DROP
from ..store import lexical
from ..store.db import is_database_failure
from ..store.knowledge import KnowledgeStore
from ..store.records import ChunkRecord, SourceDef, SourceRecord
from .chunk_vectors import embed_pages
from .progress import Progress, ProgressEvent, no_progress

EMBED_BATCH = 64
#: Pages named one by one in the notes per reason they were dropped; the rest are counted.
DROP_NOTES = 5
# Pages gone from a site (404/410) named in the note that says they were deleted.
MAX_NAMED_GONE = 10
# Batches in a row whose embedding failed after the retry policy gave up: past this, the
# provider is down or stalled, not unlucky, and every later batch would cost the same wait.
PROVIDER_FAILURES_TO_STOP = 2
# Source meta: sha256 of the title and cleaned text, for duplicates. The title counts: two
# pages of one boilerplate body (a "deprecated" notice) under their own titles are two pages.
TEXT_HASH = "text_sha256"


CHUNKER_VERSION = 2


@dataclass(frozen=True)
class ChunkingOptions:
    max_tokens: int = 512
    overlap_tokens: int = 64

    @property
    def signature(self) -> str:
        """Stored with each page: a page whose signature differs is chunked again even when
        its text did not change. The version goes up when the chunker's output does (2: a
        page of headings only is chunked, a fence's giant line is cut)."""
        return f"md{CHUNKER_VERSION}:{self.max_tokens}/{self.overlap_tokens}"


@dataclass
class SourceFailure:
    ref: str
    error: str
    type: str
    source: str = ""
    hint: str | None = None  # what to do about it, when the error knows

    def __post_init__(self) -> None:
        # kept in the report and in the database for ``status``: a message quoting a
        # hostile page's 100 KB URL was stored, and printed, whole on every run
        self.error = clipped(self.error)


GUARD_NOTE = "mass-delete guard"


@dataclass(frozen=True)
class MassDeleteStop:
    """Why the mass-delete guard kept a run's deletions back: the run would have deleted
    ``would_delete`` of the namespace's ``pages``, over the ``limit`` fraction."""

    would_delete: int
    pages: int
    limit: float
    message: str


# Unresolved includes listed in a report, at most (each page's note counts them all).
MAX_UNRESOLVED_REPORTED = 1000


@dataclass(frozen=True)
class SyncPolicy:
    """How a run treats deletions and writes.

    ``max_delete`` is the mass-delete guard (a fraction of the namespace's sources; None
    turns it off); ``vanish_statuses`` are fetch statuses that mean a stored page is gone
    for good (resync deletes those); ``dry_run`` plans without writing anything; ``recorded`` says
    the definitions come from earlier runs, so one that is no longer valid input (its
    folder is gone) fails that source instead of the run.
    """

    prune: bool = True
    max_delete: float | None = None
    force: bool = False
    dry_run: bool = False
    vanish_statuses: tuple[int, ...] = ()
    recorded: bool = False


@dataclass
class IngestReport:
    """What an ingest or resync did, per outcome, with timings in seconds."""

    namespace: str
    embedder: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    not_modified: int = 0
    deleted: int = 0
    failed: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0  # deleted sources' and replaced sources' old chunks
    embedded: int = 0
    embedding_cache_hits: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # pages left out on purpose, by why
    dry_run: bool = False
    # the mass-delete guard's verdict (its message is among the notes and errors)
    guard: MassDeleteStop | None = field(default=None, metadata=NOT_IN_JSON)
    provider_failed: bool = False  # a batch failed to embed: its pages failed with it
    changes: dict[str, list[str]] = field(
        default_factory=lambda: {"added": [], "updated": [], "deleted": []})
    errors: list[SourceFailure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # each include a page names that could not be resolved: its page, file, line, target
    # and why (at most MAX_UNRESOLVED_REPORTED; the notes say how many in all)
    unresolved_includes: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    __json_properties__ = ("guard_tripped", "ok")

    @property
    def guard_tripped(self) -> bool:
        return self.guard is not None

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.guard is None

    @property
    def exit_code(self) -> int:
        """0 for a clean run; 3 when the embedding provider failed a batch (the environment,
        however few pages it held: a small resync said 1, as for broken docs); else 1."""
        if self.ok:
            return 0
        return EnvironmentFailure.exit_code if self.provider_failed else 1


@dataclass
class _Pending:
    source: SourceRecord
    doc: Document
    body: str
    existed: bool
    spec: SourceSpec
    chunks: list[Chunk] = field(default_factory=list)


def ingest(
    store: KnowledgeStore,
    specs: Sequence[SourceSpec | BrokenDefinition],
    *,
    namespace: str,
    embedder: Embedder | None = None,
    chunking: ChunkingOptions = ChunkingOptions(),
    progress: Progress = no_progress,
    adapter_context: dict[str, Any] | None = None,
    policy: SyncPolicy = SyncPolicy(),
    writer_stores: Sequence[KnowledgeStore] | None = None,
) -> IngestReport:
    """Ingest source definitions into ``namespace`` and report what changed.

    A source that fails is recorded in ``errors`` and keeps its previous version; the run
    goes on. Orphans (documents a definition produced before but not now) are deleted only
    when the definition expanded completely, so a broken listing never wipes good data, and
    only after every definition ran, so the mass-delete guard sees the whole picture.
    """
    started = time.perf_counter()
    # a first load writes its postings without their indexes and builds them at its end
    deferred = not policy.dry_run and store.documents.defer_postings_indexes(namespace)
    try:
        report = _ingest(store, specs, namespace=namespace, embedder=embedder,
                         chunking=chunking, progress=progress, adapter_context=adapter_context,
                         policy=policy, writer_stores=writer_stores)
    except KeyboardInterrupt:
        raise  # a signal ends the run at once: the next write run builds them
    except BaseException:
        if deferred:  # what the run wrote stays searchable; its own failure is the news
            with suppress(Exception):
                store.documents.build_postings_indexes()
        raise
    if deferred:
        with _stage(report.timings, "write", wall=True):
            store.documents.build_postings_indexes()
        report.timings["write"] = round(report.timings["write"], 4)
    report.timings["total"] = round(time.perf_counter() - started, 4)
    return report


def _ingest(
    store: KnowledgeStore,
    specs: Sequence[SourceSpec | BrokenDefinition],
    *,
    namespace: str,
    embedder: Embedder | None,
    chunking: ChunkingOptions,
    progress: Progress,
    adapter_context: dict[str, Any] | None,
    policy: SyncPolicy,
    writer_stores: Sequence[KnowledgeStore] | None,
) -> IngestReport:
    identity = str(embedder.identity) if embedder else "none"
    report = IngestReport(namespace=namespace, embedder=identity, dry_run=policy.dry_run)
    writer = _Writer(store, namespace, embedder, chunking, report, progress, policy.dry_run,
                     writer_stores)
    before = store.documents.counts(namespace)[0]
    with _bookkeeping(store, namespace, specs, policy, report) as books:
        run = _Run(store, namespace, writer, report, progress, policy, adapter_context or {},
                   books)
        doomed = _read(run, specs)
        _delete(store, namespace, sorted(set(doomed)), before, report, progress, policy)
        for copy in writer.settle(set(report.changes["deleted"])):
            if not policy.dry_run:
                report.chunks_deleted += store.documents.delete(namespace, copy)
        writer.summarise_drops()
    report.notes = _bounded_notes(report.notes, report.guard)
    return report


# A report names at most this many notes: 50,000 broken links in a folder made 50,000 lines
# on every nightly run's stderr and 2.8 MB of JSON in its log.
MAX_NOTES = 200


def _bounded_notes(notes: list[str], guard: MassDeleteStop | None) -> list[str]:
    """The first ``MAX_NOTES`` notes, the delete guard's whatever its place, and a count of
    the rest."""
    if len(notes) <= MAX_NOTES:
        return notes
    kept = notes[:MAX_NOTES]
    if guard is not None and guard.message not in kept:
        kept.append(guard.message)
    return [*kept, f"… and {len(notes) - len(kept)} more notes"]


class _Definitions:
    """A run's bookkeeping of its source definitions (what resync runs again): the options
    each was recorded with before the run, each recorded once its target proves acceptable,
    each stamped begun and then finished with its errors."""

    def __init__(self, store: KnowledgeStore, namespace: str,
                 specs: Sequence[SourceSpec | BrokenDefinition], policy: SyncPolicy,
                 report: IngestReport) -> None:
        self.store = store
        self.namespace = namespace
        self.specs = specs
        self.policy = policy
        self.report = report
        # each definition's options as recorded before this run
        self.before = {d.id: d.options for d in store.definitions.recorded(namespace)}
        self.errors: dict[str, list[dict[str, Any]]] = {}  # each definition's, this run
        self.dooming: set[str] = set()  # the definitions that want something deleted

    def begin(self) -> None:
        if not self.policy.dry_run:
            for spec in self.specs:
                self.store.definitions.begin(self.namespace, spec.id, _interrupted(spec))

    def record(self, spec: SourceSpec, settled: dict[str, Any] | None = None) -> None:
        """Keep the definition for resync once its target proved acceptable, with the options
        its listing ``settled``."""
        if not self.policy.dry_run:
            # a text source's body is document content: what cannot be stored is dropped
            # here as in the document itself (whose note reports it)
            options = {k: drop_bad_chars(v)[0] if isinstance(v, str) else v
                       for k, v in (spec.options.to_record() | (settled or {})).items()}
            self.store.definitions.record(SourceDef(
                namespace=self.namespace, id=spec.id, kind=spec.kind, target=spec.target,
                options=options))
            # a definition recorded by this run was not there to stamp when the run began
            self.store.definitions.begin(self.namespace, spec.id, _interrupted(spec))

    def finish(self) -> None:
        """Stamp each definition's run with its errors (and the mass-delete guard's, for
        those that wanted something deleted: not a sync, stale pages stay)."""
        if self.policy.dry_run:
            return
        self._forget_first_failures(self.errors)
        for def_id, errors in self.errors.items():
            if self.report.guard is not None and def_id in self.dooming:
                errors = [*errors, asdict(SourceFailure(
                    ref=self.namespace, type="MassDeleteGuard",
                    error=self.report.guard.message, source=def_id))]
            self.store.definitions.finish(self.namespace, def_id, errors)

    def end(self, exc: EnvironmentFailure) -> None:
        """A run ended by ``exc`` (no key, the provider down): what a first run that reads
        nothing leaves (nothing), the others its error. A lost database stamps nothing."""
        if self.policy.dry_run or isinstance(exc, DatabaseError):
            return
        ended = {spec.id: [asdict(SourceFailure(
            ref=spec.target, error=exc.message, type=type(exc).__name__, source=spec.id,
            hint=exc.hint))] for spec in self.specs}
        self._forget_first_failures(ended)
        for def_id, errors in ended.items():
            self.store.definitions.finish(self.namespace, def_id, errors)

    def _forget_first_failures(self, errors: dict[str, list[dict[str, Any]]]) -> None:
        """A definition recorded by this run that failed and stored nothing is not kept for
        resync: a mistyped host or a 404 would fail every night from then on."""
        for spec in self.specs:
            if (isinstance(spec, BrokenDefinition) or spec.id in self.before
                    or not errors.get(spec.id)
                    or self.store.documents.stored(self.namespace, spec.id)):
                continue
            if self.store.definitions.forget(self.namespace, spec.id):
                errors.pop(spec.id)
                self.report.notes.append(f"{spec.kind} {spec.target}: nothing of it could be "
                                         f"stored, so it is not recorded for resync")


@contextmanager
def _bookkeeping(store: KnowledgeStore, namespace: str,
                 specs: Sequence[SourceSpec | BrokenDefinition], policy: SyncPolicy,
                 report: IngestReport) -> Iterator[_Definitions]:
    """The definitions' bookkeeping around a run: each stamped begun, with an
    ``interrupted`` error until it finishes (a run killed on the way shows as failed), and
    finished with its errors when the run ends; an environment failure finishes every one
    with it. Any other exception leaves them interrupted."""
    books = _Definitions(store, namespace, specs, policy, report)
    books.begin()
    try:
        yield books
    except EnvironmentFailure as exc:  # the run ends here: no key, the provider down
        books.end(exc)
        raise
    books.finish()


@dataclass
class _Run:
    """What every stage of one run shares."""

    store: KnowledgeStore
    namespace: str
    writer: _Writer
    report: IngestReport
    progress: Progress
    policy: SyncPolicy
    context: dict[str, Any]
    books: _Definitions

    def fail(self, spec: SourceSpec | BrokenDefinition, exc: KbctlError) -> None:
        """The definition failed as a whole (its listing, its recorded options)."""
        _fail_source(spec.target, exc, spec.id, self.report, self.progress)


def _read(run: _Run, specs: Sequence[SourceSpec | BrokenDefinition]) -> list[str]:
    """Every definition through the stages, in order; the refs they want deleted. The
    writer threads have written everything handed over when it returns (a signal abandons
    what they hold)."""
    doomed: list[str] = []
    try:
        for spec in specs:
            run.report.sources.append(spec.to_json() | {"id": spec.id})
            failures_before = len(run.report.errors)
            if isinstance(spec, BrokenDefinition):
                run.fail(spec, spec.error)
            else:
                wanted = _ingest_one(run, spec, alone=len(specs) == 1)
                doomed += wanted
                if wanted:
                    run.books.dooming.add(spec.id)
            run.books.errors[spec.id] = [asdict(e) for e in run.report.errors[failures_before:]]
    except KeyboardInterrupt:  # a signal: the run ends now, batches in flight or not
        run.writer.abandon()
        raise
    finally:
        run.writer.close()
    return doomed


# The stages of one definition: ``_plan`` (its listing, recorded for resync), ``_load`` (its
# pages, fetched and extracted), ``_normalise`` (each page cleaned, hashed and compared with
# the stored one: an unchanged page is skipped, a copy stored once), then on the writer
# threads, a batch of pages at a time, ``_chunk``, ``_embed`` and ``_write`` (one
# transaction per batch). ``_conclude`` says what the source lost and which pages it wants
# deleted.


def _ingest_one(run: _Run, spec: SourceSpec, *, alone: bool = True) -> list[str]:
    """One definition through the stages; returns the refs it wants deleted. A new
    definition whose target is bad input ends the run when it is the run's only one
    (``alone``), else fails alone: one mistyped folder of kbctl.yaml's sources stopped all
    the others."""
    plan = _plan(run, spec, alone=alone)
    if plan is None:
        return []
    stages: dict[str, float] = {}
    pages = _load(run, plan, stages)  # streams: each stage pulls from the one before
    documents = _normalise(run, plan, pages, stages)
    try:
        run.writer.write(documents)  # then chunk, embed, write: on the writer threads
    except KbctlError:
        raise
    except Exception as exc:  # noqa: BLE001 - see _expand; what was read so far is kept
        if is_database_failure(exc):
            raise
        run.writer.drain()
        run.fail(spec, _unexpected(spec, "read", exc))
        return []  # an unfinished read proves no page gone: nothing is deleted
    finally:
        _add_stages(run.report.timings, stages)
    run.writer.drain()
    return _conclude(run, plan)


@dataclass
class _Plan:
    """A definition's listing, the stored pages it is compared with, and what its load
    finds on the way."""

    spec: SourceSpec
    adapter: SourceAdapter
    expansion: Expansion
    existing: dict[str, SourceRecord]  # the namespace's stored pages
    known: dict[str, SourceRecord]  # those this definition stored
    signature: str  # the chunking a stored page must have been made with to be compared
    seen: set[str] = field(default_factory=set)
    vanished: list[str] = field(default_factory=list)  # gone, to be deleted
    still_gone: list[str] = field(default_factory=list)  # gone, never stored

    def previous(self, ref: str) -> dict[str, Any] | None:
        """What a source compares to skip a page unread (size and mtime, ETag): nothing
        for a page chunked by another chunker version or budget, read whole once more."""
        rec = self.existing.get(ref)
        if rec is None or rec.meta.get("pipeline") != self.signature:
            return None
        return rec.meta


def _plan(run: _Run, spec: SourceSpec, *, alone: bool) -> _Plan | None:
    """The definition's listing, recorded for resync, and the pages it is compared with;
    None when the source failed."""
    adapter = adapter_for(spec, **run.context)
    report = run.report
    with _stage(report.timings, "expand", wall=True):
        expansion = _expand(run, spec, adapter, alone=alone)
    if expansion is None:
        return None
    changed = None if run.policy.recorded else _options_changed(
        run.books.before.get(spec.id), spec, expansion.settled)
    run.books.record(spec, expansion.settled)
    if changed:
        report.notes.append(changed)
        run.progress(ProgressEvent("note", message=changed))
    if not expansion.leaves and not run.policy.recorded and not expansion.dropped:
        # an ingest that finds nothing to read failed (exit 1), and its definition is not
        # kept when this run made it (an empty folder, a glob that matches nothing): it
        # passed, and resync then synced nothing every night
        said = expansion.notes[-1] if expansion.notes else (
            f"{spec.kind} {spec.target}: lists nothing to read")
        report.notes.extend(expansion.notes[:-1])
        run.fail(spec, SourceError(said))
        return None
    report.notes.extend(expansion.notes)
    if expansion.info:
        report.sources[-1].update(expansion.info)
    for note in expansion.notes:
        run.progress(ProgressEvent("note", message=note))
    run.progress(ProgressEvent("total", total=len(expansion.leaves)))
    existing = {s.ref: s for s in run.store.documents.stored(run.namespace)}
    run.writer.know(existing.values())
    plan = _Plan(spec, adapter, expansion, existing,
                 {ref: s for ref, s in existing.items() if s.def_id == spec.id},
                 run.writer.chunking.signature)
    if not expansion.leaves and plan.known and run.policy.prune and not run.policy.force:
        _keep_stored(run, plan)
        return None
    return plan


def _expand(run: _Run, spec: SourceSpec, adapter: SourceAdapter, *, alone: bool
            ) -> Expansion | None:
    """The definition's listing; None when listing it failed the source."""
    try:
        return adapter.expand(spec)
    except InputError as exc:
        if not run.policy.recorded and alone:
            raise
        run.fail(spec, exc)
    except BlockedURL as exc:  # a target the guard refuses is never recorded
        run.fail(spec, exc)
    except KbctlError as exc:
        run.books.record(spec)
        run.fail(spec, exc)
    except Exception as exc:  # noqa: BLE001 - a source's bug fails it, not the other sources
        if is_database_failure(exc):
            raise
        run.fail(spec, _unexpected(spec, "list", exc))
    return None


def _keep_stored(run: _Run, plan: _Plan) -> None:
    """A source that stored pages and now lists none (an emptied sitemap its include rules
    match nothing of, an unmounted folder) is more likely broken than gone: the
    namespace's guard missed it when the source is a small part of it."""
    spec, expansion, known = plan.spec, plan.expansion, plan.known
    why = ("its site's robots.txt disallows every page it lists"
           if set(expansion.dropped) == {ROBOTS_DROP} else
           "its URL rules leave none of the pages it lists" if expansion.dropped
           else "it lists nothing to read now")
    run.fail(spec, SourceError(
        f"{spec.kind} {spec.target}: {why}; its {len(known):,} stored "
        f"page{'s are' if len(known) > 1 else ' is'} kept",
        hint="if they are really gone, run again with --force (or `kbctl forget` the "
        "source)"))


def _load(run: _Run, plan: _Plan, stages: dict[str, float]) -> Iterator[Loaded]:
    """The definition's pages as its adapter loads them, less those dropped on purpose
    and those gone (404/410): gone and never stored is no failure of the run, gone for
    good (``vanish_statuses``) is deleted."""
    for loaded in _timed_load(plan.adapter.load(plan.expansion.leaves, plan.previous),
                              stages):
        ref = loaded.leaf.ref
        if loaded.dropped is not None:
            run.writer.drop(loaded.dropped, ref, loaded.note)
            continue
        plan.seen.add(ref)
        status = getattr(loaded.error, "status", None)
        if status in GONE_STATUSES and ref not in plan.known and (
                run.policy.recorded or plan.spec.kind != "url"):
            # never stored and gone: a broken link of the site, a stale sitemap entry,
            # or a page deleted as gone on an earlier run, which the listing still names,
            # is not a failure of the run (a cron job was alerted for ever); a URL an
            # ingest names itself still fails
            plan.still_gone.append(ref)
            run.progress(ProgressEvent("skipped", ref=ref, message=f"gone ({status})"))
            continue
        if status is not None and status in run.policy.vanish_statuses:
            plan.vanished.append(ref)
            run.progress(ProgressEvent("skipped", ref=ref, message=f"gone ({status})"))
            continue
        yield loaded


def _normalise(run: _Run, plan: _Plan, pages: Iterable[Loaded], stages: dict[str, float]
               ) -> Iterator[_Pending]:
    """The pages to write: each cleaned, hashed and compared with its stored version
    (``_Writer.normalised``); an unchanged page, a copy of another or an empty one is
    counted there and goes no further."""
    for loaded in pages:
        with _stage(stages, "normalise"):
            pending = run.writer.normalised(loaded, plan.spec,
                                            plan.existing.get(loaded.leaf.ref))
        if pending is not None:
            yield pending


def _conclude(run: _Run, plan: _Plan) -> list[str]:
    """What a definition's read leaves to say, and the refs it wants deleted: its orphans
    (stored, no longer listed; only when it listed completely) and its pages gone for
    good."""
    report, spec, writer = run.report, plan.spec, run.writer
    if writer.copied and not run.policy.dry_run:
        # the page others now copy took that text this run (a maintenance page served at
        # every address): it is read whole next run, or it kept it until its lastmod moved
        run.store.documents.touch(run.namespace,
                                  [(ref, READ_AGAIN) for ref in sorted(writer.copied)])
        writer.copied.clear()
    statuses = "/".join(map(str, GONE_STATUSES))
    if plan.vanished:  # to be deleted: said, with the addresses (the first few of many)
        report.notes.append(f"{spec.kind} {spec.target}: {len(plan.vanished)} page"
                            f"{'s' if len(plan.vanished) > 1 else ''} gone (HTTP {statuses}): "
                            f"{first_few(plan.vanished, MAX_NAMED_GONE)}")
    if plan.still_gone:
        report.notes.append(f"{spec.kind} {spec.target}: {len(plan.still_gone)} page"
                            f"{'s' if len(plan.still_gone) > 1 else ''} it names gone (HTTP "
                            f"{statuses}), none stored: "
                            f"{first_few(plan.still_gone, MAX_NAMED_GONE)}")
    for why, count in plan.expansion.dropped.items():  # a crawl counts these as it goes
        report.dropped[why] = report.dropped.get(why, 0) + count
    report.notes.extend(plan.expansion.closing_notes)
    seen = plan.seen - writer.left_out
    if not run.policy.prune:
        return plan.vanished
    orphans = (sorted(set(plan.known) - seen - plan.expansion.unread)
               if plan.expansion.complete else [])
    return orphans + plan.vanished


def _options_changed(before: dict[str, Any] | None, spec: SourceSpec,
                     settled: dict[str, Any]) -> str | None:
    """A note naming the options an ingest changes in a recorded definition: run without
    the ``--base-url`` it was first given, an ingest re-reads every page under new URLs
    and deletes the old ones, which no one asked for by name."""
    after = spec.options.to_record() | settled
    if before is None or before == after:
        return None
    changes = [f"{key} {_shown(before.get(key))} → {_shown(after.get(key))}"
               for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
    return (f"{spec.kind} {spec.target}: options changed since it was recorded: "
            f"{'; '.join(changes)} (pass them again to keep them; resync uses these now)")


def _shown(value: Any) -> str:
    return "the default" if value is None else repr(value)


def _interrupted(spec: SourceSpec | BrokenDefinition) -> dict[str, Any]:
    """A definition's error while its run goes on: what ``status`` shows if it never ends."""
    return asdict(SourceFailure(
        ref=spec.target, type="Interrupted", source=spec.id,
        error=f"{spec.kind} {spec.target}: its last run did not finish (it is still going, "
              "or it was killed or lost its database)"))


def _unexpected(spec: SourceSpec, doing: str, exc: Exception) -> SourceError:
    """An exception no source should raise, as the failure of that source."""
    return SourceError(f"{spec.kind} {spec.target}: cannot {doing} it: "
                       f"{type(exc).__name__}: {exc}")


def _fail_source(ref: str, exc: KbctlError, def_id: str, report: IngestReport,
                 progress: Progress) -> None:
    """A definition that failed as a whole (its listing, its recorded options)."""
    report.failed += 1
    report.errors.append(SourceFailure(ref=ref, error=exc.message, type=type(exc).__name__,
                                       source=def_id, hint=exc.hint))
    progress(ProgressEvent("failed", ref=ref, message=exc.message))


def _delete(store: KnowledgeStore, namespace: str, refs: list[str], before: int,
            report: IngestReport, progress: Progress, policy: SyncPolicy) -> None:
    if not refs:
        return
    if (policy.max_delete is not None and not policy.force and before
            and len(refs) > policy.max_delete * before):
        written = 0 if policy.dry_run else report.added + report.updated
        note = (f"{GUARD_NOTE}: this run would delete {len(refs)} of {before} pages "
                f"({len(refs) / before:.0%}) in '{namespace}', over the "
                f"{policy.max_delete:.0%} limit; nothing was deleted"
                + (f" (the {written} page{'' if written == 1 else 's'} it added or updated "
                   f"{'was' if written == 1 else 'were'} written)" if written else "")
                + " (check the source, or pass --force / --max-delete)")
        report.guard = MassDeleteStop(len(refs), before, policy.max_delete, note)
        report.notes.append(note)
        # among the errors too: the run exits 1, and its JSON said errors: []
        report.errors.append(SourceFailure(ref=namespace, error=note, type="MassDeleteGuard"))
        return
    for ref in refs:
        report.changes["deleted"].append(ref)
        report.deleted += 1
        if not policy.dry_run:
            report.chunks_deleted += store.documents.delete(namespace, ref)
        progress(ProgressEvent("deleted", ref=ref))


# The stages of an ingest, as ``IngestReport.timings`` counts them, in seconds: ``load``,
# the pipeline waiting for the source's next page (listing, fetch and extraction, which run
# beside it); ``normalise``, the CPU of cleaning, hashing and comparing each page with the
# stored one; ``chunk`` and ``analyse`` (the lexical fields of each chunk), CPU on the
# writer threads; ``write``, the wall time of the database's statements.
# Stages overlap (pages load while others are written): they do not add up to ``total``.


@contextmanager
def _stage(stages: dict[str, float], name: str, *, wall: bool = False) -> Iterator[None]:
    """Add the CPU seconds of this thread (``wall``: the elapsed seconds) spent in the
    block to ``stages[name]``."""
    clock = time.perf_counter if wall else time.thread_time
    started = clock()
    try:
        yield
    finally:
        stages[name] = stages.get(name, 0.0) + clock() - started


def _add_stages(timings: dict[str, float], stages: Mapping[str, float]) -> None:
    for name, seconds in stages.items():
        timings[name] = round(timings.get(name, 0.0) + seconds, 4)


def _timed_load(loads: Iterable[Loaded], stages: dict[str, float]) -> Iterator[Loaded]:
    """``loads``, counting the time spent waiting for each item as the ``load`` stage."""
    items = iter(loads)
    try:
        while True:
            with _stage(stages, "load", wall=True):
                item = next(items, None)
            if item is None:
                return
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


@dataclass
class _BatchResult:
    written: int = 0
    removed: int = 0  # the replaced sources' old chunks
    counted: list[tuple[str, bool]] = field(default_factory=list)
    failures: list[tuple[str, KbctlError, SourceSpec | None]] = field(default_factory=list)
    provider_error: EmbedderError | None = None  # the embedding itself failed
    embedded: bool = False
    stages: dict[str, float] = field(default_factory=dict)  # seconds, per stage (``_stage``)


class _Writer:
    """Normalises loaded pages (``normalised``: cleaned, hashed, compared with the stored
    version and with the run's other pages) and hands the documents to write to the writer
    threads in batches across documents (``write``), where each batch is chunked, embedded
    and written (``_write_batch``).

    The writer threads work one batch each, one connection each, so the next pages are
    read and normalised while earlier batches are chunked (CPU), embedded (network) and
    written (the database's own process). Every database call of a run goes through them
    once loading starts; ``drain`` waits for them before the caller touches the store.
    """

    def __init__(self, store: KnowledgeStore, namespace: str, embedder: Embedder | None,
                 chunking: ChunkingOptions, report: IngestReport, progress: Progress,
                 dry_run: bool = False,
                 writer_stores: Sequence[KnowledgeStore] | None = None) -> None:
        self.dry_run = dry_run
        self.store = store
        self.namespace = namespace
        self.embedder = embedder
        self.chunking = chunking
        self.report = report
        self.progress = progress
        self.pending: list[_Pending] = []
        self.pending_chunks = 0
        self.touches: list[tuple[str, dict[str, Any]]] = []
        self._dropped: dict[str, int] = {}  # the pages this writer dropped, per reason
        self._kept_copies = 0  # stored pages that now read as copies of another, kept
        self.copied: set[str] = set()  # the pages those now copy: read again next run
        self._provider_failures = 0  # batches in a row whose embedding failed
        self._stopped = False  # a batch raised: hand nothing more to the writer threads
        self._abandoned = False  # a signal: nothing handed over is waited for either
        self._stores: queue.SimpleQueue[KnowledgeStore] = queue.SimpleQueue()
        for writer_store in writer_stores or [store]:
            self._stores.put(writer_store)
        self._slots = len(writer_stores or [store])
        self._pool = ThreadPoolExecutor(max_workers=self._slots,
                                        thread_name_prefix="kbctl-writer")
        self._inflight: deque[tuple[Future[_BatchResult], set[str]]] = deque()
        self.texts: dict[str, str] = {}  # hash of a page's cleaned text -> the ref stored
        self._defs: dict[str, str] = {}  # stored page -> the definition that made it
        self._taken: set[str] = set()  # the pages this run has read
        # Pages stored although a stored page of their definition has their text, which
        # this run has not read (yet): that one may be their old address. Page -> (that
        # page, the text's hash); ``settle`` removes the copies whose original stays.
        self.stand_ins: dict[str, tuple[str, str]] = {}
        self._stand_in_for: dict[str, str] = {}  # text hash -> its stand-in
        # Pages read but not stored (copies of another, empty): a stored old version of
        # one is an orphan, deleted like a page gone from the source.
        self.left_out: set[str] = set()

    def know(self, sources: Iterable[SourceRecord]) -> None:
        """Learn the cleaned-text hashes of stored pages, so a copy of one is not stored."""
        for source in sources:
            self._defs[source.ref] = source.def_id
            digest = source.meta.get(TEXT_HASH)
            if isinstance(digest, str):
                self.texts.setdefault(digest, source.ref)

    def drop(self, why: str, ref: str, note: str) -> None:
        """A page left out on purpose: counted, and named in the notes (the first few)."""
        self.report.dropped[why] = self.report.dropped.get(why, 0) + 1
        count = self._dropped[why] = self._dropped.get(why, 0) + 1
        if count <= DROP_NOTES and note:
            self.report.notes.append(note)
        self.progress(ProgressEvent("skipped", ref=ref, message=note))

    def settle(self, deleted: set[str]) -> list[str]:
        """The stand-ins to remove, counted as the copies they are: those whose original
        stays, with the same text (it was read in this run, failed to load, or was kept by
        the mass-delete guard). Those whose original went are its new address."""
        copies = []
        for ref, (owner, text_hash) in self.stand_ins.items():
            if owner in deleted or self.texts.get(text_hash) != owner:
                continue
            copies.append(ref)
            self.drop("duplicate", ref, f"{ref}: same content as {owner}, stored once there")
        gone = set(copies)
        added = self.report.changes["added"]
        kept = [ref for ref in added if ref not in gone]
        self.report.added -= len(added) - len(kept)
        added[:] = kept
        return copies

    def summarise_drops(self) -> None:
        """One note per reason for the drops past the named few. Only this writer's: an
        expansion (URL rules, versions) writes its own summary of what it dropped."""
        for why, count in self._dropped.items():
            if count > DROP_NOTES:
                more = count - DROP_NOTES
                self.report.notes.append(
                    f"… and {more} more {'page' if more == 1 else 'pages'} dropped ({why})")
        if self._kept_copies > DROP_NOTES:
            more = self._kept_copies - DROP_NOTES
            self.report.notes.append(f"… and {more} more stored {'page' if more == 1 else 'pages'}"
                                     " kept as they were (now a copy of another page)")

    def _keep_stored(self, ref: str, owner: str) -> None:
        """A stored page that now reads as a copy of another keeps its stored version: one
        maintenance (or error) page served at every address made each page a 'duplicate'
        of the first, and the run deleted them all."""
        self._kept_copies += 1
        self.copied.add(owner)
        note = (f"{ref}: now reads the same as {owner} (a maintenance or error page served "
                "for several addresses?); its stored version is kept, and that page is read "
                "again next run")
        if self._kept_copies <= DROP_NOTES:
            self.report.notes.append(note)
        self.progress(ProgressEvent("skipped", ref=ref, message=note))

    def _duplicate(self, ref: str, text_hash: str, prev: SourceRecord | None,
                   def_id: str) -> bool:
        """True when another URL of the namespace already has this title and cleaned
        text. A stored page of the same definition that this run has not read may be the
        page's old address (a moved page, files read with another --base-url): the page
        is stored as its stand-in until the run shows whether that one stays."""
        owner = self.texts.get(text_hash)
        if (owner is not None and owner != ref and self._defs.get(owner) == def_id
                and owner not in self._taken and text_hash not in self._stand_in_for):
            self.stand_ins[ref] = (owner, text_hash)
            self._stand_in_for[text_hash] = ref
            return False
        if owner is not None and owner != ref:
            if prev is not None and prev.meta.get(TEXT_HASH) != text_hash:
                self._keep_stored(ref, owner)
                return True
            self.left_out.add(ref)
            self.drop("duplicate", ref, f"{ref}: same content as {owner}, stored once there")
            return True
        old = prev.meta.get(TEXT_HASH) if prev is not None else None
        if old != text_hash and isinstance(old, str) and self.texts.get(old) == ref:
            del self.texts[old]  # the page changed: its old text is free to be stored again
        self.texts[text_hash] = ref
        return False

    def normalised(self, loaded: Loaded, spec: SourceSpec, prev: SourceRecord | None
                   ) -> _Pending | None:
        """A loaded page, cleaned and hashed, as a document to write; None when it goes no
        further: it failed to load, holds no text, is a copy of another page or unchanged
        (by its source's own check, or by its content hash), or the run is a dry run (it is
        counted)."""
        ref = loaded.leaf.ref
        self._taken.add(ref)
        read = self._cleaned(loaded, spec, prev)
        if read is None:
            return None
        doc, body = read
        text_hash = hashlib.sha256(f"{doc.title}\0{body}".encode()).hexdigest()
        if self._duplicate(ref, text_hash, prev, spec.id):
            return None
        digest = content_hash(doc, body)
        meta = doc.meta | loaded.meta | {"pipeline": self.chunking.signature,
                                         TEXT_HASH: text_hash}
        if (prev is not None and prev.content_hash == digest
                and prev.meta.get("pipeline") == self.chunking.signature
                and prev.def_id == spec.id):
            self.report.unchanged += 1
            self._touch(ref, meta)
            self.progress(ProgressEvent("skipped", ref=ref))
            return None
        if self.dry_run:
            self._count(ref, existed=prev is not None)
            return None
        if doc.format == "markdown" and headings.over_block_budget(body):
            self._note(f"{ref}: over {headings.MAX_BLOCK_LINES:,} lines, chunked as plain text "
                       "(its sections get no anchors)")
        source = SourceRecord(namespace=self.namespace, ref=ref, kind=doc.kind, url=doc.url,
                              title=doc.title, content_hash=digest, def_id=spec.id,
                              meta=meta)
        return _Pending(source, doc, body, prev is not None, spec)

    def _cleaned(self, loaded: Loaded, spec: SourceSpec, prev: SourceRecord | None
                 ) -> tuple[Document, str] | None:
        """The page's document, with what may not be stored dropped, and its cleaned body;
        None when it failed to load, was not modified since it was stored, or holds no
        text once extracted."""
        ref = loaded.leaf.ref
        if loaded.error is not None:
            self._fail(ref, loaded.error, spec)
            return None
        if loaded.not_modified:
            self.report.not_modified += 1
            if prev is not None:
                self._touch(ref, loaded.meta)
            self.progress(ProgressEvent("skipped", ref=ref))
            return None
        assert loaded.document is not None
        room = MAX_UNRESOLVED_REPORTED - len(self.report.unresolved_includes)
        self.report.unresolved_includes += [{"page": ref, **u} for u in loaded.unresolved[:room]]
        if loaded.note:  # something the page holds was left out of it
            self._note(loaded.note)
        doc, removed = _without_bad_chars(loaded.document)
        if removed:
            self._note(dropped_note(ref, removed))
        body = clean_text(doc.body)
        if not body:  # nothing to find there; nor is it a copy of another empty page
            self.left_out.add(ref)
            self.drop("empty", ref, f"{ref}: no text once extracted, nothing stored")
            return None
        return doc, body

    def _note(self, note: str) -> None:
        self.report.notes.append(note)
        self.progress(ProgressEvent("note", message=note))

    def _touch(self, ref: str, meta: dict[str, Any]) -> None:
        if not self.dry_run:
            self.touches.append((ref, meta))

    def write(self, documents: Iterable[_Pending]) -> None:
        """Hand ``documents`` to the writer threads in batches of about ``EMBED_BATCH``
        chunks, estimated from their text (they are chunked there)."""
        for pending in documents:
            self.pending.append(pending)
            self.pending_chunks += 1 + len(pending.body) // (self.chunking.max_tokens
                                                             * CHARS_PER_TOKEN)
            if self.pending_chunks >= EMBED_BATCH:
                self.flush()

    def flush(self) -> None:
        """Hand the pending batch to a writer thread; at most one batch per writer
        connection is in flight, and a batch never overlaps one that holds the same ref."""
        if not self.pending and not self.touches:
            return
        batch, self.pending, self.pending_chunks = self.pending, [], 0
        touches, self.touches = self.touches, []
        refs = {p.source.ref for p in batch} | {ref for ref, _ in touches}
        while self._inflight and (len(self._inflight) >= self._slots
                                  or any(refs & held for _, held in self._inflight)):
            self._collect_one()
        self._inflight.append((self._pool.submit(self._in_thread, batch, touches), refs))

    def drain(self) -> None:
        """Flush and wait until everything handed over is written."""
        self.flush()
        while self._inflight:
            self._collect_one()

    def close(self) -> None:
        try:
            if not self._stopped:
                self.drain()
        finally:
            self._pool.shutdown(wait=not self._abandoned)

    def abandon(self) -> None:
        """Hand nothing more over, and wait for nothing handed over: a stopped run ends
        at once, its batch in flight rolled back when its connection goes (one transaction
        each). Drained, a SIGTERM waited out an embedder's every retry, five minutes."""
        self._stopped = self._abandoned = True
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _collect_one(self) -> None:
        future, _ = self._inflight.popleft()
        try:
            result = future.result()  # re-raises AuthError and database failures here
        except BaseException:
            self._stopped = True
            raise
        self.report.chunks_written += result.written
        self.report.chunks_deleted += result.removed
        _add_stages(self.report.timings, result.stages)
        for ref, existed in result.counted:
            self._count(ref, existed=existed)
        for ref, exc, spec in result.failures:
            self._fail(ref, exc, spec)
        if result.provider_error is not None:
            self.report.provider_failed = True
            self._provider_failures += 1
            if self._provider_failures >= PROVIDER_FAILURES_TO_STOP:
                self._stopped = True
                raise EmbedderError(
                    f"{result.provider_error.message} (stopped: {self._provider_failures} "
                    "batches in a row failed to embed)",
                    hint="the embedding provider is down or stalled; what was written stays, "
                         "and the next run embeds the rest")
        elif result.embedded:
            self._provider_failures = 0

    def _in_thread(self, batch: list[_Pending], touches: list[tuple[str, dict[str, Any]]]
                   ) -> _BatchResult:
        store = self._stores.get()
        try:
            return self._write_batch(store, batch, touches)
        finally:
            self._stores.put(store)

    def _write_batch(self, store: KnowledgeStore, batch: list[_Pending],
                     touches: list[tuple[str, dict[str, Any]]]) -> _BatchResult:
        """One batch on a writer thread: the unchanged pages touched, then the stages
        chunk → embed → write."""
        result = _BatchResult()
        if touches:
            store.documents.touch(self.namespace, touches)
        if not batch:
            return result
        with _stage(result.stages, "chunk"):
            batch = _chunk(batch, self.chunking, result)
        vectors = _embed(batch, self.embedder, result) if batch else None
        if vectors is not None:
            _write(store, self.namespace, batch, vectors, result)
        return result

    def _count(self, ref: str, *, existed: bool) -> None:
        key = "updated" if existed else "added"
        setattr(self.report, key, getattr(self.report, key) + 1)
        self.report.changes[key].append(ref)
        self.progress(ProgressEvent("written", ref=ref))

    def _fail(self, ref: str, exc: KbctlError, spec: SourceSpec | None) -> None:
        _fail_source(ref, exc, spec.id if spec else "", self.report, self.progress)


def _chunk(batch: Iterable[_Pending], chunking: ChunkingOptions, result: _BatchResult
           ) -> list[_Pending]:
    """Chunk each document of a batch; a document that cannot be chunked is a failed
    source, never the end of the run."""
    ok = []
    for p in batch:
        try:
            p.chunks = _chunks_of(p.doc, p.body, chunking)
        except KbctlError as exc:
            result.failures.append((p.source.ref, exc, p.spec))
            continue
        except Exception as exc:  # a chunker bug must not end the run
            result.failures.append(
                (p.source.ref, SourceError(f"cannot chunk {p.source.ref}: {exc!r}"), p.spec))
            continue
        ok.append(p)
    return ok


def _chunks_of(doc: Document, body: str, chunking: ChunkingOptions) -> list[Chunk]:
    opts = {"max_tokens": chunking.max_tokens, "overlap_tokens": chunking.overlap_tokens}
    if doc.format == "markdown":
        return chunk_markdown(body, slug_headings=doc.slug_headings, **opts)
    return chunk_text(body, **opts)


def _embed(batch: Sequence[_Pending], embedder: Embedder | None, result: _BatchResult
           ) -> list[list[float] | None] | None:
    """The vectors of a batch's chunks, in order (None each without an embedder); None when
    the provider failed the batch, whose pages then fail with it."""
    count = sum(len(p.chunks) for p in batch)
    if embedder is None or not count:
        return [None] * count
    try:
        vectors: list[list[float] | None] = list(embed_pages(
            embedder, [(p.source.title, [c.text for c in p.chunks]) for p in batch]))
    except (AuthError, ModelUnavailable):
        raise  # no key, a rejected one, no model: every later batch would fail alike
    except EmbedderError as exc:
        result.failures += [(p.source.ref, exc, p.spec) for p in batch]
        result.provider_error = exc
        return None
    result.embedded = True
    return vectors


def _write(store: KnowledgeStore, namespace: str, batch: Sequence[_Pending],
           vectors: Sequence[list[float] | None], result: _BatchResult) -> None:
    """Write a batch's documents with their chunks and vectors in one transaction
    (``Documents.replace_many``), their chunks' lexical fields analysed first."""
    items: dict[str, tuple[SourceRecord, list[ChunkRecord]]] = {}
    existed: dict[str, bool] = {}
    vector = iter(vectors)
    for p in batch:
        records = [ChunkRecord(ordinal=ordinal, text=chunk.text,
                               meta=_chunk_meta(p.source, chunk, p.doc.filterable),
                               embedding=next(vector))
                   for ordinal, chunk in enumerate(p.chunks)]
        items[p.source.ref] = (p.source, records)  # a ref seen twice: the last one wins
        existed[p.source.ref] = existed.get(p.source.ref, p.existed)
    written = list(items.values())
    with _stage(result.stages, "analyse"):
        fields = lexical.kb_field_arrays(
            [c.text for _, records in written for c in records],
            [c.meta for _, records in written for c in records])
    with _stage(result.stages, "write", wall=True):
        result.written, result.removed = store.documents.replace_many(namespace, written,
                                                                      fields)
    result.counted = [(ref, existed[ref]) for ref in items]


def _without_bad_chars(doc: Document) -> tuple[Document, int]:
    """The document with NULs and lone surrogates dropped from its text fields, and its
    title kept to a readable length (``clip_title``)."""
    body, in_body = drop_bad_chars(doc.body)
    title, in_title = drop_bad_chars(doc.title)
    title = clip_title(title)
    filterable, in_meta = {}, 0
    for key, value in doc.filterable.items():
        if isinstance(value, str):
            value, count = drop_bad_chars(value)
            in_meta += count
        filterable[drop_bad_chars(key)[0]] = value
    removed = in_body + in_title + in_meta
    if not removed and filterable == doc.filterable and title == doc.title:
        return doc, 0
    return replace(doc, body=body, title=title, filterable=filterable), removed


def content_hash(doc: Document, body: str) -> str:
    """sha256 over what the chunks are made from: cleaned body, title, citation URL and
    where heading ids come from."""
    h = hashlib.sha256()
    # a page converted from HTML cites only its own ids: its chunks differ from a slugged
    # reading of the same markdown (and stored pages read before that rule are redone)
    how = doc.format if doc.slug_headings else f"{doc.format}+page-ids"
    for part in (doc.title, doc.url, how, body):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _chunk_meta(source: SourceRecord, chunk: Chunk, extra: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = dict(extra)
    meta.update({
        "url": source.url,
        "title": source.title,
        "anchor": chunk.anchor,
        "headingPath": list(chunk.heading_path),
        "kind": source.kind,
        "tokenCount": chunk.token_count,
    })
    return meta
