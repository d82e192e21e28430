"""The watchdog of one embedded server: stops it once it has had no live user for the linger.

Started detached by the process that starts (or first joins) a server, so it outlives a
``kbctl`` killed with SIGKILL, whose handle atexit never removed. It exits when the server
is gone, when it stopped it, or when another watchdog took over the data directory; a
server whose directory was deleted under it is stopped on the way out.

    python -m kbctl.embedded.watchdog DATA_DIR LINGER_SECONDS
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import psutil

from . import server

POLL_S = 1.0


def watch(data_dir: Path, linger: float, *, poll: float = POLL_S) -> str:
    """Watch until the server stops or is stopped; returns why it ended. A poll that fails
    (the lock held past its wait, a file that cannot be read) is retried at the next one:
    a watchdog that died would leave the server up for good."""
    idle_since: float | None = None
    watched: psutil.Process | None = None  # the postmaster last seen serving the directory
    while True:
        time.sleep(poll)
        try:
            with server.server_lock(data_dir, create=False):  # a directory gone stays gone
                # another watchdog took over; a pid file merely gone (the directory wiped)
                # is no successor, and what it leaves running is still this one's to end
                if server.watchdog_pid(data_dir) not in (os.getpid(), None):
                    return "replaced"
                state = _light_state(data_dir)
                if state.postmaster is None:
                    if not state.pgdata.is_dir():
                        _end_unreachable(watched)
                    _retire(data_dir)
                    return "server gone"
                if watched is None or watched.pid != state.postmaster:
                    watched = server.serving_process(state.postmaster, state.pgdata)
                if state.in_use:
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                if (idle_since is not None and time.monotonic() - idle_since >= linger
                        and time.time() >= server.kept_until(data_dir)):
                    # tidying the list must never keep the server up: on a full disk it
                    # cannot be written, and the next start drops dead handles anyway
                    with contextlib.suppress(OSError):
                        server.change_handles(state.pgdata, drop=state.dead_handles)
                    server.stop_server(state)
                    _retire(data_dir)
                    return "stopped"
        except Exception:  # noqa: BLE001 - whatever it was, the next poll looks again
            if not (data_dir / server.PG_DIR).is_dir():  # deleted or replaced
                _end_unreachable(watched)
                return "data directory gone"
            continue


def _end_unreachable(watched: psutil.Process | None) -> None:
    """The postmaster this watchdog last saw serving the directory, still running though
    the directory was deleted under it: no command can reach it or find it (a repair
    knows a server by its working directory, and a new command makes a fresh one), so it
    would run for good. (A server that only lost its pid file is the next command's to
    repair, as ever.)"""
    if watched is not None and watched.is_running():
        with contextlib.suppress(psutil.Error):
            server.end_process(watched)


def _light_state(data_dir: Path) -> server.ServerState:
    """The postmaster named by the pid file and the handle split; no process scan, so a
    watch over days costs next to nothing."""
    pgdata = data_dir / server.PG_DIR
    state = server.ServerState(data_dir=data_dir, pgdata=pgdata)
    pid = state.pid_file_pid = server.pid_file_pid(pgdata)
    if pid is not None and server.serving_process(pid, pgdata) is not None:
        state.postmaster = pid
    server.read_split(state, prune_leases=True)
    return state


def _retire(data_dir: Path) -> None:
    """Remove this watchdog's files, unless another watchdog has written its own since: one
    of another PID namespace (a container on the same checkout) serving a new server, whose
    users would find no watchdog and stop that server as they leave."""
    try:
        named = (data_dir / server.WATCHDOG_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        named = ""
    if named not in ("", str(os.getpid())):
        return
    for name in (server.WATCHDOG_FILE, server.KEEP_UNTIL_FILE):
        with contextlib.suppress(OSError):
            (data_dir / name).unlink()


def main(argv: list[str]) -> int:
    data_dir = Path(argv[0]).resolve()
    linger = float(argv[1]) if len(argv) > 1 else server.linger_seconds()
    watch(data_dir, linger)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
