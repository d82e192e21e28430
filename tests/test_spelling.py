"""Typo tolerance: a query word no chunk uses is matched as the nearest word the namespace
does use, a query of known words ranks exactly as before, and the words nothing matches are
named (query, eval, agent tools, memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.config import RetrievalSettings
from kbctl.memory.model import SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.pipeline.query import retrieve
from kbctl.search_notes import STOP_WORDS_ONLY, spelling_notes
from kbctl.store import spelling
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.records import ChunkRecord, SourceRecord
from kbctl.store.search import Query

from .conftest import Cli
from .embedders import HashingEmbedder

DOCS = {
    "env": "Read an environment variable with os.getenv; set it in the shell first.",
    "timeout": "The server closes idle connections after the timeout in seconds.",
    "cache": "Clear the cache directory to rebuild every page.",
    "dirs": "Remove a directory tree and all the files inside it.",
    "nearby": "A server farm of several serving machines.",
}


def _kb(store: KnowledgeStore, docs: dict[str, str], namespace: str = "ns") -> None:
    for ref, text in docs.items():
        store.documents.replace(
            SourceRecord(namespace=namespace, ref=ref, kind="text", url=f"kb://{ref}",
                         title=ref, content_hash="h"), [ChunkRecord(0, text, {})])


def _refs(store: KnowledgeStore, question: str, **options: object) -> list[str]:
    result = retrieve(store, question,
                      RetrievalSettings(namespace="ns", k=5, **options))  # type: ignore[arg-type]
    return [h.source_ref for h in result.hits]


def _spelling(store: KnowledgeStore, namespace: str, question: str, *,
              correct: bool = True) -> spelling.Spelling:
    """What a search of ``question`` found of its words' spelling."""
    return store.search(Query(namespace, question, typo_tolerance=correct)).spelling


@pytest.mark.parametrize(("stem", "budget"), [
    ("cat", 0), ("read", 0), ("servr", 1), ("variabl", 1), ("directori", 2)])
def test_longer_words_may_hold_more_typos(stem: str, budget: int) -> None:
    assert spelling.typo_budget(stem) == budget


def test_identifiers_numbers_and_short_words_are_not_corrected() -> None:
    assert not spelling.correctable("os.getenv")
    assert not spelling.correctable("max_depth")
    assert not spelling.correctable("3.11")
    assert not spelling.correctable("size")  # short words have too many neighbours
    assert spelling.correctable("enviro") and spelling.correctable("résumé")


def test_the_nearest_then_the_most_used_word_wins() -> None:
    vocabulary = [("servic", 3), ("server", 40), ("serv", 9), ("severi", 90)]
    assert spelling.nearest("servr", vocabulary) == "server"  # one edit, most used
    assert spelling.nearest("sevrer", vocabulary) == "server"  # a swap is one edit
    # Equally near and equally used: the alphabetical first, whatever the row order.
    assert spelling.nearest("abcde", [("abcdf", 2), ("abcdd", 2)]) == "abcdd"
    assert spelling.nearest("abcde", [("abcdd", 2), ("abcdf", 2)]) == "abcdd"
    # Never a word of other first letter, an identifier, an unused word, or itself.
    assert spelling.nearest("xerver", vocabulary) is None
    assert spelling.nearest("getenx", [("os.getenv", 5), ("getenv", 0)]) is None
    assert spelling.nearest("sise", [("size", 5)]) is None  # too short to correct


def test_a_misspelled_question_finds_what_was_meant(store: KnowledgeStore) -> None:
    _kb(store, DOCS)
    assert _spelling(store, "ns", "read an enviroment varable").corrected == {
        "enviroment": "environ", "varable": "variabl"}
    assert _refs(store, "enviroment varable")[0] == "env"
    assert _refs(store, "enviroment varable", typo_tolerance=False) == []
    result = retrieve(store, "servre timout", RetrievalSettings(namespace="ns", k=5))
    assert result.hits[0].source_ref == "timeout"
    assert result.corrected == {"servre": "server", "timout": "timeout"}


