"""Running eval cases: check semantics, error isolation, metrics, baselines, verdict, JSON."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kbctl.errors import EmbedderError, InputError
from kbctl.evals import (
    Case,
    CaseResult,
    EvalReport,
    Expect,
    Suite,
    compare_with_baseline,
    compute_metrics,
    judge_run,
    judged,
    load_baseline,
    parse_suite,
    run_suites,
    verdict,
)
from kbctl.evals.model import Defaults
from kbctl.evals.retriever import MeasuredRetriever
from kbctl.evals.run import RETRIEVAL_CHECK, format_pair
from kbctl.pipeline.evals import run_eval
from kbctl.results import Hit, QueryResult

# --- fakes -----------------------------------------------------------------------------


def hit(url: str, score: float, anchor: str | None = None, *, source_ref: str | None = None,
        rank: int = 0) -> Hit:
    citation = f"{url}#{anchor}" if anchor else url
    return Hit(rank=rank, score=score, title=url.rsplit("/", 1)[-1], url=url, citation=citation,
               anchor=anchor, heading_path=(), text="…", source_ref=source_ref or url,
               namespace="docs")


Answer = list[Hit] | Exception


class FakeRetriever:
    """Answers per question; records every call in order."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, int, float | None, dict[str, str]]] = []

    def __call__(self, question: str, top_k: int, min_score: float | None,
                 filt: dict[str, str]) -> QueryResult:
        self.calls.append((question, top_k, min_score, filt))
        answer = self.answers.get(question, [])
        if isinstance(answer, Exception):
            raise answer
        return found(question, answer)


def found(question: str, hits: list[Hit], **words: Any) -> QueryResult:
    return QueryResult(question=question, namespace="docs", hits=list(hits), mode="lexical",
                       embedder="none", elapsed_ms=1.0, **words)


def case(case_id: str = "c", *, question: str | None = None, top_k: int = 5,
         expect: Expect | None = None, suite: str = "evals/docs.yaml", index: int = 0) -> Case:
    return Case(suite=suite, index=index, id=case_id, question=question or f"q {case_id}",
                top_k=top_k, min_score=None, filter={}, expect=expect or Expect(), line=index + 4)


def suite_of(*cases: Case, path: str = "evals/docs.yaml") -> Suite:
    return Suite(path=path, defaults=Defaults(), cases=tuple(cases))


def run(cases: list[Case], answers: dict[str, Answer]) -> EvalReport:
    return run_suites([suite_of(*cases)], FakeRetriever(answers), namespace="docs",
                      embedder="fake/model@8")


def ticking(step: float = 0.5) -> Callable[[], float]:
    ticks: Iterator[float] = (i * step for i in range(10_000))
    return lambda: next(ticks)


INSTALL = hit("https://docs.example.com/install", 0.82, "install-with-pnpm")
LEGACY = hit("https://docs.example.com/legacy/setup", 0.55, "old-setup")
CONFIG = hit("kb://notes/config", 0.31, None, source_ref="notes/Config.MD")


# --- retrieval call and order ----------------------------------------------------------


def test_retriever_gets_effective_settings_in_input_order() -> None:
    text = """\
version: 1
defaults: {topK: 3, minScore: 0.2, filter: {lang: en}}
cases:
  - {id: one, question: first, topK: 8, minScore: 0.1}
  - {id: two, question: second}
"""
    retriever = FakeRetriever({})
    seen: list[str] = []
    report = run_suites([parse_suite(text, "s.yaml")], retriever, namespace="docs",
                        embedder="e", on_result=lambda r: seen.append(r.case.id))
    assert retriever.calls == [("first", 8, 0.1, {"lang": "en"}),
                               ("second", 3, 0.2, {"lang": "en"})]
    assert [r.case.id for r in report.results] == ["one", "two"] == seen


def test_filter_given_to_retriever_is_a_copy() -> None:
    def mutating(q: str, k: int, m: float | None, f: dict[str, str]) -> QueryResult:
        f["lang"] = "xx"
        return found(q, [])

    text = "version: 1\ndefaults: {filter: {lang: en}}\ncases:\n  - {id: a, question: q}\n"
    suite = parse_suite(text, "s.yaml")
    run_suites([suite], mutating, namespace="n", embedder="e")
    assert suite.cases[0].filter == {"lang": "en"}


def test_hits_beyond_top_k_are_ignored() -> None:
    c = case(top_k=1, expect=Expect(source_includes=("legacy",)))
    (result,) = run([c], {c.question: [INSTALL, LEGACY]}).results
    assert len(result.retrieved) == 1
    assert not result.passed


