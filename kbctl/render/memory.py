"""The formats of ``kbctl memory`` results: tables for people, one JSON document for
machines, and the spotlighted context block for prompts (``kbctl.agent.context``)."""

from __future__ import annotations

import shlex
from typing import Any

from rich.table import Table

from ..agent.context import MEMORY_PREAMBLE, memory_hits, render_context
from ..errors import InputError
from ..memory.model import (
    DeleteResult,
    Health,
    ImportReport,
    MemoryHit,
    MemoryListing,
    MemorySearchResult,
    MemoryStats,
    MemoryText,
    WriteResult,
)
from ..memory_config import CITATION_MODES
from .formats import Formats, Rendered, as_json
from .jsonable import to_jsonable
from .text import plain, shown, styled


def citations_enabled(mode: str, fmt: str) -> bool:
    """``auto`` cites for people (tables) and in JSON, not inside a prompt block."""
    if mode not in CITATION_MODES:
        raise InputError(f"--citations must be one of {', '.join(CITATION_MODES)}, "
                         f"got '{mode}'")
    if mode == "auto":
        return fmt != "context"
    return mode == "on"


# --- JSON --------------------------------------------------------------------------------


def _scope(scope: Any) -> dict[str, Any]:
    return {"agent": scope.agent_id, "user": scope.user_id}


def _hit_json(h: MemoryHit, cite: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": h.id, "path": h.path, "tier": h.tier, "score": h.score,
        "startLine": h.start_line, "endLine": h.end_line, "content": h.content,
        "createdAt": h.created_at.isoformat() if h.created_at else None,
        "backend": h.backend, "textScore": h.text_score, "vectorScore": h.vector_score,
    }
    if h.also_in:
        out["alsoIn"] = list(h.also_in)
    if h.valid_at is not None or h.invalid_at is not None:  # a graph fact and its interval
        out["current"] = h.current
        out["validAt"] = h.valid_at.isoformat() if h.valid_at else None
        out["invalidAt"] = h.invalid_at.isoformat() if h.invalid_at else None
    if cite:
        out["citation"] = h.citation
    return out


def search_json(r: MemorySearchResult, *, citations: bool = True,
                **options: Any) -> dict[str, Any]:
    return {"query": r.query, **_scope(r.scope), "mode": r.mode,
            "keywordOnly": r.keyword_only, "embedder": r.embedder, "backend": r.backend,
            "elapsedMs": r.elapsed_ms, "tracked": r.tracked, "notes": r.notes,
            "results": [_hit_json(h, citations) for h in r.hits]}


def text_json(r: MemoryText, **options: Any) -> dict[str, Any]:
    return {"path": r.path, "tier": r.tier, "fromLine": r.from_line, "lines": r.line_count,
            "totalLines": r.total_lines, "text": r.text, "backend": r.backend}


def write_json(r: WriteResult, **options: Any) -> dict[str, Any]:
    return {"path": r.path, "tier": r.tier, "status": r.status, "lines": r.lines,
            "chunks": r.chunks, "reindexed": r.reindexed, "embedded": r.embedded,
            "contentHash": r.content_hash, **({"notes": list(r.notes)} if r.notes else {})}


def listing_json(r: MemoryListing, **options: Any) -> dict[str, Any]:
    return {**_scope(r.scope), "tier": r.tier,
            "files": [{"path": f.path, "tier": f.tier, "lines": f.lines, "chunks": f.chunks,
                       "chars": f.chars, "contentHash": f.content_hash,
                       "createdAt": f.created_at.isoformat(),
                       "updatedAt": f.updated_at.isoformat()} for f in r.files],
            "total": r.total, "nextAfter": r.next_after}


def delete_json(r: DeleteResult, **options: Any) -> dict[str, Any]:
    return {"path": r.path, "tier": r.tier, "deleted": True, "chunks": r.chunks}


