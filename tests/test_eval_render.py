"""Renderings of an eval run: JUnit XML, GitHub annotations/outputs/summary, rich table."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from kbctl.evals import (
    BaselineDiff,
    Case,
    EvalReport,
    Expect,
    Suite,
    compare_with_baseline,
    judged,
    run_suites,
)
from kbctl.evals.model import Defaults
from kbctl.render.eval import eval_console, eval_table
from kbctl.render.github import (
    _within_limit,
    escape_data,
    escape_property,
    github_annotations,
    github_output,
    github_summary,
    md,
)
from kbctl.render.junit import junit_xml
from kbctl.results import Hit, QueryResult

from .test_eval_run import found


def hit(url: str, score: float, anchor: str | None = None) -> Hit:
    citation = f"{url}#{anchor}" if anchor else url
    return Hit(rank=0, score=score, title="t", url=url, citation=citation, anchor=anchor,
               heading_path=(), text="…", source_ref=url, namespace="docs")


HOSTILE = 'a & b < c > d "q" \'s\' | pipe *star* _u_ `tick` [l](x) \x1b[31m%25 100%'
ERROR_TEXT = "db down: host=a,b\r\nretry 100%"


def make_case(suite: str, index: int, case_id: str, question: str, expect: Expect) -> Case:
    return Case(suite=suite, index=index, id=case_id, question=question, top_k=5,
                min_score=None, filter={}, expect=expect, line=3 + 3 * index)


def build(paths: tuple[str, ...] = ("evals/docs.yaml",),
          answers: dict[str, object] | None = None) -> EvalReport:
    """Four cases per suite: passing, failing a check, retriever error, passing (rank 2)."""
    suites = []
    for path in paths:
        cases = (
            make_case(path, 0, "ok", "How do I install?", Expect(source_includes=("install",))),
            make_case(path, 1, "low:score,case", HOSTILE, Expect(min_score=0.4)),
            make_case(path, 2, "boom", "explode", Expect(source_includes=("x",))),
            make_case(path, 3, "ranked", "Where is config?", Expect(source_includes=("config",))),
        )
        suites.append(Suite(path=path, defaults=Defaults(), cases=cases))
    default: dict[str, object] = {
        "How do I install?": [hit("https://d.example/install", 0.9, "install")],
        HOSTILE: [hit("https://d.example/x", 0.31)],
        "explode": RuntimeError(ERROR_TEXT),
        "Where is config?": [hit("https://d.example/config", 0.7)],
    }
    default.update(answers or {})

    def retriever(q: str, k: int, m: float | None, f: dict[str, str]) -> QueryResult:
        answer = default[q]
        if isinstance(answer, Exception):
            raise answer
        return found(q, list(answer))  # type: ignore[call-overload]

    return run_suites(suites, retriever, namespace="docs", embedder="fake/m@8")


def with_regression() -> tuple[EvalReport, BaselineDiff]:
    """'ranked' passes now but its first match moved from rank 1 to 2."""
    base = json.loads(json.dumps(judged(build()).to_json()))
    now = build(answers={"Where is config?": [hit("https://d.example/other", 0.8),
                                              hit("https://d.example/config", 0.7)]})
    return now, compare_with_baseline(now, base, source="base.json")


# --- JUnit -----------------------------------------------------------------------------


def test_junit_parses_back_with_the_right_counts(tmp_path: Path) -> None:
    report = build(("evals/docs.yaml", "evals/more/api.yml"))
    path = tmp_path / "junit.xml"
    path.write_text(junit_xml(judged(report)), encoding="utf-8")
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert int(root.get("tests", "-1")) == report.total == 8
    assert int(root.get("failures", "-1")) == report.failed == 4
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["docs", "api"]
    for suite_el, path_name in zip(suites, report.suites, strict=True):
        cases = suite_el.findall("testcase")
        assert suite_el.get("file") == path_name
        assert int(suite_el.get("tests", "-1")) == len(cases) == 4
        assert int(suite_el.get("failures", "-1")) == \
            sum(1 for c in cases if c.find("failure") is not None) == 2
        assert {c.get("classname") for c in cases} == {suite_el.get("name")}
        assert [c.get("name") for c in cases] == ["ok", "low:score,case", "boom", "ranked"]
        assert [c.get("line") for c in cases] == ["3", "6", "9", "12"]


def test_junit_failure_carries_details_and_survives_hostile_text() -> None:
    report = build()
    root = ET.fromstring(junit_xml(judged(report)))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    low = cases["low:score,case"].find("failure")
    assert low is not None and low.get("type") == "check"
    assert low.get("message") == "minScore: top score 0.31 < 0.40"
    expected_question = HOSTILE.replace("\x1b", "\ufffd")
    assert f"question: {expected_question}" in (low.text or "")
    boom = cases["boom"].find("failure")
    assert boom is not None and boom.get("type") == "retrieval-error"
    assert "db down: host=a,b" in (boom.get("message") or "")
    assert cases["ok"].find("failure") is None
    assert "install" in (cases["ok"].findtext("system-out") or "")


def test_junit_marks_a_passing_regressed_case_as_failed() -> None:
    report, diff = with_regression()
    root = ET.fromstring(junit_xml(judged(report, diff)))
    ranked = next(c for c in root.iter("testcase") if c.get("name") == "ranked")
    failure = ranked.find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert "first match rank 1 → 2" in (failure.get("message") or "")
    assert int(root.get("failures", "-1")) == report.failed + 1


# --- GitHub annotations ----------------------------------------------------------------


def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    match = re.fullmatch(r"::(\w+) ([^:]*)::(.*)", line)
    assert match, line
    props = dict(item.split("=", 1) for item in match.group(2).split(","))
    return (match.group(1), {k: unescape_property(v) for k, v in props.items()},
            unescape_data(match.group(3)))


def test_escaping_rules() -> None:
    assert escape_data("50% \r\n a:b,c") == "50%25 %0D%0A a:b,c"
    assert escape_property("50% \r\n a:b,c") == "50%25 %0D%0A a%3Ab%2Cc"
    assert unescape_property(escape_property("%3A literal, 100%")) == "%3A literal, 100%"


def test_annotations_point_at_failing_cases_and_round_trip() -> None:
    report = build(("evals/a,b: c.yaml",))
    lines = github_annotations(judged(report))
    assert all("\n" not in line and "\r" not in line for line in lines)
    parsed = [parse_command(line) for line in lines]
    assert [p[0] for p in parsed] == ["error", "error"]
    (_, low_props, low_msg), (_, boom_props, boom_msg) = parsed
    assert low_props == {"file": "evals/a,b: c.yaml", "line": "6",
                         "title": "kbctl eval: case low:score,case failed"}
    assert low_msg == "minScore: top score 0.31 < 0.40"
    assert boom_props["line"] == "9"
    assert boom_msg == f"retrieval: retriever failed: RuntimeError: {ERROR_TEXT}"


def test_annotations_under_regression_policy() -> None:
    report, diff = with_regression()
    parsed = [parse_command(line)
              for line in github_annotations(judged(report, diff, "regression"))]
    levels = {props["title"]: level for level, props, _ in parsed}
    assert levels == {
        "kbctl eval: case low:score,case failed": "warning",
        "kbctl eval: case boom failed": "warning",
        "kbctl eval: case ranked regressed": "error",
    }
    ranked_msg = next(msg for _, props, msg in parsed if "ranked" in props["title"])
    assert ranked_msg == "regression: first match rank 1 → 2 (tolerance 0)"


# --- GITHUB_OUTPUT ---------------------------------------------------------------------


def parse_output_file(text: str) -> dict[str, str]:
    """The runner's reading of a GITHUB_OUTPUT file (name=value and heredoc blocks)."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value_lines = []
            while lines[i] != delimiter:
                value_lines.append(lines[i])
                i += 1
            i += 1
            out[name] = "\n".join(value_lines)
        else:
            name, value = line.split("=", 1)
            out[name] = value
    return out