# --- sourceIncludes --------------------------------------------------------------------


def test_source_includes_is_case_insensitive_and_ranks_by_position() -> None:
    c = case(expect=Expect(source_includes=("DOCS.EXAMPLE.COM/LEGACY",)))
    (result,) = run([c], {c.question: [INSTALL, LEGACY]}).results
    assert result.passed
    assert result.first_match_rank == 2
    assert result.checks[0].detail == \
        f"rank 2 matched 'DOCS.EXAMPLE.COM/LEGACY': {LEGACY.citation}"


def test_source_includes_matches_the_source_ref_and_the_anchor_of_the_citation() -> None:
    by_ref = case("ref", expect=Expect(source_includes=("config.md",)))
    by_anchor = case("anchor", expect=Expect(source_includes=("#install-with",)))
    results = run([by_ref, by_anchor], {by_ref.question: [INSTALL, CONFIG],
                                        by_anchor.question: [INSTALL]}).results
    assert [r.passed for r in results] == [True, True]
    assert [r.first_match_rank for r in results] == [2, 1]


def test_source_includes_any_of_a_list() -> None:
    c = case(expect=Expect(source_includes=("nowhere", "notes/config")))
    (result,) = run([c], {c.question: [INSTALL, CONFIG]}).results
    assert result.passed and result.first_match_rank == 2


def test_source_includes_miss_lists_what_came_back() -> None:
    c = case(expect=Expect(source_includes=("install", "setup")))
    (result,) = run([c], {c.question: [CONFIG]}).results
    assert not result.passed
    assert result.first_match_rank is None
    detail = result.checks[0].detail
    assert detail.startswith("no chunk matched any of 'install', 'setup'; got: ")
    assert CONFIG.citation in detail


def test_miss_listing_is_capped() -> None:
    hits = [hit(f"https://x.example/p{i}", 0.5) for i in range(8)]
    c = case(top_k=8, expect=Expect(source_includes=("zzz",)))
    (result,) = run([c], {c.question: hits}).results
    detail = result.checks[0].detail
    assert "p4" in detail and "p5" not in detail and "+3 more" in detail


# --- notSourceIncludes -----------------------------------------------------------------


def test_not_source_includes_fails_naming_the_offender() -> None:
    c = case(expect=Expect(not_source_includes=("Legacy",)))
    (result,) = run([c], {c.question: [INSTALL, LEGACY]}).results
    assert not result.passed
    assert result.checks[0].detail == f"rank 2 matched excluded 'Legacy': {LEGACY.citation}"


def test_not_source_includes_passes_when_none_match() -> None:
    c = case(expect=Expect(not_source_includes=("legacy", "v1")))
    (result,) = run([c], {c.question: [INSTALL, CONFIG]}).results
    assert result.passed
    assert result.checks[0].detail == "no chunk matched any of 'legacy', 'v1'"


# --- minScore and anchor ---------------------------------------------------------------


@pytest.mark.parametrize(("top", "floor", "passed", "detail"), [
    (0.31, 0.4, False, "top score 0.31 < 0.40"),
    (0.4, 0.4, True, "top score 0.40 >= 0.40"),
    (0.404, 0.405, False, "top score 0.404 < 0.405"),
    (0.9, 0.4, True, "top score 0.90 >= 0.40"),
])
def test_min_score(top: float, floor: float, passed: bool, detail: str) -> None:
    c = case(expect=Expect(min_score=floor))
    (result,) = run([c], {c.question: [hit("https://a.example/x", top)]}).results
    assert result.passed is passed
    assert result.checks[0].detail == detail
    assert result.top_score == top


def test_min_score_uses_the_best_score_whatever_the_order() -> None:
    c = case(expect=Expect(min_score=0.8))
    (result,) = run([c], {c.question: [CONFIG, INSTALL]}).results
    assert result.passed and result.top_score == INSTALL.score


def test_format_pair_shows_enough_digits() -> None:
    assert format_pair(0.31, 0.4) == ("0.31", "0.40")
    assert format_pair(0.4049, 0.405) == ("0.4049", "0.4050")
    assert format_pair(0.5, 0.5) == ("0.50", "0.50")
    assert format_pair(0.41, 0.405) == ("0.410", "0.405")


def test_anchor_contains_case_insensitively() -> None:
    c = case(expect=Expect(anchor="PNPM"))
    (result,) = run([c], {c.question: [LEGACY, INSTALL]}).results
    assert result.passed
    assert result.checks[0].detail == "rank 2 anchor 'install-with-pnpm' contains 'PNPM'"


