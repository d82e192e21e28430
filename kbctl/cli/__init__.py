"""The kbctl command line: parse options, call one pipeline function, render its result.

No SQL, HTTP or business rules live here. Every command is registered below, in one
place; errors become exit codes in ``common.guard`` only, output goes through
``kbctl.render``. Importing this package changes nothing else.
"""

from __future__ import annotations

import signal
from typing import Annotated

import typer

from .. import __version__
from ..errors import TerminateSignal
from . import (
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
from .common import HELP_MARKUP

app = typer.Typer(
    name="kbctl",
    help="Docs-as-code knowledge bases on Postgres + pgvector: ingest, query with "
    "citations, gate retrieval quality in CI.",
    no_args_is_help=True,
    rich_markup_mode=HELP_MARKUP,
    pretty_exceptions_enable=False,
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
app.command("query")(query.query)
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
    """Console-script entry point. SIGTERM stops a command the way Ctrl-C does (a message,
    its own exit code, the server handle dropped) rather than killing it mid-step."""
    signal.signal(signal.SIGTERM, _terminate)
    app()


def _terminate(signum: int, frame: object) -> None:
    raise TerminateSignal()
