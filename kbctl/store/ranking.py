"""Retrieval SQL: the knowledge base's lexical top-k, cosine over pgvector, and their
fusion. The lexical side (tokens, postings, BM25) is ``kbctl.store.lexical``'s.

Large namespaces: each query lexeme contributes at most ``lexical.LEXEME_CANDIDATES``
postings, read in impact order from an index, before exact BM25 rescoring. With a metadata
filter the cap counts only postings whose chunk passes the filter (the index walk goes on
past the ones that do not), so a filtered top-k is never under-filled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from psycopg import sql

from . import lexical
from .records import ScoredChunk

# Hybrid search fuses this many candidates per requested result from each side (at least
# MIN_CANDIDATES): enough for the fusion to reorder, few enough to keep HNSW's ef small.
CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 20
VECTOR_CANDIDATES = 100  # memory search's candidate pool
# Namespaces up to this many chunks get an exact cosine scan (fast, and never under-filled).
EXACT_SCAN_LIMIT = 20000
# Larger ones walk the HNSW index with at least this candidate list (pgvector's default is
# 40, the whole list when 40 candidates are asked for: recall suffers; measured on the
# Python docs dev set, 100 finds what an exact scan finds).
HNSW_EF_SEARCH = 100
RRF_K = 60
# Hybrid search: a chunk's vector similarity is this share its page's (the cosine to the
# mean of the page's chunk vectors) and the rest its own (see ``hybrid_query``).
PAGE_WEIGHT = 0.4
# Hybrid search: a chunk's text side is this share its page's BM25 (the page read as one
# document) and the rest its own (see ``hybrid_query``).
PAGE_TEXT_WEIGHT = 0.3
# Hybrid results: a chunk's score is multiplied by this once per chunk of the same page
# ranked above it (see ``crowd_pages``).
PAGE_CROWDING = 0.9


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


def lexical_query(filters: dict[str, str], *, related: bool = False
                  ) -> tuple[sql.Composable, dict[str, Any]]:
    """Top-k by BM25, scored as the share of the query's ceiling (``lexical.ceiling_cte``);
    ``related``: a thesaurus rule may apply (``lexical.bm25_ctes``)."""
    cond, params = _filter_sql(filters, "fc")
    text = f"""
        WITH {lexical.kb_bm25_ctes(filtered=bool(filters), related=related)},
        top AS (SELECT chunk_id, r FROM bm ORDER BY r DESC, chunk_id LIMIT %(k)s),
        {lexical.ceiling_cte()}
        SELECT {_RESULT_COLUMNS}, {lexical.calibrated_sql("top.r", "c.r")} AS text_score
        FROM top CROSS JOIN ceiling c
        JOIN chunks ch ON ch.id = top.chunk_id
        JOIN sources s ON s.namespace = ch.namespace AND s.ref = ch.source_ref
        ORDER BY top.r DESC, ch.id"""
    return sql.SQL(text).format(filters=cond), params


def hybrid_query(filters: dict[str, str], fusion: str, *, related: bool = False
                 ) -> tuple[sql.Composable, dict[str, Any]]:
    """Union of vector candidates (ids passed in as ``vids``) and lexical candidates, each
    scored on both axes, then fused.

    The vector side of a chunk is its page's as well as its own: ``(1 - PAGE_WEIGHT) *
    cosine(question, chunk) + PAGE_WEIGHT * cosine(question, page)``, the page being the
    mean of its chunks' vectors. A section's own vector sees only its few hundred words, and
    a how-to question often matches the page's topic (``shutil``: high-level file
    operations) better than the one entry that answers it (``rmtree``). On the Python docs
    dev set (bench/bench_ranking.py) this lifted hybrid MRR@10 by 0.03 to 0.05 at every
    weight from 0.3 to 0.9.

    Its text side is its page's as well: ``(1 - PAGE_TEXT_WEIGHT) * BM25(chunk) +
    PAGE_TEXT_WEIGHT * BM25(page)``, each min-max scaled over the candidates and the mix
    scaled again, the page read as one document (``lexical.kb_page_bm25_cte``). The words
    that place a section on its topic are often in its page's other sections; on the dev
    set this lifted hybrid hit@5 from 0.929 to 0.953 and MRR@10 from 0.794 to 0.807, and
    MRR@10 rose at every weight from 0.3 to 0.8.

    ``weighted`` (the default) puts both scores on one scale before mixing them:

    - relative: BM25 and cosine each min-max scaled over the candidates, so each axis spans
      0..1 for every query and ``w`` means the same share whatever the model's cosine
      range or the query's length;
    - calibrated: both are multiplied by the query's match strength, ``w * best cosine
      (a chunk's own, without its page's) + (1 - w) * best BM25 / the query's BM25
      ceiling`` (``lexical.ceiling_cte``: the score of a chunk holding every query term
      with unbounded frequency, the words no chunk uses counted too). The ranking is
      the relative mix; the scale says how well the knowledge base answers the question
      at all, so one ``minScore`` works across queries.

    ``score = w * vector + (1 - w) * text`` holds for the reported components.
    ``rrf``: reciprocal rank fusion, scaled so a chunk first on both lists scores 1, times
    the same match strength: ranks alone gave an off-topic question's first result 0.9,
    so no ``minScore`` could tell it from an answer.

    Returns up to ``%(pool)s`` rows, best first, for ``crowd_pages`` to cut to k.
    """
    cond_fc, params = _filter_sql(filters, "fc")
    text = f"""
        WITH {lexical.kb_bm25_ctes(filtered=bool(filters), related=related)},
        lex AS (SELECT chunk_id, r FROM bm ORDER BY r DESC, chunk_id LIMIT %(cand)s),
        vec AS (SELECT unnest(%(vids)s::bigint[]) AS chunk_id),
        ids AS (SELECT chunk_id FROM lex UNION SELECT chunk_id FROM vec),
        closeness AS (
            SELECT ids.chunk_id, ch.source_ref,
                   coalesce(lex.r, {lexical.chunk_bm25_sql("postings", "ids.chunk_id",
                                                            related=related)}, 0) AS r,
                   1 - (ch.embedding <=> %(qv)s::vector) AS own,
                   1 - (coalesce(page.embedding, ch.embedding) <=> %(qv)s::vector) AS page
            FROM ids
            JOIN chunks ch ON ch.id = ids.chunk_id
            JOIN sources page ON page.namespace = ch.namespace AND page.ref = ch.source_ref
            LEFT JOIN lex ON lex.chunk_id = ids.chunk_id),
        {lexical.kb_page_bm25_cte(pages="closeness", related=related)},
        exact AS (
            SELECT c.chunk_id, c.r, coalesce(pbm.r, 0) AS pr, greatest(0, c.own) AS own,
                   greatest(0, {1 - PAGE_WEIGHT} * c.own + {PAGE_WEIGHT} * c.page) AS cos
            FROM closeness c LEFT JOIN pbm ON pbm.source_ref = c.source_ref),
        {lexical.ceiling_cte()},
        tops AS (SELECT min(r) AS r_low, max(r) AS r_top, min(pr) AS p_low,
                        max(pr) AS p_top, min(cos) AS c_low,
                        max(cos) AS c_top, max(own) AS own_top FROM exact),
        mixed AS (
            SELECT e.chunk_id, e.r, e.cos,
                   {1 - PAGE_TEXT_WEIGHT}
                   * CASE WHEN t.r_top > t.r_low THEN (e.r - t.r_low) / (t.r_top - t.r_low)
                          WHEN t.r_top > 0 THEN 1 ELSE 0 END
                   + {PAGE_TEXT_WEIGHT}
                   * CASE WHEN t.p_top > t.p_low THEN (e.pr - t.p_low) / (t.p_top - t.p_low)
                          WHEN t.p_top > 0 THEN 1 ELSE 0 END AS text_mix
            FROM exact e CROSS JOIN tops t),
        mix_tops AS (SELECT min(text_mix) AS low, max(text_mix) AS top FROM mixed),
        scaled AS (
            SELECT m.chunk_id, m.r, m.cos,
                   CASE WHEN x.top > x.low THEN (m.text_mix - x.low) / (x.top - x.low)
                        WHEN x.top > 0 THEN 1 ELSE 0 END AS t_rel,
                   CASE WHEN t.c_top > t.c_low THEN (m.cos - t.c_low) / (t.c_top - t.c_low)
                        ELSE 1 END AS v_rel,
                   %(w)s * t.own_top + (1 - %(w)s) * CASE WHEN c.r > 0
                        THEN least(1, t.r_top / c.r) ELSE 0 END AS strength
            FROM mixed m CROSS JOIN mix_tops x CROSS JOIN tops t CROSS JOIN ceiling c),
        ranked AS (
            SELECT scaled.*,
                   rank() OVER (ORDER BY r DESC) AS lrank,
                   rank() OVER (ORDER BY cos DESC) AS vrank
            FROM scaled),
        fused AS (
            SELECT chunk_id,
                   strength * t_rel AS text_score, strength * v_rel AS vector_score,
                   strength * CASE WHEN %(fusion)s = 'rrf'
                        THEN ((CASE WHEN r > 0 THEN 1.0 / ({RRF_K} + lrank) ELSE 0 END)
                              + 1.0 / ({RRF_K} + vrank)) * ({RRF_K} + 1) / 2.0
                        ELSE %(w)s * v_rel + (1 - %(w)s) * t_rel END AS score
            FROM ranked)
        SELECT {_RESULT_COLUMNS}, f.text_score, f.vector_score, f.score
        FROM fused f
        JOIN chunks ch ON ch.id = f.chunk_id
        JOIN sources s ON s.namespace = ch.namespace AND s.ref = ch.source_ref
        ORDER BY f.score DESC, ch.id
        LIMIT %(pool)s"""
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


def crowd_pages(rows: Sequence[ScoredChunk], k: int,
                factor: float | None = None) -> list[ScoredChunk]:
    """The top ``k`` of fused ``rows`` (best first) when each chunk counts ``factor`` times
    less per chunk of its page already ranked above it; its score and both components
    are scaled alike, so ``score = w * vector + (1 - w) * text`` still holds.

    Why: a page's chunks share its topic and breadcrumb, so their embeddings sit close
    together, and a page near the question in embedding space fills the top of the list
    with its chunks, pushing out the other pages that may hold the answer. On the Python
    docs dev set (bench/bench_ranking.py) this lifts hybrid hit@5 and MRR. A page's second
    chunk still ranks above another page's first when it scores over 1/factor as much.
    The first result is never scaled. Lexical-only search does not crowd: BM25 matches
    words, not a page's topic, and measured there it only moved answering sections down.
    """
    factor = PAGE_CROWDING if factor is None else factor
    remaining = list(rows)
    picked: list[ScoredChunk] = []
    above: dict[str, int] = {}
    while remaining and len(picked) < k:
        best = max(range(len(remaining)), key=lambda i: (
            remaining[i].score * factor ** above.get(remaining[i].source_ref, 0), -i))
        row = remaining.pop(best)
        scale = factor ** above.get(row.source_ref, 0)
        above[row.source_ref] = above.get(row.source_ref, 0) + 1
        picked.append(row if scale == 1 else replace(
            row, score=row.score * scale, text_score=row.text_score * scale,
            vector_score=None if row.vector_score is None else row.vector_score * scale))
    return picked
