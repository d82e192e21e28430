"""Extraction off the fetch loop: a thread first, worker processes for large sources."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbctl.net.policy import FetchResult
from kbctl.sources import extractpool
from kbctl.sources.extractpool import ExtractExecutor, ExtractJob, run_job
from kbctl.sources.registry import adapter_for as adapter
from kbctl.sources.registry import source_spec
from tests.http_server import LocalServer, html, ok
from tests.test_sources_web import LOCAL, page, urlset


def job(body: bytes, content_type: str = "text/html", **kw: bool) -> ExtractJob:
    result = FetchResult(url="https://d.test/p", status=200, content=body,
                         content_type=content_type, charset=None, headers={}, etag=None,
                         last_modified=None)
    return ExtractJob(result, "https://d.test/p", "crawl", **kw)


def test_run_job_returns_documents_links_and_errors_as_values() -> None:
    out = run_job(job(page("A", links=("/b", "/c#x", "mailto:z@d.test")).encode(),
                      want_links=True))
    assert out.document is not None and out.document.title == "A"
    assert out.links == ["https://d.test/b", "https://d.test/c"]
    skipped = run_job(job(page("A").encode(), skip_document=True))
    assert skipped.document is None and skipped.error is None
    bad = run_job(job(b"%PDF-1.7 binary"))
    assert bad.document is None and bad.error is not None
    assert bad.error[0].startswith("https://d.test/p: ") and "PDF" in bad.error[0]


def test_the_executor_moves_to_worker_processes_after_the_first_pages() -> None:
    executor = ExtractExecutor(processes=1, process_after=2)
    try:
        pids = [executor.submit(os.getpid).result() for _ in range(4)]
        assert pids[:2] == [os.getpid()] * 2
        assert pids[2] == pids[3] != os.getpid()
        assert executor.uses_processes
        out = executor.submit(run_job, job(page("Z").encode())).result()
        assert out.document is not None and "Section of Z" in out.document.body
    finally:
        executor.shutdown()
    threads_only = ExtractExecutor(processes=0, process_after=0)
    try:
        assert threads_only.submit(os.getpid).result() == os.getpid()
        assert not threads_only.uses_processes
    finally:
        threads_only.shutdown()


def test_a_large_source_extracts_the_same_in_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extractpool, "PROCESS_AFTER", 3)
    with LocalServer() as site:
        for i in range(12):
            site.routes[f"/p{i}"] = html(page(f"P{i}", anchor=f"s{i}"))
        site.routes["/bad"] = ok(b"\x7fELF" + bytes(300), "text/html")
        site.routes["/sitemap.xml"] = urlset(*(site.url(f"/p{i}") for i in range(12)),
                                             site.url("/bad"))
        spec = source_spec("sitemap", site.url("/sitemap.xml"))
        results = {}
        for processes in (0, 1):
            source = adapter(spec, policy=LOCAL, extract_processes=processes)
            loaded = list(source.load(source.expand(spec).leaves, lambda ref: None))
            results[processes] = {
                item.leaf.ref: (item.document, item.error and item.error.message)
                for item in loaded}
    assert results[0] == results[1]
    assert "ELF executable" in results[1][site.url("/bad")][1]
    assert sum(doc is not None for doc, _ in results[1].values()) == 12


PARENT = """
import os, sys, time
from kbctl.sources.extractpool import ExtractExecutor
if __name__ == "__main__":
    executor = ExtractExecutor(processes=1, process_after=0)
    print(executor.submit(os.getpid).result(), flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not hasattr(os, "getppid"), reason="POSIX")
def test_a_worker_ends_when_its_parent_is_sigkilled(tmp_path: Path) -> None:
    """A SIGKILLed ingest could not shut its pool down: its worker lived on for good."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        worker = int(parent.stdout.readline())
        assert worker != parent.pid
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(worker, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            os.kill(worker, signal.SIGKILL)
            raise AssertionError("the worker outlived its SIGKILLed parent by 20 s")
    finally:
        if parent.poll() is None:
            parent.kill()
