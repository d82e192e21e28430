"""An eval gate measures the retriever it was written for, or says why it cannot.

A CI job without the embedder's key builds a lexical-only KB; without a pin the gate
then passes or fails on a retriever nobody ships. With one (a suite's
``defaults.retriever``, kbctl.yaml's ``eval.retriever``, ``--retriever`` or the Action's
``retriever`` input) the run refuses with exit 2 before any case runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbctl.embed.registry import PROVIDERS, Provider
from kbctl.evals.retriever import MeasuredRetriever, RetrieverPin
from kbctl.pipeline import pinning
from tests import embed_provider

from .conftest import Cli
from .test_action import run_action

PINNED = """\
version: 1
defaults:
  topK: 3
  retriever:
    embedder: {embedder}
cases:
  - id: rotate
    question: How do I rotate the signing keys?
    expect: {{sourceIncludes: guide/keys}}
"""

FREE = PINNED.replace("  retriever:\n    embedder: {embedder}\n", "").format()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def hashing_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deterministic embedder under the provider name ``test`` (no network)."""
    monkeypatch.setitem(PROVIDERS, "test", Provider(embed_provider.hashing_embedder,
                                                    embed_provider.DEFAULT_MODEL, remote=False))


def docs(workdir: Path) -> Path:
    folder = workdir / "docs"
    write(folder / "guide" / "keys.md", "# Signing keys\n\n## Rotate signing keys\n\n"
          "Rotate the signing keys with `kbctl keys rotate`.\n")
    write(folder / "guide" / "backup.md", "# Backups\n\nSnapshots are kept thirty days.\n")
    return folder


def test_a_lexical_kb_is_refused_by_a_suite_pinned_to_an_embedder(
        cli: Cli, workdir: Path) -> None:
    cli.json("ingest", "files", str(docs(workdir)))  # no key: lexical-only
    suite = write(workdir / "docs.yaml", PINNED.format(embedder="gemini"))
    result = cli("eval", str(suite), "--json")
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "RetrieverMismatch"
    assert f"{suite.as_posix()}:4" in error["message"]  # the pin's file:line
    assert "lexical only" in error["message"] and "--embedder gemini" in error["hint"]
    # the same suite without its pin runs, and its report names the retriever measured
    free = write(workdir / "free.yaml", FREE)
    report = cli.json("eval", str(free))
    assert report["retriever"] == {"embedder": "none", "mode": "lexical", "fusion": None,
                                   "vectorWeight": None, "reranker": "none"}


def test_the_pinned_embedder_runs_and_the_report_names_it(
        cli: Cli, workdir: Path, hashing_provider: None) -> None:
    cli.json("ingest", "files", str(docs(workdir)), "--embedder", "test@32")
    suite = write(workdir / "docs.yaml", PINNED.format(embedder="test:hashing-v1"))
    report = cli.json("eval", str(suite))
    assert report["verdict"]["passed"] is True
    assert report["retriever"] == {"embedder": "test/hashing-v1@32", "mode": "hybrid",
                                   "fusion": "weighted", "vectorWeight": 0.7,
                                   "reranker": "none"}
    # another model, or other dimensions, is another retriever
    for spec in ("test:hashing-v2", "test:hashing-v1@64"):
        write(suite, PINNED.format(embedder=spec))
        result = cli("eval", str(suite), "--json")
        assert result.exit_code == 2, result.output
        assert "embedder test/hashing-v1@32, not" in json.loads(result.stdout)["error"][
            "message"]
    # the human report says what it measured
    write(suite, PINNED.format(embedder="test"))
    human = cli("eval", str(suite))
    assert human.exit_code == 0, human.output
    assert "retriever: hybrid, test/hashing-v1@32, weighted fusion (vector weight 0.7)" \
        in human.output


