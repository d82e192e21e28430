"""The one lexical engine: the knowledge base and agent memory score a text the same way,
and that way is BM25 over the database's own lexemes."""

from __future__ import annotations

import math

import pytest

from kbctl.memory.model import SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.store import lexical
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.records import ChunkRecord, SourceRecord

TEXTS = {
    "a": "Borrowing rules: one mutable borrow or many shared borrows.",
    "b": "Cargo builds crates; cargo test runs the tests of a crate.",
    "c": "The borrow checker rejects a mutable borrow while shared borrows live.",
    "d": "Closures capture their environment by borrow, by mutable borrow or by move.",
}
QUERY = "mutable borrow checker"


def _python_bm25(store: KnowledgeStore, texts: dict[str, str], query: str) -> dict[str, float]:
    """BM25 computed here from the database's lexemes, to check the SQL against."""
    def lexemes(text: str) -> dict[str, int]:
        rows = store.conn.execute(
            f"SELECT lexeme, coalesce(array_length(positions, 1), 1) "
            f"FROM unnest({lexical.tsvector_sql('%s')})", (text,)).fetchall()
        return {lex: int(tf) for lex, tf in rows}

    docs = {ref: lexemes(text) for ref, text in texts.items()}
    n = len(docs)
    avgdl = sum(sum(d.values()) for d in docs.values()) / n
    terms = set(lexemes(query))

    def idf(df: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    # the query's ceiling: every term held with unbounded frequency (the query's words are
    # all known here: nothing counts as missing)
    ceiling = (lexical.K1 + 1) * sum(
        idf(df) for t in terms if (df := sum(1 for d in docs.values() if t in d)))
    scores = {}
    for ref, doc in docs.items():
        dl = sum(doc.values())
        r = 0.0
        for t in terms & doc.keys():
            df = sum(1 for d in docs.values() if t in d)
            tf = doc[t]
            r += (idf(df) * tf * (lexical.K1 + 1)
                  / (tf + lexical.K1 * (1 - lexical.B + lexical.B * dl / avgdl)))
        if r > 0:
            scores[ref] = min(1.0, r / ceiling)
    return scores


def test_knowledge_base_and_memory_score_alike(store: KnowledgeStore) -> None:
    for ref, text in TEXTS.items():
        store.documents.replace(
            SourceRecord(namespace="ns", ref=ref, kind="text", url=ref, title=ref,
                         content_hash="h"),
            [ChunkRecord(0, text, {})])
    memory = PostgresMemoryBackend(store.conn, None)
    scope = MemoryScope("bot")
    for ref, text in TEXTS.items():
        memory.put(scope, f"memory/agent/{ref}.md", text)

    expected = _python_bm25(store, TEXTS, QUERY)
    assert len(expected) == 3  # "b" shares no lexeme with the query

    kb = {h.source_ref: h.text_score for h in store.search.rank("ns", QUERY, k=10)}
    mem = {h.path.removeprefix("memory/agent/").removesuffix(".md"): h.text_score
           for h in memory.search(scope, QUERY, SearchOptions(max_results=10)).hits}
    assert kb.keys() == mem.keys() == expected.keys()
    for ref, score in expected.items():
        assert kb[ref] == pytest.approx(score, abs=1e-9)
        assert mem[ref] == pytest.approx(score, abs=1e-6)  # memory rounds to 6 places


@pytest.mark.parametrize(("text", "words", "exact"), [
    ("Use os.path.splitext() here", "os path splitext",
     {"os.path", "os.path.splitext", "path.splitext"}),
    ("python -m venv --max-depth=3 -X dev", "-m venv --max-depth=3 -X dev",
     {"-m", "--max-depth", "-X"}),
    ("set max_depth in __init__", "max_depth", {"max_depth", "__init__"}),
    ("raises TypeError from HTTPServer", "Type Error HTTP Server", set()),
    ("a non-empty, well-known - list; e-mail x-y 3.11", "non-empty", set()),
])
def test_identifiers_are_kept_whole_and_split(text: str, words: str, exact: set[str]) -> None:
    analysed = lexical.analyse(text)
    assert set(analysed.exact) == exact
    assert all(w in analysed.text for w in words.split())
    # the whole names only, not a dotted name's shorter spans
    assert set(analysed.names) == exact - {"os.path", "path.splitext"}


@pytest.mark.parametrize(("text", "parts"), [
    ("open it in read/write mode", "read write"),
    ("switch/case style branching", "switch case"),
    ("the TCP/IP stack, and/or a proxy", "TCP IP and or"),
    ("see docs/guide.md or /usr/bin/python", None),  # paths stay whole
    ("https://example.com/a/b and ~/x/y", None),  # so do URLs and home paths
])
def test_words_joined_by_slashes_are_also_words(text: str, parts: str | None) -> None:
    """PostgreSQL's parser reads "read/write" as one file path, so a question saying "read
    and write" or "switch case" never matched it."""
    analysed = lexical.analyse(text).text
    appended = analysed.split("\n", 1)[1] if "\n" in analysed else ""
    assert appended.split() == (parts.split() if parts else [])


def test_a_slashed_pair_matches_its_words(store: KnowledgeStore) -> None:
    _kb(store, {"modes": ("Open the file in read/write mode.", {}),
                "other": ("Files are opened by name.", {})})
    assert [h.source_ref for h in store.search.rank("ns", "write mode", k=3)] == ["modes"]
    assert store.search.rank("ns", "read/write", k=3)[0].source_ref == "modes"


def _kb(store: KnowledgeStore, docs: dict[str, tuple[str, dict]]) -> None:
    for ref, (text, meta) in docs.items():
        store.documents.replace(
            SourceRecord(namespace="ns", ref=ref, kind="text", url=ref, title=ref,
                         content_hash="h"), [ChunkRecord(0, text, meta)])


def test_identifier_queries_find_the_identifier(store: KnowledgeStore) -> None:
    _kb(store, {
        "splitext": ("os.path.splitext(path) splits the extension from a path.", {}),
        "prose": ("The os module and the path of a file; split a path in two.", {}),
        "upper-x": ("-X dev enables the development mode.", {}),
        "lower-x": ("-x skips the first line of the source.", {}),
        "depth": ("--max-depth limits how deep the crawl goes.", {}),
        "snake": ("the depth of the maximum tree", {}),
    })

    def top(q: str) -> str:
        return store.search.rank("ns", q, k=3)[0].source_ref

    assert top("os.path.splitext") == "splitext"
    assert top("splitext") == "splitext"
    assert top("-X") == "upper-x" and top("-x") == "lower-x"
    assert top("--max-depth") == "depth"
    assert top("max depth") == "depth"  # the parts still match


def test_title_and_heading_weigh_more_than_the_body(store: KnowledgeStore) -> None:
    body = "Configure the widget cache and its eviction policy."
    _kb(store, {
        "in-body": (body + " Logging is covered elsewhere.", {"title": "Widgets"}),
        "in-title": (body, {"title": "Logging", "headingPath": ["Setup"]}),
        "in-heading": (body, {"title": "Widgets", "headingPath": ["Logging"]}),
    })
    ranked = [h.source_ref for h in store.search.rank("ns", "logging", k=3)]
    assert ranked[-1] == "in-body"
    assert set(ranked[:2]) == {"in-title", "in-heading"}


def test_a_heading_word_weighs_more_in_a_short_heading_path(store: KnowledgeStore) -> None:
    """BM25F's per-field length normalisation: a section named after the question's word
    outranks one whose long heading path mentions it among many others. The long one is
    written first, so a tie would rank it first."""
    body = "Configure the widget cache and its eviction policy."
    long_path = ["Reference manual", "Advanced widget options for production servers",
                 "Rare events, logging and tracing of background workers"]
    _kb(store, {
        "long": (body, {"title": "Widgets", "headingPath": long_path}),
        "short": (body, {"title": "Widgets", "headingPath": ["Logging"]}),
    })
    hits = store.search.rank("ns", "logging", k=2)
    assert [h.source_ref for h in hits] == ["short", "long"]
    assert hits[0].text_score > hits[1].text_score
    # the heading's term frequency: its weight over its length against the typical length
    # ("Logging": one lexeme; the title's words are not the question's)
    expected = lexical.HEADING_WEIGHT / (
        1 - lexical.B + lexical.B * 1 / lexical.HEADING_LENGTH)
    assert _logging_tfs(store)["short"] == pytest.approx(expected, rel=1e-5)


def _logging_tfs(store: KnowledgeStore) -> dict[str, float]:
    """Each source's term frequency of "logging" (lexeme ``log``) in its chunk's postings."""
    return dict(store.conn.execute(
        "SELECT c.source_ref, p.tf FROM postings p JOIN chunks c ON c.id = p.chunk_id "
        "WHERE p.lexeme = 'log'").fetchall())


def test_a_knowledge_base_indexed_without_field_lengths_is_reindexed_on_open(
        store: KnowledgeStore) -> None:
    from kbctl.store.migrations import migrate

    long_path = ["Reference", "Options for production servers", "Logging of rare events"]
    _kb(store, {"long": ("Configure the cache.", {"headingPath": long_path}),
                "short": ("Configure the cache.", {"headingPath": ["Logging"]})})
    normalised = _logging_tfs(store)
    assert normalised["short"] > normalised["long"]
    # as an earlier version wrote them: the heading's weight alone, whatever its length
    store.conn.execute("UPDATE postings SET tf = %s WHERE lexeme = 'log'",
                       (lexical.HEADING_WEIGHT,))
    store.conn.execute("UPDATE page_postings SET tf = %s WHERE lexeme = 'log'",
                       (lexical.HEADING_WEIGHT,))
    store.conn.execute("DELETE FROM kbctl_migrations WHERE version = 12")
    migrate(store.conn)
    assert _logging_tfs(store) == pytest.approx(normalised)
    assert [h.source_ref for h in store.search.rank("ns", "logging", k=2)] == ["short", "long"]


def test_a_signatures_parameters_do_not_weigh_as_its_heading(store: KnowledgeStore) -> None:
    """An API entry's heading is its signature; the words of its parameter list
    (``name``, ``file``) count as body text (the chunk's breadcrumb holds them), or every
    entry taking them outranks the one a question is about."""
    signature = "register_unpack_format(file_name, extensions, function[, extra_args])"
    _kb(store, {
        "register": (f"shutil › {signature}\n\nRegisters an unpack format: the callable "
                     "unpacks an archive into a directory, given extra arguments.",
                     {"headingPath": ["shutil", signature]}),
        "suffix": ("pathlib › PurePath.suffix\n\nThe file extension of the final path "
                   "component, if any.", {"headingPath": ["pathlib", "PurePath.suffix"]}),
        **{f"other-{i}": (text, {"headingPath": ["other"]}) for i, text in enumerate(
            TEXTS.values())},
    })
    assert [h.source_ref for h in store.search.rank("ns", "file extension", k=2)] == [
        "suffix", "register"]
    assert lexical.heading_field(["a", "f(x, y[, z])", "Using (new) APIs"], "m.f") == (
        "a f Using (new) APIs m.f")
    # from the first "(" after a name to the last ")": nested lists go whole, a ")" before
    # any such "(" leaves the heading as it is
    assert lexical.heading_field(["g(a, f(b)) -> T", "ab)c(d"], None) == "g -> T ab)c(d"


def test_rebuilding_postings_restores_the_same_ranking(store: KnowledgeStore,
                                                       db_url: str) -> None:
    from kbctl.store.migrations import rebuild_lexical_index

    from .conftest import rows

    _kb(store, {ref: (text, {"title": ref.upper(), "headingPath": ["Rules"]})
                for ref, text in TEXTS.items()})
    _kb(store, {"symbols": ("{} => ()", {"title": "Borrow checker", "anchor": "rules"})})
    before = [(h.source_ref, h.text_score) for h in store.search.rank("ns", QUERY, k=10)]
    stats = rows(db_url, "SELECT * FROM namespace_stats")
    pages = rows(db_url, "SELECT * FROM page_postings ORDER BY 1, 2, 3")
    lengths = rows(db_url, "SELECT ref, lexeme_count FROM sources ORDER BY ref")
    with store.conn.transaction():
        store.conn.execute("TRUNCATE postings, lexeme_stats, page_postings")
        store.conn.execute("UPDATE chunks SET lexeme_count = 0")
        store.conn.execute("UPDATE sources SET lexeme_count = 0")
        rebuild_lexical_index(store.conn)
    assert [(h.source_ref, h.text_score) for h in store.search.rank("ns", QUERY, k=10)] == before
    assert rows(db_url, "SELECT * FROM namespace_stats") == stats
    assert rows(db_url, "SELECT * FROM page_postings ORDER BY 1, 2, 3") == pages
    assert rows(db_url, "SELECT ref, lexeme_count FROM sources ORDER BY ref") == lengths


def test_a_hostile_dotted_name_gives_a_bounded_number_of_lexemes() -> None:
    """p parts used to give p²/2 spans of total size p³: 2.4 KB of ``ab.ab.…`` made 320k
    lexemes. Now spans stop at MAX_SPAN_PARTS parts, and over-long ones are dropped."""
    parts = 1000
    exact = lexical.analyse("ab." * parts + "ab").exact
    assert len(exact) <= lexical.MAX_SPAN_PARTS * (parts + 1)
    assert all(len(e) <= lexical.MAX_EXACT_CHARS for e in exact)
    assert "ab.ab.ab.ab" in exact
    long_name = "x.y.z.w.v"  # five parts: its spans of four and the whole name
    assert {"x.y.z.w", "y.z.w.v", "x.y.z.w.v"} <= set(lexical.analyse(long_name).exact)
    assert lexical.analyse("a_" * 100 + "b").exact == ()
