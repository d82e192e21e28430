"""Whether the server a ``postmaster.pid`` names is alive, decided the way PostgreSQL does.

A process id means nothing outside its own PID namespace: a ``kbctl`` in a devcontainer
(or any other container on the same checkout) cannot see the host's postmaster, and a pid
it does see may be a stranger's. So liveness is read from what the pid file names and what
every process on the machine can test alike:

- the server's socket (``SOCKET_DIR/.s.PGSQL.PORT``, or its TCP address): something that
  accepts a connection there is a live server, even one frozen or still recovering
  (the kernel accepts into the listen queue for it);
- its System V shared memory segment (the key and id on the pid file's seventh line):
  attached processes mean the server, or what is left of it, still runs. This is the
  check PostgreSQL itself makes before it starts over a pid file whose pid looks gone.

A pid file whose server passes neither test is stale, but for one moment: a postmaster
writes its pid file a few milliseconds before it names its shared memory (and longer on a
loaded machine). A pid file still without that line and only just written is a server
starting, waited for, not a leftover to remove.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

PID_FILE = "postmaster.pid"
# How long a connection attempt on the server's socket may take; a listening socket
# accepts at once, even for a server that is stopped (SIGSTOP) or busy.
PROBE_TIMEOUT_S = 2.0
# PostgreSQL's pid file is a handful of short lines; more is not one.
MAX_PID_FILE_BYTES = 64 * 1024
SYSV_SHM_TABLE = Path("/proc/sysvipc/shm")
# How long a pid file that names no shared memory yet counts as a server starting: far more
# than a start takes on a loaded machine; a postmaster killed that early leaves one that
# is stale after this.
STARTING_GRACE_S = 10.0
STARTING_POLL_S = 0.05


@dataclass(frozen=True)
class PidFile:
    """The lines of ``postmaster.pid`` (PostgreSQL's ``LOCK_FILE_LINE_*``)."""

    pid: int
    datadir: str = ""
    start_time: int | None = None
    port: int | None = None
    socket_dir: str = ""
    listen: str = ""
    shmem_key: int | None = None
    shmem_id: int | None = None
    status: str = ""

    def started(self) -> str:
        if self.start_time is None:
            return "at an unknown time"
        with contextlib.suppress(OverflowError, OSError, ValueError):
            when = datetime.fromtimestamp(self.start_time, tz=timezone.utc)
            return f"at {when:%Y-%m-%d %H:%M:%S} UTC"
        return "at an unknown time"


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def read_pid_file(pgdata: Path) -> PidFile | None:
    """The pid file's fields, or None when there is none (or its first line is no pid)."""
    try:
        with open(pgdata / PID_FILE, "rb") as f:
            raw = f.read(MAX_PID_FILE_BYTES)
    except OSError:
        return None
    lines = raw.decode("utf-8", errors="replace").splitlines() + [""] * 8
    pid = _int(lines[0])
    if pid is None:
        return None
    shmem = lines[6].split()
    return PidFile(
        pid=pid, datadir=lines[1].strip(), start_time=_int(lines[2]), port=_int(lines[3]),
        socket_dir=lines[4].strip(), listen=lines[5].strip(),
        shmem_key=_int(shmem[0]) if shmem else None,
        shmem_id=_int(shmem[1]) if len(shmem) > 1 else None, status=lines[7].strip())


def socket_paths(pid_file: PidFile, pgdata: Path) -> list[Path]:
    """Where the server's Unix socket is, as this process sees the file system: a socket
    kept in the data directory is found there whatever path the server knew it by (a
    container mounts a checkout elsewhere than its host)."""
    port = pid_file.port or 5432
    name = f".s.PGSQL.{port}"
    found = []
    if not pid_file.socket_dir or pid_file.socket_dir == pid_file.datadir:
        found.append(pgdata / name)
    if pid_file.socket_dir:
        first = pid_file.socket_dir.split(",")[0].strip()
        if first and Path(first) / name not in found:
            found.append(Path(first) / name)
    return found


def _unix_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(PROBE_TIMEOUT_S)
        try:
            sock.connect(str(path))
        except TimeoutError:
            return True  # its listen queue is full: something listens
        except OSError as exc:
            return exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK)
    return True