def test_anchor_mismatch_lists_anchors() -> None:
    c = case(expect=Expect(anchor="yarn"))
    (result,) = run([c], {c.question: [INSTALL, LEGACY, CONFIG]}).results
    assert not result.passed
    assert result.checks[0].detail == \
        "no chunk anchor contains 'yarn'; got anchors: install-with-pnpm, old-setup"


def test_anchor_without_any_anchored_chunk_says_so() -> None:
    c = case(expect=Expect(anchor="config"))
    (result,) = run([c], {c.question: [CONFIG]}).results
    assert not result.passed
    assert "no retrieved chunk carries an anchor" in result.checks[0].detail


# --- combinations, nothing retrieved, no checks ----------------------------------------

FULL = Expect(source_includes=("install",), not_source_includes=("legacy",), min_score=0.5,
              anchor="pnpm")


def test_all_declared_checks_must_pass() -> None:
    good = case("good", expect=FULL)
    bad = case("bad", expect=FULL)
    results = run([good, bad], {good.question: [INSTALL], bad.question: [INSTALL, LEGACY]}).results
    assert [c.name for c in results[0].checks] == \
        ["sourceIncludes", "notSourceIncludes", "minScore", "anchor"]
    assert results[0].passed
    assert [c.passed for c in results[1].checks] == [True, False, True, True]
    assert not results[1].passed
    assert [c.name for c in results[1].failures] == ["notSourceIncludes"]


def test_nothing_retrieved() -> None:
    c = case(expect=FULL)
    (result,) = run([c], {c.question: []}).results
    outcome = {check.name: check for check in result.checks}
    for name in ("sourceIncludes", "minScore", "anchor"):
        assert not outcome[name].passed
        assert outcome[name].detail.startswith("nothing retrieved")
    assert outcome["notSourceIncludes"].passed
    assert result.top_score is None and result.first_match_rank is None
    assert result.retrieved == ()


def test_case_without_checks_passes_even_with_nothing_retrieved() -> None:
    c = case()
    (result,) = run([c], {}).results
    assert result.passed and result.checks == ()


# --- retriever errors ------------------------------------------------------------------


def test_retriever_error_fails_that_case_only() -> None:
    cases = [case("a", expect=FULL, index=0), case("b", expect=FULL, index=1),
             case("c", expect=FULL, index=2)]
    answers: dict[str, Answer] = {
        cases[0].question: [INSTALL],
        cases[1].question: EmbedderError("quota exhausted", hint="wait"),
        cases[2].question: [INSTALL],
    }
    retriever = FakeRetriever(answers)
    report = run_suites([suite_of(*cases)], retriever, namespace="docs", embedder="e")
    assert len(retriever.calls) == 3
    assert [r.passed for r in report.results] == [True, False, True]
    failed = report.results[1]
    assert failed.error == "EmbedderError: quota exhausted"
    assert [(c.name, c.passed) for c in failed.checks] == [(RETRIEVAL_CHECK, False)]
    assert "quota exhausted" in failed.checks[0].detail
    assert (report.passed, report.failed, report.total) == (2, 1, 3)


def test_a_service_that_stays_down_stops_the_run_with_its_error() -> None:
    """Two cases in a row that the environment failed (not the retrieval) stop the run,
    exit 3, instead of failing every later case after the same wait; a failure between
    successes, or one that is not the environment's, fails its case only."""
    cases = [case(c, expect=FULL, index=i) for i, c in enumerate("abcde")]
    down = EmbedderError("provider at http://127.0.0.1:9/v1: request failed after 2 attempts")
    retriever = FakeRetriever({c.question: down for c in cases[1:]})
    with pytest.raises(EmbedderError, match="stopped: 2 cases in a row") as caught:
        run_suites([suite_of(*cases)], retriever, namespace="docs", embedder="e")
    assert len(retriever.calls) == 3 and caught.value.exit_code == 3
    flaky = FakeRetriever({cases[1].question: down, cases[2].question: ValueError("bug"),
                           cases[3].question: down})
    report = run_suites([suite_of(*cases)], flaky, namespace="docs", embedder="e")
    assert len(flaky.calls) == 5 and report.failed == 5


