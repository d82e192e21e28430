"""Eval checks are a registry: a new ``expect`` key is one module plus one line, and it is
read, validated, run and reported like the built-in ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.errors import SuiteError
from kbctl.evals import CHECKS, Expect, load_suite
from kbctl.pipeline.evals import run_eval
from kbctl.results import Hit, QueryResult

from . import check_title
from .test_eval_run import found

SUITE = """\
version: 1
cases:
  - id: titled
    question: How do I install?
    expect:
      sourceIncludes: install
      titleIncludes: Install Guide
  - id: untitled
    question: How do I upgrade?
    expect: {titleIncludes: Upgrade}
"""


def retriever(question: str, top_k: int, min_score: float | None,
              filters: dict[str, str]) -> QueryResult:
    url = "https://docs.example.com/install"
    return found(question, [Hit(rank=1, score=0.8, title="Install Guide", url=url,
                                citation=url + "#pnpm", anchor="pnpm", heading_path=(),
                                text="…", source_ref=url, namespace="docs")])


def test_builtin_checks_run_in_registry_order() -> None:
    assert list(CHECKS) == ["sourceIncludes", "notSourceIncludes", "minScore", "anchor"]
    expect = Expect(("a",), min_score=0.5, anchor="x")
    assert expect.declared == ("sourceIncludes", "minScore", "anchor")
    assert expect.to_dict() == {"sourceIncludes": ["a"], "minScore": 0.5, "anchor": "x"}


def test_a_new_check_is_one_module_and_one_line(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    suite = tmp_path / "docs.yaml"
    suite.write_text(SUITE)
    with pytest.raises(SuiteError, match="expect.titleIncludes"):
        load_suite(suite)  # not registered yet: an unknown key

    monkeypatch.setitem(CHECKS, check_title.NAME, check_title.CHECK)  # the one line

    loaded = load_suite(suite)
    assert loaded.cases[0].expect.declared == ("sourceIncludes", "titleIncludes")
    outcome = run_eval([suite], retriever, namespace="docs", embedder="e")
    titled, untitled = outcome.report.results
    assert [(c.name, c.passed) for c in titled.checks] == [("sourceIncludes", True),
                                                           ("titleIncludes", True)]
    assert not untitled.passed and "'Upgrade'" in untitled.checks[0].detail
    assert not outcome.verdict.passed
    cases = outcome.to_json()["cases"]
    assert cases[0]["expect"] == {"sourceIncludes": ["install"], "titleIncludes": "Install Guide"}
    assert outcome.report.metrics.scored == 1  # hit rate still counts sourceIncludes only

    bad = tmp_path / "bad.yaml"
    bad.write_text(SUITE.replace("{titleIncludes: Upgrade}", "{titleIncludes: 5}"))
    with pytest.raises(SuiteError, match="expect.titleIncludes.*expected a string"):
        load_suite(bad)
