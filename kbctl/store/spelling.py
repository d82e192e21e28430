"""Typo tolerance for lexical search: a query word the corpus never uses is matched as the
corpus word nearest in spelling, as docs search engines do ("enviroment varable").

Without it a misspelled word matches nothing, and the question's other words (often the
generic ones: "read", "set") decide the ranking alone. Only words that match nothing are
corrected, so a query of known words ranks exactly as before.

The rules are the usual ones of typo-tolerant search (Lucene's fuzzy query, Meilisearch):

- words are compared as the index keeps them, stemmed (``enviroment`` is ``enviro``);
- a stem of ``MIN_CHARS`` characters may be one edit away from its correction, one of
  ``TWO_TYPOS_CHARS`` two (an edit inserts, deletes or replaces a letter, or swaps two
  neighbours: optimal string alignment distance). Shorter stems are left as typed: they
  have too many neighbours, and a small KB lacks many real words (``size`` is one edit
  from ``site``, and at four letters the example docs' eval questions had two such
  false corrections, at five none);
- the first letter is taken as typed, which keeps the candidates to one range of the
  vocabulary's index (Lucene's ``prefix_length`` of 1);
- the nearest candidate wins, and among equally near ones the most widely used.

Stems alone miss a one-letter slip that changes how a word stems: ``iterater`` stems to
``iterat``, two edits from ``iter`` (``iterator``). So a word is first read as typed: each
spelling one edit away from it (a letter deleted, inserted, replaced, or two neighbours
swapped, anywhere in the word) is stemmed as the index stems it, and a stem the corpus
uses is the correction; among several, the most widely used wins, then the nearest to
the typed stem. Every one-edit misspelling of a word the corpus uses is corrected that way; the
stem comparison above then catches what is further off.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from psycopg import Cursor

from .lexical import TEXT_CONFIG, Analysed, tsvector_sql

MIN_CHARS = 5
TWO_TYPOS_CHARS = 8
# A long pasted question corrects at most this many words, each against at most this many
# candidates (in index order), so a query's cost stays bounded in any vocabulary.
MAX_WORDS = 8
MAX_CANDIDATES = 20000
# Unmatched words reported, at most (a pasted paragraph may hold hundreds), out of the
# first MAX_UNKNOWN unknown words read.
MAX_UNMATCHED = 20
MAX_UNKNOWN = 200
# What a correction may be: a plain word (not an identifier, option or number).
_WORD = re.compile(r"[^\W\d_]+")
# Words longer than this are not read as typed (their variants grow with their length);
# the stem comparison still corrects them.
MAX_VARIANT_CHARS = 24
_LETTERS = "abcdefghijklmnopqrstuvwxyz"

# The query's word tokens and their stems, first seen first (PostgreSQL's own parser and
# dictionaries, so they are the lexemes ``to_tsvector`` indexes); stop words have no stem
# and are left out. Words with digits (``k8s``, ``utf8``) are words too: one no chunk uses
# is missing from the question's evidence like any other (it is never corrected).
QUERY_STEMS_SQL = """
    SELECT d.token, d.lexemes[1] AS lexeme, min(d.n) AS n
    FROM ts_debug(%(config)s::regconfig, %(text)s::text)
         WITH ORDINALITY AS d(alias, description, token, dictionaries, dictionary, lexemes, n)
    WHERE d.alias IN ('asciiword', 'word', 'numword', 'hword_asciipart', 'hword_part',
                      'hword_numpart')
      AND cardinality(d.lexemes) = 1
    GROUP BY d.token, d.lexemes[1]"""


def unknown_sql(known: str) -> str:
    """The query's stems (``token``, ``lexeme``), first seen first, for which the SQL
    condition ``known`` on ``s.lexeme`` (its corpus uses it) is false; at most
    ``MAX_UNKNOWN`` of them."""
    return f"""
        WITH s AS ({QUERY_STEMS_SQL})
        SELECT s.token, s.lexeme FROM s WHERE NOT ({known}) ORDER BY s.n
        LIMIT {MAX_UNKNOWN}"""


def candidates_sql(words: str) -> str:
    """For each stem of ``candidate_params``, its candidates as two arrays (``lexemes``,
    ``dfs``): ``words`` selects (``lexeme``, ``df``) from the corpus's vocabulary within
    the stem's range ``u.low``..``u.high`` (its first letter, on the vocabulary's index)
    and lengths ``u.shortest``..``u.longest``."""
    return f"""
        SELECT u.stem, c.lexemes, c.dfs
        FROM unnest(%(stems)s::text[], %(lows)s::text[], %(highs)s::text[],
                    %(shortest)s::int[], %(longest)s::int[])
             AS u(stem, low, high, shortest, longest)
        CROSS JOIN LATERAL (
            SELECT array_agg(v.lexeme) AS lexemes, array_agg(v.df) AS dfs
            FROM ({words} LIMIT %(most)s) v) c"""


@dataclass(frozen=True)
class Spelling:
    """What a question's words found in a corpus: ``corrected`` maps each word it never uses
    to the word it most likely meant; ``unmatched`` are the ones it never uses and that
    were not corrected (no near word, too short, or correction off), as typed."""

    corrected: dict[str, str] = field(default_factory=dict)
    unmatched: tuple[str, ...] = ()

    @property
    def lexemes(self) -> list[str]:
        """The corrections as lexemes a search adds to the question's own, once each."""
        return sorted(set(self.corrected.values()))


