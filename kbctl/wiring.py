"""Wiring settings to a live store and the KB's embedder: used by the pipeline, memory and
the agent tools alike, so it sits below all of them."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import psycopg

from .config import Settings
from .embed.base import NO_EMBEDDER, Embedder, EmbedderIdentity
from .embedded.server import leave_all, usable_pgdata
from .errors import DatabaseError, InputError
from .net.endpoint import public_endpoint
from .rerank.base import Reranker
from .store.db import connect, database_error
from .store.embedder import embedder_mismatch
from .store.knowledge import KnowledgeStore


@contextmanager
def open_store(settings: Settings, *, existing: bool = False, writes: bool = False
               ) -> Iterator[KnowledgeStore]:
    """A store on the configured database (embedded when no URL), closed on exit. A
    database failure on the way (the server died under the run, a full disk) ends it
    with an environment error naming the database, not a traceback.

    ``existing``: a command that only reads (query, status, eval…) is refused when the
    embedded data directory holds no database, rather than making one: run in the wrong
    directory, it would report an empty knowledge base and leave a new one behind.

    ``writes``: a command that replaces or deletes rows (ingest, resync, forget, reembed, a
    memory import) reclaims their space when it ends well (``Documents.reclaim``).
    """
    if existing and settings.db_url is None:
        require_embedded(settings.data_dir)
    conn = connect(settings.db_url, settings.data_dir, create=not existing)
    try:
        store = KnowledgeStore(conn)
        yield store
        if writes:
            store.documents.reclaim()
    except (psycopg.Error, DatabaseError) as exc:
        error = database_error(exc, settings.db_url, settings.data_dir)
        if error is exc:
            raise
        raise error from exc
    finally:
        conn.close()


def require_embedded(data_dir: str | Path) -> None:
    """Refuse a data directory where no embedded database was ever begun (InputError).
    One that holds something else is left to the server's start, whose error says why."""
    pgdata = usable_pgdata(data_dir)
    try:
        begun = pgdata.is_dir() and next(pgdata.iterdir(), None) is not None
    except OSError:
        begun = True  # unreadable: the server's start names the reason
    if not begun:
        where = Path(data_dir).absolute()
        raise InputError(f"no knowledge base in {where}: no kbctl command has written there",
                         hint="ingest first (`kbctl ingest files docs/`), or pass the "
                              "--data-dir (or --db) the ingest used")


WRITER_CONNECTIONS = 2


@contextmanager
def open_writers(settings: Settings, n: int = WRITER_CONNECTIONS
                 ) -> Iterator[list[KnowledgeStore]]:
    """Extra connections for the ingest writer threads: the database does the heavy part of
    an ingest (tokenising, postings, indexes), and two backends use two cores."""
    stores: list[KnowledgeStore] = []
    try:
        for _ in range(n):
            stores.append(KnowledgeStore(connect(settings.db_url, settings.data_dir)))
        yield stores
    finally:
        for store in stores:
            with contextlib.suppress(psycopg.Error):
                # their rows' counts reach the statistics (flushed before the answer) before
                # the run decides what to vacuum (``Documents.reclaim``): left to the
                # closing backend, they came late on a loaded machine, and the last
                # resync's dead rows stayed
                store.conn.execute("SELECT pg_stat_force_next_flush()")
            store.conn.close()


def identity_spec(identity: EmbedderIdentity) -> str:
    """The registry spec that recreates an embedder with this identity."""
    if identity == NO_EMBEDDER:
        return "none"
    return f"{identity.provider}:{identity.model}@{identity.dimensions}"


