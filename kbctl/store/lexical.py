"""The one lexical engine: how text becomes lexemes, how postings and their statistics are
written, and BM25 as SQL. The knowledge store and agent memory both rank with it, so a
text score means the same thing in both.

Why not ``ts_rank``: it has no corpus statistics, so a word that appears in every chunk
weighs as much as a rare one. BM25 needs document frequencies and the average length,
which each user keeps beside its postings (the knowledge base per namespace, memory per
agent and user).

Tokens: PostgreSQL's English configuration (stemming, stop words) plus identifiers, which
docs are full of and which the database's parser mangles: dotted names (``os.path.splitext``),
snake_case, CamelCase and command-line options (``-m``, ``-X``, ``--max-depth``) are kept
whole (exact lexemes, options case-sensitive) AND split into their parts (stemmed like any
word); so are words joined by slashes ("read/write", "switch/case"), which the database's
parser reads as one file path. ``analyse`` does this in Python, the same way for what is
indexed and for queries.

Fields: a knowledge-base chunk is indexed with its page title and its heading path and
anchor besides its text, weighted (BM25F-style: a field's term frequencies are multiplied
by its weight and divided by its length against a typical one before the saturation; the
length is the body's), so a page or section named after the question ranks above one that
mentions it in passing, and a short heading that names it above a long heading path that
holds it among many other words.

Synonyms: a question's words bring in the words ``kbctl.store.thesaurus`` relates to them,
at ``RELATED_WEIGHT``; the score's ceiling counts the question's own words only.

Postings carry an ``impact`` (BM25's tf part at an estimated length), indexed so that a
query reads each lexeme's best postings first and large corpora can be pruned to
``LEXEME_CANDIDATES`` per lexeme before exact rescoring.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from psycopg import Cursor

from .thesaurus import BUILT_IN, Thesaurus

TEXT_CONFIG = "english"
K1 = 1.2
B = 0.75
# Used only to ORDER a lexeme's postings at write time; exact scores use the live average.
AVG_DL_ESTIMATE = 100.0
LEXEME_CANDIDATES = 2000
# A page's BM25 (``kb_page_bm25_cte``) counts at most this many of the question's words, the
# rarest (a question rarely has more; the common ones weigh little).
PAGE_TERMS = 64
# Field weights (BM25F): the body counts once, a title or heading term this many times more.
TITLE_WEIGHT = 1.5
HEADING_WEIGHT = 3.0
# A title's or heading path's term frequencies are normalised by its length against these
# typical lengths in lexemes (BM25F's per-field length normalisation, with ``B``): a term
# weighs more in "Packages and Crates" than in a four-level API heading path that names
# it among twenty others. Fixed, so that a posting is final when written. A heading path
# with its anchor averages 16.3 lexemes on the Python docs and 11.0 on the Rust book, a
# title 4.3 and 4.6. Measured with bench/bench_ranking.py, lexical MRR@10 on the dev set
# and its three held-out sets went from 0.711, 0.633, 0.610 and 0.636 to 0.713, 0.668,
# 0.614 and 0.638 (hit@5 unchanged), hybrid MRR@10 from 0.850, 0.750, 0.738 and 0.787 to
# 0.854, 0.761, 0.738 and 0.794, and on the Rust book lexical MRR@5 from 0.946 to 0.947.
# A heading length of 8 or 12 lifted lexical ranking more (dev hit@5 0.882) but cost
# hybrid search a held-out question and the Rust book's mistyped questions a rank; 20
# lowered a held-out set's lexical MRR. At 8, B of 0.5 or 1.0 ranked as 0.75 did, and
# titles' normalisation alone changed nothing.
TITLE_LENGTH = 4.0
HEADING_LENGTH = 16.0
# A word a thesaurus relates to the question's (``kbctl.store.thesaurus``) counts this much
# of one the question uses: a passage in the question's own words ranks first.
RELATED_WEIGHT = 0.5

# Written for speed without changing what they match (the index depends on it): each opens
# with a character or a cheap lookahead that rules most positions out before the costly part
# (Python's engine scans a leading literal fast; a leading lookbehind runs at every position).
# An option: '-' not after a word character or '-'.
_OPTION = re.compile(r"-(?<![\w-]-)-?[A-Za-z](?:[\w-]*\w)?")
# A dotted name: not after a word character or '.'.
_DOTTED = re.compile(r"[A-Za-z_](?<![\w.][A-Za-z_])(?=\w*\.[A-Za-z_])\w*(?:\.[A-Za-z_]\w*)+")
# snake_case or _private: a whole run of word characters, not after '.'.
_SNAKE = re.compile(r"(?<![\w.])(?=\w*_)(?:\w*[A-Za-z0-9]_|_+[A-Za-z0-9])\w*")
# CamelCase or HTTPServer: a word whose first letter that is not lower case is upper case.
_CAMEL = re.compile(r"\b(?=[a-z]*[A-Z])(?:[A-Za-z]*[a-z][A-Z]|[A-Z]{2,}[a-z])\w*")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Words joined by slashes ("read/write", "switch/case", "TCP/IP"), which PostgreSQL's
# parser reads as one file path: a whole such token, not part of a path or URL.
_SLASHED = re.compile(r"[A-Za-z](?<![\w/.:~-][A-Za-z])[A-Za-z]*(?:/[A-Za-z]+)+(?![\w/-]|\.\w)")
# A dotted name gives its spans of up to this many parts, and itself whole: a hostile
# ``a.a.a.…`` of p parts would otherwise give p²/2 lexemes of total size p³.
MAX_SPAN_PARTS = 4
# Longer exact lexemes are dropped: they match nothing a person types, and an index entry
# has a size limit (PostgreSQL's own parser drops words over 2047 characters).
MAX_EXACT_CHARS = 128
# Only this much of a text is indexed. A tsvector holds at most 1 MB, and a text of
# distinct words needs about twice its length in one: a chunk that is one giant line (a
# minified file in a fence, a memory line) would fail the whole write. A chunk within the
# chunker's budget is far shorter.
MAX_ANALYSED_CHARS = 256 * 1024


@dataclass(frozen=True)
class Analysed:
    """Text ready for ``to_tsvector`` (identifiers split into words) and the exact lexemes
    (whole identifiers, one per occurrence) that join the database's own."""

    text: str
    exact: tuple[str, ...]
    # the whole identifiers among ``exact`` (not a dotted name's shorter spans), once each
    names: tuple[str, ...] = ()

    @property
    def exact_text(self) -> str:
        """The exact lexemes as one space-separated string (an identifier has no space)."""
        return " ".join(self.exact)


