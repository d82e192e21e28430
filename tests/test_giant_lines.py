"""One giant line (a minified file in a fence, a data dump, a memory line of megabytes) is
cut or indexed in part, never a write that fails: PostgreSQL refuses a tsvector over 1 MB,
and before, one such file failed a whole ingest, and every nightly resync after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.chunk import chunk_markdown
from kbctl.chunk.markdown import LONE_LINE_BUDGETS
from kbctl.chunk.model import MAX_TITLE_CHARS
from kbctl.chunk.text import budget_chars
from kbctl.hygiene import MAX_MESSAGE_LINE, clipped
from kbctl.store.lexical import MAX_ANALYSED_CHARS, analyse

from .conftest import Cli, rows

# ~1.5 MB, every word new: as one text, its tsvector (~3 MB) is past PostgreSQL's 1 MB
DISTINCT_WORDS = "".join(f"w{i} " for i in range(200_000))


def test_a_fence_of_one_giant_line_is_cut_within_the_budget() -> None:
    chunks = chunk_markdown(f"# T\n\n```js\n{DISTINCT_WORDS}\n```\n")
    budget, _overlap = budget_chars(512, 64)
    assert len(chunks) > 100
    assert all(c.text.count("```") == 2 for c in chunks)  # each piece is a whole fence
    longest = max(len(c.text) for c in chunks)
    assert longest <= LONE_LINE_BUDGETS * budget + len("T\n\n```js\n\n```"), longest


def test_only_the_first_part_of_a_text_is_analysed() -> None:
    analysed = analyse("a_b " + "x" * (2 * MAX_ANALYSED_CHARS))
    assert len(analysed.text) <= MAX_ANALYSED_CHARS and "a_b" in analysed.exact


def test_an_ingest_with_a_giant_line_stores_every_file(cli: Cli, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nThe rotation runbook.\n")
    (docs / "fence.md").write_text(f"# Dump\n\n```\n{DISTINCT_WORDS}\n```\n")
    report = cli.json("ingest", "files", str(docs))
    assert report["added"] == 2 and report["failed"] == 0, report
    [(longest,)] = rows(cli.db_url, "SELECT max(length(text)) FROM chunks")
    assert longest < 20_000
    results = cli.json("query", "rotation runbook")["results"]
    assert results and results[0]["citation"].endswith("good.md#good")


def test_a_memory_line_of_megabytes_is_written_and_found(cli: Cli) -> None:
    line = "incident " + DISTINCT_WORDS
    cli.json("memory", "append", "memory/agent/dump.md", "-", "--agent", "bot", input=line)
    found = cli.json("memory", "search", "incident", "--agent", "bot")
    assert found["results"], found


@pytest.mark.timeout(120)
def test_an_error_quoting_a_giant_key_is_clipped_and_quick(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "suite.yaml").write_text("version: 1\ncases: []\n? " + "a" * 3_000_000 + "\n: 1\n")
    monkeypatch.chdir(tmp_path)  # named as given: the line's kept head is not the folder's
    result = cli("eval", "suite.yaml")  # rich's highlighter took hours at 3 MB
    assert result.exit_code == 2
    assert "suite.yaml:3: " + "a" * 100 in result.stderr
    assert "characters)…" in result.stderr and len(result.stderr) < 5_000


def test_clipped_cuts_each_long_line_and_keeps_short_messages() -> None:
    assert clipped("short") == "short"
    first, second = clipped("x" * 1000 + " is wrong\nfine").split("\n")
    half = MAX_MESSAGE_LINE // 2
    assert first == "x" * half + f"…({1009 - 2 * half:,} characters)…" + "x" * (
        half - len(" is wrong")) + " is wrong"
    assert second == "fine"


def test_the_help_examples_page_of_one_heading_is_found(cli: Cli) -> None:
    report = cli.json("ingest", "text", "--ref", "notes/2026-11", "--title", "Notes",
                      input="# Release notes\n")
    assert report["chunksWritten"] == 1
    [hit] = cli.json("query", "release notes")["results"]
    assert hit["citation"].endswith("#release-notes")


def test_a_giant_title_or_heading_is_stored_clipped(cli: Cli, tmp_path: Path) -> None:
    """Every result carries its page title and heading path: a 1 MB <title> made each
    answer megabytes long (and the context block handed to a model)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    # a title of 180 KB: front matter is refused past 256 KiB
    long_title, long_heading = "Title " * 30_000, "Heading " * 50_000
    (docs / "page.md").write_text(f"---\ntitle: {long_title}\n---\n\n# {long_heading}\n\n"
                                  "The quokka section explains the zebu setting.\n")
    cli.json("ingest", "files", str(docs))
    hit = cli.json("query", "quokka zebu")["results"][0]
    assert len(hit["title"]) == MAX_TITLE_CHARS and hit["title"].endswith("…")
    assert [len(h) for h in hit["headingPath"]] == [MAX_TITLE_CHARS]
    assert len(hit["text"]) < 3000
    assert hit["anchor"]  # the citation still names the heading's id


def test_a_source_failure_quoting_megabytes_is_stored_clipped() -> None:
    """Kept in the report and in the database for ``status``: a message quoting a hostile
    page's 100 KB URL was printed, and stored, whole on every run."""
    from kbctl.pipeline.ingest import SourceFailure

    failure = SourceFailure(ref="https://docs.example/", type="SourceError",
                            error="https://docs.example/" + "a" * 100_000 + ": internal error")
    assert len(failure.error) < 2 * MAX_MESSAGE_LINE and failure.error.endswith("error")
