"""`kbctl eval` end to end: real CLI, real database, exit codes, every output channel."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from kbctl.embed.base import EmbedderIdentity
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.records import ChunkRecord, SourceRecord

from .conftest import Cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
BASE = "https://docs.example.com/"
UNREACHABLE = "postgresql://kbctl@127.0.0.1:1/nothing"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def ingest(cli: Cli, folder: Path) -> None:
    cli.json("ingest", "files", str(folder), "--base-url", BASE)


@pytest.fixture
def examples_kb(cli: Cli) -> Cli:
    """The example docs site, ingested the way the quickstart says."""
    ingest(cli, EXAMPLES / "docs")
    return cli


@pytest.fixture
def small_kb(cli: Cli, workdir: Path) -> Cli:
    docs = workdir / "docs"
    write(docs / "guide" / "keys.md",
          "# Signing keys\n\nEvery release is signed with a key.\n\n"
          "## Rotate signing keys\n\nRotate the signing keys with `kbctl keys rotate`; "
          "the old key stays valid for a day.\n\n"
          "## Revoke a key\n\nRevoke a leaked key at once with `kbctl keys revoke`.\n")
    write(docs / "guide" / "backup.md",
          "# Backups\n\n## Nightly snapshots\n\nSnapshots of the volume are taken every "
          "night and kept for thirty days.\n")
    ingest(cli, docs)
    return cli


PASSING = """\
version: 1
cases:
  - id: rotate
    question: how do I rotate the signing keys
    expect: {sourceIncludes: guide/keys, anchor: rotate-signing-keys}
  - id: snapshots
    question: how long are nightly snapshots kept
    expect: {sourceIncludes: guide/backup}
"""

FAILING = """\
version: 1
cases:
  - id: rotate
    question: how do I rotate the signing keys
    expect: {sourceIncludes: guide/keys}
  - id: wrong-page
    question: how long are nightly snapshots kept
    expect:
      sourceIncludes: guide/keys
      notSourceIncludes: guide/backup
