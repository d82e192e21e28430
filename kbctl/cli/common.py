"""What every command shares: option types, settings resolution, and the one place that
maps errors to exit codes (``guard``)."""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import shlex
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from typer.core import TyperCommand

from ..config import Settings, resolve_settings
from ..errors import (
    HangupSignal,
    HungUp,
    InputError,
    Interrupted,
    KbctlError,
    Terminated,
    TerminateSignal,
)
from ..hygiene import require_clean
from ..linefile import LoadError, decode_capped
from ..paths import path_error
from ..render import Output
from ..wiring import leave_databases
from . import registry

F = TypeVar("F", bound=Callable[..., Any])

DbOpt = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL URL (default: embedded server in --data-dir; env "
    "KBCTL_DATABASE_URL).", show_default=False)]
# folders as text: Typer reads '' (an unset variable in a script) as Path('.'), the current
# directory, and it must be refused as empty instead
DataDirOpt = Annotated[str | None, typer.Option(
    "--data-dir", help="Embedded database directory [default: .kbctl].", show_default=False)]
NamespaceOpt = Annotated[str | None, typer.Option(
    "--namespace", "-n", help="Namespace to read and write [default: default].",
    show_default=False)]
ConfigOpt = Annotated[str | None, typer.Option(
    "--config", help="Config file [default: ./kbctl.yaml when present].", show_default=False)]
EmbedderOpt = Annotated[str | None, typer.Option(
    "--embedder", help="Embedder spec: gemini, openai:MODEL, local:MODEL, none. A KB keeps "
    "the one it was built with.", show_default=False)]
EmbedderUrlOpt = Annotated[str | None, typer.Option(
    "--embedder-base-url", help="Base URL of an OpenAI-compatible or Gemini endpoint.",
    show_default=False)]
RerankOpt = Annotated[str | None, typer.Option(
    "--rerank", help="Re-score the top candidates with a cross-encoder: cohere:MODEL, "
    "jina:MODEL, voyage:MODEL, tei:MODEL (with --rerank-base-url) or local:MODEL "
    "(env KBCTL_RERANK).", show_default=False)]
RerankUrlOpt = Annotated[str | None, typer.Option(
    "--rerank-base-url", help="Base URL of a self-hosted reranker (TEI; Infinity or vLLM "
    "with cohere:MODEL).", show_default=False)]
RerankTopOpt = Annotated[int | None, typer.Option(
    "--rerank-top", help="How many fused candidates the reranker re-scores (1..50) [50].",
    show_default=False)]
VectorWeightOpt = Annotated[float | None, typer.Option(
    "--vector-weight", help="Hybrid search: the share of the vector score, 0..1 [0.7].",
    show_default=False)]
