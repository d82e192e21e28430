"""The composite GitHub Action (action.yml), run the way a runner runs it, without GitHub.

The harness reads action.yml, skips `uses:` steps (setup-python) and the step that installs
kbctl from the action's checkout (kbctl is installed in the test environment already),
substitutes `${{ … }}` expressions itself, and runs each `run:` step with
`bash --noprofile --norc -eo pipefail` in a temporary workspace with the files and
variables a runner provides. The database is the test server (`db-url`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import rows

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
EXAMPLES = ROOT / "examples"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_OUTPUT_HEREDOC = re.compile(r"^([^=<]+)<<(.+)$")


def load_action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def parse_outputs(path: Path) -> dict[str, str]:
    """The runner's $GITHUB_OUTPUT format: name=value lines and name<<DELIMITER blocks."""
    if not path.exists():
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        heredoc = _OUTPUT_HEREDOC.match(lines[i])
        if heredoc:
            name, delimiter = heredoc.groups()
            end = lines.index(delimiter, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        name, sep, value = lines[i].partition("=")
        assert sep, f"malformed output line: {lines[i]!r}"
        out[name] = value
        i += 1
    return out


@dataclass
class Run:
    exit_code: int
    outputs: dict[str, str]
    steps: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    summary: str = ""

    @property
    def stdout(self) -> str:
        return "".join(p.stdout for p in self.steps.values())


def run_action(inputs: dict[str, str], workspace: Path, runner_temp: Path,
               env: dict[str, str] | None = None) -> Run:
    """``env``: what a workflow sets on the step that uses the action (API keys, an
    embedder's base URL)."""
    action = load_action()
    declared = action["inputs"]
    unknown = set(inputs) - set(declared)
    assert not unknown, f"not inputs of the action: {unknown}"
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    values.update(inputs)
    for name, spec in declared.items():
        assert not spec.get("required") or values[name], f"required input {name} missing"

    summary = runner_temp / "step-summary.md"
    step_outputs: dict[str, dict[str, str]] = {}

    def expression(expr: str) -> str:
        if "||" in expr:  # GitHub's: the first operand that is not empty
            return next((v for v in (expression(e.strip()) for e in expr.split("||")) if v),
                        "")
        parts = expr.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return values[parts[1]]
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            return step_outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"the harness does not know ${{{{ {expr} }}}}")

    def substitute(text: str) -> str:
        return _EXPR.sub(lambda m: expression(m.group(1)), text)

    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("KBCTL_", "GITHUB_", "RUNNER_", "INPUT_"))}
    base_env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(runner_temp),
        "COLUMNS": "200",
        **(env or {}),
    })
    run = Run(exit_code=0, outputs={})
    for index, step in enumerate(action["runs"]["steps"]):
        if "uses" in step or step.get("id") == "install":
            continue
        name = step.get("id") or f"step{index}"
        assert step.get("shell") == "bash"
        assert "${{" not in step["run"], "inputs must reach scripts through env:"
        script = runner_temp / f"{name}.sh"
        script.write_text(step["run"], encoding="utf-8")
        output_file = runner_temp / f"{name}.output"
        env = {**base_env, "GITHUB_OUTPUT": str(output_file)}
        env.update({key: substitute(str(value)) for key, value in step.get("env", {}).items()})
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=workspace, env=env, capture_output=True, text=True,
                              timeout=300)
        run.steps[name] = proc
        step_outputs[name] = parse_outputs(output_file)
        if proc.returncode != 0:  # a failing step ends the action
            run.exit_code = proc.returncode
            break
    run.outputs = {key: substitute(spec["value"]) for key, spec in action["outputs"].items()}
    run.summary = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return run


@pytest.fixture
def workspace(workdir: Path) -> Path:
    """A checkout of a docs repository: the example docs and suites."""
    ws = workdir / "repo"
    shutil.copytree(EXAMPLES / "docs", ws / "docs")
    shutil.copytree(EXAMPLES / "evals", ws / "evals")
    return ws


@pytest.fixture
def runner_temp(workdir: Path) -> Path:
    temp = workdir / "runner-temp"
    temp.mkdir()
    return temp


BROKEN = """\
version: 1
cases:
  - id: still-fine
    question: How do I install kbctl with pipx?
    expect: {sourceIncludes: guide/install}
  - id: wrong-page
    question: How do I install kbctl with pipx?
    expect: {sourceIncludes: reference/config}
"""


