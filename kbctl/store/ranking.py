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

# Search ranks this many candidates per requested result from each side (at least
# MIN_CANDIDATES): enough for the page's words and the fusion to reorder, few enough to
# keep HNSW's ef small.
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
# Lexical and hybrid search: a chunk's text side is this share its page's BM25 (the page
# read as one document) and the rest its own (see ``_text_side_ctes``).
PAGE_TEXT_WEIGHT = 0.3
# Search results: a chunk's score is multiplied by this once per chunk of the same page
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


def _rescaled(value: str, low: str, top: str, *, flat: str) -> str:
    """``value`` scaled from the candidates' ``low``..``top`` to 0..1; ``flat`` when every
    candidate scores alike."""
    return f"CASE WHEN {top} > {low} THEN ({value} - {low}) / ({top} - {low}) ELSE {flat} END"


def _text_side_ctes(rows: str, related: bool, *, from_zero: bool) -> str:
    """CTEs ``pbm`` to ``text_side`` (``chunk_id``, ``t_rel``, ``strength``): the text side
    of each candidate of ``rows`` (``chunk_id``, ``source_ref`` and its BM25 ``r``), for
    lexical and hybrid search alike.

    ``t_rel`` is ``(1 - PAGE_TEXT_WEIGHT) * BM25(chunk) + PAGE_TEXT_WEIGHT * BM25(page)``,
    each scaled over the candidates and the mix scaled again, the page read as one
    document (``lexical.kb_page_bm25_cte``): the words that place a section on its topic
    are often in its page's other sections. ``strength`` is the best BM25 as its share of
    the query's ceiling (``lexical.ceiling_cte``, which must come first): how well the
    knowledge base matches the question's words at all, the same for every candidate.

    The scale runs from the weakest candidate to the best (min-max), or ``from_zero`` to
    the best: lexical search's score is its text side alone, and a chunk that matches must
    not score 0; hybrid search's vector side scores every candidate, and there min-max
    ranked better (on the Python docs held-out sets, hit@5 0.02 to 0.03 higher)."""
    def flat(top: str) -> str:
        return f"CASE WHEN {top} > 0 THEN 1 ELSE 0 END"

    def low(column: str) -> str:
        return "0" if from_zero else f"min({column})"

    return f"""
        {lexical.kb_page_bm25_cte(pages=rows, related=related)},
        text_rows AS (
            SELECT c.chunk_id, c.r, coalesce(pbm.r, 0) AS pr
            FROM {rows} c LEFT JOIN pbm ON pbm.source_ref = c.source_ref),
        text_tops AS (SELECT {low("r")} AS r_low, max(r) AS r_top, {low("pr")} AS p_low,
                             max(pr) AS p_top FROM text_rows),
        text_mix AS (
            SELECT e.chunk_id,
                   {1 - PAGE_TEXT_WEIGHT} * {_rescaled("e.r", "t.r_low", "t.r_top",
                                                       flat=flat("t.r_top"))}
                   + {PAGE_TEXT_WEIGHT} * {_rescaled("e.pr", "t.p_low", "t.p_top",
                                                     flat=flat("t.p_top"))} AS mix
            FROM text_rows e CROSS JOIN text_tops t),
        text_side AS (
            SELECT m.chunk_id,
                   {_rescaled("m.mix", "x.low", "x.top", flat=flat("x.top"))} AS t_rel,
                   {lexical.calibrated_sql("t.r_top", "c.r")} AS strength
            FROM text_mix m
            CROSS JOIN (SELECT {low("mix")} AS low, max(mix) AS top FROM text_mix) x
            CROSS JOIN text_tops t CROSS JOIN ceiling c)"""


def lexical_query(filters: dict[str, str], *, related: bool = False
                  ) -> tuple[sql.Composable, dict[str, Any]]:
    """The ``%(cand)s`` best chunks by BM25, ranked by their text side (``_text_side_ctes``:
    their own BM25 and their page's, scaled from zero) and scored ``strength * t_rel``: the
    first result scores the share of the query's ceiling the best match holds, the others
    in proportion. ``related``: a thesaurus rule may apply (``lexical.bm25_ctes``).

    Why the page's words: with ``crowd_pages`` after them, on the Python docs dev set and
    its three held-out sets (bench/bench_ranking.py), lexical hit@5 went from 0.843, 0.763,
    0.700 and 0.760 to 0.874, 0.816, 0.780 and 0.760, and MRR@10 rose on every set; fewer
    answering sections reached the top 5 on the dev set (anchor@5 0.614 to 0.591), more on
    the second held-out set (0.520 to 0.600).

    Returns up to ``%(pool)s`` rows, best first, for ``crowd_pages`` to cut to k."""
    cond, params = _filter_sql(filters, "fc")
    text = f"""
        WITH {lexical.kb_bm25_ctes(filtered=bool(filters), related=related)},
        lex AS (SELECT chunk_id, r FROM bm ORDER BY r DESC, chunk_id LIMIT %(cand)s),
        cands AS (SELECT lex.chunk_id, ch.source_ref, lex.r
                  FROM lex JOIN chunks ch ON ch.id = lex.chunk_id),
        {lexical.ceiling_cte()},
        {_text_side_ctes("cands", related, from_zero=True)}
        SELECT {_RESULT_COLUMNS}, ts.strength * ts.t_rel AS text_score
        FROM text_side ts
        JOIN chunks ch ON ch.id = ts.chunk_id
        JOIN sources s ON s.namespace = ch.namespace AND s.ref = ch.source_ref
        ORDER BY text_score DESC, ch.id
        LIMIT %(pool)s"""
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

    Its text side is made as lexical search's (``_text_side_ctes``, min-max scaled), its
    page's words included: on the dev set they lifted hybrid hit@5 from 0.929 to 0.953 and
    MRR@10 from 0.794 to 0.807, and MRR@10 rose at every weight from 0.3 to 0.8.

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
        {lexical.ceiling_cte()},
        {_text_side_ctes("closeness", related, from_zero=False)},
        vector_side AS (
            SELECT chunk_id, r, greatest(0, own) AS own,
                   greatest(0, {1 - PAGE_WEIGHT} * own + {PAGE_WEIGHT} * page) AS cos
            FROM closeness),
        vector_tops AS (SELECT min(cos) AS c_low, max(cos) AS c_top, max(own) AS own_top
                        FROM vector_side),
        scaled AS (
            SELECT v.chunk_id, v.r, v.cos, ts.t_rel,
                   {_rescaled("v.cos", "t.c_low", "t.c_top", flat="1")} AS v_rel,
                   %(w)s * t.own_top + (1 - %(w)s) * ts.strength AS strength
            FROM vector_side v JOIN text_side ts ON ts.chunk_id = v.chunk_id
            CROSS JOIN vector_tops t),
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

    Why: a page's chunks share its topic, its breadcrumb and its page's share of their
    scores (the page's words, its mean vector), so a page close to the question fills the
    top of the list with its chunks, pushing out the other pages that may hold the
    answer. On the Python docs dev set (bench/bench_ranking.py) this lifts hit@5 and MRR,
    lexical (0.843 to 0.874, 0.697 to 0.711) and hybrid, at some cost in answering sections
    among the top 5 (lexical anchor@5 0.638 to 0.591). A page's second chunk still ranks
    above another page's first when it scores over 1/factor as much. The first result is
    never scaled.
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