def test_retriever_returning_garbage_is_that_case_failing() -> None:
    def broken(q: str, k: int, m: float | None, f: dict[str, str]) -> QueryResult:
        return [object()]  # type: ignore[return-value]

    (result,) = run_suites([suite_of(case())], broken, namespace="n", embedder="e").results
    assert not result.passed and result.error is not None and "AttributeError" in result.error


def test_base_exceptions_are_not_swallowed() -> None:
    def interrupted(q: str, k: int, m: float | None, f: dict[str, str]) -> QueryResult:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suites([suite_of(case())], interrupted, namespace="n", embedder="e")


def test_durations_come_from_the_clock() -> None:
    cases = [case("a", index=0), case("b", index=1)]
    report = run_suites([suite_of(*cases)], FakeRetriever({}), namespace="n", embedder="e",
                        clock=ticking(0.5))
    # ticks: run start 0, a 1..2, b 3..4, run end 5 (0.5 s each)
    assert [r.duration_ms for r in report.results] == [500.0, 500.0]
    assert report.duration_ms == 2500.0


# --- metrics ---------------------------------------------------------------------------


def result_with(rank: int | None, *, declares: bool = True, passed: bool = True) -> CaseResult:
    expect = Expect(source_includes=("x",)) if declares else Expect()
    return CaseResult(case=case(expect=expect), passed=passed, checks=(), retrieved=(),
                      first_match_rank=rank, top_score=None, duration_ms=0.0)


def test_metrics_by_hand() -> None:
    results = [result_with(1), result_with(2), result_with(None, passed=False), result_with(4),
               result_with(None, declares=False)]
    metrics = compute_metrics(results)
    assert (metrics.scored, metrics.hits) == (4, 3)
    assert metrics.hit_rate == pytest.approx(3 / 4)
    assert metrics.mrr == pytest.approx((1 + 1 / 2 + 0 + 1 / 4) / 4)


def test_metrics_without_source_includes_are_not_measured() -> None:
    metrics = compute_metrics([result_with(None, declares=False)])
    assert (metrics.hit_rate, metrics.mrr, metrics.scored) == (None, None, 0)


def test_report_metrics_count_retriever_errors_as_misses() -> None:
    ok = case("ok", expect=Expect(source_includes=("legacy",)), index=0)
    err = case("err", expect=Expect(source_includes=("legacy",)), index=1)
    report = run([ok, err], {ok.question: [INSTALL, LEGACY], err.question: RuntimeError("x")})
    assert report.metrics.hit_rate == pytest.approx(0.5)
    assert report.metrics.mrr == pytest.approx(0.5 * (1 / 2))


# --- JSON report -----------------------------------------------------------------------


def test_report_json_is_complete_and_serialisable() -> None:
    a = case("a", expect=FULL, index=0)
    b = case("b", expect=FULL, index=1)
    report = run([a, b], {a.question: [INSTALL], b.question: RuntimeError("down")})
    data = json.loads(json.dumps(judged(report).to_json()))
    assert (data["schema"], data["schemaVersion"]) == ("kbctl.eval.report", 1)
    assert data["namespace"] == "docs" and data["embedder"] == "fake/model@8"
    assert data["totals"] == {"total": 2, "passed": 1, "failed": 1}
    assert data["suites"] == [{"path": "evals/docs.yaml", "name": "docs", "cases": 2}]
    assert [c["id"] for c in data["cases"]] == ["a", "b"]
    first = data["cases"][0]
    assert first["retrieved"][0]["citation"] == INSTALL.citation
    assert first["expect"] == {"sourceIncludes": ["install"], "notSourceIncludes": ["legacy"],
                               "minScore": 0.5, "anchor": "pnpm"}
    assert first["firstMatchRank"] == 1 and first["topScore"] == INSTALL.score
    assert data["cases"][1]["error"] == "RuntimeError: down"
    assert data["baseline"] is None
    assert data["verdict"] == {"passed": False, "failOn": "any",
                               "reason": "1 of 2 cases failed"}
    assert data["metrics"]["hitRate"] == report.metrics.hit_rate


# --- baselines -------------------------------------------------------------------------


def baseline_from(cases: list[Case], answers: dict[str, Answer]) -> dict[str, object]:
    return json.loads(json.dumps(judged(run(cases, answers)).to_json()))


def ranked(position: int, score: float = 0.8) -> list[Hit]:
    """A result list whose first 'target' chunk sits at ``position`` (0 = absent)."""
    filler = [hit(f"https://x.example/other{i}", score) for i in range(1, 6)]
    if position:
        filler[position - 1] = hit("https://x.example/target", score)
    return filler


TARGET = Expect(source_includes=("target",))


