"""`kbctl eval`: run retrieval eval suites as a CI gate, and scaffold a first suite.

`kbctl eval SUITE…` runs suites (it is `kbctl eval run SUITE…` spelled short);
`kbctl eval init` writes a starter suite from the knowledge base.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

from ..errors import InputError, KbctlError
from ..evals import CaseResult
from ..hygiene import first_few
from ..pipeline import evals as eval_pipeline
from ..render import Output, Rendered
from ..render.writes import emit_github, emit_github_error, write_eval_reports, write_report_file
from ..results import MAX_K, MIN_K
from .common import (
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderOpt,
    EmbedderUrlOpt,
    FusionOpt,
    JsonOpt,
    NamespaceOpt,
    PrivateOpt,
    RerankOpt,
    RerankTopOpt,
    RerankUrlOpt,
    VectorWeightOpt,
    exit_with,
    guard,
    hybrid_only_note,
    settings_from,
)
from .registry import HELP_MARKUP

RUN = "run"


class _RunByDefault(TyperGroup):
    """Anything that is not a subcommand name is the start of a `run` invocation, so
    `kbctl eval docs.yaml --json` means `kbctl eval run docs.yaml --json`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if all(a.startswith("-") and a not in ctx.help_option_names for a in args):
            # no suite named: the usage of `kbctl eval` itself, not of the `run` it means
            ctx.fail("Missing argument 'SUITE_OR_GLOB...': name the suite files to run, "
                     "or scaffold one with `kbctl eval init`")
        if args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [RUN, *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        formatter.write_usage(ctx.command_path, "SUITE_OR_GLOB... [OPTIONS]")
        formatter.write_usage(ctx.command_path, "init [OPTIONS]", prefix="   or: ")


app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    cls=_RunByDefault,
    help="Gate retrieval quality: `kbctl eval SUITE…` runs eval suites (JSON or YAML) "
    "against the knowledge base and exits 1 when a case fails or regresses; "
    "`kbctl eval init` scaffolds a suite from the knowledge base.\n\n"
    "Example: `kbctl eval evals/docs.yaml --baseline main.json --junit junit.xml`\n\n"
    "The options of a run (baselines, --fail-on, reports, embedder, reranker): "
    "`kbctl eval run --help`.",
)


@contextmanager
def _case_progress(out: Output) -> Iterator[Callable[[CaseResult], None] | None]:
    """A live case counter on stderr when it is a terminal."""
    if out.quiet or not out.err.is_terminal:
        yield None
        return
    bar = Progress(SpinnerColumn(), TextColumn("[bold]eval[/bold] {task.completed:.0f} cases · "
                                               "{task.fields[failed]} failed"),
                   TimeElapsedColumn(), console=out.err, transient=True)
    with bar:
        task = bar.add_task("eval", total=None, failed=0)
        failed = 0

        def on_result(result: CaseResult) -> None:
            nonlocal failed
            failed += 0 if result.passed else 1
            bar.update(task, advance=1, failed=failed)

        yield on_result