def test_action_declares_what_it_promises() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    assert {"suite", "db-url", "embedder", "namespace", "fail-on", "baseline", "docs-path",
            "base-url", "generator", "python-version", "junit"} <= set(action["inputs"])
    assert set(action["outputs"]) == {"passed", "failed", "total", "hit-rate", "mrr", "ndcg",
                                      "recall", "report", "regressions", "verdict", "error"}
    steps = action["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    install = next(s for s in steps if s.get("id") == "install")
    assert '"$GITHUB_ACTION_PATH"' in install["run"]
    ingest = next(s for s in steps if s.get("id") == "ingest")
    for name in ("generator", "lang", "version"):
        assert ingest["env"][f"INPUT_{name.upper()}"] == f"${{{{ inputs.{name} }}}}"
        assert f'--{name} "$INPUT_{name.upper()}"' in ingest["run"]
    for step in steps:
        assert "${{" not in step.get("run", ""), f"step {step.get('name')} interpolates"


def test_passing_suite_builds_the_kb_and_reports(workspace: Path, runner_temp: Path,
                                                 db_url: str) -> None:
    run = run_action({"suite": "evals/docs.yaml", "docs-path": "docs",
                      "base-url": "https://docs.example.com/"},
                     workspace, runner_temp)
    assert run.exit_code == 0, {k: p.stderr for k, p in run.steps.items()}
    assert set(run.steps) == {"ingest", "eval"}
    total = len(yaml.safe_load((workspace / "evals" / "docs.yaml").read_text())["cases"])
    assert run.outputs["total"] == run.outputs["passed"] == str(total)
    assert run.outputs["failed"] == "0"
    report = json.loads(Path(run.outputs["report"]).read_text())
    assert Path(run.outputs["report"]).parent == runner_temp
    assert report["verdict"]["passed"] is True and report["totals"]["total"] == total
    assert f"## ✅ kbctl eval: all {total} cases passed" in run.summary
    junit = ET.parse(workspace / "kbctl-eval-junit.xml").getroot()
    assert junit.get("tests") == str(total) and junit.get("failures") == "0"
    assert "::error" not in run.stdout


def test_failing_suite_fails_the_step_with_annotations(workspace: Path, runner_temp: Path,
                                                      db_url: str) -> None:
    (workspace / "evals" / "broken.yaml").write_text(BROKEN)
    run = run_action({"suite": "evals/docs.json\n  evals/broken.yaml\n", "docs-path": "docs",
                      "base-url": "https://docs.example.com/", "junit": "reports/junit.xml"},
                     workspace, runner_temp)
    assert run.exit_code == 1
    total = len(json.loads((workspace / "evals" / "docs.json").read_text())["cases"]) + 2
    assert (run.outputs["passed"], run.outputs["failed"], run.outputs["total"]) == (
        str(total - 1), "1", str(total))
    errors = [line for line in run.steps["eval"].stdout.splitlines()
              if line.startswith("::error ")]
    assert len(errors) == 1 and errors[0].startswith("::error file=evals/broken.yaml,line=6,")
    assert "## ❌ kbctl eval: 1 of" in run.summary and "wrong-page" in run.summary
    junit = ET.parse(workspace / "reports" / "junit.xml").getroot()
    assert junit.get("failures") == "1"


def test_baseline_input_and_existing_kb(workspace: Path, runner_temp: Path, db_url: str,
                                       cli: Any) -> None:
    cli.json("ingest", "files", str(workspace / "docs"), "--base-url",
             "https://docs.example.com/", "--namespace", "site")
    (workspace / "evals" / "broken.yaml").write_text(BROKEN)
    first = run_action({"suite": "evals/broken.yaml", "db-url": db_url, "namespace": "site"},
                       workspace, runner_temp)
    assert first.exit_code == 1 and "ingest" in first.steps  # no docs-path: nothing ingested
    assert "using the existing knowledge base" in first.steps["ingest"].stdout
    baseline = workspace / "baseline.json"
    shutil.copy(first.outputs["report"], baseline)
    tolerant = run_action({"suite": "evals/broken.yaml", "db-url": db_url,
                           "namespace": "site", "baseline": "baseline.json",
                           "fail-on": "regression"}, workspace, runner_temp)
    assert tolerant.exit_code == 0
    assert tolerant.outputs["failed"] == "1"
    # a first run names a baseline no run saved yet: a warning, not exit 2 (usage error)
    first_ever = run_action({"suite": "evals/docs.yaml", "db-url": db_url,
                             "namespace": "site", "baseline": "nothing-yet/report.json",
                             "fail-on": "regression"}, workspace, runner_temp)
    assert first_ever.exit_code == 0, first_ever.steps
    warning = next(line for step in first_ever.steps.values()
                   for line in step.stdout.splitlines() if line.startswith("::warning"))
    assert "no baseline at nothing-yet/report.json yet" in warning
    assert "fails on any failed case" in warning


def test_a_malformed_suite_is_shown_on_the_pull_request(workspace: Path, runner_temp: Path,
                                                       db_url: str, cli: Any) -> None:
    """It exited 2 with a good message in the log, and no annotation, summary or output."""
    cli.json("ingest", "files", str(workspace / "docs"), "--base-url",
             "https://docs.example.com/", "--namespace", "site")
    (workspace / "evals" / "bad.yaml").write_text(
        "version: 1\ncases:\n  - id: a\n    question: 5\n    expect: {sourceIncludes: x}\n")
    run = run_action({"suite": "evals/bad.yaml", "db-url": db_url, "namespace": "site"},
                     workspace, runner_temp)
    assert run.exit_code == 2
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error ")]
    assert errors == ["::error file=evals/bad.yaml,line=4,title=kbctl eval could not run::"
                      "case 'a' (cases[0]): question: expected a string, got an integer (quote it)"]
    assert "## ⚠️ kbctl eval could not run" in run.summary
    assert run.outputs["verdict"] == "error"
    assert "question: expected a string" in run.outputs["error"]


def test_inputs_never_reach_the_shell_as_code(workspace: Path, runner_temp: Path,
                                              db_url: str) -> None:
    run = run_action({"suite": "evals/docs.yaml", "db-url": db_url,
                      "namespace": 'x"; touch pwned; echo "$(touch pwned2)'},
                     workspace, runner_temp)
    assert run.exit_code == 2  # a namespace that holds nothing, named as given
    assert not (workspace / "pwned").exists() and not (workspace / "pwned2").exists()


def test_example_workflow_uses_the_action_as_declared() -> None:
    workflow = yaml.safe_load((EXAMPLES / "workflows" / "kbctl-eval.yml").read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    (step,) = [s for s in steps if s.get("uses") == "./"]
    assert set(step["with"]) <= set(load_action()["inputs"])
    for path in step["with"]["suite"].split():
        assert (ROOT / path).is_file(), path
    assert (ROOT / step["with"]["docs-path"]).is_dir()
    for other in steps:
        assert "${{ inputs." not in other.get("run", "")
        assert "${{" not in other.get("run", ""), "expressions reach scripts through env:"


@pytest.mark.empty_db
@pytest.mark.parametrize(("inputs", "why"), [
    ({"docs-path": "docs", "db-url": "DB"}, "db-url names an existing one: give one of them"),
    ({"docs-path": "docs", "generator": "mkdoc"}, "building the knowledge base from docs-path "
                                                  "failed (exit 2)"),
    ({"suite": "  ", "db-url": "DB"}, "the suite input is empty"),
    ({"rank-tolerance": "abc", "db-url": "DB"}, "rank-tolerance must be a whole number"),
    ({"fail-on": "Any", "db-url": "DB"}, "fail-on must be any or regression"),
])
def test_a_run_that_cannot_start_says_why_in_its_outputs(
        workspace: Path, runner_temp: Path, db_url: str, inputs: dict[str, str],
        why: str) -> None:
    """verdict=error, the reason in `error`, an annotation and a summary: these runs had
    exited with empty outputs (a workflow reading `verdict` saw nothing), and docs-path
    with db-url had written a pull request's docs into that database."""
    given = {"suite": "evals/docs.yaml", **{k: db_url if v == "DB" else v
                                            for k, v in inputs.items()}}
    run = run_action(given, workspace, runner_temp)
    assert run.exit_code == 2, {k: p.stderr for k, p in run.steps.items()}
    assert run.outputs["verdict"] == "error"
    assert why in run.outputs["error"]
    assert any(line.startswith("::error title=kbctl eval could not run::")
               for line in run.stdout.splitlines())
    assert "kbctl eval could not run" in run.summary
    if "db-url" in inputs and "docs-path" in inputs:
        assert rows(db_url, "SELECT to_regclass('sources')") == [(None,)]  # nothing written