def test_known_words_rank_exactly_as_before(store: KnowledgeStore) -> None:
    _kb(store, DOCS)
    for question in ("server timeout", "remove a directory", "environment variable"):
        tolerant = retrieve(store, question, RetrievalSettings(namespace="ns", k=5))
        assert tolerant.corrected == {}
        plain = retrieve(store, question,
                         RetrievalSettings(namespace="ns", k=5, typo_tolerance=False))
        assert [(h.source_ref, h.score) for h in tolerant.hits] == [
            (h.source_ref, h.score) for h in plain.hits]


ITERATOR = ("An iterator is lazy: an iterator adapter such as map takes an iterator and "
            "returns another iterator. Every iterator implements the Iterator trait.")


@pytest.mark.parametrize("typed", [
    "iterater",   # a letter replaced, at the end
    "iteratro",   # two neighbours swapped
    "itterator",  # a letter doubled
    "iteraor",    # a letter missing
    "terator",    # the first letter missing
    "oterator",   # the first letter replaced
])
def test_every_one_edit_misspelling_of_a_used_word_is_corrected(
        store: KnowledgeStore, typed: str) -> None:
    _kb(store, {"iter": ITERATOR, **DOCS})
    # "iterater" stems to "iterat", two edits from "iter": only its spellings one edit
    # away (read as typed, then stemmed) reach the word the docs use
    assert _spelling(store, "ns", f"what is an {typed}").corrected == {typed: "iter"}
    assert _refs(store, f"what is an {typed}")[0] == "iter"


def test_what_is_left_as_typed(store: KnowledgeStore) -> None:
    _kb(store, DOCS)
    # Past one edit the first letter is taken as typed, and a word far from every other
    # stays unknown (one edit away, the first letter may be the slip: see below).
    assert _spelling(store, "ns", "nvironmnt").corrected == {}
    assert _spelling(store, "ns", "nvironment").corrected == {"nvironment": "environ"}
    assert _spelling(store, "ns", "quantum").corrected == {}
    # Stop words and numbers are not corrected; an identifier's words are, one by one.
    assert _spelling(store, "ns", "the 3.11 os.getenx").corrected == {"getenx": "getenv"}
    # Only the namespace's own words are candidates.
    _kb(store, {"other": "A xylophone of many bars."}, namespace="other")
    assert _spelling(store, "ns", "xylophome").corrected == {}
    assert _spelling(store, "other", "xylophome").corrected == {"xylophome": "xylophon"}


def test_the_words_nothing_uses_are_named(store: KnowledgeStore) -> None:
    _kb(store, DOCS)
    found = _spelling(store, "ns", "Kubernetes helm for the servre and kubernetes")
    assert found.corrected == {"servre": "server"}
    assert found.unmatched == ("kubernetes", "helm")  # as typed, once, stop words never
    off = _spelling(store, "ns", "the servre", correct=False)
    assert off.corrected == {} and off.unmatched == ("servre",)
    assert _spelling(store, "ns", "server timeout") == spelling.Spelling()


def test_a_name_nothing_uses_is_named_and_lowers_the_score(store: KnowledgeStore) -> None:
    """Only an identifier's parts were looked up: ``clear_cache_page``, which no page
    holds, scored as ``clear cache page`` (a name the docs explain) and was not named."""
    _kb(store, DOCS)
    found = _spelling(store, "ns", "clear_cache_page and os.getenv")
    assert found.unmatched == ("clear_cache_page",)  # os.getenv is used: not named
    assert _spelling(store, "ns", "clear the cache page") == spelling.Spelling()
    name = retrieve(store, "clear_cache_page", RetrievalSettings(namespace="ns", k=1)).hits[0]
    words = retrieve(store, "clear cache page", RetrievalSettings(namespace="ns", k=1)).hits[0]
    assert name.source_ref == words.source_ref == "cache"  # ranked alike
    assert name.score < 0.75 * words.score


def test_a_question_of_stop_words_only_says_so(store: KnowledgeStore) -> None:
    _kb(store, DOCS)
    assert not store.search(Query("ns", "how do I do it?")).searchable
    assert store.search(Query("ns", "how do I xyzzy")).searchable  # a word, if an unknown one
    assert store.search(Query("ns", "-a")).searchable  # an option is kept whole
    result = retrieve(store, "what is it", RetrievalSettings(namespace="ns", k=5))
    assert result.hits == [] and not result.searchable
    assert spelling_notes({}, (), result.searchable) == [STOP_WORDS_ONLY]
    memory = PostgresMemoryBackend(store.conn, None)
    scope = MemoryScope("bot", "alice")
    memory.put(scope, "memory/user/env.md", "Alice reads the environment variable first.")
    assert STOP_WORDS_ONLY in memory.search(scope, "what was it").notes
    assert STOP_WORDS_ONLY not in memory.search(scope, "environment").notes


