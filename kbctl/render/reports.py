"""People's view of the ingest, resync, status and re-embed reports (their JSON is the
report itself, camelCased)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.table import Column, Table

from ..hygiene import counted
from .formats import Formats, Rendered, as_json
from .text import plain, shown, styled

if TYPE_CHECKING:  # named for their shape only: `kbctl status` loads no ingest pipeline
    from ..embedded.server import DoctorReport
    from ..pipeline.forget import ForgetReport
    from ..pipeline.ingest import IngestReport, SourceFailure
    from ..pipeline.reembed import ReembedReport
    from ..pipeline.resync import ResyncReport
    from ..pipeline.status import StatusReport


def _columns(*headers: str) -> list[Column]:
    """Columns that wrap what does not fit instead of cutting it: a cron or CI log is 80
    columns wide, and a cut URL names no page."""
    return [Column(h, overflow="fold") for h in headers]


# Failures listed one by one for people; a crawl whose server broke fails thousands of
# pages, and a cron mail or CI log of thousands of lines hides everything else.
MAX_SHOWN_ERRORS = 20


def _shown_errors(errors: Sequence[SourceFailure]) -> tuple[Sequence[SourceFailure], str | None]:
    """The first failures to list, and a line that counts the rest by their commonest
    messages (None when every failure is listed)."""
    if len(errors) <= MAX_SHOWN_ERRORS:
        return errors, None
    rest = Counter(e.error.replace(e.ref, "…") for e in errors[MAX_SHOWN_ERRORS:])
    kinds = "; ".join(f"{n:,} × {shown(message)}" for message, n in rest.most_common(3))
    return errors[:MAX_SHOWN_ERRORS], (
        f"[red]and {rest.total():,} more failed[/red] ({kinds}"
        + ("; …" if len(rest) > 3 else "") + "); --json lists every one")


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M %Z") if moment else "never"


def ingest_summary(report: IngestReport, **options: Any) -> Rendered:
    parts = [f"added {report.added}", f"updated {report.updated}",
             f"unchanged {report.unchanged}"]
    if report.not_modified:
        parts.append(f"not modified {report.not_modified}")
    parts += [f"deleted {report.deleted}", f"failed {report.failed}"]
    color = "green" if report.ok else "red"
    out = Rendered.stderr(styled(
        f"[{color}]{shown(report.namespace)}[/{color}]: {', '.join(parts)}; "
        f"{report.chunks_written} chunks written"
        + (f", {report.embedded} embedded" if report.embedded else "")
        + f" in {report.timings.get('total', 0):.2f}s"))
    if report.dropped:
        out += Rendered.stderr(styled("dropped on purpose: " + shown(", ".join(
            f"{why} {n}" for why, n in report.dropped.items()))))
    out += Rendered.stderr(*(styled(f"[dim]{shown(note)}[/dim]") for note in report.notes))
    if report.errors:
        table = Table(*_columns("source", "error"),
                      title="failed sources", title_justify="left")
        listed, more = _shown_errors(report.errors)
        for e in listed:
            table.add_row(shown(e.ref), styled(shown(e.error) + (
                f"\n[dim]{shown(e.hint)}[/dim]" if e.hint else "")))
        out += Rendered.stderr(table)
        if more:
            out += Rendered.stderr(styled(more))
    return out


def resync_summary(report: ResyncReport, **options: Any) -> Rendered:
    t = report.totals
    verb = "planned (nothing written) for" if report.plan else "synced"
    color = "green" if report.ok else "red"
    out = Rendered.stderr(styled(
        f"[{color}]resync {verb}[/{color}] {len(report.namespaces)} namespace(s) in "
        f"{report.seconds:.1f}s: added {t['added']}, updated {t['updated']}, unchanged "
        f"{t['unchanged']}, not modified {t['notModified']}, deleted {t['deleted']}, failed "
        f"{t['failed']}; chunks written {t['chunksWritten']}, deleted {t['chunksDeleted']}; "
        f"embedded {t['embedded']}"))
    for ns in report.namespaces:
        if ns.dropped:
            out += Rendered.stderr(styled(
                f"[yellow]{shown(ns.namespace)}:[/yellow] dropped on purpose: " + shown(
                    ", ".join(f"{why} {n}" for why, n in ns.dropped.items()))))
        failures = {e.error for e in ns.errors}  # the guard's note is its failure too
        out += Rendered.stderr(*(styled(f"[yellow]{shown(ns.namespace)}:[/yellow] "
                                        f"{shown(note)}") for note in ns.notes
                                 if note not in failures))
        if report.plan:  # with several namespaces, each line names its own
            where = f"{plain(ns.namespace)} " if len(report.namespaces) > 1 else ""
            out += Rendered.stdout(*(f"{key:8} {where}{plain(ref)}\n"
                                     for key in ("added", "updated", "deleted")
                                     for ref in ns.changes[key]))
        listed, more = _shown_errors(ns.errors)
        out += Rendered.stderr(*(styled(f"[red]failed[/red] {shown(e.ref)}: {shown(e.error)}"
                                        + (f" [dim]({shown(e.hint)})[/dim]" if e.hint else ""))
                                 for e in listed))
        if more:
            out += Rendered.stderr(styled(more))
    return out


def status_table(report: StatusReport, **options: Any) -> Rendered:
    endpoint = f" at {shown(report.embedder_endpoint)}" if report.embedder_endpoint else ""
    table = Table(*_columns("namespace", "sources", "chunks", "defs", "last ok sync",
                            "failures", "generators"),
                  title=f"embedder: {shown(report.embedder)}{endpoint}", title_justify="left")
    for s in report.namespaces:
        table.add_row(shown(s.namespace), str(s.sources), str(s.chunks), str(s.definitions),
                      _when(s.last_ok_at),
                      str(s.last_run_failures), shown(", ".join(s.generators)) or "-")
    config = f" (config {shown(report.config)})" if report.config else ""
    out = Rendered.stdout(styled(f"[dim]database: {shown(report.database)}{config}[/dim]"),
                          table)
    for route in report.keys:  # where a key set in the environment would be sent
        keys = ", ".join(route.variables) if route.variables else "no key set"
        out += Rendered.stdout(styled(f"[dim]{shown(route.provider)}: {shown(keys)} → "
                                      f"{shown(route.host)}[/dim]"))
    if report.source_definitions:
        defs = Table(*_columns("namespace", "kind", "target", "private net", "last ok sync",
                               "failures"),
                     title="source definitions (resync runs these)",
                     title_justify="left")
        for d in report.source_definitions:
            options = " ".join(f"{k}={v}" for k, v in d.options.items()
                               if k != "allow_private_network")
            defs.add_row(shown(d.namespace), d.kind, styled(shown(d.target) + (
                f"\n[dim]{shown(options)}[/dim]" if options else "")),
                         "allowed" if d.allow_private_network else "",
                         _when(d.last_ok_at), str(d.last_run_failures))
        out += Rendered.stdout(defs)
        for d in report.source_definitions:  # why the last run failed, for the morning after
            if d.last_errors:
                more = d.last_run_failures - 1
                out += Rendered.stdout(styled(
                    f"[red]{d.kind} {shown(d.target)}[/red] last run: "
                    f"{shown(str(d.last_errors[0].get('error')))}"
                    + (f" [dim](and {more} more; --json lists them)[/dim]" if more else "")))
    return out


def forget_summary(report: ForgetReport, **options: Any) -> Rendered:
    pages = ("its pages kept" if report.kept_pages else
             f"{counted(report.pages_deleted, 'page')} and "
             f"{counted(report.chunks_deleted, 'chunk')} deleted")
    return Rendered.stderr(*(styled(
        f"[green]forgot[/green] {d['kind']} {shown(d['target'])} in "
        f"'{shown(report.namespace)}': resync no longer runs it") for d in report.forgotten),
        styled(f"[dim]{pages}[/dim]"))


def reembed_summary(report: ReembedReport, **options: Any) -> Rendered:
    if not report.changed:
        return Rendered.stderr(styled(f"the knowledge base already uses "
                                      f"{shown(report.embedder)}; nothing to do"))
    return Rendered.stderr(styled(
        f"[green]re-embedded[/green] {report.chunks} chunks: {shown(report.previous)} → "
        f"{shown(report.embedder)} ({report.embedded} sent to the provider, "
        f"{report.cache_hits} from cache) in {report.seconds:.1f}s"))


def doctor_summary(report: DoctorReport, **options: Any) -> Rendered:
    state = "not created yet" if not report.initialized else (
        f"running: {report.holder}" if report.holder else
        f"running (pid {report.postmaster})" if report.running else "stopped")
    lines = [f"data directory: {report.data_dir}\n", f"server: {state}\n"]
    if report.running:
        users = ", ".join(str(p) for p in report.users) or "none"
        watchdog = f"pid {report.watchdog}" if report.watchdog else "none"
        lines.append(f"users: {users}; watchdog: {watchdog}; stops "
                     f"{report.linger_seconds:g}s after its last user\n")
    out = Rendered.stdout(*lines)
    out += Rendered.stderr(*(styled(f"[green]{shown(line)}[/green]")
                             for line in report.repaired))
    out += Rendered.stderr(*(styled(f"[red]problem:[/red] {shown(problem)}")
                             for problem in report.remaining))
    if report.ok and not report.repaired:
        out += Rendered.stderr(styled("[green]nothing to repair[/green]"))
    return out


INGEST: Formats = {"table": ingest_summary, "json": as_json()}
RESYNC: Formats = {"table": resync_summary, "json": as_json()}
STATUS: Formats = {"table": status_table, "json": as_json()}
REEMBED: Formats = {"table": reembed_summary, "json": as_json()}
FORGET: Formats = {"table": forget_summary, "json": as_json()}
DOCTOR: Formats = {"table": doctor_summary, "json": as_json()}