FusionOpt = Annotated[str | None, typer.Option(
    "--fusion", help="Hybrid search: weighted (w·vector + (1−w)·text) or rrf (reciprocal "
    "rank) [weighted].", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
PrivateOpt = Annotated[bool | None, typer.Option(
    "--allow-private-network/--no-allow-private-network",
    help="Allow loopback and private addresses for fetches and for embedder and reranker "
    "endpoints (local sites and models, tests); cloud metadata stays refused.",
    show_default=False)]


class QuestionCommand(TyperCommand):
    """A command whose argument is free text: a question that starts with '-' (an option
    looked up by name, ``--max-depth``) reads as an unknown option, so that error says how
    to pass it; a mistyped option gets the option it most likely meant instead."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        original = list(args)  # the parser consumes args
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:  # Typer's own copy of click: known by name
            name = getattr(exc, "option_name", None)
            message = getattr(exc, "message", None)
            if "--" in original and isinstance(message, str) and "extra argument" in message:
                exc.message += (" (options go before `--`: what follows it is the "  # type: ignore[attr-defined]
                                f"question, as in {ctx.command_path} [OPTIONS] -- '-k')")
                raise
            if type(exc).__name__ != "NoSuchOption" or not isinstance(name, str):
                raise
            options = self._option_names(ctx)
            # "-how do I" fails on its "-o": the token the user wrote is the one to quote
            given = next((a for a in original if a.startswith(name)), None) or next(
                (a for a in original if a.startswith("-") and a.split("=")[0] not in options),
                name)
            exc.message = unknown_option_message(  # type: ignore[attr-defined]
                given, options, ctx.command_path)
            exc.possibilities = None  # type: ignore[attr-defined]  # said in the message
            raise

    def _option_names(self, ctx: Any) -> list[str]:
        return [name for param in self.get_params(ctx)
                for name in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ()))
                if name.startswith("-")]


def unknown_option_message(given: str, options: list[str], command: str) -> str:
    """What to say of ``given``, an unknown option of a command taking a question: the
    option it most likely meant (``--fitler``: ``--filter``), else, when it reads like a
    question (words, or no option near it), how to pass one that starts with '-'."""
    flag = given.split("=", 1)[0]
    near = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
    if near and " " not in given:
        return f"No such option: {flag}. Did you mean {near[0]}?"
    return (f"No such option: {given.split()[0]} (a question that starts with '-' goes after `--`, "
            f"the options before it: {command} [OPTIONS] -- {shlex.quote(given)})")


def hybrid_only_note(out: Output, lexical: bool, **flags: Any) -> None:
    """Say so when options that shape hybrid search (given: not None) met a lexical-only
    search, which has nothing to fuse: otherwise they would pass unnoticed."""
    given = [f"--{name.replace('_', '-')}" for name, value in flags.items() if value is not None]
    if lexical and given:
        out.note(f"{' and '.join(given)} shape{'s' if len(given) == 1 else ''} hybrid search "
                 "only; this knowledge base has no embedder (lexical search)")


def settings_from(**flags: Any) -> Settings:
    """Resolve settings from the flags a command received (None means 'not given')."""
    config = flags.pop("config", None)
    return resolve_settings(flags, config=config)


JSON_META = "kbctl.json"  # a group's --json (``kbctl ingest --json files …``), for its command


def json_wanted(json_output: bool, ctx: typer.Context | None) -> bool:
    """``--json`` given to the command, or to the group before it."""
    meta = getattr(ctx, "meta", None)
    return json_output or bool(isinstance(meta, dict) and meta.get(JSON_META))


def guard(fn: F) -> F:
    """Map KbctlError to its message and exit code; the only place that does."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # the command's context, when it takes one (Typer hands click's own class)
        context = kwargs.get("ctx")
        # ``--format json`` promises one JSON document as ``--json`` does, errors included
        wants_json = bool(kwargs.get("json_output")) or kwargs.get("fmt") == "json"
        out = Output(json_mode=json_wanted(wants_json, context))
        try:
            for name, value in kwargs.items():
                label = _labels(fn).get(name, name.upper())
                require_clean(label, str(value) if isinstance(value, Path) else value)
            return fn(*args, **kwargs)
        except KbctlError as exc:
            out.error(exc)
            raise typer.Exit(exc.exit_code) from None
        except (OSError, RuntimeError) as exc:
            refused = path_error(exc)  # a typed path the file system refuses: bad input
            if refused is None:
                raise
            out.error(refused)
            raise typer.Exit(refused.exit_code) from None
        except KeyboardInterrupt as exc:
            kind, said = ((HungUp, "hung up (SIGHUP: its terminal closed)")
                          if isinstance(exc, HangupSignal)
                          else (Terminated, "terminated (SIGTERM)")
                          if isinstance(exc, TerminateSignal) else (Interrupted, "interrupted"))
            stopped = kind(said, hint="what was written before is kept whole; run the "
                                      "command again to finish")
            out.error(stopped)
            if registry.STOP_AT_ONCE:
                stop_now(stopped.exit_code)
            raise typer.Exit(stopped.exit_code) from None

    return wrapper  # type: ignore[return-value]


def stop_now(code: int) -> NoReturn:
    """End a stopped command now, as its signal asks: its writes are rolled back or whole
    already (each is one transaction), and its handle on the embedded server is dropped
    here. What an ordinary exit would then wait for (a provider request mid-flight, its
    retries, a worker process's pipe) is not waited for: a cron timeout's SIGTERM took five
    minutes to end an ingest whose embedder had stalled."""
    leave_databases()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


@functools.cache
def _labels(fn: Callable[..., Any]) -> dict[str, str]:
    """How the user types each of ``fn``'s options (``namespace`` → ``--namespace``)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError):
        return {}
    labels = {}
    for name, hint in hints.items():
        for meta in getattr(hint, "__metadata__", ()):
            # Annotated options keep their first name in ``default``, the rest in param_decls
            names = [getattr(meta, "default", None), *(getattr(meta, "param_decls", None) or ())]
            decls = [d for d in names if isinstance(d, str) and d.startswith("--")]
            if decls:
                labels[name] = decls[0].split("/")[0]
    return labels


def read_stdin(what: str, limit: int) -> str:
    """Standard input as UTF-8 text, refused past ``limit`` bytes (the cap of what it is
    read as: a source's text, a memory file, a tool's arguments)."""
    if sys.stdin is None:  # started with it closed (``<&-``)
        raise InputError(f"no standard input to read {what} from: it is closed",
                         hint="pass it as an argument, or pipe it in")
    try:
        return decode_capped(sys.stdin.buffer, limit, what=f"{what} from stdin")
    except LoadError as exc:
        raise InputError(exc.message) from None


def exit_with(code: int) -> None:
    """End the command with ``code`` (0 returns normally)."""
    if code:
        raise typer.Exit(code)


BackendOpt = Annotated[str | None, typer.Option(
    "--backend", help="postgres, graph or composite (memory.backend; env "
    "KBCTL_MEMORY_BACKEND). graph needs `pip install 'kbctl[graph]'`.",
    show_default=False)]