def health_json(r: Health, **options: Any) -> dict[str, Any]:
    out = {"kind": r.kind, "ok": r.ok, "error": r.error, "details": r.details}
    if r.settings is not None:
        out["settings"] = to_jsonable(r.settings)
    return out


def stats_json(r: MemoryStats, **options: Any) -> dict[str, Any]:
    return {**_scope(r.scope), "backend": r.backend, "mode": r.mode, "embedder": r.embedder,
            "tiers": [{"tier": t.tier, "files": t.files, "chunks": t.chunks} for t in r.tiers],
            "searchesTracked": r.searches_tracked,
            "topRecalled": [{"path": s.path, "tier": s.tier, "startLine": s.start_line,
                             "endLine": s.end_line, "citation": s.citation,
                             "recalls": s.recalls,
                             "lastRecalledAt": s.last_recalled_at.isoformat()
                             if s.last_recalled_at is not None else None}
                            for s in r.top]}


def import_json(r: ImportReport, **options: Any) -> dict[str, Any]:
    return {"directory": r.directory, "tier": r.tier, "ok": r.ok,
            "created": r.count("created"), "updated": r.count("updated"),
            "unchanged": r.count("unchanged"), "failed": len(r.errors),
            "files": [write_json(f) for f in r.files],
            "errors": [{"file": e.file, "error": e.error} for e in r.errors]}


# --- the prompt block --------------------------------------------------------------------


def memory_context(result: MemorySearchResult, *, citations: bool,
                   max_chars: int | None = None) -> str:
    """The delimited, untrusted-data block, never longer than ``max_chars``."""
    hits = memory_hits(result, citations=citations)
    if max_chars is not None:
        floor = len(render_context([], nonce="0" * 16, preamble=MEMORY_PREAMBLE))
        if max_chars < floor:
            raise InputError(f"--max-chars (memory.max_injected_chars) must be at least "
                             f"{floor}: the block's fixed preamble")
    return render_context(hits, max_chars=max_chars, preamble=MEMORY_PREAMBLE)


# --- people ------------------------------------------------------------------------------


def search_context(r: MemorySearchResult, *, citations: bool = True,
                   max_chars: int | None = None, **options: Any) -> Rendered:
    block = memory_context(r, citations=citations, max_chars=max_chars)
    if not r.hits:  # no preamble vouching for entries that are not there
        who = r.scope.agent_id + (f"/{r.scope.user_id}" if r.scope.user_id else "")
        return Rendered.stderr(styled(f"no memory matches for '{shown(who)}' ({r.mode} "
                                      "search): the context block is empty"))
    return Rendered.stdout(plain(block, keep_newlines=True))


def search_table(r: MemorySearchResult, *, citations: bool = True, **options: Any) -> Rendered:
    out = Rendered.stderr(*(styled(f"[yellow]{shown(note)}[/yellow]") for note in r.notes))
    who = r.scope.agent_id + (f"/{r.scope.user_id}" if r.scope.user_id else "")
    if not r.hits:
        return out + Rendered.stderr(styled(f"no memory matches for '{shown(who)}' "
                                            f"({r.mode} search)"))
    table = Table("#", "score", "tier", show_lines=True, expand=True)
    table.add_column("citation" if citations else "path", overflow="fold", ratio=2)
    table.add_column("content", ratio=3)
    for i, h in enumerate(r.hits, start=1):
        snippet = h.content if len(h.content) <= 400 else h.content[:400] + "…"
        table.add_row(str(i), f"{h.score:.3f}", h.tier,
                      f"[cyan]{shown(h.citation if citations else h.path)}[/cyan]",
                      shown(snippet, keep_newlines=True))
    return out + Rendered.stdout(table) + Rendered.stderr(styled(
        f"[dim]{r.mode} search of '{shown(who)}' memory, {r.elapsed_ms:.1f} ms"
        f"{', tracked' if r.tracked else ''}[/dim]"))


