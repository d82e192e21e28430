"""Search: a question in, a namespace's ranked chunks out, with what the question's words
found on the way (the words corrected by spelling, the ones nothing uses, the synonyms
added, whether it has a word to search for at all). The question is analysed once
(``lexical.QueryTerms``); its spelling, its synonyms and every depth of its ranking read
that."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from . import lexical, ranking, spelling
from .db import bounded_read, failing_as
from .documents import Documents
from .records import ScoredChunk
from .thesaurus import BUILT_IN, Thesaurus
from .vectors import vector_text

#: Passages asked of the ranking per result wanted, so that results stay distinct sections.
SECTIONS_OVERFETCH = 2
#: When repeats leave fewer distinct sections than wanted, the ranking is run again this
#: many times deeper, up to this many times the results wanted and never past DEEPEST_RANK.
DEEPENING_STEP = 4
MAX_DEEPENING = 16
DEEPEST_RANK = 200


@dataclass(frozen=True)
class Query:
    """What a search asks: ``k`` distinct sections of ``namespace`` for the question
    ``text``, ranked lexically, or fused with the cosine of ``vector`` (the question's
    embedding) by ``fusion`` and ``vector_weight``; ``filters`` on the chunks' metadata;
    ``typo_tolerance`` matches a word no chunk uses as the nearest in spelling;
    ``thesaurus``: the synonyms its words bring into lexical ranking."""

    namespace: str
    text: str
    k: int = 5
    filters: Mapping[str, str] = field(default_factory=dict)
    vector: Sequence[float] | None = None
    vector_weight: float = 0.7
    fusion: str = "weighted"
    typo_tolerance: bool = True
    thesaurus: Thesaurus = BUILT_IN


@dataclass(frozen=True)
class Ranked:
    """A search's answer: the ranked sections (``hits``, best first), what the question's
    words found (``spelling``: corrected and unmatched), the synonyms used (``related``),
    whether the question has a word the index keeps (``searchable``), and whether the
    namespace holds no chunk at all (``empty``)."""

    hits: list[ScoredChunk]
    spelling: spelling.Spelling
    related: dict[str, tuple[str, ...]]
    searchable: bool
    empty: bool


class Search:
    """The searches of one connection's knowledge base."""

    def __init__(self, conn: psycopg.Connection, documents: Documents) -> None:
        self.conn = conn
        self.documents = documents

    def __call__(self, query: Query) -> Ranked:
        """Rank ``query``'s namespace for its question; the question's reads (its spelling,
        its synonyms, its ranking) share one bounded transaction."""
        terms = lexical.QueryTerms.of(query.text, query.thesaurus)
        with bounded_read(self.conn):
            found = self._spelling(query.namespace, terms.analysed, query.typo_tolerance)
            params = terms.params(found.lexemes)
            related = related_words(self.conn, params)
            # no rule applied: the plain search, its plan cached
            hits = self._sections(query, params if related else
                                  terms.params(found.lexemes, rules=False),
                                  missing=len(found.unmatched))
        empty = not hits and not self.documents.has_chunks(query.namespace)
        return Ranked(hits, found, related, empty=empty,
                      searchable=bool(hits) or empty or searchable(self.conn, terms.analysed))

    def _sections(self, query: Query, terms: Mapping[str, Any], *, missing: int
                  ) -> list[ScoredChunk]:
        """The query's ``k`` best distinct sections (``ranking.distinct_sections``): a
        section's further passages give way to other sections, so the ranking is asked
        for spare rows, in the same order."""
        wanted = query.k
        ranked_for, deepest = wanted, max(wanted, min(wanted * MAX_DEEPENING, DEEPEST_RANK))
        while True:
            fetched = self._rank(query.namespace, terms, k=ranked_for * SECTIONS_OVERFETCH,
                                 ranked_for=ranked_for, filters=dict(query.filters),
                                 query_vector=query.vector,
                                 vector_weight=query.vector_weight, fusion=query.fusion,
                                 missing=missing)
            rows = ranking.distinct_sections(fetched)[:wanted]
            # copies of one page under many URLs (versions, mirrors) can fill every spare
            # row: look deeper, a bounded number of times, rather than answer short
            if (len(rows) >= wanted or len(fetched) < ranked_for * SECTIONS_OVERFETCH
                    or ranked_for >= deepest):
                return rows
            ranked_for = min(ranked_for * DEEPENING_STEP, deepest)

    def rank(self, namespace: str, question: str, *, k: int = 5,
             filters: dict[str, str] | None = None,
             query_vector: Sequence[float] | None = None, vector_weight: float = 0.7,
             fusion: str = "weighted", thesaurus: Thesaurus = BUILT_IN) -> list[ScoredChunk]:
        """One ranking of the question's own words, passage by passage: no spelling, no
        distinct sections, no deepening (what a search runs at each depth, for measuring
        and testing the ranking itself)."""
        return self._rank(namespace, lexical.QueryTerms.of(question, thesaurus).params(),
                          k=k, filters=filters, query_vector=query_vector,
                          vector_weight=vector_weight, fusion=fusion)

    def _rank(
        self,
        namespace: str,
        terms: Mapping[str, Any],
        *,
        k: int = 5,
        filters: dict[str, str] | None = None,
        query_vector: Sequence[float] | None = None,
        vector_weight: float = 0.7,
        fusion: str = "weighted",
        missing: int = 0,
        ranked_for: int | None = None,
    ) -> list[ScoredChunk]:
        """Top-k chunks of one namespace: BM25 alone, or fused with cosine similarity.
        ``terms``: the question's lexemes and the thesaurus rules that may apply
        (``lexical.QueryTerms.params``, spelling's corrections among its lexemes);
        ``missing`` counts its words no chunk uses that nothing corrected (they lower the
        score, not the ranking). ``ranked_for``: the fusion's candidates are those of that
        many results (default ``k``), so a caller that asks for spare rows gets the same
        ranking, extended."""
        filters = filters or {}
        params: dict[str, Any] = {"ns": namespace, "k": k, "cap": lexical.LEXEME_CANDIDATES,
                                  "missing": missing, **terms}
        related = bool(params["sg"])  # a thesaurus rule may apply
        cand = max((ranked_for or k) * ranking.CANDIDATES_PER_RESULT, ranking.MIN_CANDIDATES)
        if query_vector is None:
            # one side fills the pool that hybrid search's two sides fill
            params.update(cand=2 * cand, pool=2 * cand)
            stmt, fparams = ranking.lexical_query(filters, related=related)
        else:
            params.update(cand=cand, pool=2 * cand, qv=vector_text(query_vector),
                          w=vector_weight)
            stmt, fparams = ranking.hybrid_query(filters, fusion, related=related)
        params.update(fparams)
        with failing_as("search"), bounded_read(self.conn), \
                self.conn.cursor(row_factory=dict_row) as cur:
            if query_vector is not None:
                params["vids"] = self._vector_candidates(namespace, params["qv"],
                                                         filters, params["cand"])
            # a search a thesaurus rule may apply to is planned for its question every
            # time: a cached generic plan of its concepts' CTEs, blind to the question's
            # lexemes, took 69 ms a hybrid search on the dev set, not 46; the plain
            # search's cached plan is as fast as a fresh one, and saves the planning
            rows = cur.execute(stmt, params, prepare=None if not related else False
                               ).fetchall()
        out = []
        for r in rows:
            text_score = float(r["text_score"] or 0.0)
            vector_score = r.get("vector_score")
            score = r.get("score")
            out.append(ScoredChunk(
                id=r["id"], namespace=r["namespace"], source_ref=r["source_ref"],
                ordinal=r["ordinal"], text=r["text"], meta=r["meta"],
                score=float(score) if score is not None else text_score,
                text_score=text_score,
                vector_score=float(vector_score) if vector_score is not None else None,
                source_url=r["source_url"], source_title=r["source_title"],
            ))
        return ranking.crowd_pages(out, k)

    def _spelling(self, namespace: str, analysed: lexical.Analysed, correct: bool
                  ) -> spelling.Spelling:
        """The question's words that no chunk of the namespace uses, and the lexemes they
        most likely meant (``kbctl.store.spelling``); ``correct=False`` only finds them."""
        with failing_as("search"), bounded_read(self.conn), self.conn.cursor() as cur:
            return spelling.check(
                cur, analysed, known=lexical.KB_KNOWN_WORD,
                words=lexical.KB_WORDS, params={"ns": namespace}, correct=correct)

    def _vector_candidates(self, namespace: str, qv: str, filters: dict[str, str],
                           cand: int) -> list[int]:
        """Nearest chunks by cosine, never under-filled by the namespace or filters.

        Small namespaces are scanned exactly. Large ones use HNSW with iterative scans; if
        that still returns fewer rows than asked (a selective filter), an exact scan of the
        matching rows decides, so a filtered top-k is complete whenever enough rows match.
        """
        size = self.conn.execute(
            "SELECT chunk_count FROM namespace_stats WHERE namespace = %s", (namespace,)
        ).fetchone()
        exact = size is None or size[0] <= ranking.EXACT_SCAN_LIMIT
        ids = self._vector_scan(namespace, qv, filters, cand, exact=exact)
        if not exact and len(ids) < cand:
            ids = self._vector_scan(namespace, qv, filters, cand, exact=True)
        return ids

    def _vector_scan(self, namespace: str, qv: str, filters: dict[str, str], cand: int, *,
                     exact: bool) -> list[int]:
        stmt, params = ranking.vector_candidates_query(filters, exact=exact)
        params.update(ns=namespace, qv=qv, cand=cand)
        with failing_as("vector search"), self.conn.transaction():
            if not exact:
                self.conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                ef_search = max(ranking.HNSW_EF_SEARCH, cand)
                self.conn.execute(f"SET LOCAL hnsw.ef_search = {ef_search}")
            return [r[0] for r in self.conn.execute(stmt, params).fetchall()]


def related_words(conn: psycopg.Connection, params: Mapping[str, Any]
                  ) -> dict[str, tuple[str, ...]]:
    """The synonyms a question's words bring into its search (``lexical.related_words``),
    its ``QueryTerms.params`` given."""
    with failing_as("search"), bounded_read(conn), conn.cursor() as cur:
        return lexical.related_words(cur, params)


def searchable(conn: psycopg.Connection, analysed: lexical.Analysed) -> bool:
    """Whether the analysed question has a word the index keeps (``spelling.searchable``)."""
    with failing_as("search"), conn.cursor() as cur:
        return spelling.searchable(cur, analysed)
