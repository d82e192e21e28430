"""Retrieval: a question in, ranked and cited chunks out."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..config import RetrievalSettings, Settings
from ..embed.base import Embedder
from ..errors import InputError
from ..hygiene import require_clean
from ..rerank.base import Reranker
from ..results import EMPTY_NAMESPACE_HINT, MAX_QUESTION_CHARS, Hit, QueryResult
from ..sources.weburl import NOT_IN_FRAGMENT, NOT_IN_QUERY, escaped
from ..store.knowledge import KnowledgeStore
from ..store.records import ScoredChunk
from ..store.search import Query
from ..wiring import open_store, resolve_embedder, resolve_reranker
from .embedding_text import embedding_text


def citation_for(url: str, anchor: str | None) -> str:
    """``url#anchor`` when the chunk has an anchor and the url has no fragment yet; a hash
    route (``…/#/guide``, Docsify's pages) takes it as ``?id=`` as its own links do. The
    anchor is written as a URL holds it (Javadoc's ``#<init>(java.lang.String)`` as
    ``#%3Cinit%3E(java.lang.String)``): a browser decodes it to find the id, and a raw
    ``<`` or space breaks the link in markdown and chat clients."""
    if not anchor:
        return url
    if "#" not in url:
        return f"{url}#{escaped(anchor, NOT_IN_FRAGMENT)}"
    route = url.split("#", 1)[1]
    if route.startswith("/"):
        return f"{url}{'&' if '?' in route else '?'}id={escaped(anchor, NOT_IN_QUERY)}"
    return url


def retrieve(store: KnowledgeStore, question: str, settings: RetrievalSettings, *,
             embedder: Embedder | None = None, reranker: Reranker | None = None
             ) -> QueryResult:
    """Rank a namespace's chunks for ``question`` as ``settings`` say; lexical-only when
    there is no embedder.

    With a ``reranker``, the first ``settings.rerank_top`` fused candidates are re-scored
    by it and its score (0..1) becomes the result's score; ``min_score`` then applies to
    that. The result names the words matched by spelling (``typo_tolerance``), the words
    nothing uses and the synonyms the thesaurus brought in.
    """
    if not question.strip():
        raise InputError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(question):,} characters long; at most "
                         f"{MAX_QUESTION_CHARS:,}")
    require_clean("the question", question)
    started = time.perf_counter()
    qv = embedder.embed_query(question) if embedder is not None else None
    k = settings.k
    ranked = store.search(Query(
        settings.namespace, question,
        # a section's further passages give way to other sections: spare rows, same ranking
        k=max(k, settings.rerank_top) if reranker else k, filters=settings.filters,
        vector=qv, vector_weight=settings.vector_weight, fusion=settings.fusion,
        typo_tolerance=settings.typo_tolerance, thesaurus=settings.thesaurus))
    rows = ranked.hits
    if reranker is not None:
        rows = rerank(reranker, question, rows)[:k]
    kept = [r for r in rows if settings.min_score is None or r.score >= settings.min_score]
    hits = [_hit(i + 1, r) for i, r in enumerate(kept)]
    mode = "lexical" if qv is None else ("rrf" if settings.fusion == "rrf" else "hybrid")
    return QueryResult(
        question=question, namespace=settings.namespace, hits=hits, mode=mode,
        embedder=str(embedder.identity) if embedder else "none",
        elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
        reranker=str(reranker.identity) if reranker else "none",
        corrected=ranked.spelling.corrected,
        unmatched=() if ranked.empty else ranked.spelling.unmatched, empty=ranked.empty,
        related=ranked.related, searchable=ranked.searchable,
        filters=dict(settings.filters), min_score=settings.min_score,
        best_below_min=max(r.score for r in rows) if rows and not kept else None,
    )


def rerank(reranker: Reranker, question: str, rows: Sequence[ScoredChunk]
           ) -> list[ScoredChunk]:
    """Re-score ``rows`` with the cross-encoder; ties keep the fused order. It reads what
    the embedder reads: a cross-encoder's window is as small, and URLs waste it."""
    scores = reranker.score(question, [embedding_text(r.text) for r in rows])
    order = sorted(range(len(rows)), key=lambda i: -scores[i])
    return [replace(rows[i], score=scores[i], fused_score=rows[i].score) for i in order]


def _hit(rank: int, r: ScoredChunk) -> Hit:
    url = r.meta.get("url") or r.source_url
    anchor = r.meta.get("anchor")
    return Hit(
        rank=rank, score=round(r.score, 6), title=r.meta.get("title") or r.source_title,
        url=url, citation=citation_for(url, anchor), anchor=anchor,
        heading_path=tuple(r.meta.get("headingPath") or ()), text=r.text,
        source_ref=r.source_ref, namespace=r.namespace,
        metadata={k: v for k, v in r.meta.items()
                  if k not in ("url", "title", "anchor", "headingPath")},
        text_score=round(r.text_score, 6),
        vector_score=round(r.vector_score, 6) if r.vector_score is not None else None,
        fused_score=round(r.fused_score, 6) if r.fused_score is not None else None,
    )


@dataclass(frozen=True)
class SourceCitation:
    """One distinct citation and the 1-indexed passages it stands for."""

    citation: str
    title: str
    passages: list[int] = field(default_factory=list)


def source_parts(hits: Sequence[Hit]) -> list[SourceCitation]:
    """De-duplicate citations (anchor-granular), keeping first-seen order."""
    by_citation: dict[str, SourceCitation] = {}
    for i, hit in enumerate(hits, start=1):
        entry = by_citation.get(hit.citation)
        if entry is None:
            entry = by_citation[hit.citation] = SourceCitation(hit.citation, hit.title)
        entry.passages.append(i)
    return list(by_citation.values())


def query(settings: Settings, question: str, *, k: int = 5, min_score: float | None = None,
          filters: dict[str, str] | None = None) -> QueryResult:
    """Retrieve the best chunks for ``question`` from the configured namespace."""
    with open_store(settings, existing=True) as store:
        embedder = resolve_embedder(store, settings, writing=False)
        reranker = resolve_reranker(store, settings)
        require_chunks(store, settings.namespace)
        return retrieve(store, question,
                        settings.retrieval.asking(k=k, min_score=min_score, filters=filters),
                        embedder=embedder, reranker=reranker)


def require_chunks(store: KnowledgeStore, namespace: str) -> None:
    """Refuse to read a namespace that holds no chunks (bad input, exit 2): a mistyped
    ``--namespace`` answered nothing with exit 0 from query and failed every case of a
    suite with exit 1, which reads as a retrieval regression."""
    if not store.documents.has_chunks(namespace):
        raise InputError(f"namespace '{namespace}' holds no chunks (namespaces: "
                         f"{known_namespaces(store)})", hint=EMPTY_NAMESPACE_HINT)


def known_namespaces(store: KnowledgeStore) -> str:
    return ", ".join(f"'{n}'" for n in store.status.namespaces()[:20]) or "none"
