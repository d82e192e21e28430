"""Whether a pid file's server lives, decided by its socket and its shared memory (never a
pid lookup): real Unix sockets and a real System V table file."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbctl.embedded import liveness


@pytest.fixture
def pgdata() -> Iterator[Path]:
    # a short path: a Unix socket's path has a small limit
    with tempfile.TemporaryDirectory(prefix="kbl-", dir="/tmp") as d:
        yield Path(d)


def write_pid_file(pgdata: Path, pid: int = 999999, socket_dir: str | None = None,
                   shmem: str = "  2313027     32772") -> liveness.PidFile:
    (pgdata / "postmaster.pid").write_text(
        f"{pid}\n{pgdata}\n1796613013\n5432\n{socket_dir or pgdata}\n\n{shmem}\nready   \n")
    found = liveness.read_pid_file(pgdata)
    assert found is not None
    return found


def test_the_pid_files_lines_are_read(pgdata: Path) -> None:
    found = write_pid_file(pgdata)
    assert (found.pid, found.port, found.shmem_key, found.shmem_id, found.status) == (
        999999, 5432, 2313027, 32772, "ready")
    assert found.datadir == str(pgdata) and "2026-" in found.started()
    (pgdata / "postmaster.pid").write_text("garbage\n")
    assert liveness.read_pid_file(pgdata) is None
    (pgdata / "postmaster.pid").write_text("-42\n")  # initdb's bootstrap backend
    assert liveness.read_pid_file(pgdata) == liveness.PidFile(pid=-42)


def test_a_listening_socket_is_a_live_holder_whatever_the_pid(pgdata: Path) -> None:
    found = write_pid_file(pgdata, pid=os.getpid() + 10**6)  # a pid nobody has
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(pgdata / ".s.PGSQL.5432"))
        server.listen(1)
        holder = liveness.holder(pgdata, found)
        assert holder is not None and holder.socket == pgdata / ".s.PGSQL.5432"
        assert liveness.uri(holder) == f"postgresql://postgres:@/postgres?host={pgdata}"
        assert f"pid {found.pid}" in holder.describe()
    # the socket file stays once its server is gone: nothing answers there
    assert (pgdata / ".s.PGSQL.5432").exists()
    assert liveness.holder(pgdata, found) is None


def test_a_socket_in_the_data_directory_is_found_under_this_processs_path(
        pgdata: Path) -> None:
    """A container mounts the checkout elsewhere: the pid file names the host's path."""
    (pgdata / "postmaster.pid").write_text(
        "12\n/host/kb/pg\n1796613013\n5432\n/host/kb/pg\n\n  0 0\nready\n")
    found = liveness.read_pid_file(pgdata)
    assert found is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(pgdata / ".s.PGSQL.5432"))
        server.listen(1)
        assert liveness.answering_socket(found, pgdata) == pgdata / ".s.PGSQL.5432"


def test_attached_shared_memory_is_a_live_holder_out_of_reach(
        pgdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = write_pid_file(pgdata, socket_dir=str(pgdata / "elsewhere"))
    table = pgdata / "shm"
    header = "       key      shmid perms size  cpid  lpid nattch   uid\n"
    monkeypatch.setattr(liveness, "SYSV_SHM_TABLE", table)
    table.write_text(header + "   2313027      32772   600   56  10  11      3     0\n")
    holder = liveness.holder(pgdata, found)
    assert holder is not None and holder.socket is None
    assert "shared memory still in use" in holder.describe()
    # processes of this namespace (leftovers a repair ends) explain the attachments
    assert liveness.holder(pgdata, found, local_users=True) is None
    # none attached, or another segment: gone
    table.write_text(header + "   2313027      32772   600   56  10  11      0     0\n")
    assert liveness.holder(pgdata, found) is None
    table.write_text(header + "   2313027      99999   600   56  10  11      4     0\n")
    assert liveness.holder(pgdata, found) is None


def test_without_a_pid_file_a_server_still_answering_is_found(pgdata: Path) -> None:
    assert liveness.holder(pgdata, None) is None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(pgdata / ".s.PGSQL.5432"))
        server.listen(1)
        holder = liveness.holder(pgdata, None)
        assert holder is not None and "without a postmaster.pid" in holder.describe()


def _starting_pid_file(pgdata: Path) -> liveness.PidFile:
    """The first lines a postmaster writes, before it names its shared memory."""
    (pgdata / "postmaster.pid").write_text(f"4242\n{pgdata}\n1796613013\n5432\n\n")
    found = liveness.read_pid_file(pgdata)
    assert found is not None and found.shmem_key is None and not found.status
    return found


def test_a_server_in_its_first_moments_is_waited_for_not_taken_for_gone(
        pgdata: Path) -> None:
    """Its pid file is there, its socket and shared memory not yet: a process in another
    PID namespace that called it gone removed its lock files and started a second server."""
    found = _starting_pid_file(pgdata)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        def come_up() -> None:
            server.bind(str(pgdata / ".s.PGSQL.5432"))
            server.listen(1)
            # as a postmaster adds its lines: written over in place, never truncated
            with open(pgdata / "postmaster.pid", "r+") as f:
                f.write(f"4242\n{pgdata}\n1796613013\n5432\n{pgdata}\n\n"
                        "  2313027     32772\nready   \n")

        timer = threading.Timer(0.3, come_up)
        timer.start()
        try:
            holder = liveness.holder(pgdata, found)
        finally:
            timer.join()
        assert holder is not None and holder.socket == pgdata / ".s.PGSQL.5432"
        assert holder.pid_file is not None and holder.pid_file.status == "ready"


def test_a_server_killed_in_its_first_moments_is_gone_once_the_grace_is_over(
        pgdata: Path) -> None:
    found = _starting_pid_file(pgdata)
    old = time.time() - liveness.STARTING_GRACE_S - 5
    os.utime(pgdata / "postmaster.pid", (old, old))
    assert liveness.settled_pid_file(pgdata, found) == found
    assert liveness.holder(pgdata, found) is None
