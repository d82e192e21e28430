"""`kbctl doctor`: show the embedded server's data directory and repair what a crash left."""

from __future__ import annotations

from typing import Annotated

import typer

from ..pipeline.status import doctor as diagnose
from ..render import Output
from .common import ConfigOpt, DataDirOpt, JsonOpt, exit_with, guard, settings_from


@guard
def doctor(
    data_dir: DataDirOpt = None, config: ConfigOpt = None,
    check: Annotated[bool, typer.Option(
        "--check", help="Only report; repair nothing (exit 1 when something is wrong).")
    ] = False,
    json_output: JsonOpt = False,
) -> None:
    """Show the embedded PostgreSQL's data directory (server, users, watchdog) and repair
    what a crash left there: a stale postmaster.pid, an orphan server without one,
    leftover server processes, handles of exited processes. Every command does these
    repairs by itself; doctor shows them and never starts a server.

    Example: `kbctl doctor --data-dir .kbctl --check --json | jq .remaining`
    """
    settings = settings_from(data_dir=data_dir, config=config)
    out = Output(json_output)
    report = diagnose(settings, fix=not check)
    out.show(report)
    exit_with(0 if report.ok else 1)