def test_pass_to_fail_is_a_regression_and_fail_to_pass_is_fixed() -> None:
    a, b = case("a", expect=TARGET, index=0), case("b", expect=TARGET, index=1)
    base = baseline_from([a, b], {a.question: ranked(1), b.question: ranked(0)})
    now = run([a, b], {a.question: ranked(0), b.question: ranked(1)})
    diff = compare_with_baseline(now, base)
    assert [r.ref.id for r in diff.regressions] == ["a"]
    assert diff.regressions[0].failed_now
    assert "passed in the baseline, fails now" in diff.regressions[0].reasons
    assert "first match lost (was rank 1)" in diff.regressions[0].reasons
    assert [r.id for r in diff.fixed] == ["b"]


@pytest.mark.parametrize(("before", "after", "tolerance", "regressed"), [
    (1, 2, 0, True),
    (1, 2, 1, False),
    (1, 3, 1, True),
    (2, 1, 0, False),
    (3, 3, 0, False),
    (2, 0, 4, True),   # a match that disappeared is always worse
    (0, 0, 0, False),
])
def test_rank_rules(before: int, after: int, tolerance: int, regressed: bool) -> None:
    c = case(expect=TARGET)
    base = baseline_from([c], {c.question: ranked(before)})
    now = run([c], {c.question: ranked(after)})
    diff = compare_with_baseline(now, base, rank_tolerance=tolerance)
    assert bool(diff.regressions) is regressed
    if regressed and after:
        assert diff.regressions[0].reasons == (
            f"first match rank {before} → {after} (tolerance {tolerance})",)
        assert not diff.regressions[0].failed_now


@pytest.mark.parametrize(("before", "after", "tolerance", "regressed"), [
    (0.8, 0.6, None, False),   # not checked without a tolerance
    (0.8, 0.6, 0.1, True),
    (0.8, 0.75, 0.1, False),
    (0.8, 0.7, 0.1, False),    # exactly the tolerance is allowed
    (0.8, 0.8, 0.0, False),
    (0.6, 0.9, 0.0, False),
])
def test_score_rules(before: float, after: float, tolerance: float | None,
                     regressed: bool) -> None:
    c = case()
    base = baseline_from([c], {c.question: [hit("https://a.example", before)]})
    now = run([c], {c.question: [hit("https://a.example", after)]})
    diff = compare_with_baseline(now, base, score_tolerance=tolerance)
    assert bool(diff.regressions) is regressed
    if regressed:
        assert diff.regressions[0].reasons[0].startswith(f"top score {before:.2f} → {after:.2f}")


def test_score_that_vanished_is_a_drop() -> None:
    c = case()
    base = baseline_from([c], {c.question: [hit("https://a.example", 0.5)]})
    now = run([c], {c.question: []})
    (regression,) = compare_with_baseline(now, base, score_tolerance=0.2).regressions
    assert "nothing retrieved" in regression.reasons[0]


def test_failing_before_and_after_is_not_a_regression() -> None:
    c = case(expect=Expect(min_score=0.9))
    base = baseline_from([c], {c.question: [hit("https://a.example", 0.5)]})
    now = run([c], {c.question: [hit("https://a.example", 0.5)]})
    diff = compare_with_baseline(now, base)
    assert diff.regressions == () and diff.fixed == ()
    assert verdict(now, diff, "regression") is True
    assert verdict(now, diff, "any") is False


def test_added_removed_and_edited_cases() -> None:
    keep, gone = case("keep", index=0), case("gone", index=1)
    base = baseline_from([keep, gone], {})
    edited = case("keep", expect=Expect(not_source_includes=("zzz",)), index=0)
    new = case("new", index=1)
    diff = compare_with_baseline(run([edited, new], {}), base)
    assert [r.id for r in diff.added] == ["new"]
    assert [r.id for r in diff.removed] == ["gone"]
    assert [r.id for r in diff.changed] == ["keep"]
    assert diff.regressions == ()