"""


# --- the examples are the README's promise --------------------------------------------


def test_example_suites_pass_against_the_example_docs(examples_kb: Cli) -> None:
    suites = [str(EXAMPLES / "evals" / "docs.yaml"), str(EXAMPLES / "evals" / "docs.json")]
    report = examples_kb.json("eval", *suites)
    assert report["verdict"]["passed"] is True
    failed = [c["id"] for c in report["cases"] if not c["passed"]]
    assert failed == []
    by_suite = {s["path"]: s["cases"] for s in report["suites"]}
    assert set(by_suite) == set(suites)
    assert all(count >= 8 for count in by_suite.values())
    declared = {name for case in report["cases"] for name in case["expect"]}
    assert declared == {"sourceIncludes", "notSourceIncludes", "anchor", "minScore"}
    assert report["metrics"]["hitRate"] == 1.0


def test_people_output_puts_failures_first_with_details(small_kb: Cli, workdir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one table row per line
    suite = write(workdir / "failing.yaml", FAILING)
    result = small_kb("eval", str(suite))
    assert result.exit_code == 1
    out = result.stdout
    assert out.index("wrong-page") < out.index("rotate")
    assert "FAIL" in out and "excluded 'guide/backup'" in out
    assert "FAIL: 1 of 2 cases failed" in out


def test_an_empty_namespace_is_bad_input_not_a_failed_suite(small_kb: Cli,
                                                             workdir: Path) -> None:
    """Every case of a suite failing against a mistyped --namespace (exit 1) read as a
    retrieval regression."""
    suite = write(workdir / "suite.yaml", PASSING)
    result = small_kb("eval", str(suite), "-n", "nothing-ingested")
    assert result.exit_code == 2
    assert "namespace 'nothing-ingested' holds no chunks (namespaces: 'default')" \
        in result.stderr
    assert "ingest first, or name another --namespace or --data-dir" in result.stderr
    assert small_kb("eval", str(suite)).exit_code == 0


def test_explicit_run_subcommand_is_the_same_command(small_kb: Cli, workdir: Path) -> None:
    suite = write(workdir / "passing.yaml", PASSING)
    assert small_kb("eval", "run", str(suite)).exit_code == 0
    assert small_kb("eval", str(suite)).exit_code == 0


# --- exit codes ------------------------------------------------------------------------


def test_json_report_shape_and_jq(small_kb: Cli, workdir: Path) -> None:
    suite = write(workdir / "failing.yaml", FAILING)
    result = small_kb("eval", str(suite), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)  # one document, nothing else on stdout
    assert report["schema"] == "kbctl.eval.report" and report["schemaVersion"] == 1
    assert report["totals"] == {"total": 2, "passed": 1, "failed": 1}
    assert [c["id"] for c in report["cases"]] == ["rotate", "wrong-page"]
    first = report["cases"][0]
    assert first["line"] == 3 and first["firstMatchRank"] == 1
    assert first["retrieved"][0]["citation"].startswith(BASE + "guide/keys#")
    assert report["namespace"] == "default" and report["embedder"] == "none"
    assert report["verdict"] == {"passed": False, "failOn": "any",
                                 "reason": "1 of 2 cases failed"}
    if shutil.which("jq"):
        jq = subprocess.run(["jq", "-r", ".cases[] | select(.passed | not) | .id"],
                            input=result.stdout, capture_output=True, text=True, check=True)
        assert jq.stdout.split() == ["wrong-page"]


def test_invalid_suite_is_usage_error_before_the_database(cli: Cli, workdir: Path) -> None:
    bad = write(workdir / "bad.yaml", "version: 1\ncases:\n  - id: a\n    question: q\n"
                "    expect: {sourceInclude: x}\n")
    result = cli("eval", str(bad), "--db", UNREACHABLE, db=False)
    assert result.exit_code == 2
    assert f"{bad.as_posix()}:5" in result.stderr and "did you mean 'sourceIncludes'" \
        in result.stderr
    as_json = cli("eval", str(bad), "--json", "--db", UNREACHABLE, db=False)
    assert as_json.exit_code == 2
    assert json.loads(as_json.stdout)["error"]["type"] == "SuiteError"


def test_a_question_longer_than_retrieval_takes_is_a_suite_error(cli: Cli,
                                                                  workdir: Path) -> None:
    # A million characters once reached the database, failed there and read as exit 3.
    long = write(workdir / "long.yaml", "version: 1\ncases:\n  - id: a\n    question: "
                 + "word " * 250_000 + "\n    expect: {sourceIncludes: x}\n")
    result = cli("eval", str(long), "--db", UNREACHABLE, db=False)
    assert result.exit_code == 2
    assert f"{long.as_posix()}:4" in result.stderr
    assert "1,249,999 characters long; at most 20,000" in result.stderr  # YAML trims


@pytest.mark.parametrize("args", [
    ["missing.yaml"],
    ["nothing/*.yaml"],
    [],
    ["ok.yaml", "--fail-on", "regression"],
    ["ok.yaml", "--fail-on", "sometimes"],
    ["ok.yaml", "--rank-tolerance", "-1"],
    ["ok.yaml", "--baseline", "missing-report.json"],
    ["ok.yaml", "--no-such-flag"],
])
def test_usage_errors_exit_2(cli: Cli, workdir: Path, args: list[str]) -> None:
    write(workdir / "ok.yaml", PASSING)
    result = cli("eval", *args, "--db", UNREACHABLE, db=False)
    assert result.exit_code == 2, result.output


def test_unreachable_database_exits_3(cli: Cli, workdir: Path) -> None:
    suite = write(workdir / "ok.yaml", PASSING)
    result = cli("eval", str(suite), "--json", "--db", UNREACHABLE, db=False)
    assert result.exit_code == 3
    assert json.loads(result.stdout)["error"]["type"] == "DatabaseError"


def test_missing_embedder_key_exits_3(cli: Cli, workdir: Path, store: KnowledgeStore) -> None:
    # a KB built with Gemini; this environment has no key (the workdir fixture drops it)
    store.embedder.bind(EmbedderIdentity("gemini", "gemini-embedding-001", 768))
    store.documents.replace(
        SourceRecord(namespace="default", ref="kb://a", kind="text", url="kb://a", title="",
                     content_hash="a"),
        [ChunkRecord(0, "Widgets are configured in widget.toml.", {}, [0.5] * 768)])
    suite = write(workdir / "ok.yaml", PASSING)
    result = cli("eval", str(suite), "--json")
    assert result.exit_code == 3
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "AuthError" and "GEMINI_API_KEY" in error["message"]


# --- files and CI channels -------------------------------------------------------------


def test_junit_file(small_kb: Cli, workdir: Path) -> None:
    suite = write(workdir / "failing.yaml", FAILING)
    junit = workdir / "reports" / "junit.xml"
    assert small_kb("eval", str(suite), "--junit", str(junit)).exit_code == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    (testsuite,) = root.findall("testsuite")
    assert testsuite.get("name") == "failing"
    cases = {c.get("name"): c for c in testsuite.findall("testcase")}
    assert cases["rotate"].find("failure") is None
    failure = cases["wrong-page"].find("failure")
    assert failure is not None and failure.get("type") == "check"
    assert cases["wrong-page"].get("line") == "6"


def test_junit_tells_two_suites_of_one_name_apart(small_kb: Cli, workdir: Path) -> None:
    first = write(workdir / "a" / "docs.yaml", PASSING)
    second = write(workdir / "b" / "docs.yaml", PASSING)
    junit = workdir / "junit.xml"
    assert small_kb("eval", str(first), str(second), "--junit", str(junit)).exit_code == 0
    names = [s.get("name") for s in ET.parse(junit).getroot().findall("testsuite")]
    assert len(set(names)) == 2 and all(n.endswith(("a/docs", "b/docs")) for n in names)


def read_outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def github_env(monkeypatch: pytest.MonkeyPatch, root: Path, *, actions: bool) -> dict[str, Path]:
    paths = {"summary": root / "summary.md", "output": root / "output.txt",
             "temp": root / "runner-temp"}
    paths["temp"].mkdir()
    paths["summary"].write_text("earlier step\n")
    if actions:
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(paths["summary"]))
    monkeypatch.setenv("GITHUB_OUTPUT", str(paths["output"]))
    monkeypatch.setenv("RUNNER_TEMP", str(paths["temp"]))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(root))
    return paths


def test_github_actions_summary_annotations_outputs(small_kb: Cli, workdir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    paths = github_env(monkeypatch, workdir, actions=True)
    suite = write(workdir / "evals" / "failing.yaml", FAILING)
    result = small_kb("eval", str(suite.resolve()))
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1
    assert errors[0].startswith("::error file=evals/failing.yaml,line=6,title=")
    assert "wrong-page" in errors[0]

    summary = paths["summary"].read_text()
    assert summary.startswith("earlier step\n")  # appended, not overwritten
    assert "## ❌ kbctl eval: 1 of 2 cases failed" in summary
    assert "### Failed cases (1)" in summary

    outputs = read_outputs(paths["output"])
    assert (outputs["passed"], outputs["failed"], outputs["total"]) == ("1", "1", "2")
    report_path = Path(outputs["report"])
    assert report_path.parent == paths["temp"]
    saved = json.loads(report_path.read_text())
    assert saved["totals"] == {"total": 2, "passed": 1, "failed": 1}


def test_a_stopped_run_says_so_to_the_steps_after_it(small_kb: Cli, workdir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM (a step's timeout) ended the run with exit 143 and an empty
    $GITHUB_OUTPUT: a later ``if: always()`` step read no verdict."""
    from kbctl.errors import TerminateSignal
    from kbctl.pipeline import evals as eval_pipeline

    def stopped(*args: object, **kwargs: object) -> None:
        raise TerminateSignal()

    paths = github_env(monkeypatch, workdir, actions=True)
    monkeypatch.setattr(eval_pipeline, "evaluate", stopped)
    result = small_kb("eval", str(write(workdir / "passing.yaml", PASSING)))
    assert result.exit_code == 143
    outputs = read_outputs(paths["output"])
    assert outputs["verdict"] == "error" and "stopped before it finished" in outputs["error"]