def check(cur: Cursor[Any], query: Analysed, *, known: str, words: str,
          params: Mapping[str, Any], correct: bool = True) -> Spelling:
    """The words of the analysed ``query`` that its corpus never uses, and what they were
    matched as; ``known`` and ``words`` describe the corpus (see ``unknown_sql`` and
    ``candidates_sql``), ``params`` binds their placeholders."""
    text = query.text
    unknown = [(token, stem) for token, stem in cur.execute(
        unknown_sql(known), {**params, "config": TEXT_CONFIG, "text": text}).fetchall()]
    # a word is read as typed when its stem is long enough, or it is itself longer than
    # MIN_CHARS ("oterator" stems to "oter"; "worse", to "wors", is a word of its own,
    # one edit from "words"), and compared by stem when its stem is long enough
    candidates = [(t, s) for t, s in unknown if correct and (
        correctable(s) or (len(t) > MIN_CHARS and correctable(t.lower())))][:MAX_WORDS]
    typed = one_edit_corrections(cur, [t for t, _ in candidates], known=known, words=words,
                                 params=params)
    to_correct = [(t, s) for t, s in candidates if correctable(s)]
    meant: dict[str, str | None] = {}
    if to_correct:
        stems = sorted({stem for _, stem in to_correct})
        rows = cur.execute(candidates_sql(words), {**params, **candidate_params(stems)}
                           ).fetchall()
        vocabulary = {stem: list(zip(lexemes or (), dfs or (), strict=True))
                      for stem, lexemes, dfs in rows}
        meant = {stem: nearest(stem, vocabulary.get(stem, ())) for stem in stems}
    corrected = {token: m for token, stem in candidates
                 if (m := typed.get(token) or meant.get(stem))}
    unmatched = dict.fromkeys([*(token.lower() for token, _ in unknown if token not in corrected),
                               *unknown_names(cur, query, known=known, params=params)])
    return Spelling(corrected, tuple(unmatched)[:MAX_UNMATCHED])


def variants(word: str) -> list[str]:
    """Every spelling one edit away from ``word`` (lowercased): a letter deleted,
    inserted or replaced, or two neighbours swapped; the word's own letters join a-z."""
    word = word.lower()
    letters = sorted(set(_LETTERS) | set(word))
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in letters}
    out |= {a + c + b for a, b in splits for c in letters}
    out.discard(word)
    return sorted(out)


def one_edit_corrections(cur: Cursor[Any], tokens: Sequence[str], *, known: str, words: str,
                         params: Mapping[str, Any]) -> dict[str, str]:
    """For each of ``tokens`` (words the corpus never uses), the corpus's stem that one of
    its one-edit spellings stems to (see the module docstring; ``known`` and ``words`` as
    for ``check``); tokens with none are left out."""
    typed = [t for t in dict.fromkeys(tokens) if len(t) <= MAX_VARIANT_CHARS]
    pairs = [(token, v) for token in typed for v in variants(token)]
    if not pairs:
        return {}
    rows = cur.execute(f"""
        SELECT DISTINCT s.token, s.lexeme FROM (
            SELECT v.token, (ts_lexize('{TEXT_CONFIG}_stem', v.word))[1] AS lexeme
            FROM unnest(%(tokens)s::text[], %(words)s::text[]) AS v(token, word)) s
        WHERE s.lexeme IS NOT NULL AND ({known})""",
                       {**params, "tokens": [t for t, _ in pairs],
                        "words": [v for _, v in pairs]}).fetchall()
    found: dict[str, list[str]] = {}
    for token, lexeme in rows:
        if _WORD.fullmatch(lexeme):
            found.setdefault(token, []).append(lexeme)
    usage = _usage(cur, sorted({x for options in found.values() if len(options) > 1
                                for x in options}), words, params)
    from rapidfuzz.distance import OSA  # here: only a question with a misspelling needs it

    return {token: min(options, key=lambda o: (-usage.get(o, 0),
                                               OSA.distance(token.lower(), o), o))
            for token, options in found.items()}