def text_view(r: MemoryText, **options: Any) -> Rendered:
    out = Rendered.stdout(plain(r.text, keep_newlines=True) + "\n") if r.text else Rendered()
    window = (f"lines {r.from_line}–{r.from_line + r.line_count - 1} of {r.total_lines}"
              if r.line_count else f"no line {r.from_line}: it has {r.total_lines} lines")
    return out + Rendered.stderr(styled(f"[dim]{shown(r.path)}: {window}[/dim]"))


def write_summary(r: WriteResult, **options: Any) -> Rendered:
    return Rendered.stderr(styled(
        f"[green]{shown(r.path)}[/green] ({r.tier}): {r.status}, {r.lines} lines, "
        f"{r.chunks} chunks ({r.reindexed} re-indexed)"
        + "".join(f"\n[yellow]note[/yellow]: {shown(n)}" for n in r.notes)))


def listing_table(r: MemoryListing, **options: Any) -> Rendered:
    if not r.files:
        return Rendered.stderr(styled("no memory files"))
    table = Table("path", "tier", "lines", "chunks", "updated")
    for f in r.files:
        table.add_row(shown(f.path), f.tier, str(f.lines), str(f.chunks),
                      f.updated_at.strftime("%Y-%m-%d %H:%M"))
    if r.next_after is None:
        return Rendered.stdout(table)
    return Rendered.stdout(table) + Rendered.stderr(styled(
        f"{len(r.files):,} of {r.total:,} files shown; the next page: "
        f"--after {shown(shlex.quote(r.next_after))}"))


def delete_summary(r: DeleteResult, **options: Any) -> Rendered:
    return Rendered.stderr(styled(f"deleted {shown(r.path)} ({r.tier}, {r.chunks} chunks)"))


def health_line(r: Health, **options: Any) -> Rendered:
    if r.ok:
        details = ", ".join(f"{k} {v}" for k, v in r.details.items())
        return Rendered.stdout(styled(f"{r.kind}: ok" + (f" ({shown(details)})"
                                                         if details else "")))
    return Rendered.stdout(styled(f"{r.kind}: [red]not ok[/red]: "
                                  f"{shown(r.error or 'unknown error')}"))


def stats_view(r: MemoryStats, **options: Any) -> Rendered:
    counts = ", ".join(f"{t.tier} {t.files} files / {t.chunks} chunks" for t in r.tiers)
    out = Rendered.stdout(styled(f"{r.backend} ({r.mode}, embedder {shown(r.embedder)}): "
                                 f"{counts}; {r.searches_tracked} tracked searches"))
    if r.top:
        table = Table("recalls", "tier", "citation", "last recalled",
                      title="most recalled", title_justify="left")
        for s in r.top:
            table.add_row(str(s.recalls), s.tier, shown(s.citation),
                          s.last_recalled_at.strftime("%Y-%m-%d %H:%M")
                          if s.last_recalled_at is not None else "– (by others)")
        out += Rendered.stdout(table)
    return out


def import_summary(r: ImportReport, **options: Any) -> Rendered:
    color = "green" if r.ok else "red"
    return Rendered.stderr(styled(
        f"[{color}]{shown(r.directory)}[/{color}] → {r.tier} tier: created "
        f"{r.count('created')}, updated {r.count('updated')}, unchanged "
        f"{r.count('unchanged')}, failed {len(r.errors)}"),
        *(styled(f"  [red]{shown(e.file)}[/red]: {shown(e.error)}") for e in r.errors))


SEARCH: Formats = {"table": search_table, "json": as_json(search_json),
                   "context": search_context}
TEXT: Formats = {"table": text_view, "json": as_json(text_json)}
WRITE: Formats = {"table": write_summary, "json": as_json(write_json)}
LISTING: Formats = {"table": listing_table, "json": as_json(listing_json)}
DELETE: Formats = {"table": delete_summary, "json": as_json(delete_json)}
HEALTH: Formats = {"table": health_line, "json": as_json(health_json)}
STATS: Formats = {"table": stats_view, "json": as_json(stats_json)}
IMPORT: Formats = {"table": import_summary, "json": as_json(import_json)}
