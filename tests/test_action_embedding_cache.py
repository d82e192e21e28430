"""The Action carries its embedding cache between runs: the second run of a push that
changed three pages embeds only those pages' new text.

The Action's steps run as a runner runs them (tests/test_action.py's harness), twice, each
time in a fresh runner directory (a fresh embedded database), against a loopback
OpenAI-compatible server that records every input. Between the runs, what the
``actions/cache`` steps save is handed to the next run at the path they restore it to.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from .test_action import ACTION, Run, load_action, run_action, workspace  # noqa: F401 (a fixture)
from .test_hybrid import openai_server  # noqa: F401 (a fixture)

EMBEDDER = "openai:fake-model@24"
NOTE = "Zanzibar marmalade clause: a sentence this page did not hold before."
EDITED = ("guide/install.md", "reference/query.md", "ops/troubleshooting.md")


def _cache_steps() -> dict[str, dict[str, Any]]:
    return {step["name"]: step for step in load_action()["runs"]["steps"]
            if str(step.get("uses", "")).startswith("actions/cache")}


def _trust_the_loopback_provider(checkout: Path) -> None:
    """The provider runs on 127.0.0.1: the repository's kbctl.yaml opts in, as a team
    with a self-hosted embedder in its CI network would."""
    (checkout / "kbctl.yaml").write_text("allow_private_network: true\n", encoding="utf-8")


def _restored_path(runner_temp: Path) -> Path:
    """The path the restore step hands the cache back at, in this runner."""
    path = _cache_steps()["Restore the embedding cache"]["with"]["path"]
    return Path(re.sub(r"\$\{\{\s*runner\.temp\s*\}\}", str(runner_temp), path))


def _built_and_evaluated(run: Run) -> None:
    """The knowledge base was built and the suite ran (the test embedder's ranking may
    fail a case or two: that is the eval's verdict, not the cache's)."""
    assert run.steps["ingest"].returncode == 0, run.steps["ingest"].stderr
    assert "eval" in run.steps and int(run.outputs["total"]) > 0, run.steps["eval"].stderr


def test_cache_steps_are_keyed_by_the_embedder_and_save_what_they_restore() -> None:
    steps = _cache_steps()
    restore, save = steps["Restore the embedding cache"], steps["Save the embedding cache"]
    assert restore["uses"].startswith("actions/cache/restore@")
    assert save["uses"].startswith("actions/cache/save@")
    assert save["with"]["path"] == restore["with"]["path"]
    assert "inputs.embedder" in restore["with"]["key"]
    assert "inputs.embedder" in restore["with"]["restore-keys"]
    assert save["with"]["key"] == "${{ steps.restore-embeddings.outputs.cache-primary-key }}"
    assert save["if"] == "steps.ingest.outputs.embedding-cache == 'written'"
    models = steps["Cache the local embedding model"]
    assert models["if"] == "startsWith(inputs.embedder, 'local')"
    assert "inputs.embedder" in models["with"]["key"]
    # the model folder the cache keeps is where fastembed looks (action/lib.sh)
    lib = (ACTION.parent / "action" / "lib.sh").read_text(encoding="utf-8")
    assert 'FASTEMBED_CACHE_PATH:-$RUNNER_TEMP/kbctl-models' in lib
    assert models["with"]["path"] == "${{ runner.temp }}/kbctl-models"
    assert 'KBCTL_EMBEDDINGS="$RUNNER_TEMP/kbctl-embeddings/' in lib
    assert restore["with"]["path"] == "${{ runner.temp }}/kbctl-embeddings"


def test_a_second_run_embeds_only_the_pages_a_push_changed(
        workspace: Path, workdir: Path, openai_server: tuple[str, list[dict]]) -> None:  # noqa: F811
    base, seen = openai_server
    _trust_the_loopback_provider(workspace)
    suite = yaml.safe_load((workspace / "evals" / "docs.yaml").read_text(encoding="utf-8"))
    questions = {case["question"] for case in suite["cases"]}

    def documents_sent(since: int) -> list[str]:
        """Texts sent to embed for the knowledge base (not the eval's questions)."""
        return [text for body in seen[since:] for text in body["input"]
                if text not in questions]

    def requests_for_documents(since: int) -> int:
        return sum(1 for body in seen[since:] if set(body["input"]) - questions)

    inputs = {"suite": "evals/docs.yaml", "docs-path": "docs", "embedder": EMBEDDER,
              "base-url": "https://docs.example.com/"}
    env = {"KBCTL_EMBEDDER_BASE_URL": base}
    first_temp = workdir / "runner-1"
    first_temp.mkdir()
    first = run_action(inputs, workspace, first_temp, env)
    _built_and_evaluated(first)
    first_texts = documents_sent(0)
    assert len(first_texts) > len(EDITED)
    saved = _restored_path(first_temp)
    assert (saved / "embeddings.kbvec").is_file()

    for page in EDITED:  # the push: three pages gain a section at their end
        path = workspace / "docs" / page
        path.write_text(path.read_text(encoding="utf-8") + f"\n\n## Note\n\n{NOTE}\n",
                        encoding="utf-8")
    second_temp = workdir / "runner-2"
    second_temp.mkdir()
    shutil.copytree(saved, _restored_path(second_temp))  # actions/cache restores it
    mark = len(seen)
    second = run_action(inputs, workspace, second_temp, env)
    _built_and_evaluated(second)
    assert not (second_temp / "kbctl-kb").samefile(first_temp / "kbctl-kb")
    sent = documents_sent(mark)
    # one section per edited page: its new one; nothing embedded twice
    assert len(sent) == len(EDITED)
    assert all(NOTE in text for text in sent)
    assert not set(sent) & set(first_texts)
    assert 1 <= requests_for_documents(mark) <= len(EDITED)
    assert second.outputs["total"] == first.outputs["total"]


def test_without_the_cache_a_fresh_runner_embeds_everything_again(
        workspace: Path, workdir: Path, openai_server: tuple[str, list[dict]]) -> None:  # noqa: F811
    """The yardstick of the test above: the same two runs with nothing restored."""
    base, seen = openai_server
    _trust_the_loopback_provider(workspace)
    inputs = {"suite": "evals/docs.yaml", "docs-path": "docs", "embedder": EMBEDDER}
    env = {"KBCTL_EMBEDDER_BASE_URL": base}
    counts = []
    for n in (1, 2):
        temp = workdir / f"runner-{n}"
        temp.mkdir()
        mark = len(seen)
        _built_and_evaluated(run_action(inputs, workspace, temp, env))
        counts.append(sum(len(body["input"]) for body in seen[mark:]))
    assert counts[0] == counts[1] > len(EDITED)
