"""Attacks on the eval gate's trust: a gate that measures another retriever than the one
it was written for, quietly. Each builds a lexical-only KB from a small folder (what a CI
job without the embedder's key builds) and runs a real ``kbctl eval`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

KBCTL = [str(Path(sys.executable).parent / "kbctl")]
CLASS = "eval gate pins its retriever"
DEADLINE = 120

SUITE = """\
version: 1
defaults:
  topK: 3
{pin}cases:
  - id: rotate
    question: How do I rotate the signing keys?
    expect: {{sourceIncludes: keys}}
"""


def _kbctl(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KBCTL_") and k not in ("GEMINI_API_KEY", "OPENAI_API_KEY")}
    return subprocess.run([*KBCTL, *args, "--data-dir", str(workdir / "kb")], cwd=workdir,
                          capture_output=True, text=True, timeout=DEADLINE, env=env)


def _lexical_kb(workdir: Path) -> None:
    docs = workdir / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "keys.md").write_text("# Signing keys\n\n## Rotate\n\nRun `keys rotate`.\n")
    done = _kbctl(workdir, "ingest", "files", str(docs))
    if done.returncode != 0:
        raise RuntimeError(f"could not build the KB: {done.stderr.strip()[:300]}")


def _refused(done: subprocess.CompletedProcess[str], *words: str) -> tuple[bool, str]:
    """Held: exit 2, one JSON document naming the refusal, no traceback."""
    if "Traceback" in done.stderr or "Traceback" in done.stdout:
        return False, "traceback"
    try:
        error = json.loads(done.stdout)["error"]
    except (ValueError, KeyError, TypeError):
        return False, f"exit {done.returncode}, no JSON error: {done.stdout[:200]!r}"
    said = error.get("message", "")
    held = done.returncode == 2 and all(word in said for word in words)
    return held, f"exit {done.returncode}: {said[:160]}"


def suite_pin(workdir: Path) -> tuple[bool, str]:
    _lexical_kb(workdir)
    suite = workdir / "docs.yaml"
    suite.write_text(SUITE.format(pin="  retriever:\n    embedder: gemini\n"))
    return _refused(_kbctl(workdir, "eval", str(suite), "--json"), "docs.yaml:4", "gemini")


def config_pin(workdir: Path) -> tuple[bool, str]:
    _lexical_kb(workdir)
    (workdir / "kbctl.yaml").write_text("eval:\n  retriever:\n    embedder: openai\n")
    suite = workdir / "docs.yaml"
    suite.write_text(SUITE.format(pin=""))
    return _refused(_kbctl(workdir, "eval", str(suite), "--json"), "kbctl.yaml:2")


def flag_pin(workdir: Path) -> tuple[bool, str]:
    _lexical_kb(workdir)
    suite = workdir / "docs.yaml"
    suite.write_text(SUITE.format(pin=""))
    return _refused(_kbctl(workdir, "eval", str(suite), "--json", "--retriever",
                           "gemini,fusion=rrf"), "--retriever")


def baseline_of_another_retriever(workdir: Path) -> tuple[bool, str]:
    _lexical_kb(workdir)
    suite = workdir / "docs.yaml"
    suite.write_text(SUITE.format(pin=""))
    saved = workdir / "base.json"
    first = _kbctl(workdir, "eval", str(suite), "--json", "--save-baseline", str(saved))
    if first.returncode != 0:
        return False, f"the first run failed: exit {first.returncode}"
    report = json.loads(saved.read_text())
    report["retriever"]["embedder"] = "gemini/gemini-embedding-001@768"
    saved.write_text(json.dumps(report))
    return _refused(_kbctl(workdir, "eval", str(suite), "--json", "--baseline", str(saved)),
                    "another retriever")


def malformed_pin(workdir: Path) -> tuple[bool, str]:
    suite = workdir / "docs.yaml"
    suite.write_text(SUITE.format(pin="  retriever: {embedder: [gemini]}\n"))
    return _refused(_kbctl(workdir, "eval", str(suite), "--json"), "docs.yaml:4")


ATTACKS: list[tuple[str, str, Callable[[Path], tuple[bool, str]]]] = [
    (CLASS, "suite pins an embedder, KB is lexical-only", suite_pin),
    (CLASS, "kbctl.yaml pins an embedder, KB is lexical-only", config_pin),
    (CLASS, "--retriever pins embedder and fusion", flag_pin),
    (CLASS, "baseline measured with another embedder", baseline_of_another_retriever),
    (CLASS, "malformed pin in a suite", malformed_pin),
]
