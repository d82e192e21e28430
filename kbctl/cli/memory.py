"""`kbctl memory`: write, search and read an agent's two-tier memory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config import Settings
from ..errors import InputError
from ..memory import api
from ..memory.model import DEFAULT_LIST_LIMIT, MAX_FILE_BYTES, ListPage
from ..render import Output, check_format
from ..render.memory import SEARCH, citations_enabled
from .common import (
    BackendOpt,
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderOpt,
    EmbedderUrlOpt,
    JsonOpt,
    PrivateOpt,
    QuestionCommand,
    exit_with,
    guard,
    read_stdin,
    settings_from,
)
from .registry import HELP_MARKUP

app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="Two-tier agent memory: shared playbooks and private per-user notes."
    "\n\nExample: `kbctl memory search \"billing\" --agent bot --user alice`",
    no_args_is_help=True,
)

AgentOpt = Annotated[str | None, typer.Option(
    "--agent", help="Agent id (env KBCTL_AGENT).", show_default=False)]
UserOpt = Annotated[str | None, typer.Option(
    "--user", help="User id for the private tier (env KBCTL_USER).", show_default=False)]
PathArg = Annotated[str, typer.Argument(help="memory/agent/… (shared) or memory/user/… "
                                             "(private to --user).")]


def _settings(db: str | None, data_dir: str | None, config: str | None, agent: str | None,
              user: str | None, embedder: str | None = None,
              embedder_base_url: str | None = None, backend: str | None = None,
              allow_private_network: bool | None = None) -> Settings:
    return settings_from(db_url=db, data_dir=data_dir, config=config, agent=agent, user=user,
                         embedder=embedder, embedder_base_url=embedder_base_url,
                         memory={"backend": backend},
                         allow_private_network=allow_private_network)


def _emit(result: object, json_output: bool, fmt: str | None = None,
          **options: object) -> None:
    Output(json_output).show(result, fmt, **options)


@app.command("append")
@guard
def append(
    path: PathArg,
    text: Annotated[str | None, typer.Argument(
        help="Text to append; '-' or nothing reads stdin.", show_default=False)] = None,
    agent: AgentOpt = None, user: UserOpt = None, backend: BackendOpt = None,
    db: DbOpt = None,
    data_dir: DataDirOpt = None, config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Append text to a memory file (creating it) and re-index that file.

    Example: `kbctl memory append memory/agent/playbook.md "Escalate billing." --agent bot`
    """
    settings = _settings(db, data_dir, config, agent, user, embedder, embedder_base_url,
                         backend=backend, allow_private_network=allow_private_network)
    body = read_stdin("the text", MAX_FILE_BYTES) if text in (None, "-") else text
    out = Output(json_output)
    _emit(api.append(settings, path, body, announce=out.note), json_output)


@app.command("search", cls=QuestionCommand)
@guard
def search(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    max_results: Annotated[int | None, typer.Option(
        "--max-results", "-k", "--top-k",
        help="Results (1..50; default 6, or memory.max_results).",
        show_default=False)] = None,
    min_score: Annotated[float | None, typer.Option(
        "--min-score", help="Drop results scoring below this (0..1).",
        show_default=False)] = None,
    mmr: Annotated[bool | None, typer.Option(
        "--mmr/--no-mmr", help="Re-rank for diversity (MMR).", show_default=False)] = None,
    mmr_lambda: Annotated[float | None, typer.Option(
        "--mmr-lambda", help="MMR relevance weight (1 = relevance only; default 0.7).",
        show_default=False)] = None,
    decay: Annotated[bool | None, typer.Option(
        "--decay/--no-decay", help="Decay dated notes (…/YYYY-MM-DD.md) by age.",
        show_default=False)] = None,
    half_life_days: Annotated[float | None, typer.Option(
        "--half-life-days", help="Age at which a dated note's score halves (default 30).",
        show_default=False)] = None,
    citations: Annotated[str | None, typer.Option(
        "--citations", help="on, off or auto (on for tables and JSON; the default).",
        show_default=False)] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="table, json or context (a block for an LLM prompt).")] = "table",
    max_chars: Annotated[int | None, typer.Option(
        "--max-chars", help="Cap the context block at this many characters "
                            "(memory.max_injected_chars).", show_default=False)] = None,
    track: Annotated[bool | None, typer.Option(
        "--track/--no-track", help="Record this search and its hits for `memory stats`.",
        show_default=False)] = None,
    agent: AgentOpt = None, user: UserOpt = None, backend: BackendOpt = None,
    db: DbOpt = None,
    data_dir: DataDirOpt = None, config: ConfigOpt = None, json_output: JsonOpt = False,
) -> None:
    """Search the agent's shared memory and the user's private memory.

    Defaults come from the `memory:` section of kbctl.yaml; flags override them.

    Example: `kbctl memory search "deploy steps" --agent support --user u42 --json`
    """
    check_format(SEARCH, fmt)
    if max_chars is not None and fmt != "context":
        raise InputError("--max-chars applies to --format context only")
    as_json = json_output or fmt == "json"
    settings = settings_from(
        db_url=db, data_dir=data_dir, config=config, agent=agent, user=user,
        memory={"max_results": max_results, "min_score": min_score, "mmr": mmr,
                "mmr_lambda": mmr_lambda, "decay": decay, "half_life_days": half_life_days,
                "citations": citations, "max_injected_chars": max_chars, "track": track,
                "backend": backend})
    cite = citations_enabled(settings.memory.citations, "json" if as_json else fmt)
    result = api.search(settings, query)
    _emit(result, as_json, fmt, citations=cite,
          max_chars=settings.memory.max_injected_chars if fmt == "context" else None)