def test_github_output_values() -> None:
    report = build()
    values = parse_output_file(github_output(judged(report), report_path="out/eval report.json"))
    assert values == {
        "passed": str(report.passed), "failed": str(report.failed), "total": str(report.total),
        "regressions": "0", "verdict": "fail",
        "hit_rate": f"{report.metrics.hit_rate:.4f}", "mrr": f"{report.metrics.mrr:.4f}",
        "ndcg": f"{report.metrics.ndcg:.4f}", "recall": f"{report.metrics.recall:.4f}",
        "report": "out/eval report.json",
    }
    assert "report" not in parse_output_file(github_output(judged(report)))


def test_github_output_multiline_value_uses_a_heredoc() -> None:
    report = build()
    odd = "out/a\nb=c.json"
    text = github_output(judged(report), report_path=odd)
    assert re.search(r"^report<<(\S+)\nout/a\nb=c\.json\n\1\n", text, re.MULTILINE)
    assert parse_output_file(text)["report"] == odd


def test_github_output_counts_regressions() -> None:
    report, diff = with_regression()
    values = parse_output_file(github_output(judged(report, diff, "regression")))
    assert (values["regressions"], values["verdict"]) == ("1", "fail")


# --- job summary -----------------------------------------------------------------------


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_summary_content() -> None:
    report, diff = with_regression()
    text = github_summary(judged(report, diff))
    assert text.startswith("## ❌ kbctl eval: 2 of 4 cases failed; 1 regression against base.json")
    totals = text.splitlines()[4]
    m = report.metrics
    assert totals == (f"| 4 | 2 | 2 | 66.7% (±0) | {m.mrr:.3f} (−0.167) | {m.ndcg:.3f} | "
                      f"{m.recall * 100:.1f}% | 1 |")
    assert "### Regressions (1)" in text
    assert "- **ranked** (evals/docs.yaml:12): first match rank 1 → 2 (tolerance 0)" in text
    assert "### Failed cases (2)" in text
    assert "  - ❌ retrieval: retriever failed: RuntimeError: db down: host=a,b retry 100%" in text
    assert "rank tolerance 0, score tolerance off" in text
    assert "<details><summary>All 4 cases</summary>" in text


