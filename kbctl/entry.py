"""The ``kbctl`` console script: the command line, stoppable from its first instant.

Importing the command line (Typer, rich, psycopg…) takes about half a second, and until
``kbctl.cli.main`` sets its handlers a SIGTERM or SIGHUP killed the process without a
word: exit 143 with empty output, under ``--json`` too. Here those signals are handled
before that import; nothing has been done yet, so the process just says so and ends. The
garbage collector is held off during that import too (``cli.registry.COLLECT_AFTER_LOAD``).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys

from .errors import HungUp, Interrupted, Terminated


def main() -> None:
    gc.disable()  # while the command line is imported: ``cli.registry.COLLECT_AFTER_LOAD``
    signal.signal(signal.SIGTERM, _stopped_while_starting)
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:  # not nohup'd
        signal.signal(hangup, _stopped_while_starting)
    from .cli import main as cli_main  # sets the handlers a running command needs
    from .cli import registry

    registry.COLLECT_AFTER_LOAD = True
    cli_main()


def _stopped_while_starting(signum: int, frame: object) -> None:
    kind: type[Interrupted] = HungUp if signum == getattr(signal, "SIGHUP", None) \
        else Terminated
    error = kind(f"{signal.Signals(signum).name} while starting: nothing was done",
                 hint="run the command again")
    try:
        if "--json" in sys.argv[1:]:
            print(json.dumps({"error": error.to_dict(), "exitCode": error.exit_code}),
                  flush=True)
        if sys.stderr is not None:
            print(f"error: {error.message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    os._exit(error.exit_code)
