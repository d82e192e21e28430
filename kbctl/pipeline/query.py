"""Retrieval: a question in, ranked and cited chunks out."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..config import Settings
from ..embed.base import Embedder
from ..errors import InputError
from ..hygiene import require_clean
from ..rerank.base import DEFAULT_TOP_N, Reranker
from ..results import (
    EMPTY_NAMESPACE_HINT,
    FUSIONS,
    MAX_K,
    MAX_QUESTION_CHARS,
    MIN_K,
    Hit,
    QueryResult,
)
from ..sources.weburl import NOT_IN_FRAGMENT, NOT_IN_QUERY, escaped
from ..store.knowledge import KnowledgeStore
from ..store.records import ScoredChunk
from ..store.thesaurus import BUILT_IN, Thesaurus
from ..store.thesaurus import NONE as NO_SYNONYMS
from ..wiring import open_store, resolve_embedder, resolve_reranker
from .embedding_text import embedding_text

#: Passages asked of the store per result wanted, so that results stay distinct sections.
SECTIONS_OVERFETCH = 2
#: When repeats leave fewer distinct sections than wanted, the search is run again this many
#: times deeper, up to this many times the results wanted and never past DEEPEST_RANK.
DEEPENING_STEP = 4
MAX_DEEPENING = 16
DEEPEST_RANK = 200


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


def retrieve(
    store: KnowledgeStore,
    question: str,
    *,
    namespace: str,
    k: int = 5,
    min_score: float | None = None,
    filters: dict[str, str] | None = None,
    embedder: Embedder | None = None,
    vector_weight: float = 0.7,
    fusion: str = "weighted",
    reranker: Reranker | None = None,
    rerank_top: int = DEFAULT_TOP_N,
    typo_tolerance: bool = True,
    thesaurus: Thesaurus = BUILT_IN,
) -> QueryResult:
    """Rank a namespace's chunks for ``question``; lexical-only when there is no embedder.

    With a ``reranker``, the first ``rerank_top`` fused candidates are re-scored by it and
    its score (0..1) becomes the result's score; ``min_score`` then applies to that.
    ``typo_tolerance`` matches a word no chunk uses as the nearest one in spelling; the
    result names such words either way. ``thesaurus``: the synonyms a question's words
    bring into lexical ranking.
    """
    if not question.strip():
        raise InputError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(question):,} characters long; at most "
                         f"{MAX_QUESTION_CHARS:,}")
    require_clean("the question", question)
    if not 0.0 <= vector_weight <= 1.0:
        raise InputError(f"--vector-weight must be within 0..1, got {vector_weight}")
    if min_score is not None and not 0.0 <= min_score <= 1.0:  # scores lie in 0..1
        raise InputError(f"--min-score must be within 0..1, got {min_score}")
    if fusion not in FUSIONS:
        raise InputError(f"--fusion must be {' or '.join(map(repr, FUSIONS))}, got {fusion!r}")
    if not MIN_K <= k <= MAX_K:  # like every range: refused, not silently cut
        raise InputError(f"--top-k must be within {MIN_K}..{MAX_K}, got {k}")
    if not MIN_K <= rerank_top <= MAX_K:
        raise InputError(f"--rerank-top must be within {MIN_K}..{MAX_K}, got {rerank_top}")
    started = time.perf_counter()
    qv = embedder.embed_query(question) if embedder is not None else None
    with store.reading():  # the question's reads share one bounded transaction
        found = store.spelling(namespace, question, correct=typo_tolerance)
        related = store.related_words(question, thesaurus, found.lexemes)
        # a section's further passages give way to other sections: spare rows, same ranking
        wanted = max(k, rerank_top) if reranker else k
        ranked_for, deepest = wanted, max(wanted, min(wanted * MAX_DEEPENING, DEEPEST_RANK))
        while True:
            fetched = store.search(namespace, question, k=ranked_for * SECTIONS_OVERFETCH,
                                   ranked_for=ranked_for, filters=filters or {},
                                   query_vector=qv, vector_weight=vector_weight,
                                   fusion=fusion, also_match=found.lexemes,
                                   missing=len(found.unmatched),
                                   # no rule applied: the plain search, its plan cached
                                   thesaurus=thesaurus if related else NO_SYNONYMS)
            rows = distinct_sections(fetched)[:wanted]
            # copies of one page under many URLs (versions, mirrors) can fill every spare
            # row: look deeper, a bounded number of times, rather than answer short
            if (len(rows) >= wanted or len(fetched) < ranked_for * SECTIONS_OVERFETCH
                    or ranked_for >= deepest):
                break
            ranked_for = min(ranked_for * DEEPENING_STEP, deepest)
    if reranker is not None:
        rows = rerank(reranker, question, rows)[:k]
    kept = [r for r in rows if min_score is None or r.score >= min_score]
    hits = [_hit(i + 1, r) for i, r in enumerate(kept)]
    mode = "lexical" if qv is None else ("rrf" if fusion == "rrf" else "hybrid")
    empty = not rows and not store.has_chunks(namespace)
    return QueryResult(
        question=question, namespace=namespace, hits=hits, mode=mode,
        embedder=str(embedder.identity) if embedder else "none",
        elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
        reranker=str(reranker.identity) if reranker else "none",
        corrected=found.corrected, unmatched=() if empty else found.unmatched, empty=empty,
        related=related,
        searchable=bool(rows) or empty or store.searchable(question),
        filters=dict(filters or {}), min_score=min_score,
        best_below_min=max(r.score for r in rows) if rows and not kept else None,
    )


# A passage at least this long that another page's result already showed is a copy.
MIN_REPEATED_PASSAGE = 80


def distinct_sections(rows: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """Each cited section once, at its best passage's rank: a long section's chunks share
    one citation, and three of them in a top 5 told a reader nothing the first did while
    pushing out other sections (on the Python docs dev set, a third of lexical top 5s
    held such repeats). So is a passage another page's result already showed in full: a
    blog's index, archive, category and second pages all show a post's excerpt, under
    breadcrumbs of their own (sections of one page that say the same short thing stay:
    their headings differ; a fuller passage after an excerpt stays: it says more)."""
    seen: set[tuple[str, str | None]] = set()
    shown: list[tuple[str, str]] = []  # (passage, page) of the rows kept
    out = []
    for row in rows:
        url = row.meta.get("url") or row.source_url
        key = (url, row.meta.get("anchor"))
        body = row.text.split("\n\n", 1)[-1] if row.meta.get("headingPath") else row.text
        passage = " ".join(body.split())
        if key in seen or (len(passage) >= MIN_REPEATED_PASSAGE and any(
                page != url and passage in earlier for earlier, page in shown)):
            continue
        seen.add(key)
        shown.append((passage, url))
        out.append(row)
    return out


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


def query(
    settings: Settings,
    question: str,
    *,
    k: int = 5,
    min_score: float | None = None,
    filters: dict[str, str] | None = None,
    vector_weight: float | None = None,
    fusion: str | None = None,
) -> QueryResult:
    """Retrieve the best chunks for ``question`` from the configured namespace;
    ``vector_weight`` and ``fusion`` override the settings'."""
    with open_store(settings, existing=True) as store:
        embedder = resolve_embedder(store, settings, writing=False)
        reranker = resolve_reranker(store, settings)
        require_chunks(store, settings.namespace)
        return retrieve(
            store, question, namespace=settings.namespace, k=k, min_score=min_score,
            filters=filters, embedder=embedder,
            vector_weight=settings.vector_weight if vector_weight is None else vector_weight,
            fusion=settings.fusion if fusion is None else fusion, reranker=reranker,
            rerank_top=settings.rerank_top, typo_tolerance=settings.typo_tolerance,
            thesaurus=settings.thesaurus,
        )


def require_chunks(store: KnowledgeStore, namespace: str) -> None:
    """Refuse to read a namespace that holds no chunks (bad input, exit 2): a mistyped
    ``--namespace`` answered nothing with exit 0 from query and failed every case of a
    suite with exit 1, which reads as a retrieval regression."""
    if not store.has_chunks(namespace):
        raise InputError(f"namespace '{namespace}' holds no chunks (namespaces: "
                         f"{known_namespaces(store)})", hint=EMPTY_NAMESPACE_HINT)


def known_namespaces(store: KnowledgeStore) -> str:
    return ", ".join(f"'{n}'" for n in store.namespaces()[:20]) or "none"