def test_hybrid_search_matches_the_corrected_word_too(store: KnowledgeStore) -> None:
    emb = HashingEmbedder(dimensions=16)
    store.embedder.bind(emb.identity)
    for ref, text in DOCS.items():
        store.documents.replace(
            SourceRecord(namespace="ns", ref=ref, kind="text", url=f"kb://{ref}", title=ref,
                         content_hash="h"), [ChunkRecord(0, text, {}, emb.embed([text])[0])])

    def text_scores(**options: object) -> dict[str, float]:
        result = retrieve(store, "directroy",
                          RetrievalSettings(namespace="ns", k=5, **options),  # type: ignore[arg-type]
                          embedder=emb)
        return {h.source_ref: h.text_score or 0.0 for h in result.hits}

    assert retrieve(store, "directroy",
                    RetrievalSettings(namespace="ns", k=5), embedder=emb).corrected == {
        "directroy": "directori"}
    tolerant = text_scores()
    assert max(tolerant, key=tolerant.__getitem__) == "dirs" and tolerant["dirs"] > 0
    assert not any(text_scores(typo_tolerance=False).values())


def test_the_cli_says_what_it_matched(cli: Cli, workdir: Path) -> None:
    (workdir / "docs").mkdir()
    (workdir / "docs" / "env.md").write_text("# Environment\n\nRead an environment "
                                             "variable with os.getenv.\n")
    cli.json("ingest", "files", str(workdir / "docs"))
    out = cli.json("query", "enviroment varable")
    assert out["corrected"] == {"enviroment": "environ", "varable": "variabl"}
    assert out["results"][0]["title"] == "Environment"
    table = cli("query", "enviroment varable")
    assert table.exit_code == 0
    assert "enviroment → environ…" in table.stderr
    assert "matched by spelling" not in cli("query", "environment").stderr
    nothing = cli("query", "kubernetes helm")
    assert nothing.exit_code == 0 and "no passage uses: kubernetes, helm" in nothing.stderr
    assert cli.json("query", "kubernetes helm")["unmatched"] == ["kubernetes", "helm"]
    stop_words = cli("query", "how do I")
    assert stop_words.exit_code == 0 and "no word to search for" in stop_words.stderr
    assert cli.json("query", "how do I")["searchable"] is False
    assert cli.json("query", "environment")["searchable"] is True


def test_memory_search_corrects_within_what_the_caller_may_see(store: KnowledgeStore) -> None:
    memory = PostgresMemoryBackend(store.conn, None)
    alice, bob = MemoryScope("bot", "alice"), MemoryScope("bot", "bob")
    memory.put(alice, "memory/user/env.md", "Alice reads the environment variable first.")
    memory.put(bob, "memory/user/music.md", "Bob plays the xylophone on Fridays.")

    found = memory.search(alice, "enviroment", SearchOptions(max_results=3))
    assert [h.path for h in found.hits] == ["memory/user/env.md"]
    assert any("enviroment → environ…" in n for n in found.notes)
    assert "no passage uses: tuba" in memory.search(alice, "tuba environment").notes
    assert memory.search(alice, "enviroment",
                         SearchOptions(max_results=3, typo_tolerance=False)).hits == []
    # Another user's words are never candidates: a correction would reveal them.
    private = memory.search(alice, "xylophome", SearchOptions(max_results=3))
    assert private.hits == [] and not any("spelling" in n for n in private.notes)
    assert [h.path for h in memory.search(bob, "xylophome").hits] == ["memory/user/music.md"]