def resolve_embedder(
    store: KnowledgeStore,
    settings: Settings,
    *,
    writing: bool,
    env: Mapping[str, str] | None = None,
    announce: Callable[[str], None] = lambda _msg: None,
) -> Embedder | None:
    """The embedder this KB uses.

    A KB remembers the embedder of its first write, and the endpoint it was reached at;
    later commands use both without being told (an explicit base URL, flag or env, still
    wins, and a write records it). Asking for another embedder is refused
    (``EmbedderMismatch``). A new KB gets the requested embedder, else the default (Gemini
    when a key is set, else lexical-only), announced once.
    """
    from .embed.registry import create_embedder, default_spec, parse_spec

    env = os.environ if env is None else env
    recorded, known = store.embedder.state()
    requested = settings.embedder
    # a KB whose first write failed (no key, a provider down) holds nothing: the embedder
    # that attempt named binds nothing, and the next write chooses afresh
    fresh = recorded is None or (writing and requested is None and store.embedder.holds_nothing())
    if recorded is None and not writing:
        spec = requested or "none"
    elif fresh:
        spec = requested or default_spec(env)
    elif requested is None:
        spec = identity_spec(recorded)
    else:
        spec = requested
    base_url = settings.embedder_base_url
    if base_url is None and known and recorded is not None \
            and parse_spec(spec).provider == recorded.provider:
        base_url = known
    embedder = create_embedder(spec, base_url=base_url,
                               allow_private_network=private_opt_in(store, settings, base_url,
                                                                    known))
    if writing and hasattr(policy := getattr(embedder, "retry", None), "on_retry"):
        # a provider's ``kbctl.net.retry.RetryPolicy`` (named, not imported: a lexical KB's
        # query loads no HTTP client): a write's batches wait long for a stalled provider,
        # so each retry is said
        embedder.retry = replace(policy, on_retry=announce)  # type: ignore[union-attr,type-var]
    identity = embedder.identity if embedder is not None else NO_EMBEDDER
    if fresh and writing:
        store.embedder.bind(identity)
        announce(f"new knowledge base: embedder {identity}"
                 + (" (lexical-only; set GEMINI_API_KEY or pass --embedder for hybrid search)"
                    if embedder is None else ""))
    elif recorded is not None and identity != recorded:
        if not writing:  # a read writes nothing: a role that may only read runs it
            if not store.embedder.holds_nothing():
                raise embedder_mismatch(recorded, identity)
        # binding raises EmbedderMismatch when they differ, unless the KB holds nothing yet
        elif store.embedder.bind(identity) != recorded:
            announce(f"the knowledge base held nothing yet: it now uses embedder {identity}")
    return embedder


def private_opt_in(store: KnowledgeStore, settings: Settings, base_url: str | None,
                   known: str | None = None) -> bool:
    """Whether the embedder at ``base_url`` may be on this machine or a private network:
    ``--allow-private-network`` given now, or recorded by the write that reached that
    same endpoint (as a web source's definition remembers it for a resync). ``known``:
    the recorded endpoint, when the caller has read it already."""
    if settings.allow_private_network:
        return True
    if not base_url:
        return False
    if known is None:
        _identity, known = store.embedder.state()
    return bool(known and public_endpoint(base_url) == known and store.embedder.endpoint_opt_in())


def remember_endpoint(store: KnowledgeStore, settings: Settings,
                      announce: Callable[[str], None] = lambda _msg: None) -> None:
    """Record the base URL a write reached its embedder at, for the commands that follow
    (``resolve_embedder``). Called once the write has embedded through it: recorded before
    the first request, a mistyped URL in one failed CI job broke every later cron run and
    MCP server of the knowledge base."""
    if not settings.embedder_base_url:
        return
    identity, known = store.embedder.state()
    if identity in (None, NO_EMBEDDER):
        return
    endpoint = public_endpoint(settings.embedder_base_url)
    opt_in = settings.allow_private_network
    if endpoint != known or (opt_in and not store.embedder.endpoint_opt_in()):
        store.embedder.record_endpoint(endpoint, allow_private_network=opt_in)
    if endpoint != known:
        announce(f"the knowledge base now reaches its embedder at {endpoint}")


def input_window(settings: Settings, embedder: Embedder | None) -> int | None:
    """Tokens the embedder reads of a text: ``embedder_window`` when set (0: all of it),
    else the model's own window when kbctl knows it (``kbctl.embed.windows``)."""
    from .embed.windows import known_window

    if embedder is None or settings.embedder_window == 0:
        return None
    return settings.embedder_window or known_window(embedder.identity.model)


def resolve_reranker(store: KnowledgeStore, settings: Settings) -> Reranker | None:
    """The configured rerank stage (``--rerank`` / ``rerank:``), its scores cached in the KB;
    None when none is configured."""
    if not settings.rerank:
        return None
    from .rerank.cache import CachedReranker
    from .rerank.registry import create_reranker

    return CachedReranker(create_reranker(
        settings.rerank, base_url=settings.rerank_base_url,
        allow_private_network=settings.allow_private_network), store)


def leave_databases() -> None:
    """Drop this process's hold on every embedded server it uses (its handle), so that a
    server nobody else uses stops after its linger: for a process that must end at once,
    without its exit handlers."""
    leave_all()
