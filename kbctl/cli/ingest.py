"""`kbctl ingest …`: one subcommand per source kind: ``files`` and ``text`` written here,
the others made from their options' metadata (``source_command``) when the command line
names them, so a ``files`` ingest imports no web kind."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ..config import Settings
from ..errors import InputError
from ..pipeline import api
from ..render import Output
from ..sources.base import MAX_FILE_BYTES, SourceSpec
from ..sources.extractpool import allow_worker_processes
from ..sources.options import LANG_HELP, NOINDEX_HELP, VERSION_HELP, SourceOptions
from ..sources.registry import KINDS, flag_spec
from .common import (
    JSON_META,
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderOpt,
    EmbedderUrlOpt,
    JsonOpt,
    NamespaceOpt,
    PrivateOpt,
    exit_with,
    guard,
    json_wanted,
    read_stdin,
    settings_from,
)
from .registry import HELP_MARKUP
from .root import click_command

IgnoreNoindexOpt = Annotated[bool, typer.Option("--ignore-noindex", help=NOINDEX_HELP)]
VersionOpt = Annotated[str | None, typer.Option("--version", help=VERSION_HELP,
                                                 show_default=False)]
LangOpt = Annotated[str | None, typer.Option("--lang", help=LANG_HELP, show_default=False)]


class KindsGroup(TyperGroup):
    """``kbctl ingest``: the commands written here, and one for each other registered kind
    (whose options carry their help), made and its module imported only when named."""

    def list_commands(self, ctx: Any) -> list[str]:
        made = [name for name in KINDS if name not in self.commands
                and KINDS[name].options.about is not None]
        return [*super().list_commands(ctx), *made]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in KINDS:
            options = KINDS[cmd_name].options
            if options.about is not None:
                self.commands[cmd_name] = click_command(cmd_name,
                                                        source_command(cmd_name, options))
        return super().get_command(ctx, cmd_name)


app = typer.Typer(
    cls=KindsGroup,
    rich_markup_mode=HELP_MARKUP,
    help="Ingest documentation into the knowledge base.\n\n"
    "Without a subcommand, ingests the `sources:` listed in kbctl.yaml.\n\n"
    "Example: `kbctl ingest files docs/ --base-url https://docs.example.com/`",
    invoke_without_command=True,
)


def run_ingest(settings: Settings, specs: list[SourceSpec], json_output: bool,
               ctx: typer.Context | None = None) -> None:
    """Run the pipeline with a progress bar and render its report (as JSON with a
    ``--json`` given to the command, or to ``kbctl ingest`` before it: ``ctx``)."""
    allow_worker_processes()  # this program guards __main__: large sites may use processes
    out = Output(json_wanted(json_output, ctx))
    with out.progress(f"ingest → {settings.namespace}") as progress:
        report = api.ingest_sources(settings, specs, progress=progress, announce=out.note)
    out.show(report)
    exit_with(report.exit_code)


@app.callback()
@guard
def ingest_from_config(
    ctx: typer.Context,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    embedding_cache: Annotated[str | None, typer.Option(
        "--embedding-cache", metavar="FILE", help="Read vectors from FILE before embedding "
        "and replace it with the knowledge base's after, so a fresh database (a CI run) "
        "embeds only what changed (env KBCTL_EMBEDDING_CACHE). Give it before the "
        "subcommand.", show_default=False)] = None,
    json_output: JsonOpt = False,
) -> None:
    """Ingest documentation. Without a subcommand: the sources listed in kbctl.yaml.

    Example: `kbctl ingest --config kbctl.yaml`
    """
    flags = dict(db_url=db, data_dir=data_dir, namespace=namespace, config=config,
                 embedder=embedder, embedder_base_url=embedder_base_url,
                 allow_private_network=allow_private_network, embedding_cache=embedding_cache)
    if ctx.invoked_subcommand is not None:
        ctx.obj = {k: v for k, v in flags.items() if v is not None}
        if json_output:
            ctx.meta[JSON_META] = True
        return
    settings = settings_from(**flags)
    if not settings.sources:
        raise nothing_to_ingest(settings)
    run_ingest(settings, list(settings.sources), json_output)


def nothing_to_ingest(settings: Settings) -> InputError:
    """``kbctl ingest`` with no source: say whether there is a config file at all, and the
    two ways to start."""
    example = "`kbctl ingest files docs/ --base-url https://docs.example.com/`"
    if settings.config_path is None:
        return InputError("nothing to ingest: there is no kbctl.yaml here, and no "
                          "subcommand names a source",
                          hint=f"start with a source on the command line, e.g. {example} "
                               "(resync then repeats it), or list them under `sources:` in "
                               "a kbctl.yaml and run `kbctl ingest`")
    return InputError(f"nothing to ingest: {settings.config_path} lists no sources",
                      hint=f"add `sources:` to it, or name a source on the command line, "
                           f"e.g. {example}")


def merged_settings(ctx: typer.Context, **flags: Any) -> Settings:
    """Options given before the subcommand (``kbctl ingest --db … files``) count too."""
    parent = dict(ctx.obj or {})
    parent.update({k: v for k, v in flags.items() if v is not None})
    return settings_from(**parent)


@app.command("files")
@guard
def ingest_files(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(
        help="A folder, a glob such as 'docs/**/*.md', or one file.")],
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="Public URL, so citations match the live site: the site's root "
        "when a docs generator is detected or named (its config may sit in a parent "
        "folder), else this folder's.",
        show_default=False)] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="Glob of relative paths to skip (repeatable).",
        show_default=False)] = None,
    generator: Annotated[str | None, typer.Option(
        "--generator", help="Docs generator whose URLs and heading ids to cite: auto, "
        "mdbook, mkdocs, sphinx, sphinx-dirhtml, jupyter-book, mystmd, docusaurus, hugo, "
        "vitepress, vuepress, starlight, jekyll, quarto, docsify or plain. Default: detected "
        "from book.toml, mkdocs.yml, conf.py, ….",
        show_default=False)] = None,
    ignore_noindex: IgnoreNoindexOpt = False,
    version: VersionOpt = None, lang: LangOpt = None,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Ingest a folder of .md/.mdx/.markdown/.rst/.html/.htm/.txt/.qmd files (and .ipynb
    notebooks where the docs generator renders them).

    Pages published once per language or version (a multilingual Hugo site, a built site
    with /fr/ or /v2/ copies) are kept in one of each; --lang and --version choose.

    Example: `kbctl ingest files docs/ --base-url https://docs.example.com/ --generator mkdocs`
    """
    spec = flag_spec("files", target, base_url=base_url, exclude=exclude, generator=generator,
                     ignore_noindex=ignore_noindex, version=version, lang=lang)
    settings = merged_settings(ctx, db_url=db, data_dir=data_dir, namespace=namespace,
                               config=config, embedder=embedder,
                               embedder_base_url=embedder_base_url,
                               allow_private_network=allow_private_network)
    run_ingest(settings, [spec], json_output, ctx)