def test_github_flag_with_json_keeps_stdout_one_document(small_kb: Cli, workdir: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    paths = github_env(monkeypatch, workdir, actions=False)
    suite = write(workdir / "failing.yaml", FAILING)
    saved = workdir / "report.json"
    result = small_kb("eval", str(suite), "--github", "--json", "--save-baseline", str(saved))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["totals"]["failed"] == 1
    assert "::error file=failing.yaml,line=6," in result.stderr
    outputs = read_outputs(paths["output"])
    assert Path(outputs["report"]) == saved.resolve()
    assert json.loads(saved.read_text())["cases"] == report["cases"]
    assert "kbctl eval" in paths["summary"].read_text()


def test_annotations_name_a_relative_suite_from_the_checkout(
        small_kb: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from ``evals/`` with a relative path, the annotation said ``file=failing.yaml``,
    which GitHub cannot place in the checkout."""
    github_env(monkeypatch, workdir, actions=True)
    write(workdir / "evals" / "failing.yaml", FAILING)
    monkeypatch.chdir(workdir / "evals")
    result = small_kb("eval", "failing.yaml")
    assert result.exit_code == 1
    assert "::error file=evals/failing.yaml,line=6," in result.stdout


def test_junit_under_fail_on_regression_skips_the_tolerated_failures(
        small_kb: Cli, workdir: Path) -> None:
    """A run that passed (exit 0) wrote ``failures="1"``: a JUnit reporter turned it red."""
    import xml.etree.ElementTree as ET

    suite = write(workdir / "failing.yaml", FAILING)
    base, junit = workdir / "base.json", workdir / "junit.xml"
    assert small_kb("eval", str(suite), "--save-baseline", str(base)).exit_code == 1
    tolerant = small_kb("eval", str(suite), "--baseline", str(base), "--fail-on",
                        "regression", "--junit", str(junit))
    assert tolerant.exit_code == 0
    root = ET.parse(junit).getroot()
    assert (root.get("failures"), root.get("skipped")) == ("0", "1")
    (skipped,) = root.iter("skipped")
    assert skipped.get("message", "").startswith("failed, not a regression")
    strict = small_kb("eval", str(suite), "--junit", str(junit))
    assert strict.exit_code == 1
    assert ET.parse(junit).getroot().get("failures") == "1"


def test_no_github_output_without_actions_or_flag(small_kb: Cli, workdir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    paths = github_env(monkeypatch, workdir, actions=False)
    suite = write(workdir / "failing.yaml", FAILING)
    result = small_kb("eval", str(suite))
    assert result.exit_code == 1 and "::error" not in result.stdout
    assert not paths["output"].exists()
    assert paths["summary"].read_text() == "earlier step\n"


# --- baselines -------------------------------------------------------------------------


def test_baseline_save_then_regression(small_kb: Cli, workdir: Path) -> None:
    suite = write(workdir / "passing.yaml", PASSING)
    base = workdir / "baseline.json"
    first = small_kb("eval", str(suite), "--save-baseline", str(base), "--json")
    assert first.exit_code == 0
    assert json.loads(base.read_text())["cases"][0]["firstMatchRank"] == 1

    # a new page answers the rotation question better: the keys page drops a rank
    write(workdir / "docs" / "blog" / "rotation.md",
          "# Rotate signing keys\n\nRotate signing keys often. Rotate the signing keys, "
          "rotate them again: rotating signing keys is how we rotate keys.\n")
    ingest(small_kb, workdir / "docs")

    second = small_kb("eval", str(suite), "--baseline", str(base), "--json")
    assert second.exit_code == 1
    report = json.loads(second.stdout)
    assert report["totals"]["failed"] == 0  # every check still passes...
    (regression,) = report["baseline"]["regressions"]  # ...but a case got worse
    assert regression["id"] == "rotate" and regression["failedNow"] is False
    assert regression["reasons"] == ["first match rank 1 → 2 (tolerance 0)"]
    assert report["verdict"]["passed"] is False

    tolerant = small_kb("eval", str(suite), "--baseline", str(base), "--rank-tolerance", "1")
    assert tolerant.exit_code == 0
    people = small_kb("eval", str(suite), "--baseline", str(base))
    assert people.exit_code == 1 and "REGRESSED" in people.stdout


def test_a_report_file_may_not_replace_an_input(small_kb: Cli, workdir: Path) -> None:
    """``--junit`` pointed at the baseline replaced it with XML: the next run exited 2."""
    suite = write(workdir / "passing.yaml", PASSING)
    base = workdir / "baseline.json"
    assert small_kb("eval", str(suite), "--save-baseline", str(base)).exit_code == 0
    kept = base.read_text()
    for args in (["--baseline", str(base), "--junit", str(base)],
                 ["--junit", str(suite)],
                 ["--junit", str(workdir / "r.xml"), "--save-baseline", str(workdir / "r.xml")]):
        result = small_kb("eval", str(suite), *args)
        assert result.exit_code == 2, result.output
        assert "which the report would replace" in result.stderr
    assert base.read_text() == kept and suite.read_text() == PASSING
    assert not (workdir / "r.xml").exists()


def test_tags_and_baseline_names_are_printed_escaped(small_kb: Cli, workdir: Path) -> None:
    """A tag holding a newline printed '::error …' at the start of a line: on GitHub, a
    forged annotation (and '::stop-commands::' silenced the real ones)."""
    suite = write(workdir / "tagged.json", json.dumps({"version": 1, "cases": [{
        "id": "rotate", "question": "how do I rotate the signing keys",
        "tags": ["t\n::error file=evil.py,line=1::forged\u001b[31m"],
        "expect": {"sourceIncludes": "guide/keys"}}]}))
    result = small_kb("eval", str(suite))
    assert result.exit_code == 0, result.output
    assert "\n::error" not in result.stdout and "\x1b" not in result.stdout
    assert "::forged\\x1b[31m (1 case)" in result.stdout


def test_fail_on_regression_tolerates_known_failures(small_kb: Cli, workdir: Path) -> None:
    suite = write(workdir / "failing.yaml", FAILING)
    base = workdir / "baseline.json"
    assert small_kb("eval", str(suite), "--save-baseline", str(base)).exit_code == 1
    again = small_kb("eval", str(suite), "--baseline", str(base), "--fail-on", "regression")
    assert again.exit_code == 0
    assert small_kb("eval", str(suite), "--baseline", str(base)).exit_code == 1


# --- several suites --------------------------------------------------------------------


def test_several_suites_glob_and_directory(small_kb: Cli, workdir: Path) -> None:
    write(workdir / "evals" / "a.yaml", PASSING)
    write(workdir / "evals" / "b.json", json.dumps(yaml.safe_load(PASSING)))
    write(workdir / "evals" / "notes.txt", "not a suite")
    by_glob = small_kb.json("eval", "evals/*.yaml", "evals/*.json")
    assert [s["path"] for s in by_glob["suites"]] == ["evals/a.yaml", "evals/b.json"]
    assert by_glob["totals"]["total"] == 4
    assert {(c["suite"], c["id"]) for c in by_glob["cases"]} == {
        ("evals/a.yaml", "rotate"), ("evals/a.yaml", "snapshots"),
        ("evals/b.json", "rotate"), ("evals/b.json", "snapshots")}
    by_dir = small_kb.json("eval", "evals")
    assert by_dir["totals"] == by_glob["totals"]
    people = small_kb("eval", "evals")
    assert "evals/a.yaml:rotate" in people.stdout


# --- eval init -------------------------------------------------------------------------


def test_init_round_trip(small_kb: Cli, workdir: Path) -> None:
    printed = small_kb("eval", "init")
    assert printed.exit_code == 0
    data = yaml.safe_load(printed.stdout)
    # a heading with no text of its own (Backups) has no chunk to find: no case
    assert [c["id"] for c in data["cases"]] == [
        "nightly-snapshots", "signing-keys", "rotate-signing-keys", "revoke-a-key"]
    rotate = data["cases"][2]
    assert rotate["question"] == "Rotate signing keys"
    assert rotate["expect"] == {"sourceIncludes": BASE + "guide/keys",
                                "anchor": "rotate-signing-keys"}

    target = workdir / "evals" / "starter.yaml"
    assert small_kb("eval", "init", "--output", str(target)).exit_code == 0
    assert target.read_text() == printed.stdout
    report = small_kb.json("eval", str(target))
    assert report["verdict"]["passed"] is True and report["totals"]["total"] == 4

    target.write_text("# edited by hand\n")
    refused = small_kb("eval", "init", "-o", str(target))
    assert refused.exit_code == 2 and "--force" in refused.stderr
    assert target.read_text() == "# edited by hand\n"
    assert small_kb("eval", "init", "-o", str(target), "--force").exit_code == 0
    assert target.read_text() == printed.stdout
    as_json = workdir / "evals" / "starter.json"  # the name says how it is written
    assert small_kb("eval", "init", "-o", str(as_json)).exit_code == 0
    assert json.loads(as_json.read_text()) == yaml.safe_load(printed.stdout)
    assert json.loads(small_kb("eval", "init", "--json").stdout) == json.loads(
        as_json.read_text())
    assert small_kb.json("eval", str(as_json))["verdict"]["passed"] is True


def test_init_leaves_out_the_cases_the_kb_fails_today(small_kb: Cli, workdir: Path) -> None:
    """A scaffold whose heading finds another page first failed on the KB it was made
    from: committed as is, it turned the first build red."""
    write(workdir / "docs" / "blog" / "snapshots.md",
          "# Nightly snapshot news\n\nNightly snapshots, nightly snapshots: nightly snapshots are "
          "the nightly snapshots we take, nightly.\n")
    ingest(small_kb, workdir / "docs")
    made = small_kb("eval", "init", "-k", "1", "-o", str(workdir / "starter.yaml"))
    assert made.exit_code == 0, made.output
    assert "left out 1 section(s)" in made.stderr and "nightly-snapshots" in made.stderr
    ids = [c["id"] for c in yaml.safe_load((workdir / "starter.yaml").read_text())["cases"]]
    assert "nightly-snapshots" not in ids and "rotate-signing-keys" in ids
    assert small_kb.json("eval", str(workdir / "starter.yaml"))["verdict"]["passed"] is True


def test_init_on_an_empty_kb_is_a_usage_error(cli: Cli, workdir: Path) -> None:
    assert cli("ingest", "text", "a note", "--ref", "n", "-n", "elsewhere").exit_code == 0
    result = cli("eval", "init", "-n", "nothing-here")
    assert result.exit_code == 2
    assert "namespace 'nothing-here' holds no documents" in result.stderr
    assert not list(workdir.iterdir())


def test_cases_that_declare_no_check_are_named_in_a_warning(small_kb: Cli,
                                                             workdir: Path) -> None:
    suite = write(workdir / "s.yaml", PASSING + "  - id: forgot\n    question: rotate keys\n"
                  "  - id: empty\n    question: revoke\n    expect: {}\n")
    result = small_kb("eval", str(suite))
    assert result.exit_code == 0  # the format has always taken them
    assert "warning: 2 case(s) declare no check and pass whatever is retrieved: forgot, " \
           "empty" in " ".join(result.stdout.split())
    assert "declare no check" not in small_kb("eval", str(write(
        workdir / "p.yaml", PASSING))).stdout


def test_a_case_its_own_min_score_emptied_names_the_floor(small_kb: Cli, workdir: Path) -> None:
    """A case whose minScore floor cut every result said only "nothing retrieved", as if
    the docs lacked the answer; query names the floor and the best score it cut."""
    suite = write(workdir / "floor.yaml", """
version: 1
cases:
  - id: floored
    question: revoke a leaked key
    minScore: 0.99
    expect:
      sourceIncludes: keys
""")
    result = small_kb("eval", str(suite), "--json")
    assert result.exit_code == 1
    [case] = json.loads(result.stdout)["cases"]
    assert case["retrieved"] == [] and 0 < case["bestBelowMin"] < 0.99
    table = " ".join(re.sub(r"[│┃]", " ", small_kb("eval", str(suite)).stdout).split())
    assert (f"the case's minScore 0.99 cut every result (the best scored "
            f"{case['bestBelowMin']:.2f})") in table


def test_a_piped_table_is_laid_out_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a CI log (no terminal) tables were 80 columns wide: citations wrapped mid-URL
    and could not be copied. COLUMNS still decides when set."""
    from kbctl.render.output import PIPED_WIDTH, Output

    monkeypatch.delenv("COLUMNS", raising=False)
    assert Output().out.width == PIPED_WIDTH > 80  # pytest's stdout is no terminal
    monkeypatch.setenv("COLUMNS", "100")
    assert Output().out.width == 100
