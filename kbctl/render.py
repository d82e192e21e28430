"""The one output layer: rich tables and progress for people (stderr for chatter), exactly
one JSON document on stdout for machines, and error messages for both."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from functools import singledispatch
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .errors import KbctlError
from .pipeline.context import render_context
from .pipeline.ingest import IngestReport
from .pipeline.progress import ProgressEvent
from .pipeline.query import source_parts
from .pipeline.reembed import ReembedReport
from .pipeline.results import QueryResult
from .pipeline.resync import ResyncReport
from .pipeline.status import StatusReport


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, paths and datetimes to plain JSON values, recursively.

    Every JSON document kbctl prints uses camelCase keys: dataclass fields are renamed here
    (plus any properties a class lists in ``__json_properties__``); keys of plain dicts are
    data (metadata, options) and stay as they are.
    """
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {camel(f.name): to_jsonable(getattr(obj, f.name))
               for f in dataclasses.fields(obj)}
        for name in getattr(type(obj), "__json_properties__", ()):
            out[camel(name)] = to_jsonable(getattr(obj, name))
        return out
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    return obj


class Output:
    """Where results, chatter and errors go for one command invocation."""

    def __init__(self, json_mode: bool = False, *, quiet: bool = False) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self.out = Console(soft_wrap=True)
        self.err = Console(stderr=True, soft_wrap=True)

    def json(self, data: Any) -> None:
        sys.stdout.write(json.dumps(to_jsonable(data), indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def note(self, message: str) -> None:
        """A line for people, on stderr so stdout stays clean for pipes."""
        if not self.quiet:
            self.err.print(f"[dim]{escape(message)}[/dim]")

    def error(self, exc: KbctlError) -> None:
        if self.json_mode:
            self.json({"error": exc.to_dict(), "exitCode": exc.exit_code})
        self.err.print(f"[bold red]error:[/bold red] {escape(exc.message)}")
        if exc.hint:
            self.err.print(f"[yellow]hint:[/yellow] {escape(exc.hint)}")

    @contextmanager
    def progress(self, label: str) -> Iterator[Any]:
        """A progress bar on stderr when it is a terminal; a callback for the pipeline."""
        if self.quiet or not self.err.is_terminal:
            yield lambda event: None
            return
        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
                       TimeElapsedColumn(), console=self.err, transient=True)
        counts = {"written": 0, "skipped": 0, "failed": 0}
        with bar:
            task = bar.add_task(label, total=None, status="")

            def on_event(event: ProgressEvent) -> None:
                if event.stage == "total":
                    bar.update(task, total=(bar.tasks[0].total or 0) + (event.total or 0))
                elif event.stage == "note":
                    bar.console.print(f"[dim]{escape(event.message)}[/dim]")
                elif event.stage in counts:
                    counts[event.stage] += 1
                    bar.advance(task)
                    bar.update(task, status=f"written {counts['written']} · unchanged "
                                            f"{counts['skipped']} · failed {counts['failed']}")

            yield on_event


# --- renderers for people ----------------------------------------------------------------


@singledispatch
def show(result: Any, out: Output, **options: Any) -> None:
    """Render a result for people (``out.json`` handles machines)."""
    out.out.print(result)


@show.register
def _(report: IngestReport, out: Output, **options: Any) -> None:
    parts = [f"added {report.added}", f"updated {report.updated}",
             f"unchanged {report.unchanged}"]
    if report.not_modified:
        parts.append(f"not modified {report.not_modified}")
    parts += [f"deleted {report.deleted}", f"failed {report.failed}"]
    color = "green" if report.ok else "red"
    out.err.print(f"[{color}]{report.namespace}[/{color}]: {', '.join(parts)}; "
                  f"{report.chunks_written} chunks written"
                  + (f", {report.embedded} embedded" if report.embedded else "")
                  + f" in {report.timings.get('total', 0):.2f}s")
    for note in report.notes:
        out.err.print(f"[dim]{escape(note)}[/dim]")
    if report.errors:
        table = Table("source", "error", title="failed sources", title_justify="left")
        for e in report.errors:
            table.add_row(escape(e.ref), escape(e.error))
        out.err.print(table)


@show.register
def _(result: QueryResult, out: Output, *, format: str = "table", **options: Any) -> None:
    if format == "context":
        out.out.print(render_context(result.hits), markup=False, highlight=False, end="")
        return
    if format == "sources":
        for s in source_parts(result.hits):
            nums = ",".join(str(n) for n in s.passages)
            out.out.print(f"[{nums}] {s.citation}  {s.title}", markup=False, highlight=False)
        return
    if not result.hits:
        out.err.print(f"no results in namespace '{escape(result.namespace)}' "
                      f"({result.mode} search)")
        return
    for h in result.hits:
        where = " › ".join(h.heading_path) or h.title
        body = h.text.split("\n\n", 1)[-1] if h.heading_path else h.text
        snippet = " ".join(body.split())
        if len(snippet) > 280:
            snippet = snippet[:280].rsplit(" ", 1)[0] + " …"
        out.out.print(f"[bold]{h.rank}.[/bold] [green]{h.score:.3f}[/green]  "
                      f"[bold]{escape(where)}[/bold]")
        out.out.print(f"   [cyan]{escape(h.citation)}[/cyan]", soft_wrap=True)
        out.out.print(f"   [dim]{escape(snippet)}[/dim]\n")
    out.err.print(f"[dim]{result.mode} search in '{escape(result.namespace)}', "
                  f"{result.elapsed_ms:.1f} ms[/dim]")


@show.register
def _(report: ResyncReport, out: Output, **options: Any) -> None:
    t = report.totals
    verb = "would change" if report.plan else "synced"
    color = "green" if report.ok else "red"
    out.err.print(
        f"[{color}]resync {verb}[/{color}] {len(report.namespaces)} namespace(s) in "
        f"{report.seconds:.1f}s: added {t['added']}, updated {t['updated']}, unchanged "
        f"{t['unchanged']}, not modified {t['notModified']}, deleted {t['deleted']}, failed "
        f"{t['failed']}; chunks written {t['chunksWritten']}, deleted {t['chunksDeleted']}; "
        f"embedded {t['embedded']}")
    for ns in report.namespaces:
        for note in ns.notes:
            out.err.print(f"[yellow]{escape(ns.namespace)}:[/yellow] {escape(note)}")
        if report.plan:
            for key in ("added", "updated", "deleted"):
                for ref in ns.changes[key]:
                    out.out.print(f"{key:8} {ref}", markup=False, highlight=False)
        for e in ns.errors:
            out.err.print(f"[red]failed[/red] {escape(e.ref)}: {escape(e.error)}")


@show.register
def _(report: StatusReport, out: Output, **options: Any) -> None:
    table = Table("namespace", "sources", "chunks", "definitions", "last ok sync",
                  "last run failures", title=f"embedder: {report.embedder}",
                  title_justify="left")
    for s in report.namespaces:
        table.add_row(escape(s.namespace), str(s.sources), str(s.chunks), str(s.definitions),
                      s.last_ok_at.strftime("%Y-%m-%d %H:%M:%S %Z") if s.last_ok_at else "never",
                      str(s.last_run_failures))
    out.out.print(table)


@show.register
def _(report: ReembedReport, out: Output, **options: Any) -> None:
    if not report.changed:
        out.err.print(f"the knowledge base already uses {escape(report.embedder)}; nothing to do")
        return
    out.err.print(f"[green]re-embedded[/green] {report.chunks} chunks: {report.previous} → "
                  f"{escape(report.embedder)} ({report.embedded} sent to the provider, "
                  f"{report.cache_hits} from cache) in {report.seconds:.1f}s")


def query_json(result: QueryResult) -> dict[str, Any]:
    """The stable JSON shape of a query result (``--json`` / ``--format json``)."""
    return {
        "question": result.question,
        "namespace": result.namespace,
        "mode": result.mode,
        "embedder": result.embedder,
        "elapsedMs": result.elapsed_ms,
        "results": [
            {
                "rank": h.rank, "score": h.score, "title": h.title, "url": h.url,
                "citation": h.citation, "anchor": h.anchor,
                "headingPath": list(h.heading_path), "text": h.text,
                "sourceRef": h.source_ref, "textScore": h.text_score,
                "vectorScore": h.vector_score, "metadata": h.metadata,
            }
            for h in result.hits
        ],
        "sources": [{"citation": s.citation, "title": s.title, "passages": s.passages}
                    for s in source_parts(result.hits)],
    }
