"""Synonyms in lexical ranking: a question's words bring in the words a thesaurus relates
to them, below the question's own, for the knowledge base and memory alike; a project adds
its own in kbctl.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.config import RetrievalSettings, resolve_settings
from kbctl.errors import ConfigError
from kbctl.memory.model import SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.pipeline.query import retrieve
from kbctl.store import lexical
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.records import ChunkRecord, SourceRecord
from kbctl.store.thesaurus import BUILT_IN, NONE, Rule, Thesaurus, parse_rule

from .conftest import Cli


def _kb(store: KnowledgeStore, docs: dict[str, str]) -> None:
    for ref, text in docs.items():
        store.documents.replace(
            SourceRecord(namespace="ns", ref=ref, kind="text", url=ref, title=ref,
                         content_hash="h"), [ChunkRecord(0, text, {})])


def _found(store: KnowledgeStore, question: str, thesaurus: Thesaurus = BUILT_IN
           ) -> dict[str, float]:
    return {h.source_ref: h.text_score
            for h in store.search.rank("ns", question, k=10, thesaurus=thesaurus)}


DOCS = {
    "rmtree": "rmtree removes an entire directory tree, files and all.",
    "mailbox": "A mailbox keeps its messages in one folder per account.",
    "noise": "Widgets are deleted in the settings panel.",
}


def test_a_synonym_finds_the_passage_the_question_words_differently(
        store: KnowledgeStore) -> None:
    _kb(store, DOCS)
    assert _found(store, "a directory", NONE).keys() == {"rmtree"}
    plain = _found(store, "delete a folder", NONE)
    assert plain.keys() == {"mailbox", "noise"}  # only the words the question used
    related = _found(store, "delete a folder")
    assert related.keys() == {"mailbox", "noise", "rmtree"}
    # the question's own word outweighs a related one, and the score's ceiling is the
    # question's words alone: a passage in other words is never a perfect answer
    assert related["mailbox"] == pytest.approx(plain["mailbox"])
    assert related["rmtree"] < _found(store, "remove a directory", NONE)["rmtree"]


def test_an_abbreviation_brings_in_its_long_form_not_the_other_way(
        store: KnowledgeStore) -> None:
    _kb(store, {"long": "Set the environment variable before the build.",
                "short": "export the env var in CI"})
    assert _found(store, "env var").keys() == {"long", "short"}
    assert _found(store, "environment variable").keys() == {"long"}


def test_a_phrase_member_needs_every_one_of_its_words(store: KnowledgeStore) -> None:
    _kb(store, {"shuffle": "shuffle(x) puts a sequence in place.",
                "sorted": "sorted() returns the items in a new order."})
    assert "shuffle" in _found(store, "items in random order")
    assert "shuffle" not in _found(store, "items in sorted order")
    assert "shuffle" not in _found(store, "a random number")


def test_memory_search_uses_the_same_synonyms(store: KnowledgeStore) -> None:
    memory = PostgresMemoryBackend(store.conn, None)
    scope = MemoryScope("bot")
    memory.put(scope, "memory/agent/notes.md", "The build writes to a temporary directory.")

    def paths(query: str, thesaurus: Thesaurus) -> list[str]:
        return [h.path for h in memory.search(
            scope, query, SearchOptions(thesaurus=thesaurus)).hits]

    assert paths("scratch folder", NONE) == []
    assert paths("scratch folder", BUILT_IN) == ["memory/agent/notes.md"]


def test_a_projects_rules_extend_the_built_in_ones(store: KnowledgeStore) -> None:
    _kb(store, {"widget": "The frobnicator runs nightly.", **DOCS})
    assert "widget" not in _found(store, "gizmo")
    own = BUILT_IN.extended([parse_rule("gizmo => frobnicator")])
    assert "widget" in _found(store, "gizmo", own)
    assert "rmtree" in _found(store, "delete a folder", own)  # the built-in ones still apply


@pytest.mark.parametrize(("text", "sources", "targets"), [
    ("folder, Directory ,dir", ("folder", "directory", "dir"), ("folder", "directory", "dir")),
    ("k8s => kubernetes", ("k8s",), ("kubernetes",)),
    ("env var, envvar => environment variable", ("env var", "envvar"),
     ("environment variable",)),
])
def test_rules_are_read_as_synonym_files_write_them(text: str, sources: tuple[str, ...],
                                                     targets: tuple[str, ...]) -> None:
    rule = parse_rule(text)
    assert (rule.sources, rule.targets) == (sources, targets)


@pytest.mark.parametrize(("text", "problem"), [
    ("folder", "names one word"),
    ("a, , b", "empty word"),
    ("a => b => c", "more than one '=>'"),
    ("a, ---", "no letter or digit"),
    ("a, " + "x" * 101, "at most 100"),
    (", ".join(f"w{i}" for i in range(33)), "at most 32"),
])
def test_a_malformed_rule_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_rule(text)


def test_only_rules_that_may_apply_reach_the_database() -> None:
    thesaurus = Thesaurus((Rule.equivalent(["folder", "directory"]),
                           Rule.one_way(["env"], ["environment"])))
    assert thesaurus.candidates("weather report") == {"sg": [], "sm": [], "sr": []}
    assert thesaurus.candidates("Folders to keep") == {
        "sg": [0, 0], "sm": ["folder", "directory"], "sr": ["b", "b"]}
    assert thesaurus.candidates("env")["sr"] == ["s", "t"]
    params = lexical.QueryTerms.of("delete a folder").params()
    assert "directory" in params["sm"] and "remove" in params["sm"]


def test_kbctl_yaml_adds_synonyms_and_can_turn_off_the_built_in_ones(tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text(
        "synonyms:\n  - gizmo, frobnicator\n  - k8s => kubernetes\nbuiltin_synonyms: false\n")
    s = resolve_settings({}, env={}, cwd=tmp_path)
    assert s.synonyms == (parse_rule("gizmo, frobnicator"), parse_rule("k8s => kubernetes"))
    assert s.thesaurus.rules == s.synonyms
    assert resolve_settings({}, env={}, cwd=tmp_path / "..").thesaurus == BUILT_IN


@pytest.mark.parametrize(("yaml", "message"), [
    ("synonyms: folder, directory\n", r"kbctl\.yaml:1: 'synonyms' must be a list"),
    ("synonyms:\n  - [folder, directory]\n", r"kbctl\.yaml:1: synonyms\[0\] must be a string"),
    ("\nsynonyms:\n  - folder\n", r"kbctl\.yaml:2: synonyms\[0\] 'folder' names one word"),
    ("builtin_synonyms: no-thanks\n", r"'builtin_synonyms' must be true or false"),
])
def test_bad_synonyms_in_kbctl_yaml_name_the_line(tmp_path: Path, yaml: str,
                                                   message: str) -> None:
    (tmp_path / "kbctl.yaml").write_text(yaml)
    with pytest.raises(ConfigError, match=message):
        resolve_settings({}, env={}, cwd=tmp_path)


def test_query_uses_the_synonyms_of_kbctl_yaml(cli: Cli, workdir: Path) -> None:
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "jobs.md").write_text("# Jobs\n\nThe frobnicator runs every night at two.\n")
    (docs / "other.md").write_text("# Other\n\nWidgets are set up in the panel.\n")
    cli.json("ingest", "files", str(docs))
    assert cli.json("query", "gizmo")["results"] == []
    (workdir / "kbctl.yaml").write_text("synonyms:\n  - gizmo => frobnicator\n")
    results = cli.json("query", "gizmo")["results"]
    assert [r["title"] for r in results] == ["Jobs"]


def test_a_query_says_which_synonyms_it_also_looked_for(cli: Cli, workdir: Path) -> None:
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "trees.md").write_text("# Trees\n\nrmtree removes an entire directory tree.\n")
    cli.json("ingest", "files", str(docs))
    out = cli.json("query", "delete a folder")
    assert [r["title"] for r in out["results"]] == ["Trees"]
    assert out["synonyms"] == {"folder": ["directory"], "delete": ["remove", "erase"]}
    assert ("also looked for synonyms: directory (for folder); remove, erase (for delete)"
            in out["notes"])
    assert cli.json("query", "rmtree")["synonyms"] == {}
    table = cli("query", "delete a folder")
    assert "also looked for synonyms: directory (for folder)" in table.stderr


def test_memory_search_says_which_synonyms_it_also_looked_for(store: KnowledgeStore) -> None:
    memory = PostgresMemoryBackend(store.conn, None)
    scope = MemoryScope("bot")
    memory.put(scope, "memory/agent/notes.md", "The build writes to a temporary directory.")
    notes = memory.search(scope, "scratch folder").notes
    assert "also looked for synonyms: directory (for folder); temporary, temp, tmp (for " \
           "scratch)" in notes


def test_a_synonym_scores_below_the_question_word_and_within_the_ceiling(
        store: KnowledgeStore) -> None:
    """A related word scores as its question word would, at half weight, and never on top
    of it: scores had piled up at 1.0 ("run code" against passages saying "execute") and
    a passage in other words had outranked one in the question's own."""
    _kb(store, {"own": "Run the code with the run button.",
                "other": "Execute the code with the execute button.",
                "k8s": "A kubernetes deployment rolls out pods."})
    scores = _found(store, "run code")
    assert scores["own"] > scores["other"] > 0
    assert all(score < 1 for score in scores.values())
    own = BUILT_IN.extended([parse_rule("k8s => kubernetes")])

    def top(question: str) -> float:  # as a query scores it: words no passage uses count
        return retrieve(store, question,
                        RetrievalSettings(namespace="ns", k=3, thesaurus=own)).hits[0].score

    assert 0 < top("k8s deployment") < top("kubernetes deployment") < 1


