"""The root Typer app: its ``--version``, and the group that makes each command from the
registry (``kbctl.cli.COMMANDS``) only when the command line names it."""

from __future__ import annotations

import gc
from difflib import get_close_matches
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from .. import __version__
from . import registry
from .registry import COMMANDS, HELP_MARKUP, Entry, resolve


def click_command(name: str, function: Any, *, question: bool = False) -> Any:
    """The click command Typer makes of ``function`` (its module is imported by now, and
    with it ``common``)."""
    from .common import QuestionCommand

    single = typer.Typer(rich_markup_mode=HELP_MARKUP, pretty_exceptions_enable=False,
                         add_completion=False)
    single.command(name, cls=QuestionCommand if question else None)(function)
    return typer.main.get_command(single)


def load(name: str, entry: Entry) -> Any:
    """The click command (or group) of a registry entry, its module imported now."""
    target = resolve(entry.target)
    if not isinstance(target, typer.Typer):
        return click_command(name, target, question=entry.question)
    group = typer.main.get_group(target)
    for sub, where in entry.commands.items():
        group.add_command(click_command(sub, resolve(where)), sub)
    return group


class RegistryGroup(TyperGroup):
    """The root command: lists the registry's commands from their help lines, and imports
    one only when it runs (or shows its own help)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load(cmd_name, COMMANDS[cmd_name])
            if registry.COLLECT_AFTER_LOAD and not gc.isenabled():
                gc.freeze()  # what the imports made stays: later collections skip it
                gc.enable()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        from typer._click.utils import make_default_short_help

        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, make_default_short_help(entry.help, limit))
                for name, entry in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:  # Typer's own copy of click: known by name
            message = getattr(exc, "message", None)
            if type(exc).__name__ == "UsageError" and isinstance(message, str) and args \
                    and "Did you mean" not in message:
                matches = get_close_matches(args[0], list(COMMANDS))
                if matches:
                    exc.message = (f"{message.rstrip('.')}. Did you mean "  # type: ignore[attr-defined]
                                   f"{', '.join(repr(m) for m in matches)}?")
            raise


app = typer.Typer(
    name="kbctl",
    cls=RegistryGroup,
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
