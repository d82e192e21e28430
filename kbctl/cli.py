"""The kbctl command line: parse options, call one pipeline function, render its result.

No SQL, HTTP or business rules live here. Errors are mapped to exit codes in one place
(``_guard``), output goes through ``kbctl.render``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from . import __version__
from .config import Settings, resolve_settings
from .errors import InputError, KbctlError
from .pipeline import api
from .render import Output, query_json, show
from .sources.base import SourceSpec

app = typer.Typer(
    name="kbctl",
    help="Docs-as-code knowledge bases on Postgres + pgvector: ingest, query with "
    "citations, gate retrieval quality in CI.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)
ingest_app = typer.Typer(
    help="Ingest documentation into the knowledge base.\n\n"
    "Without a subcommand, ingests the `sources:` listed in kbctl.yaml.",
    invoke_without_command=True,
)
app.add_typer(ingest_app, name="ingest")

F = TypeVar("F", bound=Callable[..., Any])

# --- options shared by every command -------------------------------------------------------

DbOpt = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL URL (default: embedded server in --data-dir; env "
    "KBCTL_DATABASE_URL).", show_default=False)]
DataDirOpt = Annotated[Path | None, typer.Option(
    "--data-dir", help="Embedded database directory [default: .kbctl].", show_default=False)]
NamespaceOpt = Annotated[str | None, typer.Option(
    "--namespace", "-n", help="Namespace to read and write [default: default].",
    show_default=False)]
ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", help="Config file [default: ./kbctl.yaml when present].", show_default=False)]
EmbedderOpt = Annotated[str | None, typer.Option(
    "--embedder", help="Embedder spec: gemini, openai:MODEL, local:MODEL, none. A KB keeps "
    "the one it was built with.", show_default=False)]
EmbedderUrlOpt = Annotated[str | None, typer.Option(
    "--embedder-base-url", help="Base URL of an OpenAI-compatible or Gemini endpoint.",
    show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
PrivateOpt = Annotated[bool | None, typer.Option(
    "--allow-private-network/--no-allow-private-network",
    help="Allow fetching from loopback and private addresses (local sites, tests).",
    show_default=False)]


def _settings(**flags: Any) -> Settings:
    config = flags.pop("config", None)
    return resolve_settings(flags, config=config)


def _guard(fn: F) -> F:
    """Map KbctlError to its exit code and message; the only place that does."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = Output(json_mode=bool(kwargs.get("json_output")))
        try:
            return fn(*args, **kwargs)
        except KbctlError as exc:
            out.error(exc)
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


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


# --- ingest --------------------------------------------------------------------------------


def _run_ingest(out: Output, settings: Settings, specs: list[SourceSpec],
                json_output: bool) -> None:
    with out.progress(f"ingest → {settings.namespace}") as progress:
        report = api.ingest_sources(settings, specs, progress=progress, announce=out.note)
    if json_output:
        out.json(report)
    else:
        show(report, out)
    if not report.ok:
        raise typer.Exit(1)


@ingest_app.callback()
@_guard
def ingest_from_config(
    ctx: typer.Context,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Ingest documentation. Without a subcommand: the sources listed in kbctl.yaml.

    Example: `kbctl ingest --config kbctl.yaml`
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = {k: v for k, v in dict(
            db_url=db, data_dir=data_dir, namespace=namespace, config=config,
            embedder=embedder, embedder_base_url=embedder_base_url,
            allow_private_network=allow_private_network).items() if v is not None}
        return
    settings = _settings(db_url=db, data_dir=data_dir, namespace=namespace, config=config,
                         embedder=embedder, embedder_base_url=embedder_base_url,
                         allow_private_network=allow_private_network)
    if not settings.sources:
        raise InputError("nothing to ingest: kbctl.yaml lists no sources",
                         hint="use a subcommand such as `kbctl ingest files docs/`, or add "
                              "`sources:` to kbctl.yaml")
    _run_ingest(Output(json_output), settings, list(settings.sources), json_output)


def _merged(ctx: typer.Context, **flags: Any) -> Settings:
    """Options given before the subcommand (``kbctl ingest --db … files``) count too."""
    parent = dict(ctx.obj or {})
    parent.update({k: v for k, v in flags.items() if v is not None})
    return _settings(**parent)


@ingest_app.command("files")
@_guard
def ingest_files(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="A folder, or a glob such as 'docs/**/*.md'.")],
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="Public URL of the folder, so citations match the live site.",
        show_default=False)] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="Glob of relative paths to skip (repeatable).",
        show_default=False)] = None,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, json_output: JsonOpt = False,
) -> None:
    """Ingest a folder of .md/.mdx/.markdown/.html/.txt files.

    Example: `kbctl ingest files docs/ --base-url https://docs.example.com/`
    """
    settings = _merged(ctx, db_url=db, data_dir=data_dir, namespace=namespace, config=config,
                       embedder=embedder, embedder_base_url=embedder_base_url)
    spec = SourceSpec("files", target, {"base_url": base_url, "exclude": exclude or None})
    spec = SourceSpec(spec.kind, spec.target, {k: v for k, v in spec.options.items() if v})
    _run_ingest(Output(json_output), settings, [spec], json_output)


