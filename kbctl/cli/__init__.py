"""The kbctl command line: parse options, call one pipeline function, render its result.

No SQL, HTTP or business rules live here. Every command is registered below, in one
place: ``COMMANDS`` names the module of each command, and that module is imported only
when its command runs (or its own ``--help`` is asked for), so a command loads what it
uses and no more; ``kbctl --help`` lists them from the help lines written here. This is
the one place where imports wait until they are needed. Errors become exit codes in
``common.guard`` only, output goes through ``kbctl.render``. Importing this package
changes nothing else, and imports neither Typer nor the commands (``app`` is made when
first asked for).
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import (
    HangupSignal,
    HungUp,
    Interrupted,
    KbctlError,
    Terminated,
    TerminateSignal,
    UsageError,
)

if TYPE_CHECKING:
    import typer

    from ..render.output import Output


# Set by the console script: a signal ends the process at once (``common.stop_now``). In a
# process that embeds kbctl (tests, a library caller) it ends the command only.
STOP_AT_ONCE = False

# Help is click's plain text: it wraps to any width (Typer's panels cut option names at 80
# columns, a CI log's width), reads the same in a pipe, and shows no value for a flag.
HELP_MARKUP = None


class Entry:
    """A command (or a group of them) in the registry.

    ``target`` is ``"module:attribute"``: a command function, or for a group its
    ``typer.Typer``. ``help`` is the line ``kbctl --help`` shows for it without importing
    it: the first paragraph of the command's own help (a test holds the two equal).
    ``question``: its argument is free text (``common.QuestionCommand``). ``commands``: a
    group's further commands, kept in other modules (``{name: "module:function"}``).
    """

    __slots__ = ("commands", "help", "question", "target")

    def __init__(self, target: str, help: str, *, question: bool = False,
                 commands: dict[str, str] | None = None) -> None:
        self.target, self.help, self.question = target, help, question
        self.commands = commands or {}


# In the order `kbctl --help` lists them.
COMMANDS: dict[str, Entry] = {
    "query": Entry("kbctl.cli.query:query", "Retrieve the passages that best answer a "
                   "question, with citations.", question=True),
    "resync": Entry("kbctl.cli.resync:resync", "Re-run the recorded sources of a namespace "
                    "and apply only the differences."),
    "status": Entry("kbctl.cli.status:status", "Sources, chunks, embedder and last sync of "
                    "each namespace."),
    "forget": Entry("kbctl.cli.resync:forget", "Forget a recorded source: resync stops "
                    "running it, and its pages leave the knowledge base."),
    "reembed": Entry("kbctl.cli.reembed:reembed", "Re-embed the whole KB in place from "
                     "stored chunk text, then switch to the new embedder."),
    "doctor": Entry("kbctl.cli.doctor:doctor", "Show the embedded PostgreSQL's data "
                    "directory (server, users, watchdog) and repair what a crash left "
                    "there: a stale postmaster.pid, an orphan server without one, leftover "
                    "server processes, handles of exited processes."),
    "ingest": Entry("kbctl.cli.ingest:app", "Ingest documentation into the knowledge base."),
    "eval": Entry("kbctl.cli.eval:app", "Gate retrieval quality: `kbctl eval SUITE…` runs "
                  "eval suites (JSON or YAML) against the knowledge base and exits 1 when a "
                  "case fails or regresses; `kbctl eval init` scaffolds a suite from the "
                  "knowledge base."),
    "memory": Entry("kbctl.cli.memory:app", "Two-tier agent memory: shared playbooks and "
                    "private per-user notes."),
    "serve": Entry("kbctl.cli.serve:app", "Serve kbctl to agent runtimes."),
    "tools": Entry("kbctl.cli.tools:app", "Tool definitions for function calling (openai, "
                   "anthropic, json-schema), and `tools call` to run one tool."),
}


def resolve(target: str) -> Any:
    """Import the module a registry ``target`` names and return its attribute."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def __getattr__(name: str) -> Any:
    """``kbctl.cli.app``, the root Typer app, made when first asked for."""
    if name == "app":
        from .root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point. ``kbctl --version`` answers before anything else is
    imported. SIGTERM and SIGHUP stop a command the way Ctrl-C does (a message, their own
    exit code, the server handle dropped) rather than killing it mid-step. With ``--json``,
    a mistake in the command line itself is a JSON document on stdout too."""
    if sys.argv[1:] == ["--version"]:
        print(f"kbctl {__version__}", flush=True)
        return
    from .root import app

    json_mode = "--json" in sys.argv[1:]
    if json_mode:  # imported while a signal still means "stopped while starting"
        from ..render.output import Output
    global STOP_AT_ONCE
    STOP_AT_ONCE = True  # the process is kbctl's own: a signal ends it at once
    signal.signal(signal.SIGTERM, _terminate)
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:  # not nohup'd
        signal.signal(hangup, _hang_up)
    if not json_mode:
        try:
            app()
        except KeyboardInterrupt:  # before the command's guard (Typer building it)
            error = _stopped_before_the_command()
            print(f"error: {error.message}", file=sys.stderr, flush=True)
            sys.exit(error.exit_code)
        return
    _main_json(app, Output)


def _main_json(app: typer.Typer, output: type[Output]) -> None:
    """Run ``app`` so that a usage error is one JSON document on stdout too."""
    try:
        code = app(standalone_mode=False)
    except Exception as exc:
        if _is_click(exc, "UsageError") and callable(getattr(exc, "format_message", None)):
            command = getattr(getattr(exc, "ctx", None), "command_path", None) or "kbctl"
            error: KbctlError = UsageError(exc.format_message(),  # type: ignore[attr-defined]
                                           hint=f"see `{command} --help`")
        elif _is_click(exc, "Abort"):  # Ctrl-C or SIGTERM before a command began
            error = _stopped_before_the_command()
        else:
            raise
        output(json_mode=True).error(error)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:  # before the command's guard (Typer building it)
        error = _stopped_before_the_command()
        output(json_mode=True).error(error)
        sys.exit(error.exit_code)
    if _RECEIVED and code == Interrupted.exit_code:  # Typer's word for a stop before the
        error = _stopped_before_the_command()       # command's own guard: exit 130, silent
        output(json_mode=True).error(error)
        sys.exit(error.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _stopped_before_the_command() -> KbctlError:
    """The error of a signal that came before the command began, with its own code."""
    kind = {signal.SIGTERM: Terminated,
            getattr(signal, "SIGHUP", None): HungUp}.get(_RECEIVED[-1] if _RECEIVED
                                                         else None, Interrupted)
    return kind("stopped before the command began: nothing was done",
                hint="run the command again")


def _is_click(exc: BaseException, name: str) -> bool:
    """Whether ``exc`` is click's ``name`` exception, by name: Typer may bring its own copy
    of click, so the class is not the one ``click`` names."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


# the signals that stopped this process, for the code a stop before the command says
_RECEIVED: list[int] = []


def _terminate(signum: int, frame: object) -> None:
    _RECEIVED.append(signum)
    raise TerminateSignal()


def _hang_up(signum: int, frame: object) -> None:
    _RECEIVED.append(signum)
    raise HangupSignal()