def test_a_related_phrase_counts_only_where_all_its_words_are(store: KnowledgeStore) -> None:
    _kb(store, {"random": "Items come back in random order.",
                "order": "Keep the insertion order of items."})
    assert _found(store, "shuffle items").keys() == {"random", "order"}  # 'items' matches
    scores = _found(store, "shuffle items")
    assert scores["random"] > scores["order"]
    assert _found(store, "shuffle").keys() == {"random"}


def test_a_word_with_digits_no_passage_uses_counts_as_missing(store: KnowledgeStore,
                                                              cli: Cli, workdir: Path) -> None:
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "k.md").write_text("# Deploying\n\nA kubernetes deployment rolls out pods.\n")
    cli.json("ingest", "files", str(docs))
    plain = cli.json("query", "k8s deployment")
    assert plain["unmatched"] == ["k8s"]
    (workdir / "kbctl.yaml").write_text("synonyms:\n  - k8s => kubernetes\n")
    related = cli.json("query", "k8s deployment")
    own = cli.json("query", "kubernetes deployment")
    assert 0 < related["results"][0]["score"] < own["results"][0]["score"]
    assert related["synonyms"] == {"k8s": ["kubernetes"]}


def test_a_correction_that_applies_a_rule_is_said(cli: Cli, workdir: Path) -> None:
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Trees\n\nrmtree removes an entire directory tree; the "
                               "folder icon shows it.\n")
    cli.json("ingest", "files", str(docs))
    out = cli.json("query", "foldr tree")
    assert out["corrected"] == {"foldr": "folder"}
    assert out["synonyms"] == {"folder": ["directory"]}


