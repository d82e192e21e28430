"""`kbctl serve mcp`: the knowledge base and memory as an MCP server over stdio."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

import typer

from kbctl.agent.specs import ToolLimits

from ..errors import EnvironmentFailure
from ..render import Output
from ..render.output import stdout_failed
from ..wiring import leave_databases
from .common import (
    BackendOpt,
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderOpt,
    EmbedderUrlOpt,
    NamespaceOpt,
    PrivateOpt,
    guard,
    settings_from,
)
from .registry import HELP_MARKUP
from .tools import (
    AgentOpt,
    MaxCharsOpt,
    MaxTopKOpt,
    PhaseFileOpt,
    ReadOnlyOpt,
    UserOpt,
    limits_from,
    open_tools,
)


def _write_failure(exc: BaseException) -> OSError | None:
    """The OSError inside the (nested) exception groups the SDK's task groups raise."""
    if isinstance(exc, OSError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _write_failure(inner)
        if found is not None:
            return found
    return None


app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="Serve kbctl to agent runtimes.\n\n"
    "Example: `kbctl serve mcp -n docs --agent support-bot --user alice`",
    no_args_is_help=True,
)


@app.command("mcp")
@guard
def mcp(
    agent: AgentOpt = None, user: UserOpt = None, read_only: ReadOnlyOpt = False,
    phase: PhaseFileOpt = None,
    max_top_k: MaxTopKOpt = ToolLimits.max_top_k, max_chars: MaxCharsOpt = ToolLimits.max_chars,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, backend: BackendOpt = None,
    allow_private_network: PrivateOpt = None,
) -> None:
    """Run an MCP server on stdin/stdout with search_knowledge and the memory tools.

    The namespace, agent and user are fixed here (flags, kbctl.yaml or KBCTL_* env) and are
    never tool parameters.

    Example: `kbctl serve mcp -n docs --agent support-bot --user alice --read-only`
    """
    settings = settings_from(db_url=db, data_dir=data_dir, namespace=namespace, config=config,
                             embedder=embedder, embedder_base_url=embedder_base_url,
                             agent=agent, user=user, memory={"backend": backend},
                             allow_private_network=allow_private_network)
    limits = limits_from(max_top_k, max_chars)
    if sys.stdin is None or sys.stdout is None:  # started with <&- or >&-
        raise EnvironmentFailure("serve mcp talks over stdin and stdout, and one of them is "
                                 "closed", hint="start it from an MCP client, which pipes both")
    try:
        from ..agent.mcp_server import run_stdio  # the SDK is imported only by this command
    except ImportError as exc:
        raise EnvironmentFailure(f"the MCP SDK cannot be imported: {exc}",
                                 hint="pip install 'mcp>=2.3,<3'") from None
    tools = open_tools(settings, read_only=read_only, phase=phase, limits=limits)

    scope = tools.scope
    memory = ("no memory tools (no agent id)" if scope is None else
              f"memory of agent '{scope.agent_id}'"
              + (f", user '{scope.user_id}'" if scope.user_id else ", agent tier only")
              + (", read-only" if read_only else "")
              + (f", writes only in phase 'memory_flushing' of {phase}" if phase else ""))
    Output().note(f"kbctl MCP server on stdio: namespace '{settings.namespace}', {memory}")
    if tools.knowledge_is_empty():  # a mistyped -n, or no ingest yet: the operator is told
        Output().note(f"warning: namespace '{settings.namespace}' holds no chunks: "
                      "search_knowledge finds nothing until an ingest writes there "
                      "(`kbctl status` lists the namespaces)")

    def stop(signum: int) -> None:
        """End now, as a server does on SIGTERM: the database closed and left, then exit
        128 + the signal (the thread reading stdin would keep a normal exit waiting)."""
        tools.close()
        leave_databases()
        Output().note(f"kbctl MCP server: stopped by {signal.Signals(signum).name}")
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os._exit(128 + signum)

    with tools, contextlib.suppress(KeyboardInterrupt):
        try:
            run_stdio(tools, stop)
        except Exception as exc:  # noqa: BLE001 - the transport's groups are searched
            failed = _write_failure(exc)
            if failed is None:
                raise
            stdout_failed(failed)  # its reader went away (141), or its disk is full (3)
