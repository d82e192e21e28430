"""The kbctl command line: parse options, call one pipeline function, render its result.

No SQL, HTTP or business rules live here. Every command is registered below, in one
place; errors become exit codes in ``common.guard`` only, output goes through
``kbctl.render``. Importing this package changes nothing else.
"""

from __future__ import annotations

import signal
import sys
from typing import Annotated

import typer

from .. import __version__
from ..errors import HangupSignal, Interrupted, KbctlError, TerminateSignal, UsageError
from ..render import Output
from . import (
    common,
    doctor,
    ingest,
    ingest_web,
    memory,
    query,
    reembed,
    resync,
    serve,
    tools,
)
from . import eval as eval_cli
from .common import HELP_MARKUP, QuestionCommand

app = typer.Typer(
    name="kbctl",
    help="Docs-as-code knowledge bases on Postgres + pgvector: ingest, query with "
    "citations, gate retrieval quality in CI.",
    no_args_is_help=True,
    rich_markup_mode=HELP_MARKUP,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command inherits it
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kbctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """kbctl: build, query and gate documentation knowledge bases."""


ingest.app.command("url")(ingest_web.ingest_url)
ingest.app.command("sitemap")(ingest_web.ingest_sitemap)
ingest.app.command("crawl")(ingest_web.ingest_crawl)
ingest.app.command("llms")(ingest_web.ingest_llms)
app.add_typer(ingest.app, name="ingest")
app.command("query", cls=QuestionCommand)(query.query)
app.add_typer(eval_cli.app, name="eval")
app.command("resync")(resync.resync)
app.command("status")(resync.status)
app.command("forget")(resync.forget)
app.command("reembed")(reembed.reembed)
app.add_typer(memory.app, name="memory")
app.add_typer(serve.app, name="serve")
app.add_typer(tools.app, name="tools")
app.command("doctor")(doctor.doctor)


def main() -> None:
    """Console-script entry point. SIGTERM and SIGHUP stop a command the way Ctrl-C does (a
    message, their own exit code, the server handle dropped) rather than killing it
    mid-step. With ``--json``, a mistake in the command line itself is a JSON document on
    stdout too."""
    common.STOP_AT_ONCE = True  # the process is kbctl's own: a signal ends it at once
    signal.signal(signal.SIGTERM, _terminate)
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:  # not nohup'd
        signal.signal(hangup, _hang_up)
    if "--json" not in sys.argv[1:]:
        app()
        return
    try:
        code = app(standalone_mode=False)
    except Exception as exc:
        if _is_click(exc, "UsageError") and callable(getattr(exc, "format_message", None)):
            command = getattr(getattr(exc, "ctx", None), "command_path", None) or "kbctl"
            error: KbctlError = UsageError(exc.format_message(),  # type: ignore[attr-defined]
                                           hint=f"see `{command} --help`")
        elif _is_click(exc, "Abort"):  # Ctrl-C or SIGTERM before a command began
            error = Interrupted("interrupted before the command began")
        else:
            raise
        Output(json_mode=True).error(error)
        sys.exit(error.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _is_click(exc: BaseException, name: str) -> bool:
    """Whether ``exc`` is click's ``name`` exception, by name: Typer may bring its own copy
    of click, so the class is not the one ``click`` names."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _terminate(signum: int, frame: object) -> None:
    raise TerminateSignal()


def _hang_up(signum: int, frame: object) -> None:
    raise HangupSignal()