def test_summary_neutralises_markdown_and_html() -> None:
    text = github_summary(judged(build()))
    assert "<script" not in text and "< c >" not in text
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    table_rows = [row for row in rows if "low:score,case" in row]
    assert table_rows
    assert all(unescaped_pipes(row) == 6 for row in table_rows)
    assert md("a|b <i>x</i> *y* \n z") == r"a\|b \<i\>x\</i\> \*y\* z"


def test_summary_stays_under_githubs_limit_with_long_questions() -> None:
    """40 questions of 20,000 characters made a 1.63 MB summary, which GitHub drops."""
    long = "why " * 5000
    cases = tuple(make_case("evals/long.yaml", i, f"c{i}", f"{i} {long}",
                            Expect(source_includes=("nowhere",))) for i in range(40))
    report = run_suites([Suite(path="evals/long.yaml", defaults=Defaults(), cases=cases)],
                        lambda q, k, m, f: found(q, [hit("https://d.example/x", 0.5)]),
                        namespace="docs", embedder="fake/m@8")
    text = github_summary(judged(report))
    assert len(text.encode("utf-8")) < 1024 * 1024
    assert "### Failed cases (40)" in text
    assert max(len(line) for line in text.splitlines()) < 2000  # each question clipped
    cut = _within_limit([f"line {i} " + "x" * 200 for i in range(10_000)])
    assert len(cut.encode("utf-8")) < 1024 * 1024 and cut.rstrip().endswith(
        "cut to fit GitHub's 1 MiB step summary (see the JSON report)")


def test_summary_when_everything_passes() -> None:
    ok = {HOSTILE: [hit("https://d.example/x", 0.9)],
          "explode": [hit("https://d.example/x", 0.9)]}
    report = build(answers=ok)
    text = github_summary(judged(report))
    assert text.startswith("## ✅ kbctl eval: all 4 cases passed")
    assert "### Failed cases" not in text and "### Regressions" not in text


# --- rich table ------------------------------------------------------------------------


def render(renderable: object) -> str:
    console = Console(record=True, width=220, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_table_puts_failures_and_regressions_first_with_details() -> None:
    report, diff = with_regression()
    text = render(eval_table(report, diff))
    rows = [line for line in text.splitlines()
            if re.search(r"\b(FAIL|REGRESSED|pass)\b", line)]
    statuses = [re.search(r"\b(FAIL|REGRESSED|pass)\b", row).group(1) for row in rows]  # type: ignore[union-attr]
    assert statuses == ["FAIL", "FAIL", "REGRESSED", "pass"]
    assert "minScore: top score 0.31 < 0.40" in text
    assert "regression: first match rank 1 → 2 (tolerance 0)" in text
    assert "RuntimeError: db down" in text


def test_table_prints_markup_literally_and_labels_suites() -> None:
    report = build(("evals/a.yaml", "evals/b.yaml"))
    text = render(eval_console(judged(report)))
    assert "evals/a.yaml:low:score,case" in text and "evals/b.yaml:ok" in text
    odd = build(answers={"Where is config?": [hit("https://d.example/[bold]x[/bold]", 0.1)]})
    assert "[bold]x[/bold]" in render(eval_table(odd))


@pytest.mark.parametrize("fail_on", ["any", "regression"])
def test_console_summary_states_the_verdict(fail_on: str) -> None:
    report, diff = with_regression()
    text = render(eval_console(judged(report, diff, fail_on)))
    assert "FAIL:" in text
    assert "vs base.json: 1 regression" in text
