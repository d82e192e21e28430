"""What a watchdog leaves behind when it ends: only its own files."""

from __future__ import annotations

import os
from pathlib import Path

from kbctl.embedded import server, watchdog


def test_a_watchdog_that_ends_leaves_another_watchdogs_pid_file(tmp_path: Path) -> None:
    """The server it watched died; a process in another PID namespace started a new one
    with a watchdog of its own. Removing that one's pid file made its users think nobody
    watched, and the last of them stopped the new server as it left."""
    (tmp_path / server.WATCHDOG_FILE).write_text("8")
    server.keep_up_for(tmp_path, 60)
    watchdog._retire(tmp_path)
    assert (tmp_path / server.WATCHDOG_FILE).read_text() == "8"
    assert server.kept_until(tmp_path) > 0


def test_a_watchdog_that_ends_removes_its_own_files(tmp_path: Path) -> None:
    (tmp_path / server.WATCHDOG_FILE).write_text(str(os.getpid()))
    server.keep_up_for(tmp_path, 60)
    watchdog._retire(tmp_path)
    assert not (tmp_path / server.WATCHDOG_FILE).exists()
    assert server.kept_until(tmp_path) == 0.0