@app.command("get")
@guard
def get(
    path: PathArg,
    from_line: Annotated[int | None, typer.Option(
        "--from", help="First line (1-indexed).", show_default=False)] = None,
    lines: Annotated[int | None, typer.Option(
        "--lines", help="Number of lines.", show_default=False)] = None,
    agent: AgentOpt = None, user: UserOpt = None, backend: BackendOpt = None,
    db: DbOpt = None,
    data_dir: DataDirOpt = None, config: ConfigOpt = None, json_output: JsonOpt = False,
) -> None:
    """Print a memory file, or a window of its lines (what a citation points at).

    Example: `kbctl memory get memory/user/prefs.md --from 3 --lines 2 --agent bot --user alice`
    """
    result = api.get(_settings(db, data_dir, config, agent, user, backend=backend), path,
                     from_line=from_line, lines=lines)
    _emit(result, json_output)


@app.command("list")
@guard
def list_(
    tier: Annotated[str | None, typer.Option(
        "--tier", help="agent or user (default: both visible tiers).",
        show_default=False)] = None,
    prefix: Annotated[str | None, typer.Option(
        "--prefix", help="Only paths starting with this, e.g. memory/agent/projects/.",
        show_default=False)] = None,
    limit: Annotated[int, typer.Option(
        "--limit", help="Files on one page, at most.")] = DEFAULT_LIST_LIMIT,
    after: Annotated[str | None, typer.Option(
        "--after", help="Start after this path: the next page, as the last one says.",
        show_default=False)] = None,
    agent: AgentOpt = None, user: UserOpt = None, backend: BackendOpt = None,
    db: DbOpt = None,
    data_dir: DataDirOpt = None, config: ConfigOpt = None, json_output: JsonOpt = False,
) -> None:
    """List the memory files this agent (and user) can see, in path order, a page at a
    time (JSON gives `total` and `nextAfter`, null on the last page).

    Example: `kbctl memory list --tier user --agent bot --user alice`
    """
    page = ListPage(prefix=prefix, after=after, limit=limit)
    settings = _settings(db, data_dir, config, agent, user, backend=backend)
    _emit(api.list_files(settings, tier, page=page), json_output)


@app.command("delete")
@guard
def delete(
    path: PathArg,
    agent: AgentOpt = None, user: UserOpt = None, backend: BackendOpt = None,
    db: DbOpt = None,
    data_dir: DataDirOpt = None, config: ConfigOpt = None, json_output: JsonOpt = False,
) -> None:
    """Delete a memory file with its index and recall records.

    Example: `kbctl memory delete memory/user/old.md --agent bot --user alice`
    """
    settings = _settings(db, data_dir, config, agent, user, backend=backend)
    _emit(api.delete(settings, path), json_output)


@app.command("health")
@guard
def health(
    agent: AgentOpt = None, user: UserOpt = None, backend: BackendOpt = None,
    db: DbOpt = None,
    data_dir: DataDirOpt = None, config: ConfigOpt = None, json_output: JsonOpt = False,
) -> None:
    """Check the memory backend; exit 3 when it is not usable (no scope is needed).

    Example: `kbctl memory health --json`
    """
    result = api.health(_settings(db, data_dir, config, agent, user, backend=backend))
    _emit(result, json_output)
    exit_with(0 if result.ok else 3)


@app.command("stats")
@guard
def stats(
    top: Annotated[int, typer.Option("--top", help="Most recalled entries to show.")] = 10,
    agent: AgentOpt = None, user: UserOpt = None, backend: BackendOpt = None,
    db: DbOpt = None,
    data_dir: DataDirOpt = None, config: ConfigOpt = None, json_output: JsonOpt = False,
) -> None:
    """File and chunk counts, tracked searches and the most recalled entries.

    Example: `kbctl memory stats --agent bot --user alice`
    """
    settings = _settings(db, data_dir, config, agent, user, backend=backend)
    _emit(api.stats(settings, top=top), json_output)


@app.command("import")
@guard
def import_(
    directory: Annotated[Path, typer.Argument(help="Folder of memory markdown files.")],
    tier: Annotated[str, typer.Option("--tier", help="agent or user.")] = "agent",
    agent: AgentOpt = None, user: UserOpt = None, backend: BackendOpt = None,
    db: DbOpt = None,
    data_dir: DataDirOpt = None, config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Index a folder (MEMORY.md, YYYY-MM-DD.md daily files, …) into a tier, idempotently.

    Example: `kbctl memory import ./notes --tier agent --agent bot`
    """
    settings = _settings(db, data_dir, config, agent, user, embedder, embedder_base_url,
                         backend=backend, allow_private_network=allow_private_network)
    out = Output(json_output)
    report = api.import_dir(settings, directory, tier=tier, announce=out.note)
    _emit(report, json_output)
    exit_with(0 if report.ok else 1)