def test_single_suite_matches_by_id_after_a_rename_several_match_by_path() -> None:
    c = case(expect=TARGET)
    base = baseline_from([c], {c.question: ranked(1)})
    moved = Case(**{**c.__dict__, "suite": "evals/renamed.yaml"})
    renamed = run_suites([suite_of(moved, path="evals/renamed.yaml")],
                         FakeRetriever({c.question: ranked(2)}), namespace="docs",
                         embedder="fake/model@8")
    diff = compare_with_baseline(renamed, base)
    assert [r.ref.id for r in diff.regressions] == ["c"] and diff.added == ()

    other = Case(**{**c.__dict__, "suite": "evals/other.yaml"})
    two = run_suites([suite_of(c), suite_of(other, path="evals/other.yaml")],
                     FakeRetriever({c.question: ranked(2)}), namespace="docs",
                         embedder="fake/model@8")
    diff = compare_with_baseline(two, base)
    assert [(r.ref.suite, r.ref.id) for r in diff.regressions] == [("evals/docs.yaml", "c")]
    assert [(r.suite, r.id) for r in diff.added] == [("evals/other.yaml", "c")]


@pytest.mark.parametrize("spelled", ["docs.yaml", "/ci/work/evals/docs.yaml",
                                     "./evals/docs.yaml"])
def test_several_suites_match_however_their_paths_are_spelled(spelled: str) -> None:
    """A baseline saved as ``evals/docs.yaml`` and a run from ``evals/`` (or with absolute
    paths): every case was 'added', none compared, and the gate passed a regression."""
    c, d = case("c", expect=TARGET), case("d", expect=TARGET, index=1)
    other = Case(**{**d.__dict__, "suite": "evals/other.yaml"})
    base = baseline_from([c, other], {c.question: ranked(1), d.question: ranked(1)})
    here = Case(**{**c.__dict__, "suite": spelled})
    there = Case(**{**d.__dict__, "suite": spelled.replace("docs", "other")})
    now = run_suites([suite_of(here, path=spelled),
                      suite_of(there, path=spelled.replace("docs", "other"))],
                     FakeRetriever({c.question: ranked(3), d.question: ranked(1)}),
                     namespace="docs", embedder="fake/model@8")
    diff = compare_with_baseline(now, base)
    assert [(r.ref.suite, r.ref.id) for r in diff.regressions] == [(spelled, "c")]
    assert diff.added == () and diff.removed == ()


def test_two_suites_of_one_name_are_not_guessed_between() -> None:
    c = case("c", expect=TARGET)
    base = baseline_from([Case(**{**c.__dict__, "suite": "docs.yaml"}),
                          Case(**{**c.__dict__, "id": "x", "suite": "kept.yaml"})], {})
    now = run_suites([suite_of(Case(**{**c.__dict__, "suite": p, "id": i}), path=p)
                      for p, i in (("a/docs.yaml", "c"), ("b/docs.yaml", "c"),
                                   ("kept.yaml", "x"))],
                     FakeRetriever({}), namespace="docs", embedder="fake/model@8")
    diff = compare_with_baseline(now, base)
    assert {(r.suite, r.id) for r in diff.removed} == {("docs.yaml", "c")}


def test_a_baseline_that_shares_no_case_is_refused() -> None:
    """A baseline of other suites passed every run: nothing to compare, nothing regressed."""
    base = baseline_from([case("elsewhere")], {})
    with pytest.raises(InputError) as info:
        compare_with_baseline(run([case("here")], {}), base)
    assert info.value.exit_code == 2 and "shares no case with this run" in str(info.value)


def test_a_baseline_of_another_embedder_is_refused_not_compared() -> None:
    """A change of embedder moves every rank: compared, it would read as regressions and
    fixes of the docs."""
    c = case()
    base = baseline_from([c], {})
    base["embedder"] = "other/model@3"
    with pytest.raises(InputError) as info:
        compare_with_baseline(run([c], {}), base)
    assert info.value.exit_code == 2
    assert "measured another retriever (embedder other/model@3; this run: embedder " \
           "fake/model@8)" in info.value.message


def test_a_reranker_change_is_refused_and_an_older_baseline_is_not() -> None:
    c = case()
    base = baseline_from([c], {})
    assert base["reranker"] == "none"
    reranked = run_suites([suite_of(c)], FakeRetriever({}), namespace="docs",
                          embedder="fake/model@8", reranker="tei/bge-reranker")
    with pytest.raises(InputError, match="reranker none; this run: reranker tei/bge-reranker"):
        compare_with_baseline(reranked, base)
    del base["reranker"]  # a report written before reports named the reranker
    assert compare_with_baseline(reranked, base).warnings == ()