def _tcp_host(listen: str) -> str:
    """The address to reach a server listening on ``listen`` (its first entry) from here."""
    host = listen.split(",")[0].strip()
    return "127.0.0.1" if host in ("", "*", "0.0.0.0", "::") else host


def _tcp_answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:  # a timeout included: TCP has no listen queue to fill
        return False


def answering_socket(pid_file: PidFile | None, pgdata: Path) -> Path | str | None:
    """Where a server of ``pgdata`` accepts connections (its socket, or ``host:port``),
    or None. With no pid file, the data directory's own socket is tried: a server whose
    pid file was deleted still listens there."""
    candidates = (socket_paths(pid_file, pgdata) if pid_file is not None
                  else [pgdata / ".s.PGSQL.5432"])
    for path in candidates:
        if path.exists() and _unix_answers(path):
            return path
    if (pid_file is not None and pid_file.listen and pid_file.port
            and _tcp_answers(_tcp_host(pid_file.listen), pid_file.port)):
        return f"{_tcp_host(pid_file.listen)}:{pid_file.port}"
    return None


def shmem_in_use(pid_file: PidFile) -> bool:
    """Whether the shared memory segment the pid file names still has processes attached
    (Linux's table of System V segments; False where it cannot be read)."""
    if not pid_file.shmem_key or pid_file.shmem_id is None:
        return False
    try:
        rows = SYSV_SHM_TABLE.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return False
    for row in rows[1:]:
        fields = row.split()
        if (len(fields) > 6 and _int(fields[0]) == pid_file.shmem_key
                and _int(fields[1]) == pid_file.shmem_id):
            return (_int(fields[6]) or 0) > 0
    return False


@dataclass(frozen=True)
class Holder:
    """A live server of the data directory, found by its socket or its shared memory."""

    pid_file: PidFile | None
    socket: Path | str | None  # where it answers; None: alive, but not reachable from here

    def describe(self) -> str:
        if self.pid_file is None:
            return f"a server answering on {self.socket} without a {PID_FILE}"
        where = (f"answering on {self.socket}" if self.socket is not None
                 else "its shared memory still in use")
        return (f"the PostgreSQL server with pid {self.pid_file.pid} in its own PID "
                f"namespace or host, started {self.pid_file.started()}, {where}")


def _starting(pgdata: Path, pid_file: PidFile | None) -> bool:
    """A postmaster's pid file from before it made its shared memory, written just now."""
    if pid_file is None or pid_file.pid <= 0 or pid_file.shmem_key or pid_file.status:
        return False
    try:
        age = time.time() - (pgdata / PID_FILE).stat().st_mtime
    except OSError:
        return False
    return -1.0 < age < STARTING_GRACE_S


def settled_pid_file(pgdata: Path, pid_file: PidFile | None) -> PidFile | None:
    """The pid file once the server it names is past its first moments (or, when it never
    gets there, once the grace is over): what a liveness test can be asked about."""
    deadline = time.monotonic() + STARTING_GRACE_S
    while _starting(pgdata, pid_file) and time.monotonic() < deadline:
        time.sleep(STARTING_POLL_S)
        pid_file = read_pid_file(pgdata)
    return pid_file


def holder(pgdata: Path, pid_file: PidFile | None, *, local_users: bool = False
           ) -> Holder | None:
    """The live server the pid file names (or, without one, a server still answering on the
    data directory's socket), or None when none is alive. ``local_users``: processes of
    this namespace still attached to the server's memory (leftovers of a dead postmaster,
    which a repair ends), so the shared-memory test says nothing about another holder."""
    pid_file = settled_pid_file(pgdata, pid_file)
    found = answering_socket(pid_file, pgdata)
    if found is not None:
        return Holder(pid_file, found)
    if pid_file is not None and pid_file.pid > 0 and not local_users and shmem_in_use(
            pid_file):
        return Holder(pid_file, None)
    return None


def uri(found: Holder) -> str:
    """The connection URL of a live holder, as pgserver builds it for its own server."""
    where = found.socket
    if isinstance(where, Path):
        return f"postgresql://postgres:@/postgres?host={where.parent}"
    host, _, port = str(where).rpartition(":")
    return f"postgresql://postgres:@{host}:{port}/postgres"