@app.command("text")
@guard
def ingest_text(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Argument(
        help="The text; omit it or pass '-' to read stdin.", show_default=False)] = None,
    ref: Annotated[str, typer.Option(
        "--ref", help="Stable reference (a URL or a name); required.", show_default=False)] = "",
    title: Annotated[str | None, typer.Option("--title", help="Document title.",
                                              show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", help="markdown or text.")] = "markdown",
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Ingest one text from an argument or stdin.

    Example: `echo "# Release notes" | kbctl ingest text --ref notes/2026-11 --title Notes`
    """
    if not ref:
        raise InputError("--ref is required: a stable name or URL for this text")
    if fmt not in ("markdown", "text"):
        raise InputError(f"--format must be markdown or text, got '{fmt}'")
    body = read_stdin("the text", MAX_FILE_BYTES) if text in (None, "-") else text
    spec = flag_spec("text", ref, title=title or ref, format=fmt, body=body)
    settings = merged_settings(ctx, db_url=db, data_dir=data_dir, namespace=namespace,
                               config=config, embedder=embedder,
                               embedder_base_url=embedder_base_url,
                               allow_private_network=allow_private_network)
    run_ingest(settings, [spec], json_output, ctx)


# --- commands made from a kind's options ----------------------------------------------

# What every generated command takes besides its kind's options: the settings' flags.
_SETTINGS: dict[str, tuple[Any, str | None]] = {
    "db": (DbOpt, "db_url"), "data_dir": (DataDirOpt, None), "namespace": (NamespaceOpt, None),
    "config": (ConfigOpt, None), "embedder": (EmbedderOpt, None),
    "embedder_base_url": (EmbedderUrlOpt, None), "allow_private_network": (PrivateOpt, None),
}


def _flag_type(options: type[SourceOptions], option: dataclasses.Field[Any]) -> tuple[Any, Any]:
    """The Typer annotation of one option's flag, and the flag's default: a switch keeps
    the option's default; any other flag defaults to None (not given), so the option's
    own default applies and a recorded definition records only what was given."""
    declared = typing.get_type_hints(options)[option.name]
    flag = options.flag(option.name)
    shown = {"help": option.metadata["help"]}
    if declared is bool:
        return Annotated[bool, typer.Option(flag, **shown)], option.default
    if typing.get_origin(declared) in (tuple, frozenset):
        value: Any = list[str] | None
    else:
        value = next(a for a in typing.get_args(declared) or (declared,) if a is not type(None))
        value = value | None
    return Annotated[value, typer.Option(flag, show_default=False, **shown)], None


def source_command(name: str, options: type[SourceOptions]) -> Callable[..., None]:
    """The ``kbctl ingest NAME`` command of a kind: its target, its options' flags (their
    help and defaults from ``option``), the settings' flags and ``--json``."""
    target = Annotated[str, typer.Argument(help=options.target_help)]
    kinds = {f.name: _flag_type(options, f) for f in options.flags()}
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation=typer.Context),
              inspect.Parameter(options.target_name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation=target)]
    params += [inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                                 default=default) for key, (kind, default) in kinds.items()]
    params += [inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                                 default=None) for key, (kind, _) in _SETTINGS.items()]
    params.append(inspect.Parameter("json_output", inspect.Parameter.KEYWORD_ONLY,
                                    annotation=JsonOpt, default=False))

    def command(**given: Any) -> None:
        ctx = given.pop("ctx")
        values = {key: given.pop(key) for key in kinds}
        spec = flag_spec(name, given.pop(options.target_name), **values)
        json_output = given.pop("json_output")
        flags = {_SETTINGS[key][1] or key: value for key, value in given.items()}
        run_ingest(merged_settings(ctx, **flags), [spec], json_output, ctx)

    command.__name__ = command.__qualname__ = f"ingest_{name}"
    command.__doc__ = options.about
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return guard(command)