@app.command(RUN)
@guard
def run(
    suites: Annotated[list[str], typer.Argument(
        metavar="SUITE_OR_GLOB", help="Suite files (.yaml, .yml, .json), folders or globs "
        "such as 'evals/*.yaml'.", show_default=False)],
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", help="JSON report of an earlier run: cases that got worse are "
        "regressions.", show_default=False)] = None,
    save_baseline: Annotated[Path | None, typer.Option(
        "--save-baseline", help="Write this run's JSON report here (the next baseline).",
        show_default=False)] = None,
    rank_tolerance: Annotated[int, typer.Option(
        "--rank-tolerance", help="Ranks a first match may drop before it is a regression.")
    ] = 0,
    score_tolerance: Annotated[float | None, typer.Option(
        "--score-tolerance", help="How far a top score may fall before it is a regression "
        "[default: not checked].", show_default=False)] = None,
    fail_on: Annotated[str, typer.Option(
        "--fail-on", help="any: fail on any failed case or regression; regression: only "
        "on regressions (needs --baseline).")] = "any",
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Write a JUnit XML report here.", show_default=False)] = None,
    github: Annotated[bool, typer.Option(
        "--github", help="Write the GitHub job summary, annotations and step outputs "
        "(automatic when GITHUB_ACTIONS=true).")] = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Name every case a baseline comparison found added, "
        "removed, edited or fixed (by default, past five, a count).")] = False,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, rerank: RerankOpt = None,
    rerank_base_url: RerankUrlOpt = None, rerank_top: RerankTopOpt = None,
    vector_weight: VectorWeightOpt = None, fusion: FusionOpt = None,
    retriever: Annotated[str | None, typer.Option(
        "--retriever", help="The retriever the suites were written for: an embedder spec, "
        "or embedder=…,fusion=…,rerank=…. Another one, or one that cannot run here (no "
        "key, no server), is refused with exit 2 instead of measured. Suites pin it with "
        "defaults.retriever, kbctl.yaml with eval.retriever.", show_default=False)] = None,
    allow_private_network: PrivateOpt = None, json_output: JsonOpt = False,
) -> None:
    """Run eval suites against the knowledge base; exit 1 when the run fails.

    Example: `kbctl eval evals/docs.yaml --baseline main-report.json --junit junit.xml`
    """
    out = Output(json_output)
    on_github = github or os.environ.get("GITHUB_ACTIONS") == "true"
    try:
        settings = settings_from(db_url=db, data_dir=data_dir, namespace=namespace,
                                 config=config, embedder=embedder,
                                 embedder_base_url=embedder_base_url, rerank=rerank,
                                 rerank_base_url=rerank_base_url, rerank_top=rerank_top,
                                 vector_weight=vector_weight, fusion=fusion,
                                 allow_private_network=allow_private_network)
        with _case_progress(out) as on_result:
            outcome = eval_pipeline.evaluate(settings, suites, baseline=baseline,
                                   rank_tolerance=rank_tolerance,
                                   score_tolerance=score_tolerance, fail_on=fail_on,
                                   on_result=on_result, reports={
                                       "--save-baseline": save_baseline, "--junit": junit},
                                   retriever=retriever)
    except KbctlError as exc:
        if on_github:  # the pull request shows why, not only the log
            emit_github_error(exc.message, out, json_output=json_output)
        raise
    except KeyboardInterrupt:  # SIGTERM (a step's timeout), SIGINT, SIGHUP: steps that
        if on_github:  # run anyway read verdict=error, not an empty verdict
            emit_github_error("the eval was stopped before it finished", out,
                              json_output=json_output)
        raise
    for warning in outcome.diff.warnings if outcome.diff is not None else ():
        out.note(f"warning: {warning}")
    write_eval_reports(outcome, save_baseline=save_baseline, junit=junit)
    out.show(outcome, verbose=verbose)
    hybrid_only_note(out, outcome.report.embedder == "none", vector_weight=vector_weight,
                     fusion=fusion)
    if on_github:
        emit_github(outcome, out, report_path=save_baseline, json_output=json_output)
    exit_with(0 if outcome.verdict.passed else 1)


@app.command("init")
@guard
def init(
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the suite here instead of stdout (as JSON when the "
        "name ends in .json).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output.")] = False,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="topK of the suite.")] = 5,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None,
    json_output: Annotated[bool, typer.Option(
        "--json", help="Write the suite as JSON (as for an --output name ending in .json)."
    )] = False,
) -> None:
    """Scaffold a suite: one case per top-level section of the knowledge base.

    Then rephrase its questions the way your readers ask them.

    Example: `kbctl eval init -o evals/docs.yaml`
    """
    if output is not None and output.exists() and not force:
        raise InputError(f"{output} already exists", hint="pass --force to overwrite it")
    if not MIN_K <= top_k <= MAX_K:
        raise InputError(f"--top-k must be between {MIN_K} and {MAX_K}, got {top_k}")
    settings = settings_from(db_url=db, data_dir=data_dir, namespace=namespace, config=config)
    fmt = "json" if json_output or (output is not None
                                     and output.suffix.lower() == ".json") else "yaml"
    out = Output()
    with _case_progress(out) as on_result:
        scaffold = eval_pipeline.eval_init(settings, top_k=top_k, fmt=fmt, on_result=on_result)
    if scaffold.failing:
        out.note(f"left out {len(scaffold.failing)} section(s) whose heading does not find "
                 f"them in the top {top_k} today (rephrase and add them by hand): "
                 f"{first_few(list(scaffold.failing))}")
    if output is None:
        out.emit(Rendered.stdout(scaffold.text))
        return
    write_report_file(output, scaffold.text, "the suite")
    out.note(f"wrote {output}: rephrase its questions the way readers ask, then run "
             f"`kbctl eval {output}`")

