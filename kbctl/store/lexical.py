"""The one lexical engine: how text becomes lexemes, how postings and their statistics are
written, and BM25 as SQL. The knowledge store and agent memory both rank with it, so a
text score means the same thing in both.

Why not ``ts_rank``: it has no corpus statistics, so a word that appears in every chunk
weighs as much as a rare one. BM25 needs document frequencies and the average length,
which each user keeps beside its postings (the knowledge base per namespace, memory per
agent and user).

Postings carry an ``impact`` (BM25's tf part at an estimated length), indexed so that a
query reads each lexeme's best postings first and large corpora can be pruned to
``LEXEME_CANDIDATES`` per lexeme before exact rescoring.
"""

from __future__ import annotations

from collections.abc import Mapping

TEXT_CONFIG = "english"
K1 = 1.2
B = 0.75
# Used only to ORDER a lexeme's postings at write time; exact scores use the live average.
AVG_DL_ESTIMATE = 100.0
LEXEME_CANDIDATES = 2000


def tsvector_sql(text: str) -> str:
    """SQL turning the text expression ``text`` into stemmed lexemes without stop words."""
    return f"to_tsvector('{TEXT_CONFIG}', {text})"


def query_lexemes_cte(query: str = "%(q)s") -> str:
    """CTE ``q``: the distinct lexemes of the query text bound at ``query``."""
    return f"q AS (SELECT DISTINCT lexeme FROM unnest({tsvector_sql(query)}))"


def lexeme_ctes(keys: str) -> str:
    """CTEs ``lex`` (one row per row of ``src`` and lexeme, with its term frequency) and
    ``len`` (each row's length in lexemes), from ``src.tsv``; ``keys`` are the columns of
    ``src`` that identify a row (``"r, o"``)."""
    cols = ", ".join(f"src.{k.strip()}" for k in keys.split(","))
    return f"""
        lex AS (
            SELECT {cols}, x.lexeme, coalesce(array_length(x.positions, 1), 1) AS tf
            FROM src, unnest(src.tsv) AS x),
        len AS (SELECT {keys}, sum(tf)::int AS dl FROM lex GROUP BY {keys})"""


def impact_sql(tf: str, dl: str) -> str:
    """SQL expression for a posting's write-time impact (BM25's tf part, estimated length)."""
    return f"({tf})::real / (({tf}) + {K1} * (1 - {B} + {B} * ({dl}) / {AVG_DL_ESTIMATE}))"


def insert_postings_sql(table: str, scope: Mapping[str, str], *, chunks: str, on: str) -> str:
    """``INSERT`` of the postings of ``lex`` for the freshly inserted rows ``chunks`` (with
    ``id`` and ``lexeme_count``) joined ``on`` a condition; ``scope`` maps the table's
    fence columns to the values written into them."""
    columns = ", ".join(scope)
    values = ", ".join(scope.values())
    return f"""
        INSERT INTO {table} ({columns}, lexeme, chunk_id, tf, dl, impact)
        SELECT {values}, lex.lexeme, {chunks}.id, lex.tf, {chunks}.lexeme_count,
               {impact_sql("lex.tf", f"{chunks}.lexeme_count")}
        FROM lex JOIN {chunks} ON {on}"""


def bm25_term_sql(df: str, tf: str, dl: str) -> str:
    """One lexeme's BM25 contribution; needs ``st`` (``n``, ``avgdl``) in scope."""
    return (f"ln(1 + (st.n - {df} + 0.5) / ({df} + 0.5)) * {tf} * ({K1} + 1) "
            f"/ ({tf} + {K1} * (1 - {B} + {B} * {dl} / st.avgdl))")


def bm25_ctes(*, stats: str, df: str, postings: str) -> str:
    """CTEs ``q``, ``st``, ``df``, ``cand``, ``bm``: raw BM25 per candidate chunk.

    ``stats`` selects one row (``n``, ``avgdl``) for the corpus the caller may search;
    ``df`` selects (``lexeme``, ``df``) for each lexeme of ``q``; ``postings`` selects
    (``chunk_id``, ``tf``, ``dl``) of the lexeme ``df.lexeme``, best impact first and at
    most ``%(cap)s`` of them. ``st`` and ``df`` are MATERIALIZED: inlined, the planner would
    recompute them once per candidate posting.
    """
    return f"""
        {query_lexemes_cte()},
        st AS MATERIALIZED ({stats}),
        df AS MATERIALIZED ({df}),
        cand AS (SELECT df.lexeme, df.df, c.chunk_id, c.tf, c.dl
                 FROM df CROSS JOIN LATERAL ({postings}) c
                 WHERE df.df > 0),
        bm AS (SELECT c.chunk_id, sum({bm25_term_sql("c.df", "c.tf", "c.dl")}) AS r
               FROM cand c CROSS JOIN st
               GROUP BY c.chunk_id)"""