def test_a_fusion_change_is_refused_when_both_reports_name_the_retriever() -> None:
    c = case()
    weighted = MeasuredRetriever("fake/model@8", "weighted", 0.7)
    then = run_suites([suite_of(c)], FakeRetriever({}), namespace="docs",
                      embedder="fake/model@8", measured=weighted)
    base = json.loads(json.dumps(judged(then).to_json()))
    same = run_suites([suite_of(c)], FakeRetriever({}), namespace="docs",
                      embedder="fake/model@8", measured=weighted)
    assert compare_with_baseline(same, base).regressions == ()
    rrf = run_suites([suite_of(c)], FakeRetriever({}), namespace="docs",
                     embedder="fake/model@8",
                     measured=MeasuredRetriever("fake/model@8", "rrf", 0.7))
    with pytest.raises(InputError, match="fusion weighted, vectorWeight 0.7; this run: "
                                         "fusion rrf, vectorWeight None"):
        compare_with_baseline(rrf, base)


def test_a_namespace_change_is_warned() -> None:
    c = case()
    base = baseline_from([c], {})
    base["namespace"] = "docs-v1"
    assert compare_with_baseline(run([c], {}), base).warnings == (
        "the baseline was run with namespace 'docs-v1', this run with 'docs'",)


def test_baseline_metrics_and_counts_are_kept() -> None:
    c = case(expect=TARGET)
    base = baseline_from([c], {c.question: ranked(2)})
    diff = compare_with_baseline(run([c], {c.question: ranked(1)}), base)
    assert (diff.baseline_hit_rate, diff.baseline_mrr) == (1.0, 0.5)
    assert (diff.baseline_total, diff.baseline_passed) == (1, 1)


def test_load_baseline_round_trip(tmp_path: Path) -> None:
    c = case(expect=TARGET)
    path = tmp_path / "base.json"
    path.write_text(json.dumps(baseline_from([c], {c.question: ranked(1)})))
    diff = compare_with_baseline(run([c], {c.question: ranked(3)}), load_baseline(path),
                                 rank_tolerance=1, source=path.as_posix())
    assert diff.source == path.as_posix()
    assert diff.regressions[0].reasons == ("first match rank 1 → 3 (tolerance 1)",)


