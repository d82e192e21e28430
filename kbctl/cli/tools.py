"""`kbctl tools`: function-calling definitions for runtimes that call tools themselves, and
`kbctl tools call NAME --args JSON` to run one tool and print its result as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from kbctl.agent.result import ToolResult
from kbctl.agent.session import AgentTools, phase_file
from kbctl.agent.specs import ToolLimits, tool_specs

from ..config import Settings
from ..errors import InputError, KbctlError
from ..hygiene import require_clean
from ..linefile import first_clause
from ..memory.model import MAX_FILE_BYTES  # the arguments may carry a whole memory file
from ..render import Output, check_format
from ..render.tools import FORMATS as SPEC_FORMATS
from .common import (
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderOpt,
    EmbedderUrlOpt,
    NamespaceOpt,
    PrivateOpt,
    guard,
    read_stdin,
    settings_from,
)
from .registry import HELP_MARKUP

app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="Tool definitions for function calling (openai, anthropic, "
    "json-schema), and `tools call` to run one tool.\n\n"
    "Example: `kbctl tools --format openai --agent support-bot`",
)

AgentOpt = Annotated[str | None, typer.Option(
    "--agent", help="Agent id the memory tools are pinned to (env KBCTL_AGENT); without "
    "it only search_knowledge is offered.", show_default=False)]
UserOpt = Annotated[str | None, typer.Option(
    "--user", help="User id for the private memory tier (env KBCTL_USER).",
    show_default=False)]
ReadOnlyOpt = Annotated[bool, typer.Option(
    "--read-only", help="Offer no memory_append: memory can be searched and read only.")]
PhaseFileOpt = Annotated[Path | None, typer.Option(
    "--phase-file", envvar="KBCTL_PHASE_FILE",
    help="Phase guard: memory_append works only while this file holds 'memory_flushing' "
    "(the runtime writes its current phase there).", show_default=False)]
MaxTopKOpt = Annotated[int, typer.Option(
    "--max-top-k", help="Largest top_k search_knowledge accepts; larger requests are "
    "clamped.")]
MaxCharsOpt = Annotated[int, typer.Option(
    "--max-chars", help="Most characters of text one call returns.")]
# what these commands print is one JSON document already; the flag every command takes
JsonAlreadyOpt = Annotated[bool, typer.Option(
    "--json", help="Accepted as by every command: the output is one JSON document anyway.")]


def limits_from(max_top_k: int, max_chars: int) -> ToolLimits:
    return ToolLimits(max_top_k=max_top_k, max_chars=max_chars)


def open_tools(settings: Settings, *, read_only: bool, phase: Path | None,
               limits: ToolLimits) -> AgentTools:
    """A session with the scope of ``settings`` (flags, config, environment)."""
    return AgentTools(settings, read_only=read_only,
                      phase=phase_file(phase) if phase is not None else None,
                      limits=limits).open()


@app.callback(invoke_without_command=True)
@guard
def specs(
    ctx: typer.Context,
    fmt: Annotated[str, typer.Option(
        "--format", help="openai (chat completions tools), anthropic or json-schema.")
    ] = "json-schema",
    agent: AgentOpt = None, user: UserOpt = None, read_only: ReadOnlyOpt = False,
    max_top_k: MaxTopKOpt = ToolLimits.max_top_k, max_chars: MaxCharsOpt = ToolLimits.max_chars,
    config: ConfigOpt = None, json_output: JsonAlreadyOpt = False,
) -> None:
    """Print the tool definitions as one JSON list.

    Example: `kbctl tools --format openai --agent support-bot > tools.json`
    """
    ctx.obj = {"agent": agent, "user": user, "read_only": read_only, "config": config}
    if ctx.invoked_subcommand is not None:
        return
    check_format(SPEC_FORMATS, fmt)
    settings = settings_from(agent=agent, user=user, config=config)
    out = Output()
    if not settings.agent:
        out.note("memory tools left out: no agent id (pass --agent or set KBCTL_AGENT)")
    defs = tool_specs(limits_from(max_top_k, max_chars), memory=bool(settings.agent),
                      writable=not read_only)
    out.show(defs, fmt, formats=SPEC_FORMATS)


@app.command("call")
@guard
def call(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The tool to run (see `kbctl tools`).")],
    args: Annotated[str, typer.Option(
        "--args", help="The arguments as a JSON object; '-' reads them from stdin.")] = "{}",
    agent: AgentOpt = None, user: UserOpt = None, read_only: ReadOnlyOpt = False,
    phase: PhaseFileOpt = None,
    max_top_k: MaxTopKOpt = ToolLimits.max_top_k, max_chars: MaxCharsOpt = ToolLimits.max_chars,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonAlreadyOpt = False,
) -> None:
    """Run one tool and print its result as JSON: `{tool, isError, text, result}` (on
    failure `error` and `exitCode` in place of `result`).

    `text` is what a model should read (retrieved content comes spotlighted as untrusted
    data); the exit code is 0, or the error's code (2 bad arguments, 3 environment).

    Example: `kbctl tools call search_knowledge --args '{"query": "install"}' | jq .text`
    """
    parent: dict[str, Any] = ctx.obj or {}
    try:
        arguments = _arguments(read_stdin("--args", MAX_FILE_BYTES) if args == "-" else args)
        settings = settings_from(
            db_url=db, data_dir=data_dir, namespace=namespace,
            config=config or parent.get("config"), embedder=embedder,
            embedder_base_url=embedder_base_url, agent=agent or parent.get("agent"),
            user=user or parent.get("user"), allow_private_network=allow_private_network)
        tools = open_tools(settings, read_only=read_only or bool(parent.get("read_only")),
                           phase=phase, limits=limits_from(max_top_k, max_chars))
        with tools:
            result = tools.call(name, arguments)
    except KbctlError as exc:
        result = ToolResult.failure(name, exc)
    out = Output()
    out.json(result.to_json())
    if result.is_error:
        out.err.print(result.text, markup=False, highlight=False)
        raise typer.Exit(result.exit_code)


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise InputError(f"--args is not valid JSON: {exc.msg} at line {exc.lineno} column "
                         f"{exc.colno}") from None
    except ValueError as exc:  # an integer of over 4,300 digits
        raise InputError(f"--args: {first_clause(exc)}") from None
    if not isinstance(value, dict):
        raise InputError("--args must be a JSON object, e.g. '{\"query\": \"install\"}'")
    require_clean("--args", value)
    return value
