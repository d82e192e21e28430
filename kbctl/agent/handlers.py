"""The tools' implementations: each takes the call's pinned context and checked arguments
and returns (text for the model, data for programs). ``HANDLERS`` maps a tool name to its
implementation, so a new tool is one spec plus one handler plus one line there."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kbctl.memory.backend import MemoryBackend

from ..config import Settings
from ..embed.base import Embedder
from ..memory.model import SearchOptions
from ..memory.paths import MemoryScope
from ..pipeline.query import retrieve, source_parts
from ..rerank.base import Reranker
from ..results import Hit
from ..search_notes import question_notes
from ..store.knowledge import KnowledgeStore
from .arguments import ToolArgumentError
from .context import (
    MEMORY_PREAMBLE,
    PREAMBLE,
    memory_hits,
    render_context,
    sources_block,
    with_notes,
)
from .specs import (
    DEFAULT_TOP_K,
    MEMORY_APPEND,
    MEMORY_GET,
    MEMORY_SEARCH,
    SEARCH_KNOWLEDGE,
    ToolLimits,
)

Reply = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class CallContext:
    """Everything one call may use; the scope and namespace come from the session."""

    settings: Settings
    limits: ToolLimits
    store: KnowledgeStore
    embedder: Embedder | None
    memory: MemoryBackend | None
    scope: MemoryScope | None
    nonce: Callable[[], str]
    reranker: Reranker | None = None

    def memory_scope(self) -> tuple[MemoryBackend, MemoryScope]:
        assert self.memory is not None and self.scope is not None  # listed only with a scope
        return self.memory, self.scope


def clamp(name: str, value: int, low: int, high: int, notes: list[str]) -> int:
    clamped = max(low, min(high, value))
    if clamped != value:
        notes.append(f"{name} {value} clamped to {clamped} (allowed {low}..{high})")
    return clamped


def fit(hits: Sequence[Hit], max_chars: int, notes: list[str]) -> tuple[list[Hit], set[int]]:
    """Hits that fit ``max_chars``: whole passages first, the last one cut to size."""
    budget = max_chars
    out: list[Hit] = []
    cut: set[int] = set()
    for hit in hits:
        room = budget - 400  # the tag and its attributes
        if room < 200:
            break
        if len(hit.text) > room:
            hit = dataclasses.replace(hit, text=hit.text[:room] + " …")
            cut.add(len(out) + 1)
        out.append(hit)
        budget -= len(hit.text) + 400
    if cut or len(out) < len(hits):
        notes.append(f"results shortened to fit {max_chars} characters")
    return out, cut


def search_knowledge(ctx: CallContext, args: dict[str, Any]) -> Reply:
    notes: list[str] = []
    top_k = clamp("top_k", args.get("top_k", DEFAULT_TOP_K), 1, ctx.limits.max_top_k, notes)
    min_score = args.get("min_score")
    if min_score is not None:
        min_score = min(1.0, max(0.0, min_score))
    result = retrieve(ctx.store, args["query"],
                      ctx.settings.retrieval.asking(k=top_k, min_score=min_score),
                      embedder=ctx.embedder, reranker=ctx.reranker)
    hits, cut = fit(result.hits, ctx.limits.max_chars, notes)
    nonce = ctx.nonce()
    sources = source_parts(hits)
    if result.mode == "lexical":
        notes.append("lexical search: this knowledge base has no embedder")
    if result.empty:
        notes.append(f"namespace '{result.namespace}' holds no documents: nothing has been "
                     "ingested into it, so no question can find anything here")
    if result.best_below_min is not None:
        notes.append(f"no passage scored at least min_score {min_score:.2f} (the best "
                     f"scored {result.best_below_min:.2f}); a lower min_score returns it")
    notes += question_notes(result)
    data = {
        "notice": PREAMBLE, "query": result.question, "namespace": result.namespace,
        "mode": result.mode, "embedder": result.embedder, "topK": top_k,
        "passages": [{"n": i, "title": h.title, "citation": h.citation, "url": h.url,
                      "anchor": h.anchor, "headingPath": list(h.heading_path),
                      "score": h.score, "text": h.text, "truncated": i in cut}
                     for i, h in enumerate(hits, start=1)],
        "sources": [{"citation": s.citation, "title": s.title, "passages": s.passages}
                    for s in sources],
        "notes": notes,
    }
    if not hits:
        text = f"No passages found in the knowledge base for {result.question!r}."
    else:
        text = render_context(hits, nonce=nonce) + sources_block(sources, nonce)
    return with_notes(text, notes), data


def memory_search(ctx: CallContext, args: dict[str, Any]) -> Reply:
    backend, scope = ctx.memory_scope()
    notes: list[str] = []
    defaults = ctx.settings.memory
    k = clamp("max_results", args.get("max_results", defaults.max_results), 1,
              ctx.limits.max_memory_results, notes)
    result = backend.search(scope, args["query"],
                            SearchOptions.from_settings(
                                defaults, max_results=k,
                                typo_tolerance=ctx.settings.typo_tolerance,
                                thesaurus=ctx.settings.thesaurus))
    notes += result.notes
    hits = memory_hits(result)
    hits, cut = fit(hits, min(ctx.limits.max_chars,
                              defaults.max_injected_chars or ctx.limits.max_chars), notes)
    data = {
        "notice": MEMORY_PREAMBLE, "query": result.query, "mode": result.mode,
        "embedder": result.embedder, "maxResults": k,
        "results": [{"n": i, "path": h.url, "tier": m.tier, "citation": h.citation,
                     "startLine": m.start_line, "endLine": m.end_line, "score": h.score,
                     "content": h.text, "truncated": i in cut}
                    for i, (h, m) in enumerate(zip(hits, result.hits[:len(hits)], strict=True),
                                              start=1)],
        "notes": notes,
    }
    text = (render_context(hits, nonce=ctx.nonce(), preamble=MEMORY_PREAMBLE) if hits
            else f"No memory matches for {result.query!r}.")
    return with_notes(text, notes), data


def memory_get(ctx: CallContext, args: dict[str, Any]) -> Reply:
    backend, scope = ctx.memory_scope()
    notes: list[str] = []
    start = args.get("from", 1)
    if start < 1:
        raise ToolArgumentError(f"memory_get: 'from' must be 1 or more, got {start}")
    lines = clamp("lines", args.get("lines", ctx.limits.max_get_lines), 1,
                  ctx.limits.max_get_lines, notes)
    got = backend.get(scope, args["path"], from_line=start, lines=lines)
    end = got.from_line + got.line_count - 1
    body = got.text
    room = ctx.limits.max_chars - 600
    truncated = len(body) > room
    if truncated:
        # cut at a line boundary so "continue from" stays exact
        body = body[:room].rsplit("\n", 1)[0] if "\n" in body[:room] else body[:room]
        shown = body.count("\n") + 1 if body else 0
        end = got.from_line + max(shown, 1) - 1
        notes.append(f"text shortened to fit {ctx.limits.max_chars} characters")
    next_from = end + 1 if end < got.total_lines else None
    data = {"notice": MEMORY_PREAMBLE, "path": got.path, "tier": got.tier,
            "fromLine": got.from_line, "toLine": end, "totalLines": got.total_lines,
            "text": body, "nextFrom": next_from, "truncated": truncated, "notes": notes}
    cite = f"{got.path}#L{got.from_line}-L{end}" if got.line_count else got.path
    hit = Hit(rank=1, score=1.0, title=f"{got.tier} memory", url=got.path, citation=cite,
              anchor=None, heading_path=(), text=body, source_ref=got.path,
              namespace=f"memory:{scope.agent_id}")
    text = render_context([hit], nonce=ctx.nonce(), preamble=MEMORY_PREAMBLE)
    where = (f"Lines {got.from_line}-{end} of {got.total_lines}." if got.line_count
             else f"No lines from line {got.from_line}; the file has {got.total_lines}.")
    if next_from is not None:
        where += f" Continue with from={next_from}."
    return with_notes(f"{text}\n{where}\n", notes), data


def memory_append(ctx: CallContext, args: dict[str, Any]) -> Reply:
    backend, scope = ctx.memory_scope()
    written = backend.append(scope, args["path"], args["content"])
    data = {"path": written.path, "tier": written.tier, "status": written.status,
            "lines": written.lines, "chunks": written.chunks}
    return (f"{written.status} {written.path} ({written.tier} memory, "
            f"{written.lines} lines)"), data


HANDLERS: dict[str, Callable[[CallContext, dict[str, Any]], Reply]] = {
    SEARCH_KNOWLEDGE: search_knowledge,
    MEMORY_SEARCH: memory_search,
    MEMORY_GET: memory_get,
    MEMORY_APPEND: memory_append,
}