def analyse(text: str) -> Analysed:
    """Identifier-aware tokens: see the module docstring. Pure, so index and query agree.
    Only the first ``MAX_ANALYSED_CHARS`` of ``text`` count."""
    text = text[:MAX_ANALYSED_CHARS]
    exact = [m.group(0) for m in _OPTION.finditer(text)]
    names = list(exact)

    def dotted(match: re.Match[str]) -> str:
        parts = match.group(0).split(".")
        lowered = [p.lower() for p in parts]
        names.append(".".join(lowered))
        exact.extend(".".join(lowered[i:j]) for i in range(len(parts))
                     for j in range(i + 2, min(i + MAX_SPAN_PARTS, len(parts)) + 1))
        if len(parts) > MAX_SPAN_PARTS:
            exact.append(".".join(lowered))
        return " ".join(parts)

    split = _DOTTED.sub(dotted, text)
    # a snake_case name holds a '_', a slashed word a '/': most texts need no scan for one
    snakes = [m.group(0).lower() for m in _SNAKE.finditer(split)
              if any(c.isalpha() for c in m.group(0))] if "_" in split else []
    exact.extend(snakes)
    names.extend(snakes)
    camel = [" ".join(_CAMEL_PART.findall(m.group(0))) for m in _CAMEL.finditer(split)]
    slashed = [m.group(0).replace("/", " ")
               for m in _SLASHED.finditer(text)] if "/" in text else []
    if camel or slashed:
        split = split + "\n" + " ".join([*camel, *slashed])
    return Analysed(split, tuple(e for e in exact if len(e) <= MAX_EXACT_CHARS),
                    tuple(dict.fromkeys(n for n in names if len(n) <= MAX_EXACT_CHARS)))


@dataclass(frozen=True)
class Field:
    """One indexed field of a row of ``src``: its analysed text column, its exact-lexemes
    column, its weight, whether it counts in the row's length (the body does), and for a
    field that does not, the typical length its term frequencies are normalised against
    (``None``: not normalised)."""

    text: str
    exact: str
    weight: float = 1.0
    body: bool = True
    typical_length: float | None = None


BODY = (Field("t", "x"),)


def tsvector_sql(text: str) -> str:
    """SQL turning the text expression ``text`` into stemmed lexemes without stop words."""
    return f"to_tsvector('{TEXT_CONFIG}', {text})"


