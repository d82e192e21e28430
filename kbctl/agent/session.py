"""A tool session: the scope pinned when it opens, one store connection kept for its life,
and ``call`` that turns every failure into a ``ToolResult`` so one bad call never ends a
long-lived session (the MCP server, ``tools call``)."""

from __future__ import annotations

import os
import secrets
import stat
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from kbctl.memory.backend import MemoryBackend
from kbctl.memory.policy import AppendGuard, GuardedBackend
from kbctl.memory.postgres import PostgresMemoryBackend

from ..config import Settings
from ..embed.base import Embedder, EmbedderIdentity
from ..errors import DatabaseError, InputError, KbctlError
from ..memory.choice import chosen_backend
from ..memory.paths import MemoryScope, scope_of
from ..rerank.base import Reranker
from ..store.db import database_error, describe, is_lost_connection
from ..store.knowledge import KnowledgeStore
from ..wiring import input_window, open_store, resolve_embedder, resolve_reranker
from .arguments import check_arguments
from .handlers import HANDLERS, CallContext
from .result import ToolResult
from .specs import MEMORY_APPEND, MEMORY_TOOLS, ToolLimits, ToolSpec, tool_specs

# How long a write tool waits for a ``reembed`` to finish before it says so: an agent's turn
# should not hang for the ten minutes a cron job may wait.
WRITE_WAIT_S = 30.0


# A phase is a word ("memory_flushing"): more than this is no phase file's.
MAX_PHASE_BYTES = 256


