"""The formats of a query result: ``table`` for people, ``json`` (the stable shape),
``context`` (a spotlighted block for an LLM prompt) and ``sources`` (one line a source)."""

from __future__ import annotations

from typing import Any

from ..pipeline.query import source_parts
from ..results import EMPTY_NAMESPACE_HINT, QueryResult
from ..search_notes import question_notes
from .formats import Formats, Rendered, as_json
from .text import filter_text, plain, shown, styled


def query_json(result: QueryResult, **options: Any) -> dict[str, Any]:
    """The stable JSON shape of a query result (``--json`` / ``--format json``)."""
    return {
        "question": result.question,
        "namespace": result.namespace,
        "mode": result.mode,
        "embedder": result.embedder,
        "reranker": result.reranker,
        "elapsedMs": result.elapsed_ms,
        "corrected": result.corrected,
        "unmatched": list(result.unmatched),
        "synonyms": {used: list(added) for used, added in result.related.items()},
        "searchable": result.searchable,
        # the namespace holds no chunk at all (not: this query found nothing)
        "namespaceEmpty": result.empty,
        "empty": result.empty,  # the same, under its former name (deprecated)
        "filters": result.filters,
        "minScore": result.min_score,
        # the best score --min-score cut (None when it cut nothing, or nothing was found)
        "bestBelowMin": (None if result.best_below_min is None
                         else round(result.best_below_min, 6)),
        # why nothing was found, as the table says it (a script saw only an empty list)
        "notes": ([] if result.hits else [nothing_found(result)]) + question_notes(result),
        "results": [
            {
                "rank": h.rank, "score": h.score, "title": h.title, "url": h.url,
                "citation": h.citation, "anchor": h.anchor,
                "headingPath": list(h.heading_path), "text": h.text,
                "sourceRef": h.source_ref, "textScore": h.text_score,
                "vectorScore": h.vector_score, "fusedScore": h.fused_score,
                "metadata": h.metadata,
            }
            for h in result.hits
        ],
        "sources": [{"citation": s.citation, "title": s.title, "passages": s.passages}
                    for s in source_parts(result.hits)],
    }


def nothing_found(result: QueryResult) -> str:
    """Why a query has no hits: an empty namespace says so, with what to do about it."""
    where = f"namespace '{shown(result.namespace)}'"
    if result.empty:
        return f"{where} holds no chunks ({EMPTY_NAMESPACE_HINT})"
    if result.filters:
        where += f" with {shown(filter_text(result.filters))}"
    if result.best_below_min is not None and result.min_score is not None:
        return (f"no result in {where} scored at least {result.min_score:.2f} (the best "
                f"scored {result.best_below_min:.2f}; {result.mode} search)")
    return f"no results in {where} ({result.mode} search)"


def query_table(result: QueryResult, **options: Any) -> Rendered:
    words = [styled(f"[dim]{shown(n)}[/dim]") for n in question_notes(result)]
    if not result.hits:
        return Rendered.stderr(styled(nothing_found(result)), *words)
    out = Rendered()
    for h in result.hits:
        where = " › ".join(h.heading_path) or h.title
        body = h.text.split("\n\n", 1)[-1] if h.heading_path else h.text
        snippet = " ".join(body.split())
        if len(snippet) > 280:
            snippet = snippet[:280].rsplit(" ", 1)[0] + " …"
        out += Rendered.stdout(
            styled(f"[bold]{h.rank}.[/bold] [green]{h.score:.3f}[/green]  "
                   f"[bold]{shown(where)}[/bold]"),
            styled(f"   [cyan]{shown(h.citation)}[/cyan]"),
            styled(f"   [dim]{shown(snippet)}[/dim]\n"))
    reranked = (f"reranked by {shown(result.reranker)}, "
                if result.reranker and result.reranker != "none" else "")
    return out + Rendered.stderr(styled(f"[dim]{result.mode} search in "
                                        f"'{shown(result.namespace)}', {reranked}"
                                        f"{result.elapsed_ms:.1f} ms[/dim]"), *words)


def query_context(result: QueryResult, **options: Any) -> Rendered:
    """The spotlighted block; nothing at all when nothing was found, so a prompt built
    from it never vouches for passages that are not there."""
    from ..agent.context import render_context  # here: the one format that needs it

    if not result.hits:
        return Rendered.stderr(styled(nothing_found(result) + ": the context block is empty"))
    return Rendered.stdout(plain(render_context(result.hits), keep_newlines=True))


def query_sources(result: QueryResult, **options: Any) -> Rendered:
    if not result.hits:  # stdout stays empty for a pipeline; a person is told why
        return Rendered.stderr(styled(nothing_found(result)))
    return Rendered.stdout(*(f"[{','.join(str(n) for n in s.passages)}] {plain(s.citation)}  "
                             f"{plain(s.title)}\n" for s in source_parts(result.hits)))


FORMATS: Formats = {
    "table": query_table,
    "json": as_json(query_json),
    "context": query_context,
    "sources": query_sources,
}