def test_a_baseline_larger_than_a_suite_may_be_is_still_read(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A report kbctl saved for a large suite outgrows the hand-written files' cap; its own
    (larger) cap still refuses an endless file."""
    c = case(expect=TARGET)
    data = baseline_from([c], {c.question: ranked(1)})
    data["padding"] = "x" * (5 * 1024 * 1024)  # over the 4 MiB cap of suites and configs
    path = tmp_path / "base.json"
    path.write_text(json.dumps(data))
    assert len(load_baseline(path).cases) == 1
    monkeypatch.setattr("kbctl.evals.baseline.MAX_BASELINE_BYTES", 1024 * 1024)
    with pytest.raises(InputError, match="byte limit"):
        load_baseline(path)


def _mutations() -> list[tuple[str, Callable[[dict], None], str]]:
    def drop_passed(d: dict) -> None:
        del d["cases"][0]["passed"]

    def bad_rank(d: dict) -> None:
        d["cases"][0]["firstMatchRank"] = 0

    def bad_score(d: dict) -> None:
        d["cases"][0]["topScore"] = "high"

    def newer(d: dict) -> None:
        d["schemaVersion"] = 2

    def other_schema(d: dict) -> None:
        d["schema"] = "something.else"

    def no_cases(d: dict) -> None:
        d["cases"] = {}

    def dup(d: dict) -> None:
        d["cases"].append(copy.deepcopy(d["cases"][0]))

    def nul_id(d: dict) -> None:
        d["cases"][0]["id"] = "a\x00b"

    def surrogate_suite(d: dict) -> None:
        d["cases"][0]["suite"] = "\ud800"

    return [("missing passed", drop_passed, "cases[0].passed"),
            ("NUL in an id", nul_id, "cases[0].id: a NUL byte is not allowed"),
            ("surrogate in a suite", surrogate_suite, "cases[0].suite: a lone surrogate"),
            ("rank zero", bad_rank, "cases[0].firstMatchRank"),
            ("score string", bad_score, "cases[0].topScore"),
            ("newer version", newer, "newer kbctl"),
            ("other schema", other_schema, "schema"),
            ("cases not a list", no_cases, "cases"),
            ("duplicate case", dup, "duplicate case")]


@pytest.mark.parametrize(("mutate", "fragment"), [m[1:] for m in _mutations()],
                         ids=[m[0] for m in _mutations()])
def test_malformed_baseline_names_the_file(tmp_path: Path, mutate: Callable[[dict], None],
                                           fragment: str) -> None:
    c = case(expect=TARGET)
    data = baseline_from([c], {c.question: ranked(1)})
    mutate(data)
    path = tmp_path / "base.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_baseline(path)
    assert info.value.exit_code == 2
    assert str(path.as_posix()) in str(info.value) and fragment in str(info.value)


@pytest.mark.parametrize(("content", "fragment"), [
    ('{"schema": ', ":1: baseline is not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    (None, "baseline file not found"),
])
def test_unreadable_baseline(tmp_path: Path, content: str | None, fragment: str) -> None:
    path = tmp_path / "base.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InputError) as info:
        load_baseline(path)
    assert path.as_posix() in str(info.value) and fragment in str(info.value)


@pytest.mark.parametrize(("rank", "score"), [(-1, None), (1.5, None), (True, None), (0, -0.1),
                                            (0, 5)])
def test_bad_tolerances(rank: object, score: object) -> None:
    c = case()
    base = baseline_from([c], {})
    with pytest.raises(InputError):
        compare_with_baseline(run([c], {}), base, rank_tolerance=rank,  # type: ignore[arg-type]
                              score_tolerance=score)  # type: ignore[arg-type]


# --- verdict ---------------------------------------------------------------------------


def test_verdict_policies() -> None:
    a, b = case("a", expect=TARGET, index=0), case("b", expect=TARGET, index=1)
    base = baseline_from([a, b], {a.question: ranked(1), b.question: ranked(0)})

    still_failing = run([a, b], {a.question: ranked(1), b.question: ranked(0)})
    diff = compare_with_baseline(still_failing, base)
    assert verdict(still_failing, None, "any") is False
    assert verdict(still_failing, diff, "regression") is True
    assert "none a regression" in judge_run(still_failing, diff, "regression").reason

    rank_worse = run([a, b], {a.question: ranked(2), b.question: ranked(1)})
    diff = compare_with_baseline(rank_worse, base)
    assert rank_worse.failed == 0
    assert verdict(rank_worse, None, "any") is True
    assert verdict(rank_worse, diff, "any") is False   # "any" includes regressions
    assert verdict(rank_worse, diff, "regression") is False
    assert verdict(rank_worse, compare_with_baseline(rank_worse, base, rank_tolerance=1),
                   "regression") is True


def test_verdict_input_errors() -> None:
    report = run([case()], {})
    with pytest.raises(InputError):
        verdict(report, None, "regression")
    with pytest.raises(InputError):
        verdict(report, None, "sometimes")


# --- the pipeline call -----------------------------------------------------------------

SUITE = """\
version: 1
cases:
  - id: install
    question: How do I install?
    expect: {sourceIncludes: install}
  - id: legacy
    question: Old setup?
    expect: {notSourceIncludes: legacy}
"""


def test_run_eval_end_to_end_with_baseline(tmp_path: Path) -> None:
    suite = tmp_path / "docs.yaml"
    suite.write_text(SUITE)
    good = FakeRetriever({"How do I install?": [INSTALL], "Old setup?": [CONFIG]})
    first = run_eval([suite], good, namespace="docs", embedder="e")
    assert first.verdict.passed and first.diff is None
    base = tmp_path / "base.json"
    base.write_text(json.dumps(first.to_json()))

    worse = FakeRetriever({"How do I install?": [CONFIG, INSTALL], "Old setup?": [LEGACY]})
    second = run_eval([suite], worse, namespace="docs", embedder="e", baseline=base,
                      fail_on="regression")
    assert second.diff is not None
    assert [r.ref.id for r in second.diff.regressions] == ["install", "legacy"]
    assert not second.verdict.passed
    data = second.to_json()
    assert data["baseline"]["source"] == base.as_posix()
    assert [r["id"] for r in data["baseline"]["regressions"]] == ["install", "legacy"]
    assert data["verdict"]["failOn"] == "regression"


@pytest.mark.parametrize("kwargs", [
    {"fail_on": "never"},
    {"fail_on": "regression"},
    {"rank_tolerance": -2},
    {"baseline": "missing.json"},
])
def test_run_eval_refuses_bad_input_before_retrieving(tmp_path: Path,
                                                      kwargs: dict[str, object]) -> None:
    suite = tmp_path / "docs.yaml"
    suite.write_text(SUITE)
    retriever = FakeRetriever({})
    if "baseline" in kwargs:
        kwargs = {"baseline": tmp_path / str(kwargs["baseline"])}
    with pytest.raises(InputError):
        run_eval([suite], retriever, namespace="docs", embedder="e", **kwargs)  # type: ignore[arg-type]
    assert retriever.calls == []
