"""What every command shares: option types, settings resolution, and the one place that
maps errors to exit codes (``guard``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from ..config import Settings, resolve_settings
from ..errors import KbctlError
from ..render import Output

F = TypeVar("F", bound=Callable[..., Any])

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


def settings_from(**flags: Any) -> Settings:
    """Resolve settings from the flags a command received (None means 'not given')."""
    config = flags.pop("config", None)
    return resolve_settings(flags, config=config)


def guard(fn: F) -> F:
    """Map KbctlError to its message and exit code; the only place that does."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = Output(json_mode=bool(kwargs.get("json_output")))
        try:
            return fn(*args, **kwargs)
        except KbctlError as exc:
            out.error(exc)
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


def exit_with(code: int) -> None:
    """End the command with ``code`` (0 returns normally)."""
    if code:
        raise typer.Exit(code)