def test_fusion_is_part_of_the_retriever(cli: Cli, workdir: Path,
                                         hashing_provider: None) -> None:
    cli.json("ingest", "files", str(docs(workdir)), "--embedder", "test@32")
    suite = write(workdir / "docs.yaml", FREE)
    result = cli("eval", str(suite), "--json", "--retriever", "test,fusion=rrf")
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["message"].startswith("--retriever: the gate was written for embedder "
                                       "test, fusion rrf")
    assert "--fusion rrf" in error["hint"]
    report = cli.json("eval", str(suite), "--retriever", "test,fusion=rrf", "--fusion", "rrf")
    assert report["retriever"]["fusion"] == "rrf" and report["retriever"]["vectorWeight"] is None


def test_a_pinned_embedder_that_cannot_run_here_is_exit_2_not_3(
        cli: Cli, workdir: Path, hashing_provider: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The KB was built with the embedder, but this job has no key for it: without a pin
    that is the environment (exit 3); a pinned gate refuses to run (exit 2)."""
    cli.json("ingest", "files", str(docs(workdir)), "--embedder", "test@32")

    def no_key(model: str, *, dimensions: int | None = None) -> object:
        from kbctl.errors import AuthError
        raise AuthError("TEST_API_KEY is not set")

    monkeypatch.setitem(PROVIDERS, "test", Provider(no_key, "hashing-v1", remote=False))
    free = write(workdir / "free.yaml", FREE)
    assert cli("eval", str(free), "--json").exit_code == 3
    result = cli("eval", str(free), "--json", "--retriever", "test")
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "RetrieverMismatch"
    assert "which cannot run here: TEST_API_KEY is not set" in error["message"]


def test_kbctl_yaml_pins_the_retriever_for_every_run_here(cli: Cli, workdir: Path) -> None:
    cli.json("ingest", "files", str(docs(workdir)))
    write(workdir / "kbctl.yaml",
          "eval:\n  retriever:\n    embedder: openai:text-embedding-3-small\n")
    result = cli("eval", str(write(workdir / "free.yaml", FREE)), "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["message"].startswith(
        f"{workdir / 'kbctl.yaml'}:2: the gate was written for embedder openai:")


@pytest.mark.parametrize(("yaml_text", "message"), [
    ("eval:\n  retriever:\n    embeder: gemini\n", "kbctl.yaml:3: 'eval.retriever.embeder' "
                                                    "unknown key"),
    ("eval:\n  retriever:\n    fusion: max\n", "kbctl.yaml:3: 'eval.retriever.fusion' must be"),
    ("eval:\n  retriever: gemini\n", "kbctl.yaml:2: 'eval.retriever' must be a mapping"),
    ("eval:\n  gate: 1\n", "kbctl.yaml:2: unknown key 'eval.gate'"),
])
def test_a_bad_pin_in_kbctl_yaml_names_its_line(cli: Cli, workdir: Path, yaml_text: str,
                                                 message: str) -> None:
    write(workdir / "kbctl.yaml", yaml_text)
    result = cli("eval", str(write(workdir / "free.yaml", FREE)), "--json")
    assert result.exit_code == 2
    assert message in json.loads(result.stdout)["error"]["message"]


@pytest.mark.parametrize(("pin", "message"), [
    ("retriever: gemini", "docs.yaml:4: defaults.retriever: expected a mapping"),
    ("retriever: {embedder: ''}", "docs.yaml:4: defaults.retriever.embedder: must not be empty"),
    ("retriever: {embeder: gemini}", "docs.yaml:4: defaults.retriever.embeder: unknown key"),
    ("retriever: {}", "docs.yaml:4: defaults.retriever: names nothing to require"),
    ("retriever: {embedder: nosuch:model}", "docs.yaml:4: retriever: unknown embedder provider"),
    ("retriever: {rerank: cohere}", "docs.yaml:4: retriever: reranker spec 'cohere' names no "
                                    "model"),
])
def test_a_bad_pin_in_a_suite_names_its_line_before_the_database(
        cli: Cli, workdir: Path, pin: str, message: str) -> None:
    suite = write(workdir / "docs.yaml", FREE.replace("  topK: 3\n", f"  topK: 3\n  {pin}\n"))
    result = cli("eval", str(suite), "--json", "--db", "postgresql://kbctl@127.0.0.1:1/x",
                 db=False)
    assert result.exit_code == 2, result.output  # not 3: the database is never reached
    assert message in json.loads(result.stdout)["error"]["message"]


@pytest.mark.parametrize(("text", "message"), [
    ("gemini,fusion", "'fusion' is not key=value"),
    ("embedder=gemini,embedder=openai", "'embedder' is given twice"),
    ("gemini,speed=fast", "speed: unknown key"),
    ("nosuch", "unknown embedder provider"),
])
def test_a_bad_retriever_flag_is_exit_2(cli: Cli, workdir: Path, text: str,
                                        message: str) -> None:
    result = cli("eval", str(write(workdir / "free.yaml", FREE)), "--json",
                 "--retriever", text)
    assert result.exit_code == 2
    assert message in json.loads(result.stdout)["error"]["message"]


def test_a_baseline_of_another_retriever_is_never_compared(
        cli: Cli, workdir: Path, hashing_provider: None) -> None:
    """A change of retriever moves every rank: compared, it reads as regressions and
    fixes of the docs. The gate says so (exit 2) instead."""
    cli.json("ingest", "files", str(docs(workdir)))
    suite = write(workdir / "free.yaml", FREE)
    lexical_baseline = workdir / "lexical.json"
    cli.json("eval", str(suite), "--save-baseline", str(lexical_baseline))
    # the same run against the same baseline compares
    assert cli.json("eval", str(suite), "--baseline", str(lexical_baseline))["baseline"]
    saved = json.loads(lexical_baseline.read_text())
    saved["retriever"] = {**saved["retriever"], "embedder": "test/hashing-v1@32",
                          "mode": "hybrid", "fusion": "weighted", "vectorWeight": 0.7}
    write(workdir / "hybrid.json", json.dumps(saved))
    result = cli("eval", str(suite), "--json", "--baseline", str(workdir / "hybrid.json"))
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert "measured another retriever (embedder test/hashing-v1@32, fusion weighted, " \
           "vectorWeight 0.7; this run: embedder none, fusion None, vectorWeight None)" \
        in error["message"]
    assert "--save-baseline" in error["hint"]


def test_pins_compare_by_provider_and_model() -> None:
    hybrid = MeasuredRetriever("openai/text-embedding-3-small@1536", "weighted", 0.7)
    pinning.require([RetrieverPin(embedder="openai:text-embedding-3-small", source="s")],
                    hybrid)
    pinning.require([RetrieverPin(embedder="openai/text-embedding-3-small@1536",
                                  fusion="weighted", rerank="none", source="s")], hybrid)
    with pytest.raises(Exception, match="reranker none, not cohere:rerank-v3.5"):
        pinning.require([RetrieverPin(rerank="cohere:rerank-v3.5", source="s")], hybrid)
    reranked = MeasuredRetriever("none", "weighted", 0.7, "cohere/rerank-v3.5")
    pinning.require([RetrieverPin(embedder="none", rerank="cohere:rerank-v3.5",
                                  source="s")], reranked)


def test_the_action_gate_pinned_to_an_embedder_it_cannot_build_says_why(
        workdir: Path, db_url: str) -> None:
    """The Action's retriever input: a job without the key builds a lexical-only KB, and
    the eval step then stops with verdict error instead of gating on it."""
    import shutil

    from .test_action import EXAMPLES

    workspace = workdir / "repo"
    shutil.copytree(EXAMPLES / "docs", workspace / "docs")
    shutil.copytree(EXAMPLES / "evals", workspace / "evals")
    runner_temp = workdir / "runner-temp"
    runner_temp.mkdir()
    run = run_action({"suite": "evals/docs.yaml", "docs-path": "docs", "retriever": "gemini"},
                     workspace, runner_temp)
    assert run.exit_code == 2, {k: p.stderr for k, p in run.steps.items()}
    assert run.outputs["verdict"] == "error"
    assert "the gate was written for embedder gemini" in run.outputs["error"]
