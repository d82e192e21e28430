"""Giving up on a database that stops answering, so that every command ends.

A server that is frozen (a paused VM, a stopped process, a host cut off by the network)
keeps its sockets open: a statement sent to it waits for ever, and ``statement_timeout``,
which the server enforces, cannot end it. A cron job would hang, and a long-lived MCP
server would leave its client waiting for good.

A slow statement is not a frozen server, though: a lock wait meant to wait (a resync behind
another) or a long write must go on. So one daemon thread per process looks at each open
connection every ``POLL_S``; when one has been waiting on a statement for ``STALL_S``, it
asks the server for a new connection (``PROBE_TIMEOUT_S``). A server that answers, even
with a refusal, is alive, and the statement goes on; one that does not is given up on: the
waiting connection's socket is shut, and the statement fails as a lost connection (exit 3,
or a tool's error result, after which a long-lived session connects afresh).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import weakref
from dataclasses import dataclass

import psycopg
from psycopg import pq

from ..embedded.server import say_on_stderr

POLL_S = 1.0
STALL_S = 20.0
PROBE_TIMEOUT_S = 10
# How a connection that waits on the server looks from outside: libpq's own state, read
# without the socket. The ``python`` implementation of libpq's wrapper releases the GIL in
# every call, so reading it beside a closing connection could touch freed memory; the
# compiled ones (what kbctl installs) hold the GIL, so the read and the close never overlap.
_WATCHABLE = pq.__impl__ != "python"


@dataclass
class _Watched:
    conninfo: str
    shown: str
    waiting_since: float | None = None
    probed_at: float | None = None


class _Watch:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conns: weakref.WeakKeyDictionary[psycopg.Connection, _Watched] = (
            weakref.WeakKeyDictionary())
        self._given_up: dict[str, str] = {}
        self._thread: threading.Thread | None = None

    def add(self, conn: psycopg.Connection, conninfo: str, shown: str) -> None:
        if not _WATCHABLE:
            return
        with self._lock:
            self._given_up.pop(shown, None)  # a new connection: an old verdict is stale
            self._conns[conn] = _Watched(conninfo, shown)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="kbctl-unanswered",
                                                daemon=True)
                self._thread.start()

    def given_up(self, shown: str) -> str | None:
        with self._lock:
            return self._given_up.pop(shown, None)

    def _run(self) -> None:
        while True:
            time.sleep(POLL_S)
            try:
                self.poll(time.monotonic())
            except Exception:  # noqa: BLE001 - the watch must outlive any one poll
                continue

    def poll(self, now: float) -> None:
        with self._lock:
            watched = list(self._conns.items())
        answers: dict[str, bool] = {}  # one probe per server a poll
        for conn, state in watched:
            if not _is_waiting(conn):
                state.waiting_since = state.probed_at = None
                continue
            if state.waiting_since is None:
                state.waiting_since = now
            if now - state.waiting_since < STALL_S or (
                    state.probed_at is not None and now - state.probed_at < STALL_S):
                continue
            state.probed_at = now
            if state.conninfo not in answers:
                answers[state.conninfo] = _answers(state.conninfo)
            if not answers[state.conninfo]:
                self._give_up(conn, state)

    def reset(self) -> None:
        """In a forked child: the parent's watch thread and lock state are not its own."""
        self._lock = threading.Lock()
        self._conns = weakref.WeakKeyDictionary()
        self._given_up = {}
        self._thread = None

    def _give_up(self, conn: psycopg.Connection, state: _Watched) -> None:
        waited = time.monotonic() - (state.waiting_since or time.monotonic())
        why = (f"{state.shown} did not answer a statement for {waited:.0f} s, nor a new "
               f"connection within {PROBE_TIMEOUT_S} s")
        with self._lock:
            self._given_up[state.shown] = why
            self._conns.pop(conn, None)
        say_on_stderr(f"{why}; giving up on it")
        _hang_up(conn)


def _is_waiting(conn: psycopg.Connection) -> bool:
    """Whether ``conn`` has sent a statement (or a commit) the server has not finished."""
    if conn.closed:
        return False
    return conn.pgconn.transaction_status == pq.TransactionStatus.ACTIVE


def _answers(conninfo: str) -> bool:
    """Whether the server takes a new connection, or at least says why not (a refusal
    comes from a live server: no slot free, still recovering)."""
    try:
        psycopg.connect(conninfo, connect_timeout=PROBE_TIMEOUT_S).close()
    except psycopg.Error as exc:
        return "FATAL:" in str(exc)
    return True


def _hang_up(conn: psycopg.Connection) -> None:
    """Shut the connection's socket: whatever waits on it reads the end of the stream at
    once, and the connection reports itself lost. Only the socket is touched, from this
    thread; the connection is closed by its owner."""
    try:
        fd = os.dup(conn.fileno())
    except (OSError, psycopg.Error):
        return
    try:
        with socket.socket(fileno=fd) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


_WATCH = _Watch()
os.register_at_fork(after_in_child=_WATCH.reset)


def watch(conn: psycopg.Connection, conninfo: str, shown: str) -> None:
    """Give up on ``conn``'s statements once its server stops answering; ``shown`` names
    the database as messages do."""
    _WATCH.add(conn, conninfo, shown)


def given_up(shown: str) -> str | None:
    """Why the watch gave up on a connection to ``shown`` since the last one was opened,
    once: the message of the lost connection that follows says it."""
    return _WATCH.given_up(shown)
