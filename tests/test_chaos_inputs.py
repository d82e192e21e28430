"""Hostile inputs against the real CLI in its own process: each must end before a deadline,
inside a memory limit, with a clear message and the right exit code."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from kbctl.sources.files import MAX_FILE_BYTES
from tests.http_server import LocalServer, html, ok

from .conftest import rows
from .test_linefile import ALIAS_BOMB

ENTRY = "from kbctl.cli import main; main()"
DEADLINE = 120  # seconds; generous for a loaded machine, finite for a hang
SMALL_MEMORY = 512 << 20  # address space for a command that must not touch the database
LARGE_MEMORY = 3 << 30  # for a whole ingest (threads reserve address space)


def kbctl(*args: str, cwd: Path, memory: int = SMALL_MEMORY, stdin: int | None = None,
          timeout: float = DEADLINE, closed_stdin: bool = False
          ) -> subprocess.CompletedProcess[str]:
    """Run the real CLI with an address-space limit and a deadline (and, with
    ``closed_stdin``, no standard input at all, as ``<&-`` starts it)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if closed_stdin:
            os.close(0)

    env = {k: v for k, v in os.environ.items() if not k.startswith("KBCTL_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])  # this checkout's kbctl
    return subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=cwd, env=env,
                          stdin=stdin if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit)


def _bad_input(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def test_a_yaml_alias_bomb_in_a_config_source_is_refused(workdir: Path) -> None:
    config = workdir / "kbctl.yaml"
    bomb = "".join(f"  {line}\n" for line in ALIAS_BOMB.splitlines())
    config.write_text(f"sources:\n  - kind: files\n    target: docs\n    options:\n"
                      f"      bomb:\n{'    ' + bomb.replace(chr(10), chr(10) + '    ')}",
                      encoding="utf-8")
    assert config.stat().st_size < 1024
    result = kbctl("resync", "--all", "--config", str(config), cwd=workdir)
    _bad_input(result, "kbctl.yaml", "alias bomb")


def test_a_24_mb_config_is_refused_without_reading_it(workdir: Path) -> None:
    config = workdir / "kbctl.yaml"
    with config.open("w", encoding="utf-8") as handle:
        handle.write("sources:\n")
        line = "  - {kind: text, target: t, options: {body: " + "x" * 200 + "}}\n"
        for _ in range(24 * 1024 * 1024 // len(line)):
            handle.write(line)
    result = kbctl("query", "install", "--config", str(config), cwd=workdir)
    _bad_input(result, "kbctl.yaml", "byte limit")


def test_a_suite_alias_bomb_is_refused(workdir: Path) -> None:
    suite = workdir / "suite.yaml"
    suite.write_text("version: 1\n" + ALIAS_BOMB + "cases: []\n", encoding="utf-8")
    result = kbctl("eval", "run", str(suite), cwd=workdir)
    _bad_input(result, "suite.yaml", "alias bomb")


def test_endless_stdin_is_refused_at_the_cap(workdir: Path) -> None:
    with open("/dev/urandom", "rb") as endless:
        result = kbctl("ingest", "text", "--ref", "notes", cwd=workdir,
                       stdin=endless.fileno())
    _bad_input(result, f"over the {MAX_FILE_BYTES} byte limit")


def test_stdin_that_is_closed_or_empty_is_bad_input(workdir: Path) -> None:
    closed = kbctl("ingest", "text", "-", "--ref", "notes", cwd=workdir, closed_stdin=True)
    _bad_input(closed, "no standard input to read the text from: it is closed")
    empty = kbctl("ingest", "text", "--ref", "notes", cwd=workdir)  # stdin is /dev/null
    _bad_input(empty, "text source notes: the text is empty")
    memory = kbctl("memory", "append", "memory/agent/notes.md", "-", "--agent", "bot",
                   cwd=workdir, closed_stdin=True)
    _bad_input(memory, "no standard input")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_and_symlink_loops_in_a_docs_folder_are_skipped(db_url: str,
                                                               workdir: Path) -> None:
    docs = workdir / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n\nWidgets live here.\n", encoding="utf-8")
    (docs / "guide" / "install.md").write_text("# Install\n\nRun it.\n", encoding="utf-8")
    os.mkfifo(docs / "x.md")
    (docs / "loop.md").symlink_to("loop.md")
    (docs / "guide" / "up").symlink_to("..")
    result = kbctl("ingest", "files", str(docs), "--db", db_url, "--embedder", "none",
                   "--json", cwd=workdir, memory=LARGE_MEMORY)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["added"] == 2 and report["failed"] == 0
    assert sorted(report["notes"]) == [f"skipped {docs / 'loop.md'}: a symlink loop",
                                       f"skipped {docs / 'x.md'}: a FIFO, not a regular file"]
    assert rows(db_url, "SELECT count(*) FROM sources") == [(2,)]


def test_a_robots_pattern_of_many_stars_does_not_stall_the_crawl(db_url: str,
                                                                 workdir: Path) -> None:
    # As a regular expression this pattern backtracks for ever against the long path.
    long_path = "/" + "a" * 2000
    hostile = "User-agent: *\nDisallow: /" + "*a" * 1000 + "*b\n"
    routes = {
        "/robots.txt": ok(hostile),
        "/": html(f'<html><head><title>Home</title></head><body><main><h1>Home</h1>'
                  f'<p>Widgets are documented here at length.</p>'
                  f'<a href="{long_path}">long</a></main></body></html>'),
        long_path: html("<html><head><title>Long</title></head><body><main><h1>Long</h1>"
                        "<p>A page with a long address.</p></main></body></html>"),
    }
    with LocalServer(routes) as site:
        result = kbctl("ingest", "crawl", site.url("/"), "--allow-private-network",
                       "--max-depth", "1", "--db", db_url, "--embedder", "none", "--json",
                       cwd=workdir, memory=LARGE_MEMORY)
        assert result.returncode == 0, result.stderr
        assert site.hits(long_path) == 1
    assert json.loads(result.stdout)["added"] == 2
