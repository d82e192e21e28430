"""Ranking metrics in eval reports (nDCG@k, recall@k, per tag) and per-case filters."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kbctl.errors import SuiteError
from kbctl.evals import metrics
from kbctl.evals.checks.base import Retrieved
from kbctl.evals.metrics import case_gains, compute_metrics
from kbctl.evals.model import Case, Expect
from kbctl.evals.run import CaseResult
from kbctl.evals.suite import parse_suite

from .conftest import Cli


def chunk(rank: int, url: str) -> Retrieved:
    return Retrieved(rank=rank, score=1.0 / rank, citation=url, url=url, anchor=None,
                     source_ref=url, title="t")


def result(urls: list[str], patterns: tuple[str, ...], *, top_k: int = 5,
           tags: tuple[str, ...] = ()) -> CaseResult:
    case = Case(suite="s.yaml", index=0, id="c", question="q", top_k=top_k, min_score=None,
                filter={}, expect=Expect(source_includes=patterns), tags=tags)
    retrieved = tuple(chunk(i, u) for i, u in enumerate(urls, start=1))
    first = next((c.rank for c in retrieved if any(p in c.url for p in patterns)), None)
    return CaseResult(case=case, passed=True, checks=(), retrieved=retrieved,
                      first_match_rank=first, top_score=None, duration_ms=0.0)


def dcg(*ranks: int) -> float:
    return sum(1 / math.log2(r + 1) for r in ranks)


def test_ndcg_and_recall_count_each_relevant_page_once() -> None:
    both = result(["/x", "/a#1", "/y", "/b#2", "/a#3"], ("/a", "/b"))
    assert case_gains(both) == pytest.approx((dcg(2, 4) / dcg(1, 2), 1.0))
    one_page_twice = result(["/a#1", "/a#2", "/x"], ("/a", "/b"))
    assert case_gains(one_page_twice) == pytest.approx((dcg(1) / dcg(1, 2), 0.5))
    miss = result(["/x", "/y"], ("/a",))
    assert case_gains(miss) == (0.0, 0.0)
    top = result(["/a"], ("/a",))
    assert case_gains(top) == (1.0, 1.0)


def test_a_pattern_listed_twice_counts_once() -> None:
    """``sourceIncludes: [X, X]`` with X found gave recall 0.5."""
    assert case_gains(result(["/a#1", "/x"], ("/a", "/a"))) == (1.0, 1.0)
    assert case_gains(result(["/x", "/a#1"], ("/a", "/b", "/a"))) == pytest.approx(
        (dcg(2) / dcg(1, 2), 0.5))


def test_a_chunk_matching_two_patterns_gains_both() -> None:
    """A page and one of its sections, both listed and found at rank 1, scored 0.61."""
    first = result(["/guide/install#pip", "/x"], ("/guide/install", "/guide/install#pip"))
    assert case_gains(first) == (1.0, 1.0)
    later = result(["/x", "/guide/install#pip"], ("/guide/install", "/guide/install#pip"))
    assert case_gains(later) == pytest.approx((2 * dcg(2) / dcg(1, 2), 1.0))


def test_ideal_is_capped_at_top_k() -> None:
    # Three relevant pages but topK 2: finding two of them at the top is ideal.
    r = result(["/a", "/b"], ("/a", "/b", "/c"), top_k=2)
    ndcg, recall = case_gains(r)
    assert ndcg == pytest.approx(1.0) and recall == pytest.approx(2 / 3)


def test_suite_metrics_are_means_and_per_tag() -> None:
    results = [result(["/a"], ("/a",), tags=("howto",)),
               result(["/x", "/a"], ("/a",), tags=("howto", "api")),
               result(["/x"], ("/a",), tags=("api",))]
    m = compute_metrics(results)
    assert (m.scored, m.hits) == (3, 2)
    assert m.ndcg == pytest.approx((1 + dcg(2) + 0) / 3)
    assert m.recall == pytest.approx(2 / 3)
    tags = dict(m.by_tag)
    assert list(tags) == ["api", "howto"]
    assert tags["howto"].hit_rate == 1.0 and tags["howto"].mrr == pytest.approx(0.75)
    assert tags["api"].hit_rate == 0.5 and tags["api"].ndcg == pytest.approx(dcg(2) / 2)
    assert tags["api"].by_tag == ()


def test_each_case_is_judged_once_however_many_tags_it_carries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite of a few cases with thousands of tags each must not cost cases x tags
    judgements (it did: every tag re-judged every case)."""
    judged: list[object] = []
    monkeypatch.setattr(metrics, "case_gains", lambda r: judged.append(r) or (1.0, 1.0))
    tags = tuple(f"t{i}" for i in range(2000))
    results = [result(["/a"], ("/a",), tags=tags) for _ in range(10)]
    m = compute_metrics(results)
    assert len(judged) == 10
    assert len(m.by_tag) == 2000 and all(t.scored == 10 for _, t in m.by_tag)


