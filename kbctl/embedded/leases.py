"""The users of a server that runs in another PID namespace (or is otherwise out of sight).

The handle list records pids, which only processes of the server's own namespace can
check. A process that joins a server it cannot see as a process instead holds a lease: a
file under ``DATA_DIR/users/`` with an exclusive ``flock`` held for as long as the process
lives. The kernel drops the lock when the process ends, however it ends, and any process
on the machine, in whatever namespace, can test it; so the watchdog counts such users
without knowing their pids.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path

USERS_DIR = "users"
# A lease directory holding more than this many entries is not read further: its live
# leases are counted up to here, which is enough to keep the server up.
MAX_LEASES = 10_000

_held: dict[Path, tuple[Path, int]] = {}


def _namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def take(data_dir: Path) -> None:
    """Hold a lease on the server of ``data_dir`` for the rest of this process (under
    ``server_lock``); a second call keeps the first lease."""
    if data_dir in _held:
        return
    folder = data_dir / USERS_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"{socket.gethostname()[:64]}-{_namespace()}-{os.getpid()}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    _held[data_dir] = (path, fd)


def release(data_dir: Path) -> None:
    """Give up this process's lease on ``data_dir``'s server, if it holds one."""
    held = _held.pop(data_dir, None)
    if held is None:
        return
    path, fd = held
    with contextlib.suppress(OSError):
        path.unlink()
    with contextlib.suppress(OSError):
        os.close(fd)


def holds(data_dir: Path) -> bool:
    return data_dir in _held


def live(data_dir: Path, *, prune: bool = False) -> int:
    """How many processes hold a lease on ``data_dir``'s server; with ``prune`` (under
    ``server_lock``), the leases of processes that are gone are removed."""
    folder = data_dir / USERS_DIR
    try:
        entries = list(zip(range(MAX_LEASES), os.scandir(folder), strict=False))
    except OSError:
        return 0
    count = 0
    for _, entry in entries:
        path = Path(entry.path)
        if data_dir in _held and _held[data_dir][0] == path:
            count += 1
            continue
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            count += 1
            continue
        except OSError:
            continue
        finally:
            if prune:
                with contextlib.suppress(OSError):
                    _drop_if_unlocked(path, fd)
            os.close(fd)
    return count


def _drop_if_unlocked(path: Path, fd: int) -> None:
    """Remove a lease whose lock this process took (its holder is gone)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    path.unlink()