def test_short_words_find_their_rules_in_the_plural() -> None:
    assert "identifier" in BUILT_IN.candidates("list the ids")["sm"]
    assert "database" in BUILT_IN.candidates("two dbs")["sm"]


def test_the_note_stays_short_however_many_rules_apply() -> None:
    from kbctl.search_notes import synonym_notes
    related = {f"w{i}": tuple(f"x{i}y{j}" for j in range(30)) for i in range(100)}
    (note,) = synonym_notes(related)
    assert len(note) < 600 and "and 24 more" in note and "and for 92 more words" in note


@pytest.mark.parametrize(("text", "problem"), [
    ("a =>", "nothing on one side"),
    ("=> b", "nothing on one side"),
    ("gizmo\u200b, widget", "invisible or control character"),
    ("\ufeffgizmo, widget", "invisible or control character"),
    ("giz\tmo, widget", "invisible or control character"),
])
def test_rules_that_could_never_match_are_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_rule(text)


def test_a_rule_that_does_not_apply_changes_nothing(store: KnowledgeStore) -> None:
    """A rule whose words only look alike (sent to the database, which finds it does not
    apply) scores through the concepts' path exactly as no rule does."""
    _kb(store, DOCS)
    lookalike = Thesaurus((Rule.equivalent(["foldable", "widgetry"]),))
    assert lookalike.candidates("delete a folder")["sg"]  # it reaches the database
    assert _found(store, "delete a folder", lookalike) == pytest.approx(
        _found(store, "delete a folder", NONE))


def test_an_eval_report_says_which_synonyms_a_case_looked_for(cli: Cli, workdir: Path) -> None:
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "trees.md").write_text("# Trees\n\nrmtree removes an entire directory tree.\n")
    cli.json("ingest", "files", str(docs))
    (workdir / "suite.yaml").write_text(
        "version: 1\ncases:\n  - id: folder\n    question: delete a folder\n"
        "    expect: {sourceIncludes: trees}\n")
    report = cli.json("eval", "suite.yaml")
    (case,) = report["cases"]
    assert case["passed"] and case["synonyms"] == {"folder": ["directory"],
                                                   "delete": ["remove", "erase"]}
