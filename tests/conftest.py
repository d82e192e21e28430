"""Shared fixtures: one real embedded PostgreSQL + pgvector per test session, a database
per test (a copy of one migrated once, emptied and handed on), and helpers to run the real
CLI."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import settings
from psycopg import sql
from typer.testing import CliRunner

from .databases import DatabasePool

# CI replays the same examples on every run (a red build must be reproducible); local runs
# keep exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker more than the cores, at most four. Many tests wait on a
    subprocess or a server, so two workers left 24% of a 2-core machine idle. There, in
    one series of runs, three workers took 289 s, and 275 s with ``--dist worksteal``;
    four with worksteal took 249 and 276 s, but 312 s under .ci/run (which builds more
    sites) against 272 s for three: each worker starts its own server and fixtures."""
    return min((os.cpu_count() or 1) + 1, 4)


def pytest_configure(config: pytest.Config) -> None:
    # The suite starts some hundreds of Python processes (kbctl commands, servers, site
    # builds). Where byte code is never written (PYTHONDONTWRITEBYTECODE set, packages
    # installed with --no-compile, as .ci/run does), each compiled every module it
    # imported again: a warm `kbctl query` took 1.07 s against 0.34 s.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    _temporary_files_in_memory()
    config.addinivalue_line("markers", "empty_db: the test's database is one kbctl never "
                                       "wrote to, not a copy of the migrated one")


# Where the suite's temporary files (test folders, each worker's server, the crash tests'
# own servers and knowledge bases) go when TMPDIR does not say: a file system in memory,
# when the machine has one with this much room. The suite makes and deletes files by the
# thousand (a server's data directory alone holds about 1,000); on ext4, finding a free
# inode among so many deleted a moment ago took a tenth of a run's CPU samples (`perf`:
# recently_deleted, find_inode_bit, find_get_block_common), and the README's test command
# took 261 s of pytest on a quiet 2-core machine, 217 s with TMPDIR in /dev/shm.
MEMORY_FS = Path("/dev/shm")
MEMORY_FS_ROOM = 4 * 1024**3


def _temporary_files_in_memory() -> None:
    """Point TMPDIR (inherited by the workers and every process the tests start) at a
    folder of ours in ``MEMORY_FS`` when TMPDIR is unset and it is a tmpfs that lets
    programs run, with ``MEMORY_FS_ROOM`` free; else leave the temporary folder as it is."""
    if os.environ.get("TMPDIR") or not sys.platform.startswith("linux"):
        return
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
        if not any(line.split()[1:3] == [str(MEMORY_FS), "tmpfs"] for line in mounts):
            return
        room = os.statvfs(MEMORY_FS)
        if room.f_flag & os.ST_NOEXEC or room.f_bavail * room.f_frsize < MEMORY_FS_ROOM:
            return
        root = MEMORY_FS / f"kbctl-tests-{os.getuid()}"
        root.mkdir(mode=0o755, exist_ok=True)
        own = root.lstat()
        if not stat.S_ISDIR(own.st_mode) or own.st_uid != os.getuid():
            return  # someone else's, or a link: not a place to write
    except (OSError, IndexError):
        return
    os.environ["TMPDIR"] = str(root)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


SHARED = Path(__file__).resolve().parents[2] / "shared"
RUST_BOOK = SHARED / "corpora" / "rust-book" / "src"


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    """A server for the whole session: KBCTL_TEST_DATABASE_URL, else an embedded one.

    The data lives in its own temporary directory rather than pytest's: pytest resets its
    base directory to mode 0700, which would lock out the server's system user when the
    tests run as root. kbctl's own lifecycle runs it, so a test run that is killed leaves
    no server behind (its watchdog stops it).
    """
    external = os.environ.get("KBCTL_TEST_DATABASE_URL")
    if external:
        yield external
        return
    from kbctl.embedded.server import ensure_running, leave, watchdog_pid

    data = Path(tempfile.mkdtemp(prefix="kbctl-test-pg-"))
    data.chmod(0o755)
    url = ensure_running(data)
    _without_disk_flushes(url)
    yield url
    leave(data, stop=True)
    deadline = time.monotonic() + 10  # its watchdog sees the server gone within a poll
    while watchdog_pid(data) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    shutil.rmtree(data, ignore_errors=True)


# The session's server holds nothing that must outlive the run: it skips the disk flushes
# (every commit, CREATE and DROP DATABASE waited on them, most of the cost of a test's
# database). Commits still write and flush WAL as far as PostgreSQL is concerned. The
# crash tests run servers of their own, with kbctl's settings.
THROWAWAY_SETTINGS = (("fsync", "off"), ("full_page_writes", "off"))


def _without_disk_flushes(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        for name, value in THROWAWAY_SETTINGS:
            admin.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                sql.Identifier(name), sql.Literal(value)))
        admin.execute("SELECT pg_reload_conf()")


@pytest.fixture(scope="session")
def migrated_template(pg_admin_url: str) -> Iterator[str]:
    """A database with kbctl's schema, made once per session (per worker): each test's
    database is a copy of it, instead of migrating its own (most of a second each)."""
    from kbctl.store.db import connect

    name = f"kbtemplate_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    connect(psycopg.conninfo.make_conninfo(pg_admin_url, dbname=name)).close()
    yield name
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


@pytest.fixture(scope="session")
def database_pool(pg_admin_url: str, migrated_template: str) -> Iterator[DatabasePool]:
    pool = DatabasePool(pg_admin_url, migrated_template)
    yield pool
    pool.close()


@pytest.fixture
def db_url(pg_admin_url: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A database for one test alone, with kbctl's schema as the first command would make
    it and no rows (the worker's last test's, emptied, or a fresh copy); a test marked
    ``empty_db`` gets one kbctl never wrote to (no extension, no tables)."""
    if request.node.get_closest_marker("empty_db") is None:
        pool: DatabasePool = request.getfixturevalue("database_pool")
        name = pool.take()
        yield psycopg.conninfo.make_conninfo(pg_admin_url, dbname=name)
        pool.give_back(name)
        return
    name = f"kbtest_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield psycopg.conninfo.make_conninfo(pg_admin_url, dbname=name)
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


@pytest.fixture
def store(db_url: str) -> Iterator[Any]:
    from kbctl.store.db import connect
    from kbctl.store.knowledge import KnowledgeStore

    conn = connect(db_url)
    try:
        yield KnowledgeStore(conn)
    finally:
        conn.close()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory with no kbctl.yaml and no KBCTL_* environment."""
    for var in list(os.environ):
        if var.startswith("KBCTL_") or var in ("GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
                                               "OPENAI_API_KEY", "GITHUB_ACTIONS"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


class Cli:
    """Runs the real Typer app against one database."""

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, db: bool = True) -> Any:
        from kbctl.cli import app

        argv = list(args)
        if db:
            argv += ["--db", self.db_url]
        return self.runner.invoke(app, argv, input=input, catch_exceptions=False)

    def json(self, *args: str, input: str | None = None, code: int = 0) -> Any:
        result = self(*args, "--json", input=input)
        assert result.exit_code == code, result.output
        return json.loads(result.stdout)


@pytest.fixture
def cli(db_url: str, workdir: Path) -> Cli:
    return Cli(db_url)


def rows(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, params).fetchall()