@ingest_app.command("text")
@_guard
def ingest_text(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Argument(
        help="The text; omit it or pass '-' to read stdin.", show_default=False)] = None,
    ref: Annotated[str, typer.Option("--ref", help="Stable reference (a URL or a name).")] = "",
    title: Annotated[str | None, typer.Option("--title", help="Document title.",
                                              show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", help="markdown or text.")] = "markdown",
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, json_output: JsonOpt = False,
) -> None:
    """Ingest one text from an argument or stdin.

    Example: `echo "# Release notes" | kbctl ingest text --ref notes/2026-11 --title Notes`
    """
    if not ref:
        raise InputError("--ref is required: a stable name or URL for this text")
    if fmt not in ("markdown", "text"):
        raise InputError(f"--format must be markdown or text, got '{fmt}'")
    body = sys.stdin.read() if text in (None, "-") else text
    settings = _merged(ctx, db_url=db, data_dir=data_dir, namespace=namespace, config=config,
                       embedder=embedder, embedder_base_url=embedder_base_url)
    spec = SourceSpec("text", ref, {"title": title or ref, "format": fmt, "body": body})
    _run_ingest(Output(json_output), settings, [spec], json_output)


# --- query ---------------------------------------------------------------------------------


def _parse_filters(items: list[str] | None) -> dict[str, str]:
    filters = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--filter expects key=value, got '{item}'")
        filters[key] = value
    return filters


@app.command()
@_guard
def query(
    question: Annotated[str, typer.Argument(help="The question to retrieve passages for.")],
    k: Annotated[int, typer.Option("-k", "--top-k", help="Results to return (1..50).")] = 5,
    min_score: Annotated[float | None, typer.Option(
        "--min-score", help="Drop results scoring below this (0..1).",
        show_default=False)] = None,
    vector_weight: Annotated[float | None, typer.Option(
        "--vector-weight", help="Weight of cosine vs. text score in hybrid mode [0.7].",
        show_default=False)] = None,
    fusion: Annotated[str, typer.Option("--fusion", help="weighted or rrf.")] = "weighted",
    filter_: Annotated[list[str] | None, typer.Option(
        "--filter", help="Metadata filter key=value (repeatable).", show_default=False)] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="table, json, context (for an LLM prompt) or sources.")] = "table",
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, json_output: JsonOpt = False,
) -> None:
    """Retrieve the passages that best answer a question, with citations.

    Example: `kbctl query "how do I install" --json | jq '.results[0].citation'`
    """
    if fmt not in ("table", "json", "context", "sources"):
        raise InputError(f"--format must be table, json, context or sources, got '{fmt}'")
    settings = _settings(db_url=db, data_dir=data_dir, namespace=namespace, config=config,
                         embedder=embedder, embedder_base_url=embedder_base_url)
    result = api.query(settings, question, k=k, min_score=min_score,
                       filters=_parse_filters(filter_), vector_weight=vector_weight,
                       fusion=fusion)
    out = Output(json_output)
    if json_output or fmt == "json":
        out.json(query_json(result))
    else:
        show(result, out, format=fmt)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