def _usage(cur: Cursor[Any], lexemes: Sequence[str], words: str,
           params: Mapping[str, Any]) -> dict[str, int]:
    """How many chunks use each of ``lexemes`` (all of them words of the corpus), read
    through the same vocabulary ranges as the stem comparison's candidates."""
    if not lexemes:
        return {}
    ranges = candidate_params(lexemes)
    ranges["shortest"] = ranges["longest"] = [len(x) for x in lexemes]
    usage: dict[str, int] = {}
    for stem, found, dfs in cur.execute(candidates_sql(words), {**params, **ranges}):
        usage.update((w, n) for w, n in zip(found or (), dfs or (), strict=True) if w == stem)
    return usage


def unknown_names(cur: Cursor[Any], query: Analysed, *, known: str,
                  params: Mapping[str, Any]) -> list[str]:
    """The query's whole identifiers (``protected_namespaces``, ``os.path.splittext``,
    ``--max-depth``) that its corpus never uses. They are never corrected, but they are
    words the question asks for and nothing holds: counted as missing, they lower its
    score. Before, only their parts were looked up, and a name the docs do not have
    scored as high as one they explain, once a part was matched by spelling."""
    if not query.names:
        return []
    rows = cur.execute(f"""
        SELECT s.lexeme FROM unnest(%(names)s::text[]) WITH ORDINALITY AS s(lexeme, n)
        WHERE NOT ({known}) ORDER BY s.n LIMIT {MAX_UNKNOWN}""",
                       {**params, "names": list(query.names)}).fetchall()
    return [lexeme for (lexeme,) in rows]


def searchable(cur: Cursor[Any], query: Analysed) -> bool:
    """Whether the analysed ``query`` has a word the index keeps: False for one made only of
    stop words ("how do I"), which finds nothing and would not say why. Asked only when a
    search found nothing, so a question that finds something pays no round trip for it."""
    if query.exact:
        return True
    row = cur.execute(f"SELECT {tsvector_sql('%(text)s::text')} <> ''::tsvector",
                      {"text": query.text}).fetchone()
    return bool(row and row[0])


def typo_budget(stem: str) -> int:
    """How many edits may separate ``stem`` from its correction."""
    if len(stem) >= TWO_TYPOS_CHARS:
        return 2
    return 1 if len(stem) >= MIN_CHARS else 0


def correctable(stem: str) -> bool:
    """Whether an unknown stem is a word worth correcting (not an identifier or number)."""
    return typo_budget(stem) > 0 and _WORD.fullmatch(stem) is not None


def candidate_params(stems: Sequence[str]) -> dict[str, Any]:
    """``candidates_sql``'s parameters for ``stems``: the index range of each one's
    first letter, and the lengths a correction within its budget may have."""
    params: dict[str, Any] = {k: [] for k in ("stems", "lows", "highs", "shortest",
                                               "longest")}
    params["most"] = MAX_CANDIDATES
    for stem in stems:
        budget = typo_budget(stem)
        params["stems"].append(stem)
        params["lows"].append(stem[0])
        params["highs"].append(chr(ord(stem[0]) + 1))
        params["shortest"].append(len(stem) - budget)
        params["longest"].append(len(stem) + budget)
    return params


def nearest(stem: str, vocabulary: Iterable[tuple[str, int]]) -> str | None:
    """The word of ``vocabulary`` (word, how many chunks use it) that ``stem`` most likely
    meant: within its typo budget, nearest first, then the most used, then the first in
    alphabetical order (so the choice never depends on the order rows arrive in)."""
    budget = typo_budget(stem)
    if budget == 0:
        return None
    usage: Mapping[str, int] = {w: n for w, n in vocabulary
                                if n > 0 and w != stem and w[:1] == stem[:1]
                                and _WORD.fullmatch(w)}
    from rapidfuzz import process  # here: only a question with a misspelling needs it
    from rapidfuzz.distance import OSA

    matches = process.extract(stem, list(usage), scorer=OSA.distance,
                              score_cutoff=budget, limit=None)
    if not matches:
        return None
    best = min(matches, key=lambda m: (m[1], -usage[m[0]], m[0]))
    return best[0]
