"""The advisory locks that keep kbctl runs apart: one per namespace (ingest and resync
write it alone), and the knowledge base's embedder (shared by every run that embeds,
exclusive for the reembed that changes it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

import psycopg

from ..errors import LockBusy


class Locks:
    """The session advisory locks of one connection."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    @contextmanager
    def namespaces(self, namespaces: Sequence[str]) -> Iterator[None]:
        """Hold every listed namespace's write lock (in a fixed order: no deadlocks)."""
        with ExitStack() as stack:
            for ns in sorted(namespaces):
                stack.enter_context(self.namespace(ns))
            yield

    @contextmanager
    def namespace(self, namespace: str, *, wait: bool = True, timeout_s: float = 600.0,
                       waiting: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the per-namespace advisory lock that serialises ingest and resync. A run
        that has to wait for another one says so through ``waiting`` first: a cron job
        that sits silent for minutes looks hung."""
        with self._advisory_lock(
                f"kbctl:ns:{namespace}", wait=wait, timeout_s=timeout_s, waiting=waiting,
                busy=f"another kbctl run is writing namespace '{namespace}'",
                waits=f"namespace '{namespace}' is being written by another kbctl run",
                still=f"namespace '{namespace}' is still locked by another kbctl run"):
            yield

    @contextmanager
    def embedder(self, *, exclusive: bool = False, timeout_s: float = 600.0,
                      waiting: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the knowledge base's embedder steady: shared by every run that embeds (it
        resolves its embedder inside), exclusive for ``reembed``, which changes it. Taken
        before any namespace lock, in every run, so the two never deadlock. Without it an
        ingest that waited out a reembed wrote with the embedder it had resolved before:
        chunks without vectors, or another model's, under the new identity."""
        doing = ("writing with the knowledge base's embedder" if exclusive
                 else "changing the knowledge base's embedder (reembed)")
        with self._advisory_lock(
                "kbctl:embedder", shared=not exclusive, timeout_s=timeout_s, waiting=waiting,
                waits=f"another kbctl run is {doing}",
                still=("the knowledge base's embedder is still in use by another kbctl run"
                       if exclusive else "the knowledge base is still being re-embedded "
                       "(kbctl reembed)"),
                hint=("nothing was changed; run it again when the other run has finished"
                      if exclusive else "nothing was written; run it again when the "
                      "reembed has finished")):
            yield

    @contextmanager
    def _advisory_lock(self, key: str, *, shared: bool = False, wait: bool = True,
                       timeout_s: float, waiting: Callable[[str], None] | None,
                       waits: str, still: str, busy: str = "",
                       hint: str | None = None) -> Iterator[None]:
        """Hold the session advisory lock ``key`` (``shared`` or exclusive): taken at once
        if free; else refused (``wait=False``: ``LockBusy`` saying ``busy``), or waited for
        at most ``timeout_s`` after ``waiting`` is told ``waits`` (then ``LockBusy`` saying
        ``still``)."""
        mode = "_shared" if shared else ""
        got = self.conn.execute(f"SELECT pg_try_advisory_lock{mode}(hashtextextended(%s, 0))",
                                (key,)).fetchone()
        if not (got and got[0]):
            if not wait:
                raise LockBusy(busy, hint="wait for it to finish, or run with --wait")
            if waiting is not None:
                waiting(f"{waits}; waiting for it to finish (at most {timeout_s:.0f} s)")
            self.conn.execute(f"SET lock_timeout = '{int(timeout_s * 1000)}ms'")
            try:
                self.conn.execute(f"SELECT pg_advisory_lock{mode}(hashtextextended(%s, 0))",
                                  (key,))
            except psycopg.errors.LockNotAvailable as exc:
                raise LockBusy(f"{still} after {timeout_s:.0f}s", hint=hint) from exc
            finally:
                self.conn.execute("SET lock_timeout = 0")
        try:
            yield
        finally:
            self.conn.execute(f"SELECT pg_advisory_unlock{mode}(hashtextextended(%s, 0))",
                              (key,))
