"""Where page extraction runs: a worker thread for small sources, worker processes for
large ones.

Extraction (HTML parsing and conversion) is CPU work in Python. In a thread it takes turns
with the pipeline's own chunking under the GIL; in a separate process it runs beside it on
another core, which is what lets a 500-page sitemap go as fast as the database can write.
A process costs a start-up of a fraction of a second, so the first pages of every source go
to the thread and only a source that turns out large (a big sitemap, a crawl that keeps
finding pages) starts worker processes. Jobs and outcomes are plain picklable values.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kbctl.net.policy import FetchResult

from ..errors import KbctlError
from ..extract.html_select import ContentSelectors
from .base import Document
from .page import HTML_TYPES, route, to_document

#: Pages extracted in the thread before a source counts as large and gets processes.
PROCESS_AFTER = 24
T = TypeVar("T")

# Worker processes are started with "spawn", which imports the program's __main__ module
# again; that is only safe for programs written for it (``if __name__ == "__main__"``).
# kbctl's own command line is; a library caller opts in per source or process.
_processes_allowed = False


def allow_worker_processes() -> None:
    """Declare that this program's ``__main__`` may be re-imported by worker processes."""
    global _processes_allowed
    _processes_allowed = True

#: Worker processes at most; one core stays for the pipeline (and the database).
MAX_PROCESSES = 4


@dataclass(frozen=True)
class ExtractJob:
    result: FetchResult
    ref: str
    kind: str
    docs_mode: bool = True
    prefer_markdown: bool = False
    skip_document: bool = False  # the body is unchanged: only links are wanted
    want_links: bool = False
    selectors: ContentSelectors | None = None


@dataclass(frozen=True)
class ExtractOutcome:
    document: Document | None = None
    links: list[str] = field(default_factory=list)
    error: tuple[str, str | None] | None = None  # (message, hint) of an ExtractError


def run_job(job: ExtractJob) -> ExtractOutcome:
    """Extract one page (and its links); never raises for a bad page."""
    links: list[str] = []
    result = job.result
    if job.want_links and result.content_type in HTML_TYPES:
        from .links import find_links

        try:
            links = find_links(result.content, result.url)
        except Exception:  # links are a bonus; the page itself may still convert
            links = []
    if job.skip_document:
        return ExtractOutcome(links=links)
    try:
        doc = to_document(result, ref=job.ref, kind=job.kind, docs_mode=job.docs_mode,
                          prefer_markdown=job.prefer_markdown, selectors=job.selectors)
    except KbctlError as exc:
        return ExtractOutcome(links=links, error=(exc.message, exc.hint))
    except Exception as exc:  # an extractor bug must not end the run
        return ExtractOutcome(links=links, error=(
            f"{result.url}: cannot extract {route(result)}: {exc!r}", None))
    return ExtractOutcome(document=doc, links=links)


# How often a worker checks that the process that started it is still there.
ORPHAN_CHECK_S = 1.0


def _warm_up() -> None:
    """Start a worker: import the extractors once, and watch the parent."""
    from ..extract import html  # noqa: F401  (import once per worker, not per page)

    parent = os.getppid()
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True,
                     name="kbctl-orphan-watch").start()


def _exit_when_orphaned(parent: int) -> None:
    """End this worker once its parent is gone (SIGKILLed: it could not shut the pool
    down). Left alone, a worker blocked writing its result to the dead parent's pipe
    lived on for good, with the extractors' memory, and kept the resource tracker (and
    its semaphores in /dev/shm) alive with it."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_S)
    os._exit(1)


class ExtractExecutor(Executor):
    """One thread for the first pages; worker processes once a source proves large."""

    def __init__(self, *, processes: int | None = None,
                 process_after: int | None = None) -> None:
        self._after = PROCESS_AFTER if process_after is None else process_after
        if processes is None:
            cpus = os.cpu_count() or 1
            processes = min(MAX_PROCESSES, cpus - 1) if _processes_allowed else 0
        self._processes = processes
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbctl-extract")
        self._pool: ProcessPoolExecutor | None = None
        self._submitted = 0

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        self._submitted += 1
        if self._processes < 1 or self._submitted <= self._after:
            return self._thread.submit(fn, *args, **kwargs)
        if self._pool is None:
            # spawn, not fork: this process has threads (the fetch loop, a DB connection)
            self._pool = ProcessPoolExecutor(
                max_workers=self._processes, initializer=_warm_up,
                mp_context=multiprocessing.get_context("spawn"))
        return self._pool.submit(fn, *args, **kwargs)

    @property
    def uses_processes(self) -> bool:
        return self._pool is not None

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._thread.shutdown(wait=wait, cancel_futures=cancel_futures)
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