def test_memory_reads_a_bounded_share_of_a_large_scope(store: KnowledgeStore,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    memory = PostgresMemoryBackend(store.conn, None)
    bot = MemoryScope("bot")
    memory.put(bot, "memory/agent/words.md", " ".join(
        f"zeta{chr(97 + i)}{chr(97 + j)}" for i in range(26) for j in range(26)) + " zzzzzzzz")
    assert any("zzzzzzyy → zzzzzzzz…" in n for n in memory.search(bot, "zzzzzzyy").notes)
    monkeypatch.setattr(spelling, "MAX_CANDIDATES", 10)
    assert memory.search(bot, "zzzzzzyy").notes == [
        "keyword-only search: this knowledge base has no embedder",
        "no passage uses: zzzzzzyy"]


def test_a_hostile_question_or_vocabulary_costs_a_bounded_amount(
        store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    _kb(store, {"many": " ".join(f"zeta{chr(97 + i)}{chr(97 + j)}" for i in range(26)
                                 for j in range(26)) + " zzzzzzzz"})
    # At most MAX_WORDS words of a question are corrected, first seen first.
    question = " ".join(f"zetb{chr(97 + i)}a" for i in range(20))
    corrected = _spelling(store, "ns", question).corrected
    assert list(corrected) == [f"zetb{chr(97 + i)}a" for i in range(spelling.MAX_WORDS)]
    # Each word is compared with at most MAX_CANDIDATES words, in index order.
    assert _spelling(store, "ns", "zzzzzzyy").corrected == {"zzzzzzyy": "zzzzzzzz"}
    monkeypatch.setattr(spelling, "MAX_CANDIDATES", 10)
    assert _spelling(store, "ns", "zzzzzzyy").corrected == {}
    # A pasted page of unknown words names at most MAX_UNMATCHED of them, the first ones.
    page = [f"qx{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(600)]
    assert _spelling(store, "ns", " ".join(page)).unmatched == tuple(
        page[:spelling.MAX_UNMATCHED])


def test_kbctl_yaml_can_turn_it_off(cli: Cli, workdir: Path) -> None:
    (workdir / "docs").mkdir()
    (workdir / "docs" / "env.md").write_text("# Environment\n\nRead an environment "
                                             "variable with os.getenv.\n")
    cli.json("ingest", "files", str(workdir / "docs"))
    cli.json("memory", "append", "memory/agent/env.md", "the environment of the bot",
             "--agent", "bot")
    assert cli.json("query", "enviroment")["corrected"] == {"enviroment": "environ"}
    assert cli.json("memory", "search", "enviroment", "--agent", "bot")["results"]

    (workdir / "kbctl.yaml").write_text("typo_tolerance: false\n")
    out = cli.json("query", "enviroment")
    assert out["corrected"] == {} and out["results"] == []
    assert cli.json("memory", "search", "enviroment", "--agent", "bot")["results"] == []
    (workdir / "kbctl.yaml").write_text("typo_tolerance: 'no'\n")
    refused = cli("query", "enviroment")
    assert refused.exit_code == 2 and "typo_tolerance" in refused.stderr


def test_eval_names_the_words_a_failing_case_matched_nothing_with(cli: Cli,
                                                                  workdir: Path) -> None:
    (workdir / "docs").mkdir()
    (workdir / "docs" / "env.md").write_text("# Environment\n\nRead an environment "
                                             "variable with os.getenv.\n")
    (workdir / "docs" / "deploy.md").write_text("# Deploy\n\nShip the container image.\n")
    cli.json("ingest", "files", str(workdir / "docs"))
    (workdir / "suite.yaml").write_text(
        "version: 1\ncases:\n"
        "  - {id: env, question: read an enviroment variable, "
        "expect: {sourceIncludes: env}}\n"
        "  - {id: helm, question: deploy on kubernetes with helm, "
        "expect: {sourceIncludes: helm-chart}}\n"
        "  - {id: vague, question: how do I do it, expect: {sourceIncludes: env}}\n")
    report = cli.json("eval", "suite.yaml", code=1)
    env, helm, vague = report["cases"]
    assert vague["searchable"] is False and env["searchable"] is True
    assert env["passed"] and env["corrected"] == {"enviroment": "environ"}
    assert not helm["passed"] and helm["unmatched"] == ["kubernetes", "helm"]
    table = cli("eval", "suite.yaml")
    assert table.exit_code == 1
    assert "no passage uses: kubernetes, helm" in table.stdout + table.stderr
    assert STOP_WORDS_ONLY in " ".join(table.stdout.replace("│", " ").split())
    assert "enviroment → environ" not in table.stdout + table.stderr  # a passing case