def chunk_bm25_sql(postings_table: str, chunk: str) -> str:
    """Scalar subquery: the exact BM25 of the chunk ``chunk`` over the query's lexemes
    (for a chunk that came in from the vector side and was no lexical candidate)."""
    return f"""(
        SELECT sum({bm25_term_sql("df.df", "p.tf", "p.dl")})
        FROM df JOIN {postings_table} p ON p.chunk_id = {chunk} AND p.lexeme = df.lexeme
        CROSS JOIN st)"""


def unit_sql(r: str) -> str:
    """A raw BM25 score squashed into 0..1 (r/(1+r))."""
    return f"({r}) / (1 + ({r}))"


# --- the knowledge base's corpus: ``postings`` per namespace, with ``lexeme_stats`` (document
# frequencies) and ``namespace_stats`` (chunk count and total length) kept in step ---------

KB_STATS = """
    SELECT greatest(chunk_count, 1)::float8 AS n,
           greatest(total_len::float8 / greatest(chunk_count, 1), 1) AS avgdl
    FROM namespace_stats WHERE namespace = %(ns)s"""

KB_DF = """
    SELECT q.lexeme, coalesce(ls.df, 0) AS df FROM q
    LEFT JOIN lexeme_stats ls ON ls.namespace = %(ns)s AND ls.lexeme = q.lexeme"""


def kb_bm25_ctes(*, filtered: bool) -> str:
    """``bm25_ctes`` over one namespace's postings. ``filtered`` joins each posting's chunk
    (as ``fc``) to a ``{filters}`` placeholder, so the cap counts only postings whose chunk
    passes the filter and a filtered top-k is never under-filled."""
    if filtered:
        postings = """
            SELECT p.chunk_id, p.tf, p.dl FROM postings p
            JOIN chunks fc ON fc.id = p.chunk_id
            WHERE p.namespace = %(ns)s AND p.lexeme = df.lexeme AND {filters}
            ORDER BY p.impact DESC LIMIT %(cap)s"""
    else:
        postings = """
            SELECT p.chunk_id, p.tf, p.dl FROM postings p
            WHERE p.namespace = %(ns)s AND p.lexeme = df.lexeme
            ORDER BY p.impact DESC LIMIT %(cap)s"""
    return bm25_ctes(stats=KB_STATS, df=KB_DF, postings=postings)


def kb_write_postings_ctes(*, chunks: str, on: str) -> str:
    """CTEs ``post`` and ``dfs``: the namespace's postings of ``lex`` for the inserted rows
    ``chunks``, and the document frequencies they add."""
    insert = insert_postings_sql("postings", {"namespace": "%(ns)s"}, chunks=chunks, on=on)
    return f"""
        post AS ({insert}),
        dfs AS (
            INSERT INTO lexeme_stats AS s (namespace, lexeme, df)
            SELECT %(ns)s, lexeme, count(*) FROM lex GROUP BY lexeme ORDER BY lexeme
            ON CONFLICT (namespace, lexeme) DO UPDATE SET df = s.df + excluded.df)"""


def kb_delete_postings_ctes(*, chunks: str) -> str:
    """CTEs ``p`` and ``d``: delete the postings of the deleted rows ``chunks`` (with ``id``)
    and take their lexemes out of the namespace's document frequencies."""
    return f"""
        p AS (DELETE FROM postings WHERE chunk_id IN (SELECT id FROM {chunks})
              RETURNING lexeme),
        d AS (UPDATE lexeme_stats s SET df = s.df - g.n
              FROM (SELECT lexeme, count(*) AS n FROM p GROUP BY lexeme ORDER BY lexeme) g
              WHERE s.namespace = %(ns)s AND s.lexeme = g.lexeme)"""