def query_lexemes_cte(query: str = "%(q)s", exact: str = "%(qx)s", *,
                      related: bool = True) -> str:
    """CTE ``q`` (``lexeme``, ``qw``, ``m``, ``mlen``, ``src``): the distinct lexemes of the
    analysed query text bound at ``query`` and its exact lexemes bound at ``exact``, each
    weighing 1, and the words a thesaurus relates to them, weighing ``RELATED_WEIGHT``
    (``%(sg)s``, ``%(sm)s``, ``%(sr)s``: each member's rule, text and role, from
    ``Thesaurus.candidates``). A rule applies when every lexeme of one of its sources is
    among the question's own (a phrase needs all its words); its targets join, each a
    member ``m`` of ``mlen`` lexemes that counts only where all of them occur, and ``src``
    the question's lexemes that applied it. ``QueryTerms.params`` gives every parameter.
    ``related=False`` (no rule may apply: ``QueryTerms.params``' ``sg`` is empty) leaves the
    thesaurus out of the SQL: its CTEs, even empty, made the planner's generic plan of a
    search several times slower."""
    own = f"""q0 AS (SELECT lexeme FROM unnest({tsvector_sql(query)})
              UNION SELECT unnest(string_to_array(nullif({exact}, ''), ' ')))"""
    if not related:
        return f"""{own},
        q AS (SELECT lexeme, 1::real AS qw, lexeme AS m, 1 AS mlen, NULL::text[] AS src
              FROM q0)"""
    return f"""{own},
        sm AS (SELECT s.g, s.m, s.r, s.n,
                      array(SELECT x.lexeme FROM unnest({tsvector_sql("s.m")}) x) AS lx
               FROM unnest(%(sg)s::int[], %(sm)s::text[], %(sr)s::text[])
                    WITH ORDINALITY AS s(g, m, r, n)),
        used AS (SELECT sm.g, sm.n, sm.lx FROM sm
                 WHERE sm.r <> 't' AND cardinality(sm.lx) > 0
                   AND sm.lx <@ array(SELECT lexeme FROM q0)),
        sh AS (SELECT u.g, array_agg(DISTINCT x.lexeme) AS src
               FROM used u CROSS JOIN unnest(u.lx) AS x(lexeme) GROUP BY u.g),
        q AS (SELECT lexeme, 1::real AS qw, lexeme AS m, 1 AS mlen, NULL::text[] AS src
              FROM q0
              UNION ALL
              SELECT x.lexeme, {RELATED_WEIGHT}::real, sm.g || ':' || sm.n,
                     cardinality(sm.lx), sh.src
              FROM sm JOIN sh ON sh.g = sm.g CROSS JOIN unnest(sm.lx) AS x(lexeme)
              WHERE sm.r <> 's' AND cardinality(sm.lx) > 0
                AND NOT sm.lx <@ array(SELECT lexeme FROM q0))"""


@dataclass(frozen=True)
class QueryTerms:
    """A question analysed once for its search: its text and exact lexemes (``analysed``),
    and the rules of a thesaurus that may apply to it (``rules``: ``Thesaurus.candidates``).
    Its spelling, its synonyms and every depth of its ranking read these, not the question
    again."""

    analysed: Analysed
    rules: Mapping[str, list[Any]]

    @classmethod
    def of(cls, question: str, related: Thesaurus = BUILT_IN) -> QueryTerms:
        return cls(analyse(question), related.candidates(question))

    def params(self, also_match: Sequence[str] = (), *, rules: bool = True) -> dict[str, Any]:
        """The parameters of ``query_lexemes_cte``: ``q`` and ``qx``, ``also_match`` added
        to the question's own lexemes (typo tolerance's corrections), and the thesaurus
        groups that may apply (none with ``rules=False``: the plain search)."""
        return {"q": self.analysed.text,
                "qx": " ".join([self.analysed.exact_text, *also_match]).strip(),
                **(self.rules if rules else NO_RULES)}


# ``QueryTerms.params``' thesaurus parameters when no rule may apply.
NO_RULES: Mapping[str, list[Any]] = {"sg": [], "sm": [], "sr": []}


