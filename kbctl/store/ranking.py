"""Retrieval SQL: the knowledge base's lexical top-k, cosine over pgvector, and their
fusion. The lexical side (tokens, postings, BM25) is ``kbctl.store.lexical``'s.

Large namespaces: each query lexeme contributes at most ``lexical.LEXEME_CANDIDATES``
postings, read in impact order from an index, before exact BM25 rescoring. With a metadata
filter the cap counts only postings whose chunk passes the filter (the index walk goes on
past the ones that do not), so a filtered top-k is never under-filled.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from . import lexical

# Hybrid search fuses this many candidates per requested result from each side (at least
# MIN_CANDIDATES): enough for the fusion to reorder, few enough to keep HNSW's ef small.
CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 20
VECTOR_CANDIDATES = 100  # memory search's candidate pool
# Namespaces up to this many chunks get an exact cosine scan (fast, and never under-filled).
EXACT_SCAN_LIMIT = 20000
RRF_K = 60


def _filter_sql(filters: dict[str, str], alias: str) -> tuple[sql.Composable, dict[str, Any]]:
    """``key=value`` filters on chunk metadata, as AND-ed text comparisons."""
    parts: list[sql.Composable] = []
    params: dict[str, Any] = {}
    for i, (key, value) in enumerate(sorted(filters.items())):
        params[f"fk{i}"] = key
        params[f"fv{i}"] = value
        parts.append(sql.SQL(f"{alias}.meta ->> %(fk{i})s = %(fv{i})s"))
    if not parts:
        return sql.SQL("TRUE"), params
    return sql.SQL(" AND ").join(parts), params


_RESULT_COLUMNS = """
    ch.id, ch.namespace, ch.source_ref, ch.ordinal, ch.text, ch.meta,
    s.url AS source_url, s.title AS source_title"""


def lexical_query(filters: dict[str, str]) -> tuple[sql.Composable, dict[str, Any]]:
    """Top-k by BM25, normalised r/(1+r) into 0..1."""
    cond, params = _filter_sql(filters, "fc")
    text = f"""
        WITH {lexical.kb_bm25_ctes(filtered=bool(filters))},
        top AS (SELECT chunk_id, r FROM bm ORDER BY r DESC, chunk_id LIMIT %(k)s)
        SELECT {_RESULT_COLUMNS}, {lexical.unit_sql("top.r")} AS text_score
        FROM top
        JOIN chunks ch ON ch.id = top.chunk_id
        JOIN sources s ON s.namespace = ch.namespace AND s.ref = ch.source_ref
        ORDER BY top.r DESC, ch.id"""
    return sql.SQL(text).format(filters=cond), params


def hybrid_query(filters: dict[str, str], fusion: str) -> tuple[sql.Composable, dict[str, Any]]:
    """Union of vector candidates (ids passed in as ``vids``) and lexical candidates, each
    scored on both axes, then fused.

    ``weighted``: ``w * cosine + (1 - w) * text`` with cosine clamped to 0..1.
    ``rrf``: reciprocal rank fusion, scaled so a chunk first on both lists scores 1.
    """
    cond_fc, params = _filter_sql(filters, "fc")
    text = f"""
        WITH {lexical.kb_bm25_ctes(filtered=bool(filters))},
        lex AS (SELECT chunk_id, r FROM bm ORDER BY r DESC, chunk_id LIMIT %(cand)s),
        vec AS (SELECT unnest(%(vids)s::bigint[]) AS chunk_id),
        ids AS (SELECT chunk_id FROM lex UNION SELECT chunk_id FROM vec),
        exact AS (
            SELECT ids.chunk_id,
                   coalesce(lex.r, {lexical.chunk_bm25_sql("postings", "ids.chunk_id")}, 0)
                       AS r,
                   greatest(0, 1 - (ch.embedding <=> %(qv)s::vector)) AS cos
            FROM ids
            JOIN chunks ch ON ch.id = ids.chunk_id
            LEFT JOIN lex ON lex.chunk_id = ids.chunk_id),
        ranked AS (
            SELECT chunk_id, r, cos,
                   rank() OVER (ORDER BY r DESC) AS lrank,
                   rank() OVER (ORDER BY cos DESC) AS vrank
            FROM exact),
        fused AS (
            SELECT chunk_id, {lexical.unit_sql("r")} AS text_score, cos AS vector_score,
                   CASE WHEN %(fusion)s = 'rrf'
                        THEN ((CASE WHEN r > 0 THEN 1.0 / ({RRF_K} + lrank) ELSE 0 END)
                              + 1.0 / ({RRF_K} + vrank)) * ({RRF_K} + 1) / 2.0
                        ELSE %(w)s * cos + (1 - %(w)s) * {lexical.unit_sql("r")} END AS score
            FROM ranked)
        SELECT {_RESULT_COLUMNS}, f.text_score, f.vector_score, f.score
        FROM fused f
        JOIN chunks ch ON ch.id = f.chunk_id
        JOIN sources s ON s.namespace = ch.namespace AND s.ref = ch.source_ref
        ORDER BY f.score DESC, ch.id
        LIMIT %(k)s"""
    params["fusion"] = fusion
    return sql.SQL(text).format(filters=cond_fc), params


def vector_candidates_query(filters: dict[str, str], *, exact: bool
                            ) -> tuple[sql.Composable, dict[str, Any]]:
    """Nearest chunk ids by cosine distance. ``exact`` orders by an expression the HNSW
    index cannot serve, which forces a complete scan of the namespace's rows."""
    cond, params = _filter_sql(filters, "vc")
    order = "(vc.embedding <=> %(qv)s::vector) + 0" if exact else "vc.embedding <=> %(qv)s::vector"
    text = f"""
        SELECT vc.id FROM chunks vc
        WHERE vc.namespace = %(ns)s AND vc.embedding IS NOT NULL AND {{filters}}
        ORDER BY {order} LIMIT %(cand)s"""
    return sql.SQL(text).format(filters=cond), params