SUITE = """\
version: 1
defaults:
  filter: {lang: en, product: cli}
cases:
  - id: german
    question: Wie aktualisiere ich?
    filter: {lang: de}
    tags: [i18n, howto]
    expect: {sourceIncludes: faq}
  - id: plain
    question: How do I upgrade?
    tags: howto
    expect: {sourceIncludes: faq}
"""


def test_case_filter_merges_over_defaults_and_tags_parse() -> None:
    suite = parse_suite(SUITE, "s.yaml")
    german, plain = suite.cases
    assert german.filter == {"lang": "de", "product": "cli"}
    assert plain.filter == {"lang": "en", "product": "cli"}
    assert german.tags == ("i18n", "howto") and plain.tags == ("howto",)


@pytest.mark.parametrize(("body", "field"), [
    ("    tags: 5\n", "tags"),
    ("    tags: ['']\n", "tags[0]"),
    ("    filter: {lang: 5}\n", "filter.lang"),
    ("    filter: [lang]\n", "filter"),
])
def test_bad_tags_and_filters_name_the_line(body: str, field: str) -> None:
    text = ("version: 1\ncases:\n  - id: a\n    question: q\n" + body +
            "    expect: {sourceIncludes: x}\n")
    with pytest.raises(SuiteError) as err:
        parse_suite(text, "s.yaml")
    assert "s.yaml:" in err.value.message and field in err.value.message


def test_case_filter_and_metrics_end_to_end(cli: Cli, workdir: Path) -> None:
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "faq-en.md").write_text("---\nlang: en\n---\n# FAQ\n\n## Upgrading\n\n"
                                    "Upgrade the widget with the upgrade command.\n")
    (docs / "faq-de.md").write_text("---\nlang: de\n---\n# FAQ\n\n## Upgrading\n\n"
                                    "Upgrade the widget with the upgrade command, auf Deutsch.\n")
    cli.json("ingest", "files", str(docs), "--base-url", "https://docs.example.com/")
    (workdir / "suite.yaml").write_text("""\
version: 1
defaults: {filter: {lang: en}}
cases:
  - id: de-only
    question: upgrade the widget
    filter: {lang: de}
    tags: [i18n]
    expect: {sourceIncludes: faq-de, notSourceIncludes: faq-en}
  - id: en-default
    question: upgrade the widget
    expect: {sourceIncludes: faq-en, notSourceIncludes: faq-de}
""")
    report = cli.json("eval", str(workdir / "suite.yaml"))
    assert report["totals"] == {"total": 2, "passed": 2, "failed": 0}
    metrics = report["metrics"]
    assert metrics["ndcg"] == 1.0 and metrics["recall"] == 1.0
    assert metrics["byTag"]["i18n"]["scoredCases"] == 1
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["de-only"]["filter"] == {"lang": "de"}
    assert cases["de-only"]["tags"] == ["i18n"] and cases["de-only"]["ndcg"] == 1.0


def test_a_case_whose_filter_matches_nothing_says_so(cli: Cli, workdir: Path) -> None:
    """Nothing retrieved under a filter most often means the filter, not the ranking: the
    failure names it, and the per-tag lines count their cases in good English."""
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "faq.md").write_text("---\nlang: en\n---\n# FAQ\n\nUpgrade the widget.\n")
    cli.json("ingest", "files", str(docs), "--base-url", "https://docs.example.com/")
    (workdir / "suite.yaml").write_text("""\
version: 1
cases:
  - id: typo-in-filter
    question: upgrade the widget
    filter: {lang: english}
    tags: [i18n]
    expect: {sourceIncludes: faq}
  - id: unfiltered
    question: upgrade the widget
    tags: [i18n, plain]
    expect: {sourceIncludes: faq}
""")
    result = cli("eval", str(workdir / "suite.yaml"))
    assert result.exit_code == 1
    text = " ".join(result.output.replace("│", " ").split())  # the table's wrapped cells
    assert "searched only passages with lang=english (the case's filter)" in text
    assert "tag i18n (2 cases)" in result.output and "tag plain (1 case)" in result.output