def related_words(cur: Cursor[Any], params: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """What a question's words (and the corrections its search adds) brought into its
    search, for saying so, its ``QueryTerms.params`` given: each applied rule's members the
    question used (joined by ", ") and the ones it added. No round trip when no rule may
    apply."""
    if not params["sg"]:
        return {}
    rows = cur.execute(f"""
        WITH {query_lexemes_cte()}
        SELECT sm.g, sm.m, sm.r,
               EXISTS (SELECT 1 FROM used u WHERE u.g = sm.g AND u.n = sm.n) AS used,
               cardinality(sm.lx) > 0 AND NOT sm.lx <@ array(SELECT lexeme FROM q0) AS adds
        FROM sm JOIN sh ON sh.g = sm.g ORDER BY sm.n""", params).fetchall()
    used: dict[int, list[str]] = {}
    added: dict[int, list[str]] = {}
    for rule, member, role, was_used, adds in rows:
        if was_used:
            used.setdefault(rule, []).append(member)
        elif role != "s" and adds:
            added.setdefault(rule, []).append(member)
    out: dict[str, tuple[str, ...]] = {}
    for rule, members in used.items():
        if added.get(rule):
            key = ", ".join(members)
            out[key] = tuple(dict.fromkeys([*out.get(key, ()), *added[rule]]))
    return out


def lexeme_ctes(keys: str, fields: Sequence[Field] = BODY) -> str:
    """CTEs ``lex`` (one row per row of ``src`` and lexeme, with its weighted term
    frequency) and ``len`` (each row's body length in lexemes), from the ``fields`` of
    ``src``; ``keys`` are the columns of ``src`` that identify a row (``"r, o"``). A field
    with a ``typical_length`` has its term frequencies divided by ``1 - B + B * its length
    / typical_length``, its length counting its words and whole identifiers."""
    cols = ", ".join(f"src.{k.strip()}" for k in keys.split(","))
    parts = []
    for i, f in enumerate(fields):
        parts.append(f"""
            SELECT {cols}, {i} AS f, {f.weight}::real AS w, {f.body} AS body, x.lexeme,
                   coalesce(array_length(x.positions, 1), 1) AS n
            FROM src, unnest({tsvector_sql(f"src.{f.text}")}) AS x""")
        parts.append(f"""
            SELECT {cols}, {i}, {f.weight}::real, {f.body}, e.lexeme, count(*)::int
            FROM src, unnest(string_to_array(nullif(src.{f.exact}, ''), ' ')) AS e(lexeme)
            GROUP BY {cols}, e.lexeme""")
    union = "\n            UNION ALL".join(parts)
    normalised = [(i, f.typical_length) for i, f in enumerate(fields)
                  if f.typical_length is not None]
    if normalised:
        field_length = f"sum(n) OVER (PARTITION BY {keys}, f)"
        cases = " ".join(f"WHEN {i} THEN 1 - {B} + {B} * {field_length} / {typical}"
                         for i, typical in normalised)
        weighted = f"SELECT *, w * n / CASE f {cases} ELSE 1 END AS wn FROM terms"
    else:
        weighted = "SELECT *, w * n AS wn FROM terms"
    return f"""
        terms AS ({union}),
        lex AS (SELECT {keys}, lexeme, sum(wn)::real AS tf FROM ({weighted}) t
                GROUP BY {keys}, lexeme),
        len AS (SELECT {keys}, coalesce(sum(n) FILTER (WHERE body), 0)::int AS dl
                FROM terms GROUP BY {keys})"""


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


def idf_sql(df: str) -> str:
    """BM25's inverse document frequency of a lexeme in ``df`` chunks; needs ``st``."""
    return f"ln(1 + (st.n - {df} + 0.5) / ({df} + 0.5))"


# Whether a thesaurus rule applied to the question (``query_lexemes_cte``'s ``sh``): the
# planner reads an uncorrelated EXISTS as a one-time filter, and skips the pass it guards.
_IF_A_RULE = "EXISTS (SELECT 1 FROM sh)"
_IF_NO_RULE = "WHERE NOT EXISTS (SELECT 1 FROM sh)"


def concept_tf_sql(rows: str, key: str = "chunk_id") -> str:
    """Per ``key`` (a chunk or page) and concept of the question, its term frequencies: of
    the question's own word (``own``) and of its related words (``rel``), a related phrase
    counting as often as its rarest word occurs, where all its words do. ``rows`` has
    ``key``, ``concept``, ``cidf``, ``qw``, ``m``, ``mlen``, ``tf`` and ``dl``."""
    return f"""
        SELECT {key}, concept, cidf, max(dl) AS dl,
               coalesce(sum(tf) FILTER (WHERE qw = 1), 0) AS own,
               coalesce(sum(tf) FILTER (WHERE qw < 1), 0) AS rel FROM (
            SELECT {key}, concept, cidf, qw, dl, tf FROM {rows} WHERE mlen = 1
            UNION ALL
            SELECT {key}, concept, cidf, qw, max(dl),
                   CASE WHEN count(*) >= mlen THEN min(tf) ELSE 0 END
            FROM {rows} WHERE mlen > 1 GROUP BY {key}, concept, cidf, qw, m, mlen) member
        GROUP BY {key}, concept, cidf"""


def saturation_sql(tf: str, dl: str, avgdl: str = "st.avgdl") -> str:
    """BM25's term-frequency part: ``tf`` saturated against a length ``dl``."""
    return f"{tf} * ({K1} + 1) / ({tf} + {K1} * (1 - {B} + {B} * {dl} / {avgdl}))"


def concept_term_sql(t: str, avgdl: str = "st.avgdl") -> str:
    """One concept's BM25 contribution from a row ``t`` of ``concept_tf_sql``: its own
    word's, or ``RELATED_WEIGHT`` of what its related words would score as that word,
    whichever is more. A passage in other words scores below one in the question's, and
    never above the question's ceiling; a passage using both is not counted twice."""
    own = saturation_sql(f"{t}.own", f"{t}.dl", avgdl)
    rel = saturation_sql(f"{t}.rel", f"{t}.dl", avgdl)
    return f"{t}.cidf * greatest({own}, {RELATED_WEIGHT} * {rel})"


def bm25_ctes(*, stats: str, df: str, postings: str, related: bool = False) -> str:
    """CTEs ``q``, ``st``, ``df``, ``dc``, ``cand``, ``bm``: raw BM25 per candidate chunk.

    ``stats`` selects one row (``n``, ``avgdl``) for the corpus the caller may search;
    ``df`` selects ``q``'s columns and ``df`` for each row of ``q``; ``postings`` selects
    (``chunk_id``, ``tf``, ``dl``) of the lexeme ``df.lexeme``, best impact first and at
    most ``%(cap)s`` of them. ``st``, ``df`` and ``dc`` are MATERIALIZED: inlined, the
    planner would recompute them once per candidate posting.

    ``related``: a thesaurus rule may apply (``QueryTerms.params``' ``sg`` is not empty). A
    related word then scores as its question word would (``dc``: the ``concept``, the
    rarest question word that applied its rule, and that word's idf ``cidf``), at
    ``RELATED_WEIGHT`` (``concept_term_sql``): a passage's score stays within the
    question's ceiling, and a common synonym of a rare word weighs as the rare word would,
    at most. Without, every lexeme is a concept of its own and one pass sums them (the
    concepts' grouping more than doubled a search's time).
    """
    simple = f"""
               SELECT c.chunk_id, sum(c.cidf * {saturation_sql("c.tf", "c.dl")}) AS r
               FROM cand c CROSS JOIN st {_IF_NO_RULE if related else ""}
               GROUP BY c.chunk_id"""
    bm = f"""
        bm AS ({simple}"""
    if related:  # the concepts' pass runs only when a rule applied (a one-time filter)
        bm += f"""
               UNION ALL
               SELECT t.chunk_id, sum({concept_term_sql("t")})
               FROM ({concept_tf_sql("cand")}) t CROSS JOIN st
               WHERE {_IF_A_RULE} AND (t.own > 0 OR t.rel > 0)
               GROUP BY t.chunk_id"""
    bm += ")"
    if related:
        concepts = f"""
            SELECT d.*, coalesce(a.lexeme, d.lexeme) AS concept,
                   {idf_sql("coalesce(a.df, d.df)::float8")} AS cidf
            FROM df d CROSS JOIN st LEFT JOIN LATERAL (
                SELECT o.lexeme, o.df FROM df o
                WHERE d.src IS NOT NULL AND o.qw = 1 AND o.lexeme = ANY(d.src)
                ORDER BY o.df, o.lexeme LIMIT 1) a ON true"""
    else:
        concepts = f"""
            SELECT d.*, d.lexeme AS concept, {idf_sql("d.df::float8")} AS cidf
            FROM df d CROSS JOIN st"""
    return f"""
        {query_lexemes_cte(related=related)},
        st AS MATERIALIZED ({stats}),
        df AS MATERIALIZED ({df}),
        dc AS MATERIALIZED ({concepts}),
        cand AS (SELECT df.concept, df.cidf, df.qw, df.m, df.mlen, c.chunk_id, c.tf, c.dl
                 FROM dc AS df CROSS JOIN LATERAL ({postings}) c
                 WHERE df.df > 0),{bm}"""


def chunk_bm25_sql(postings_table: str, chunk: str, *, related: bool = False) -> str:
    """Scalar subquery: the exact BM25 of the chunk ``chunk`` over the query's concepts
    (for a chunk that came in from the vector side and was no lexical candidate); needs
    ``bm25_ctes``' ``st`` and ``dc``, made with the same ``related``."""
    simple = f"""(
        SELECT sum(df.cidf * {saturation_sql("p.tf", "p.dl")})
        FROM dc AS df JOIN {postings_table} p ON p.chunk_id = {chunk} AND p.lexeme = df.lexeme
        CROSS JOIN st)"""
    if not related:
        return simple
    rows = f"""(SELECT {chunk} AS chunk_id, df.concept, df.cidf, df.qw, df.m, df.mlen,
                       p.tf, p.dl
                FROM dc AS df JOIN {postings_table} p
                     ON p.chunk_id = {chunk} AND p.lexeme = df.lexeme) r"""
    return f"""(CASE WHEN {_IF_A_RULE} THEN (
        SELECT sum({concept_term_sql("t")})
        FROM ({concept_tf_sql(rows)}) t CROSS JOIN st
        WHERE t.own > 0 OR t.rel > 0) ELSE {simple} END)"""


def ceiling_cte() -> str:
    """CTE ``ceiling`` (``r``): the query's BM25 ceiling, the score of a chunk holding each
    of its words with unbounded frequency, ``(k1 + 1) * sum(idf)``. A word no chunk uses
    and no correction replaced (``%(missing)s`` of them) counts at the rarest word's idf:
    a question half of whose words the corpus never uses is half answered at best. Needs
    the ``st`` and ``df`` of ``bm25_ctes``.

    ``r / ceiling`` is a text score that means the same across queries (the share of the
    question's evidence the chunk holds): on the Python docs dev set its median is 0.53
    for real questions and 0.22 for off-topic ones (``r/(1+r)``: 0.96 and 0.92)."""
    return f"""
        ceiling AS (
            SELECT ({K1} + 1) * (
                (SELECT coalesce(sum({idf_sql("df.df")}), 0) FROM df CROSS JOIN st
                 WHERE df.df > 0 AND df.qw = 1)
                + %(missing)s * (SELECT {idf_sql("0")} FROM st)) AS r)"""


def calibrated_sql(r: str, ceiling: str) -> str:
    """A raw BM25 score as its share of the query's ceiling, in 0..1."""
    return f"CASE WHEN {ceiling} > 0 THEN least(1, ({r}) / {ceiling}) ELSE 0 END"


# --- the knowledge base's corpus: ``postings`` per namespace, with ``lexeme_stats`` (document
# frequencies) and ``namespace_stats`` (chunk and page counts, total length) kept in step;
# ``page_postings`` (a page's term frequencies, its chunks' summed) and each page's length
# (``sources.lexeme_count``) beside them ----------------------------------------------------

class DeferredIndex(NamedTuple):
    """An index a first load builds once at its end: its table, and the statements that
    make and drop it."""

    table: str
    create: str
    drop: str


def _index(name: str, table: str, columns: str) -> DeferredIndex:
    return DeferredIndex(table, f"CREATE INDEX IF NOT EXISTS {name} ON {table} {columns}",
                         f"DROP INDEX IF EXISTS {name}")


# The knowledge base's postings indexes, by name: a lexeme's best postings first (the
# search reads them in this order, covered), a chunk's postings (its replacement deletes
# them), and a page's (the page side of a search reads them; its replacement deletes them).
# A first load builds them once at its end (``Documents.defer_postings_indexes``):
# maintained row by row they were most of the database's work of an ingest (the first
# alone 6 µs of CPU a posting, against 1.3 s to build it over a million).
KB_DEFERRED_INDEXES = {
    "postings_impact": _index("postings_impact", "postings",
                              "(namespace, lexeme, impact DESC) INCLUDE (chunk_id, tf, dl)"),
    "postings_chunk": _index("postings_chunk", "postings", "(chunk_id)"),
    "page_postings_pkey": DeferredIndex(
        "page_postings", "ALTER TABLE page_postings ADD CONSTRAINT page_postings_pkey "
        "PRIMARY KEY (namespace, source_ref, lexeme)",
        "ALTER TABLE page_postings DROP CONSTRAINT IF EXISTS page_postings_pkey"),
}

KB_STATS = """
    SELECT greatest(chunk_count, 1)::float8 AS n,
           greatest(total_len::float8 / greatest(chunk_count, 1), 1) AS avgdl,
           greatest(total_len::float8 / greatest(page_count, 1), 1) AS avgpl
    FROM namespace_stats WHERE namespace = %(ns)s"""

KB_DF = """
    SELECT q.*, coalesce(ls.df, 0) AS df FROM q
    LEFT JOIN lexeme_stats ls ON ls.namespace = %(ns)s AND ls.lexeme = q.lexeme"""

# The namespace's vocabulary for typo tolerance (``spelling.check``): is the query's
# stem ``s.lexeme`` a word of it, and its words in a candidate range ``u``.
KB_KNOWN_WORD = """EXISTS (SELECT 1 FROM lexeme_stats ls WHERE ls.namespace = %(ns)s
                           AND ls.lexeme = s.lexeme AND ls.df > 0)"""
KB_WORDS = """
    SELECT ls.lexeme, ls.df FROM lexeme_stats ls
    WHERE ls.namespace = %(ns)s AND ls.lexeme >= u.low AND ls.lexeme < u.high
      AND length(ls.lexeme) BETWEEN u.shortest AND u.longest AND ls.df > 0"""


def kb_bm25_ctes(*, filtered: bool, related: bool = False) -> str:
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
    return bm25_ctes(stats=KB_STATS, df=KB_DF, postings=postings, related=related)


KB_FIELDS = (Field("t", "x"),
             Field("tt", "tx", TITLE_WEIGHT, body=False, typical_length=TITLE_LENGTH),
             Field("ht", "hx", HEADING_WEIGHT, body=False, typical_length=HEADING_LENGTH))

# An API entry's heading is its signature: ``register_unpack_format(name, extensions,
# function[, extra_args])``. The parameter list is not what the entry is named, and weighed
# as a heading its common words (``name``, ``path``, ``file``) lift every entry that takes
# them above the one a question is about. The list runs from the first ``(`` after a word
# character to the last ``)``, found in one pass each (a regex's ``\w\(.*\)`` rescans the
# rest of the heading from every ``(``: quadratic in a hostile one).
_OPENING = re.compile(r"\w\(")


def _without_parameters(heading: str) -> str:
    opening = _OPENING.search(heading)
    if opening is None:
        return heading
    start, end = opening.start() + 1, heading.rfind(")")
    return heading[:start] + heading[end + 1:] if end > start else heading


def heading_field(path: Any, anchor: Any) -> str:
    """The heading field's text: the heading path without signatures' parameter lists (the
    chunk's text keeps them, as body), and the anchor (the id a docs generator gives an
    API entry, ``dict.setdefault``)."""
    headings = [_without_parameters(h) for h in path if isinstance(h, str)] if isinstance(
        path, list) else []
    return " ".join(headings) + (f" {anchor}" if isinstance(anchor, str) else "")


def kb_field_arrays(texts: Sequence[str], metas: Sequence[Mapping[str, Any]]
                    ) -> dict[str, list[str]]:
    """The per-chunk parameters of ``KB_FIELDS`` (``t``, ``x``, ``tt``, ``tx``, ``ht``,
    ``hx``): each chunk's text, title, and ``heading_field``, from its metadata, analysed."""
    out: dict[str, list[str]] = {k: [] for k in ("t", "x", "tt", "tx", "ht", "hx")}
    # a page's chunks share its title, a section's chunks their heading: analysed once
    seen: dict[str, tuple[str, str]] = {}
    for text, meta in zip(texts, metas, strict=True):
        title = meta.get("title")
        headings = heading_field(meta.get("headingPath"), meta.get("anchor"))
        for text_key, exact_key, value, shared in (
                ("t", "x", text, False),
                ("tt", "tx", title if isinstance(title, str) else "", True),
                ("ht", "hx", headings, True)):
            fields = seen.get(value) if shared else None
            if fields is None:
                analysed = analyse(value)
                fields = (analysed.text, analysed.exact_text)
                if shared:
                    seen[value] = fields
            out[text_key].append(fields[0])
            out[exact_key].append(fields[1])
    return out


def kb_write_postings_ctes(*, chunks: str, on: str) -> str:
    """CTEs ``post`` and ``dfs``: the namespace's postings of ``lex`` for the inserted rows
    ``chunks``, and the change of document frequencies: the ones they add, less those of
    the postings the same transaction deleted (``%(gone_lexemes)s`` and ``%(gone_counts)s``,
    from ``kb_gone_lexemes_ctes``). One write per lexeme, none where the two cancel out (a
    page's words that stay), in the lexemes' order: two writers of one namespace take
    their rows' locks in one order, and neither waits for the other in a cycle."""
    insert = insert_postings_sql("postings", {"namespace": "%(ns)s"}, chunks=chunks, on=on)
    return f"""
        post AS ({insert}),
        dfs AS ({_add_document_frequencies_sql(
            "SELECT lexeme, count(*) AS n FROM lex GROUP BY lexeme UNION ALL ")})"""


def kb_add_document_frequencies_sql() -> str:
    """The change of document frequencies of ``kb_write_postings_ctes`` when nothing is
    written: the deleted postings' alone."""
    return _add_document_frequencies_sql("")


def _add_document_frequencies_sql(added: str) -> str:
    return f"""
            INSERT INTO lexeme_stats AS s (namespace, lexeme, df)
            SELECT %(ns)s, lexeme, sum(n) FROM (
                {added}SELECT * FROM unnest(%(gone_lexemes)s::text[], %(gone_counts)s::int[])
            ) AS change (lexeme, n)
            GROUP BY lexeme HAVING sum(n) <> 0 ORDER BY lexeme
            ON CONFLICT (namespace, lexeme) DO UPDATE SET df = s.df + excluded.df"""


def kb_gone_lexemes_ctes(*, chunks: str) -> str:
    """CTEs ``p`` and ``g``: delete the postings of the deleted rows ``chunks`` (with ``id``),
    and count their lexemes (``g``: ``lexeme``, ``n``, negative), for the document
    frequencies to change once with what replaces them (``kb_write_postings_ctes``)."""
    return f"""
        p AS (DELETE FROM postings WHERE chunk_id IN (SELECT id FROM {chunks})
              RETURNING lexeme),
        g AS (SELECT lexeme, -count(*)::int AS n FROM p GROUP BY lexeme)"""


def kb_write_page_postings_ctes(*, chunks: str) -> str:
    """CTEs ``ppost`` and ``plen``: the page postings of ``lex`` (keyed by page ``r``), and
    each page's length from the inserted rows ``chunks`` (with ``source_ref`` and
    ``lexeme_count``), the pages looked up by key (a join on the namespace alone read every
    page row of it, each batch). The pages' old rows must be gone
    (``kb_delete_page_postings_cte``)."""
    return f"""
        ppost AS (
            INSERT INTO page_postings (namespace, source_ref, lexeme, tf)
            SELECT %(ns)s, lex.r, lex.lexeme, sum(lex.tf) FROM lex
            GROUP BY lex.r, lex.lexeme ORDER BY lex.r, lex.lexeme),
        plen AS (
            UPDATE sources s SET lexeme_count = x.n
            FROM (SELECT source_ref, sum(lexeme_count) AS n FROM {chunks}
                  GROUP BY source_ref) x
            WHERE s.namespace = %(ns)s AND s.ref = x.source_ref
              AND s.ref = ANY(ARRAY(SELECT DISTINCT source_ref FROM {chunks})))"""


def kb_delete_page_postings_cte(*, chunks: str) -> str:
    """CTE ``pp``: delete the page postings of the pages ``%(refs)s`` of ``%(ns)s``, when
    the deleted rows ``chunks`` (their chunks) are any: a page without chunks has none, and
    during a first load, whose pages had none, their table has no index to find them by."""
    return f"""
        pp AS (DELETE FROM page_postings
               WHERE namespace = %(ns)s AND source_ref = ANY(%(refs)s)
                 AND EXISTS (SELECT FROM {chunks}))"""


def kb_page_bm25_cte(*, pages: str, related: bool = False) -> str:
    """CTE ``pbm`` (``source_ref``, ``r``): the BM25 of each page named in the relation
    ``pages`` (a ``source_ref`` column) as one document, its term frequencies against its
    length and the average page length, weighted by the chunks' document frequencies
    (they rank terms by rarity as well, and need no page statistics of their own). Needs
    the ``st`` and ``dc`` of ``kb_bm25_ctes``, made with the same ``related``.
    MATERIALIZED: inlined, a cached generic plan (which guesses one candidate) recomputed
    every page's BM25 once per candidate, 33 ms a lexical search on the dev set, not 7.
    Only the question's ``PAGE_TERMS`` rarest words count: each is looked up once per
    page, and uncapped a question of 20,000 characters of common words took a lexical
    search for 50 results 6.6 s on the dev set's KB (1.4 s capped, 0.8 s without pages)."""
    rows = f"""(SELECT pp.source_ref, df.concept, df.cidf, df.qw, df.m, df.mlen, pp.tf,
                       pg.lexeme_count AS dl
                FROM (SELECT DISTINCT source_ref FROM {pages}) cp
                JOIN sources pg ON pg.namespace = %(ns)s AND pg.ref = cp.source_ref
                CROSS JOIN (SELECT * FROM dc WHERE dc.df > 0
                            ORDER BY dc.cidf DESC, dc.concept, dc.lexeme
                            LIMIT {PAGE_TERMS}) AS df
                JOIN page_postings pp ON pp.namespace = %(ns)s
                     AND pp.source_ref = cp.source_ref AND pp.lexeme = df.lexeme) r"""
    simple = f"""
            SELECT r.source_ref, sum(r.cidf * {saturation_sql("r.tf", "r.dl", "st.avgpl")})
                AS r
            FROM {rows} CROSS JOIN st {_IF_NO_RULE if related else ""}
            GROUP BY r.source_ref"""
    if not related:
        return f"""
        pbm AS MATERIALIZED ({simple})"""
    return f"""
        pbm AS MATERIALIZED ({simple}
            UNION ALL
            SELECT t.source_ref, sum({concept_term_sql("t", avgdl="st.avgpl")})
            FROM ({concept_tf_sql(rows, key="source_ref")}) t CROSS JOIN st
            WHERE {_IF_A_RULE} AND (t.own > 0 OR t.rel > 0)
            GROUP BY t.source_ref)"""


def kb_delete_postings_ctes(*, chunks: str) -> str:
    """CTEs ``p`` and ``d``: delete the postings of the deleted rows ``chunks`` (with ``id``)
    and take their lexemes out of the namespace's document frequencies."""
    return f"""{kb_gone_lexemes_ctes(chunks=chunks)},
        d AS (UPDATE lexeme_stats s SET df = s.df + g.n
              FROM (SELECT * FROM g ORDER BY lexeme) g
              WHERE s.namespace = %(ns)s AND s.lexeme = g.lexeme)"""