def phase_file(path: str | Path) -> Callable[[], str | None]:
    """A phase accessor for ``AppendGuard`` that reads the runtime's current phase from a
    file on every write (missing or empty file: no phase, so writes are refused).

    Only a regular file is read, without blocking and at most ``MAX_PHASE_BYTES`` of it: a
    FIFO had blocked every later call behind a write, and /dev/zero grew the server by
    gigabytes. Anything else, or bytes that are no UTF-8, is no phase."""
    target = Path(path)

    def current() -> str | None:
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            raw = os.read(fd, MAX_PHASE_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(raw) > MAX_PHASE_BYTES:
            return None
        try:
            return raw.decode("utf-8").strip() or None
        except UnicodeDecodeError:
            return None

    return current


@dataclass
class _Resolved:
    """The embedder and reranker resolved for a KB's recorded embedder, shared by sibling
    sessions (both are safe across threads): a local model is loaded once a process, not
    once a session."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    recorded: tuple[EmbedderIdentity | None, str | None] | None = None
    embedder: Embedder | None = None
    reranker: Reranker | None = None

    def resolve(self, store: KnowledgeStore, settings: Settings
                ) -> tuple[tuple[EmbedderIdentity | None, str | None], Embedder | None,
                           Reranker | None]:
        recorded = store.embedder.state()
        with self.lock:
            if self.recorded != recorded:
                embedder = resolve_embedder(store, settings, writing=False)
                self.reranker = resolve_reranker(store, settings)
                self.embedder, self.recorded = embedder, recorded
            return recorded, self.embedder, self.reranker


@dataclass
class _Live:
    store: KnowledgeStore
    embedder: Embedder | None
    memory: MemoryBackend | None
    stack: ExitStack = field(default_factory=ExitStack)
    reranker: Reranker | None = None
    # the KB's embedder and its address when these were resolved
    recorded: tuple[EmbedderIdentity | None, str | None] = (None, None)


class AgentTools:
    """A tool session: one store connection and the KB's embedder, kept open for the
    session's life, and a scope fixed at construction.

    Use as a context manager (or ``open()``/``close()``). A connection that breaks is
    reopened on the next call.
    """

    def __init__(self, settings: Settings, *, read_only: bool = False,
                 phase: Callable[[], str | None] | None = None,
                 limits: ToolLimits = ToolLimits(),
                 nonce: Callable[[], str] | None = None,
                 _resolved: _Resolved | None = None) -> None:
        self.settings = settings
        self.namespace = settings.namespace
        self.scope: MemoryScope | None = (
            scope_of(settings.agent, settings.user) if settings.agent else None)
        self.read_only = read_only
        self.limits = limits
        self._phase = phase
        self._resolved = _resolved or _Resolved()
        self._guard = AppendGuard(phase) if phase is not None else None
        self._nonce = nonce or (lambda: secrets.token_hex(8))
        self._live: _Live | None = None
        self.specs = tool_specs(limits, memory=self.scope is not None, writable=not read_only)
        self._by_name = {s.name: s for s in self.specs}

    def sibling(self) -> AgentTools:
        """Another session over the same scope and settings, with a connection of its own
        (opened on its first call): for calls that run side by side."""
        return AgentTools(self.settings, read_only=self.read_only, phase=self._phase,
                          limits=self.limits, nonce=self._nonce, _resolved=self._resolved)

    def writes(self, name: str) -> bool:
        """Whether the tool ``name`` may write (an unknown name is a failed read)."""
        spec = self._by_name.get(name)
        return spec is not None and not spec.read_only

    # lifecycle

    def open(self) -> AgentTools:
        if self._live is None:
            self._live = self._connect()
        return self

    def close(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stack.close()

    def __enter__(self) -> AgentTools:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> _Live:
        stack = ExitStack()
        try:
            # tools that only read make no database where there is none (a mistyped
            # --data-dir in an assistant's config would serve an empty one for good)
            writes = any(not spec.read_only for spec in self.specs)
            store = stack.enter_context(open_store(self.settings, existing=not writes))
            return self._resolve(store, stack)
        except BaseException:
            stack.close()
            raise

    def _resolve(self, store: KnowledgeStore, stack: ExitStack) -> _Live:
        """The KB's embedder, and the memory backend and reranker that use it."""
        recorded, embedder, reranker = self._resolved.resolve(store, self.settings)
        memory: MemoryBackend | None = None
        if self.scope is not None:
            vectors = PostgresMemoryBackend(store.conn, embedder,
                                            vector_weight=self.settings.vector_weight,
                                            window=input_window(self.settings, embedder))
            # the configured backend (memory.backend): the graph is opened once a session
            writes = any(not spec.read_only for spec in self.specs)
            memory = stack.enter_context(
                chosen_backend(self.settings, vectors, embedder, writing=writes))
            if self._guard is not None:
                memory = GuardedBackend(memory, self._guard)
        return _Live(store, embedder, memory, stack, reranker=reranker, recorded=recorded)

    def _current(self, live: _Live) -> _Live:
        """``live``, resolved again when a ``reembed`` changed the KB's embedder (or the
        address it is reached at) since: a server started before it would embed questions
        with the old model against the new vectors, and write notes with vectors the new
        identity disowns."""
        if live.store.embedder.state() == live.recorded:
            return live
        self._live = live = self._resolve(live.store, live.stack)
        return live

    def _session(self) -> _Live:
        live = self._live
        if live is not None and (live.store.conn.closed or live.store.conn.broken):
            self.close()
            live = None
        if live is None:
            live = self._live = self._connect()
        return live

    def knowledge_is_empty(self) -> bool:
        """Whether the session's namespace holds no chunks (nothing ingested there, or a
        mistyped name): a server started so should say it, as search finds nothing. A
        database failure here (a statement timeout, a lost server) is the environment's
        error, named, not a traceback."""
        try:
            return not self._session().store.documents.has_chunks(self.namespace)
        except psycopg.Error as exc:
            self.close()
            raise database_error(exc, self.settings.db_url, self.settings.data_dir) from exc

    # calls

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run one tool; every failure comes back as an error result, never raised."""
        try:
            spec = self._by_name.get(name)
            if spec is None:
                raise self._unknown(name)
            args = check_arguments(spec, arguments)
            return ToolResult(name, *self._run(spec, args))
        except KbctlError as exc:
            return ToolResult.failure(name, exc)
        except psycopg.Error as exc:
            return ToolResult.failure(name, database_error(exc, self.settings.db_url,
                                                           self.settings.data_dir))
        except Exception as exc:  # a session must outlive one bad call
            traceback.print_exc(file=sys.stderr)
            return ToolResult.failure(
                name, KbctlError(f"internal error in {name}: {type(exc).__name__}: {exc}"))

    def _run(self, spec: ToolSpec, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Run a tool on the session. When the connection was lost (the server died under
        this long-lived session), reconnect, which starts the server again, and run a read
        once more; a write is reported, never repeated blindly: it may have committed."""
        live = self._session()
        if not spec.read_only:
            live = self._reachable(live)
        try:
            return self._perform(live, spec, args)
        except (psycopg.OperationalError, DatabaseError) as exc:
            if not (is_lost_connection(exc) or live.store.conn.broken):
                raise
            self.close()
            if not spec.read_only:
                raise DatabaseError(
                    f"the connection to {describe(self.settings.db_url, self.settings.data_dir)}"
                    f" was lost during {spec.name}; the write may not have been saved",
                    hint="check with memory_get before repeating it") from exc
            return self._perform(self._session(), spec, args)

    def _reachable(self, live: _Live) -> _Live:
        """``live``, or a new session when the server dropped its connection while it sat
        idle (``idle_session_timeout``, a restart, a failover): found before a write sends
        anything, so the write goes out on the new one rather than being lost."""
        try:
            live.store.conn.execute("SELECT 1")
        except psycopg.OperationalError as exc:
            if not (is_lost_connection(exc) or live.store.conn.broken):
                raise
            self.close()
            return self._session()
        return live

    def _perform(self, live: _Live, spec: ToolSpec,
                 args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A read on the KB's current embedder; a write holding it steady, as every kbctl
        write does, so a ``reembed`` running meanwhile is waited out, not written across."""
        if spec.read_only:
            return HANDLERS[spec.name](self._context(self._current(live)), args)
        with live.store.locks.embedder(timeout_s=WRITE_WAIT_S):
            return HANDLERS[spec.name](self._context(self._current(live)), args)

    def _context(self, live: _Live) -> CallContext:
        return CallContext(self.settings, self.limits, live.store, live.embedder,
                           live.memory, self.scope, self._nonce, live.reranker)

    def _unknown(self, name: str) -> KbctlError:
        known = ", ".join(self._by_name)
        if name in MEMORY_TOOLS and self.scope is None:
            return InputError(f"{name} is not available: memory tools need an agent id",
                              hint="start the tools with --agent ID (or KBCTL_AGENT)")
        if name == MEMORY_APPEND and self.read_only:
            return InputError("memory_append is not available: memory is read-only here")
        return InputError(f"unknown tool '{name}' (available: {known})")
