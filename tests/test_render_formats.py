"""The output layer: one registry of formats per result type, pure renderers, one way
for JSON, and a new format added with one module plus one registry line."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from rich.table import Table

from kbctl.render import Output, Rendered, formats_for, json_text
from kbctl.render import query as query_formats
from kbctl.results import Hit, QueryResult

from . import format_urls
from .conftest import Cli


def result(*urls: str) -> QueryResult:
    hits = [Hit(rank=i, score=0.5, title=f"t{i}", url=u, citation=f"{u}#a{i}", anchor=f"a{i}",
                heading_path=("T", f"a{i}"), text=f"T › a{i}\n\nbody {i}", source_ref=u,
                namespace="docs") for i, u in enumerate(urls, start=1)]
    return QueryResult(question="q", namespace="docs", mode="lexical", embedder="none",
                       hits=hits, elapsed_ms=1.0)


def test_renderers_are_pure_and_ordered() -> None:
    rendered = query_formats.FORMATS["sources"](result("https://a/x", "https://a/x"))
    assert rendered.text() == "[1] https://a/x#a1  t1\n[2] https://a/x#a2  t2\n"
    assert rendered.text("err") == ""
    table = query_formats.FORMATS["table"](result("https://a/x"))
    streams = [stream for stream, _ in table.parts]
    assert streams == ["out", "out", "out", "err"]  # results first, the footer last
    footer = [str(p) for s, p in table.parts if s == "err"]
    assert "reranked" not in footer[0]
    reranked = replace(result("https://a/x"), reranker="cohere:rerank-v3.5")
    footer = [str(p) for s, p in query_formats.FORMATS["table"](reranked).parts if s == "err"]
    assert "lexical search in 'docs', reranked by cohere:rerank-v3.5, 1.0 ms" in footer[0]
    joined = Rendered.stdout("a") + Rendered.stderr("b") + Rendered.stdout("c")
    assert joined.text() == "ac" and joined.text("err") == "b"


def test_every_result_type_offers_json_the_same_way() -> None:
    import importlib

    from kbctl.render.registry import FORMATS, formats_named

    for kind, where in FORMATS.items():
        module, _, name = kind.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), type), kind
        formats = formats_named(where)
        assert "json" in formats and "table" in formats, kind
    doc = query_formats.FORMATS["json"](result("https://a/x")).text()
    assert doc == json_text(query_formats.query_json(result("https://a/x")))
    assert json.loads(doc)["results"][0]["headingPath"] == ["T", "a1"]
    assert formats_for(object())["json"]({"a_b": 1}).text() == '{\n  "a_b": 1\n}\n'


def test_output_routes_streams(capsys: pytest.CaptureFixture[str]) -> None:
    Output().emit(Rendered.stdout("one\n", Table("x")) + Rendered.stderr("note\n"))
    captured = capsys.readouterr()
    assert captured.out.startswith("one\n") and "x" in captured.out
    assert captured.err == "note\n"
    Output(json_mode=True).show(result("https://a/x"), "table")  # --json wins
    assert json.loads(capsys.readouterr().out)["question"] == "q"


def test_emoji_codes_in_what_came_from_outside_stay_text(
        capsys: pytest.CaptureFixture[str]) -> None:
    titled = result("https://a/x")
    titled = replace(titled, hits=[replace(titled.hits[0], heading_path=("Use :memo:", "a1"),
                                           text="notes :smile:")])
    Output().show(titled, "table")
    Output().emit(Rendered.stdout(Table("col :memo:")))
    out = capsys.readouterr().out
    assert "Use :memo: › a1" in out and "notes :smile:" in out and "col :memo:" in out, out


def test_a_new_format_is_one_module_and_one_line(cli: Cli, workdir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(query_formats.FORMATS, "urls", format_urls.urls)  # the one line
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "install.md").write_text("# Install\n\n## pnpm\n\nwidget pnpm\n\n## npm\n\n"
                                     "widget npm\n")
    (docs / "faq.md").write_text("# FAQ\n\nwidget questions\n")
    cli.json("ingest", "files", str(docs), "--base-url", "https://docs.example.com/")
    got = cli("query", "widget", "--format", "urls")
    assert got.exit_code == 0, got.output
    assert sorted(got.stdout.splitlines()) == ["https://docs.example.com/faq",
                                               "https://docs.example.com/install"]
    bad = cli("query", "widget", "--format", "xml")
    assert bad.exit_code == 2 and "table, json, context, sources, urls" in bad.stderr


def test_report_tables_wrap_what_does_not_fit_at_80_columns() -> None:
    from rich.console import Console

    from kbctl.pipeline.ingest import IngestReport, SourceFailure
    from kbctl.render.reports import ingest_summary

    url = "https://docs.example.com/guide/a-rather-long-path/to/the/page-that-failed.html"
    report = IngestReport(namespace="docs", embedder="none", failed=1, errors=[
        SourceFailure(ref=url, error=f"{url}: HTTP 404 Not Found", type="FetchError",
                      source="sitemap-1")])
    console = Console(width=80, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    for _, part in ingest_summary(report).parts:
        console.print(part)
    shown = console.export_text()
    assert "…" not in shown
    assert "".join(line.strip("│ ") for line in shown.splitlines()).count("page-that-f") >= 1


def test_thousands_of_failures_are_listed_a_few_then_counted() -> None:
    from kbctl.pipeline.ingest import IngestReport, SourceFailure
    from kbctl.pipeline.resync import ResyncReport
    from kbctl.render.reports import MAX_SHOWN_ERRORS, ingest_summary, resync_summary

    def failure(i: int) -> SourceFailure:
        url = f"https://docs.example.com/p{i}.html"
        why = "HTTP 503 Service Unavailable" if i % 4 else "HTTP 404 Not Found"
        return SourceFailure(ref=url, error=f"{url}: {why}", type="FetchError")

    errors = [failure(i) for i in range(3000)]
    ingest = IngestReport(namespace="docs", embedder="none", failed=3000, errors=errors)
    resync = ResyncReport(namespaces=[ingest])
    for rendered in (ingest_summary(ingest), resync_summary(resync)):
        text = "".join(str(p) for s, p in rendered.parts if s == "err" and not
                       hasattr(p, "columns"))
        table = [p for s, p in rendered.parts if hasattr(p, "columns")]
        listed = table[0].row_count if table else text.count("failed https://")
        assert listed == MAX_SHOWN_ERRORS
        assert (f"and {3000 - MAX_SHOWN_ERRORS:,} more failed (2,235 × …: HTTP 503 Service "
                "Unavailable; 745 × …: HTTP 404 Not Found); --json lists every one") in text


def test_a_memory_window_past_the_end_says_so() -> None:
    from kbctl.memory.model import MemoryText
    from kbctl.render.memory import text_view

    def footer(text: MemoryText) -> str:
        return "".join(str(p) for s, p in text_view(text).parts if s == "err")

    past = MemoryText(path="memory/agent/a.md", tier="agent", from_line=5, line_count=0,
                      total_lines=3, text="", backend="postgres")
    assert "no line 5: it has 3 lines" in footer(past)
    window = replace(past, from_line=2, line_count=1, text="two")
    assert "lines 2–2 of 3" in footer(window)
