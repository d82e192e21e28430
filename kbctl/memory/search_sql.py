"""Memory search SQL: BM25 over ``memory_postings`` fused with cosine over chunk vectors.

The knowledge base's lexical engine (``kbctl.store.lexical``): the same tokens, postings
and BM25, text scores as the share of the query's BM25 ceiling (``lexical.ceiling_cte``),
hybrid ``w*cos + (1-w)*text``. The corpus is what the caller may see, so document
frequencies and lengths come from the caller's rows only and a score reveals nothing
about anyone else's notes. Every CTE that touches a table repeats the fence.
"""

from __future__ import annotations

from ..store import lexical
from .ranking import decay_sql

# The one read rule. %(agent)s and %(user)s are bound by the caller; a NULL user matches
# only the agent tier because ``user_id = NULL`` is never true.
FENCE = "{a}.agent_id = %(agent)s AND ({a}.user_id IS NULL OR {a}.user_id = %(user)s::text)"


def fence(alias: str) -> str:
    return FENCE.format(a=alias)


# The same rule for postings, one tier at a time as the ``memory_postings_tier`` index
# reads them: the agent's and the caller's own, no other user's row touched on the way.
# Fenced after a walk per agent, a search read every user's postings of its words, and
# its time told which words someone's private notes are full of.
TIER_ROWS = ("{a}.agent_id = %(agent)s AND {a}.user_id IS NULL",
             "{a}.agent_id = %(agent)s AND {a}.user_id = %(user)s::text")


def per_tier(template: str, joiner: str) -> str:
    """``template`` (a ``{tier}`` placeholder for the tier's condition on ``p``) once per
    visible tier, joined by ``joiner`` (`` + ``, `` OR ``, ``UNION ALL``)."""
    return f" {joiner} ".join(template.format(tier=t.format(a="p")) for t in TIER_ROWS)


_WORDS_OF_TIER = """(SELECT p.lexeme FROM memory_postings p
    WHERE {tier} AND p.lexeme >= u.low AND p.lexeme < u.high
      AND length(p.lexeme) BETWEEN u.shortest AND u.longest
    LIMIT %(most)s)"""
_POSTINGS_OF_TIER = """(SELECT p.chunk_id, p.tf, p.dl, p.impact FROM memory_postings p
    WHERE {tier} AND p.lexeme = df.lexeme
    ORDER BY p.impact DESC LIMIT %(cap)s)"""

# The caller's vocabulary for typo tolerance (``spelling.check``): is the query's
# stem ``s.lexeme`` a word of the visible rows, and their words in a candidate range ``u``.
KNOWN_WORD = "(" + per_tier("EXISTS (SELECT 1 FROM memory_postings p WHERE {tier} "
                            "AND p.lexeme = s.lexeme)", "OR") + ")"
# The postings are cut to the candidate limit before they are counted: a scope of many
# rows on one letter would otherwise be read whole for every word corrected.
WORDS = f"""
    SELECT w.lexeme, count(*) AS df FROM (
        {per_tier(_WORDS_OF_TIER, "UNION ALL")}
        LIMIT %(most)s) w
    GROUP BY w.lexeme"""


def _bm25_ctes(related: bool) -> str:
    """``lexical.bm25_ctes`` over the caller's visible rows: document frequencies and
    lengths count only what the fence lets through."""
    return lexical.bm25_ctes(
        related=related,
        stats=f"""
            SELECT greatest(coalesce(sum(s.chunk_count), 0), 1)::float8 AS n,
                   greatest(coalesce(sum(s.total_len), 0)::float8
                            / greatest(coalesce(sum(s.chunk_count), 0), 1), 1) AS avgdl
            FROM memory_stats s WHERE {fence("s")}""",
        df=f"""
            SELECT q.*, {per_tier("(SELECT count(*) FROM memory_postings p "
                                       "WHERE {tier} AND p.lexeme = q.lexeme)", "+")} AS df
            FROM q""",
        postings=f"""
            SELECT w.chunk_id, w.tf, w.dl FROM (
                {per_tier(_POSTINGS_OF_TIER, "UNION ALL")}) w
            ORDER BY w.impact DESC LIMIT %(cap)s""")


def _final(decay: bool, extra: str) -> str:
    """Order the scored candidates (decayed by their file's date), keep the top k, then
    read those chunks, fenced again.

    Scalar subqueries by id keep the planner from hashing the whole chunk table to
    annotate a few hundred candidates.
    """
    if decay:
        factor = decay_sql("d.file_date", "%(today)s::date", "%(half_life)s::float8")
        ranked = f"""
        dated AS MATERIALIZED (
            SELECT s.*, (SELECT fd.file_date FROM memory_chunks fd
                         WHERE fd.id = s.chunk_id) AS file_date
            FROM scored s WHERE s.base > 0),
        top AS MATERIALIZED (
            SELECT d.chunk_id, d.text_score, d.vector_score, d.base * {factor} AS score,
                   d.file_date
            FROM dated d
            ORDER BY score DESC, d.file_date DESC NULLS FIRST, d.chunk_id LIMIT %(k)s)"""
    else:
        ranked = """
        top AS MATERIALIZED (
            SELECT s.chunk_id, s.text_score, s.vector_score, s.base AS score
            FROM scored s WHERE s.base > 0 ORDER BY score DESC, s.chunk_id LIMIT %(k)s)"""
    return f""",{ranked}
        SELECT ch.id, ch.path, ch.user_id, ch.start_line, ch.end_line, ch.text,
               ch.created_at, t.text_score, t.vector_score, t.score{extra}
        FROM top t JOIN memory_chunks ch ON ch.id = t.chunk_id
        WHERE {fence("ch")}
        ORDER BY t.score DESC, {"t.file_date DESC NULLS FIRST, " if decay else ""}ch.id"""


def lexical_sql(*, decay: bool, extra: str = "", related: bool = False) -> str:
    """Keyword-only search: BM25 as its share of the query's ceiling, optionally decayed;
    ``related``: a thesaurus rule may apply (``lexical.bm25_ctes``)."""
    text = lexical.calibrated_sql("bm.r", "c.r")
    return f"""
        WITH {_bm25_ctes(related)},{lexical.ceiling_cte()},
        scored AS (SELECT chunk_id, {text} AS text_score,
                          NULL::float8 AS vector_score, {text} AS base
                   FROM bm CROSS JOIN ceiling c)
        {_final(decay, extra)}"""


def hybrid_sql(*, decay: bool, extra: str = "", related: bool = False) -> str:
    """Union of the best lexical and vector candidates, both scored exactly, then fused.

    The vector candidates come from an exact scan of the caller's scope, so a scope's
    top-k is never under-filled by rows the fence removes (an approximate index would
    post-filter).
    """
    text = lexical.calibrated_sql("exact.r", "c.r")
    return f"""
        WITH {_bm25_ctes(related)},
        lex AS MATERIALIZED (
            SELECT chunk_id, r FROM bm ORDER BY r DESC, chunk_id LIMIT %(cand)s),
        vec AS MATERIALIZED (
            SELECT vc.id AS chunk_id, vc.embedding <=> %(qv)s::vector AS dist
            FROM memory_chunks vc
            WHERE {fence("vc")} AND vc.embedding IS NOT NULL
            ORDER BY dist, vc.id LIMIT %(cand)s),
        ids AS (SELECT chunk_id FROM lex UNION SELECT chunk_id FROM vec),
        exact AS MATERIALIZED (
            SELECT ids.chunk_id,
                   coalesce(lex.r, {lexical.chunk_bm25_sql(
                       "memory_postings", "ids.chunk_id", related=related)}, 0) AS r,
                   greatest(0, 1 - coalesce(vec.dist, (
                       SELECT e.embedding <=> %(qv)s::vector FROM memory_chunks e
                       WHERE e.id = ids.chunk_id))) AS cos
            FROM ids
            LEFT JOIN lex ON lex.chunk_id = ids.chunk_id
            LEFT JOIN vec ON vec.chunk_id = ids.chunk_id),
        {lexical.ceiling_cte()},
        scored AS (SELECT chunk_id, {text} AS text_score, cos AS vector_score,
                          %(w)s * coalesce(cos, 0) + (1 - %(w)s) * {text} AS base
                   FROM exact CROSS JOIN ceiling c)
        {_final(decay, extra)}"""
