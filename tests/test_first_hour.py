"""A newcomer's first hour, as a transcript would catch it: a book's sources cited where
the book publishes them (or a warning first), no include directive left in a chunk, a
correction for a one-edit misspelling, and messages that fit the situation. Through the
real command line and the real database."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbctl.generators.tomlfile import load_toml

from .conftest import SHARED, Cli, rows

RUST_BOOK = SHARED / "corpora" / "rust-book"
BOOK_URL = "https://doc.rust-lang.org/book/"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def book_without_config(root: Path) -> Path:
    """An mdBook checkout of its sources alone: no book.toml, a README beside src/."""
    write(root / "README.md", "# The book's repository\n\nHow to build it.\n")
    write(root / "src" / "SUMMARY.md", "# Summary\n\n"
          "- [Error Handling](ch09-00-error-handling.md)\n"
          "    - [Recoverable Errors](ch09-02-recoverable.md)\n")
    write(root / "src" / "ch09-00-error-handling.md",
          "# Error Handling\n\nRust groups errors into two kinds.\n\n"
          "{{#rustdoc_include ../listings/ch09/listing-09-01/src/main.rs}}\n\n"
          "## Unrecoverable Errors\n\nA panic unwinds the stack.\n")
    write(root / "src" / "ch09-02-recoverable.md",
          "# Recoverable Errors with `Result`\n\nAn iterator of results collects into a "
          "result. The iterator adapter maps each one.\n\n{{#include missing.md}}\n")
    return root


def urls(cli: Cli) -> set[str]:
    return {u for (u,) in rows(cli.db_url, "SELECT url FROM sources")}


def test_a_book_without_book_toml_is_cited_as_mdbook_publishes_it(cli: Cli,
                                                                    workdir: Path) -> None:
    root = book_without_config(workdir / "book")
    result = cli("ingest", "files", str(root), "--base-url", BOOK_URL)
    assert result.exit_code == 0, result.output
    assert "generator mdbook (assumed with no mdbook config file" in result.stderr
    assert urls(cli) == {BOOK_URL + "ch09-00-error-handling.html",
                         BOOK_URL + "ch09-02-recoverable.html"}  # no SUMMARY, no README
    [(chunk_url,)] = rows(cli.db_url, "SELECT s.url FROM chunks c JOIN sources s "
                                      "ON s.ref = c.source_ref WHERE c.text LIKE "
                                      "'%%panic unwinds%%'")
    assert chunk_url == BOOK_URL + "ch09-00-error-handling.html"
    cited = cli.json("query", "panic unwinds the stack")["results"][0]["citation"]
    assert cited == BOOK_URL + "ch09-00-error-handling.html#unrecoverable-errors"


def test_generator_mdbook_on_the_checkout_assumes_src(cli: Cli, workdir: Path) -> None:
    root = book_without_config(workdir / "book")
    out = cli.json("ingest", "files", str(root), "--base-url", BOOK_URL,
                   "--generator", "mdbook")
    assert out["added"] == 2
    assert urls(cli) == {BOOK_URL + "ch09-00-error-handling.html",
                         BOOK_URL + "ch09-02-recoverable.html"}


def test_a_folder_that_looks_like_sphinx_warns_before_it_is_read(cli: Cli,
                                                                 workdir: Path) -> None:
    write(workdir / "proj" / "docs" / "conf.py", "project = 'x'\nextensions = []\n"
          "html_theme = 'alabaster'\n")
    write(workdir / "proj" / "docs" / "usage.rst", "Usage\n=====\n\nRun it.\n")
    result = cli("ingest", "files", str(workdir / "proj"), "--base-url",
                 "https://x.example.com/")
    assert result.exit_code == 0, result.output
    warning = next(line for line in result.stderr.splitlines() if "warning:" in line)
    assert "plain rule: https://x.example.com/docs/usage" in warning
    assert "this looks like a sphinx project" in warning
    assert "`--generator sphinx` would cite https://x.example.com/usage.html" in warning


def test_includes_that_cannot_be_resolved_are_left_out_and_reported(cli: Cli,
                                                                    workdir: Path) -> None:
    root = book_without_config(workdir / "book")
    out = cli.json("ingest", "files", str(root), "--base-url", BOOK_URL)
    texts = [t for (t,) in rows(cli.db_url, "SELECT text FROM chunks")]
    assert texts and not any("{{#" in t for t in texts)
    chapter = str(root.resolve() / "src" / "ch09-00-error-handling.md")
    assert {(u["file"], u["line"], u["target"], u["reason"])
            for u in out["unresolvedIncludes"]} == {
        (chapter, 5, "../listings/ch09/listing-09-01/src/main.rs", "no such file"),
        (str(root.resolve() / "src" / "ch09-02-recoverable.md"), 5, "missing.md",
         "no such file")}
    people = cli("ingest", "files", str(root), "--base-url", BOOK_URL, "-n", "again")
    assert f"{chapter}: left out 1 include(s) that could not be resolved: line 5 " \
           "../listings/ch09/listing-09-01/src/main.rs (no such file)" in people.stderr


def test_a_one_edit_misspelling_is_corrected_and_said(cli: Cli, workdir: Path) -> None:
    root = book_without_config(workdir / "book")
    cli.json("ingest", "files", str(root), "--base-url", BOOK_URL)
    result = cli("query", "iterater")
    assert result.exit_code == 0
    assert "iterater → iter…" in result.stderr and "no passage uses: iterater" not in result.stderr
    out = cli.json("query", "iterater")
    assert out["corrected"] == {"iterater": "iter"} and out["results"]


def test_a_mistyped_query_option_gets_the_one_it_meant(cli: Cli) -> None:
    typo = cli("query", "--fitler", "a=b", "how", db=False)
    assert typo.exit_code == 2
    assert "No such option: --fitler. Did you mean --filter?" in typo.stderr
    assert "`--`" not in typo.stderr
    question = cli("query", "-how do I pass flags", db=False)
    assert question.exit_code == 2
    assert "a question that starts with '-' goes after `--`" in question.stderr
    assert "-- '-how do I pass flags'" in question.stderr


def test_a_wrong_path_on_a_first_ingest_gets_a_first_run_hint(cli: Cli,
                                                              workdir: Path) -> None:
    (workdir / "rust-book").mkdir()
    result = cli("ingest", "files", "rust_book")
    assert result.exit_code == 2
    assert f"(looked for in {workdir})" in result.stderr
    assert "hint: did you mean rust-book?" in result.stderr
    assert "cron" not in result.stderr
    other = cli("ingest", "files", "docs")
    assert other.exit_code == 2 and "cron" not in other.stderr
    assert "hint: check the path" in other.stderr


def test_ingest_without_kbctl_yaml_says_so_and_how_to_start(cli: Cli, workdir: Path) -> None:
    result = cli("ingest")
    assert result.exit_code == 2
    assert "there is no kbctl.yaml here" in result.stderr
    assert "lists no sources" not in result.stderr
    assert "kbctl ingest files docs/" in result.stderr and "`sources:`" in result.stderr
    write(workdir / "kbctl.yaml", "namespace: docs\n")
    listed = cli("ingest")
    assert listed.exit_code == 2 and "kbctl.yaml lists no sources" in listed.stderr


def test_eval_alone_shows_its_own_usage(cli: Cli) -> None:
    result = cli("eval", db=False)
    assert result.exit_code == 2
    assert "Usage: kbctl eval SUITE_OR_GLOB... [OPTIONS]" in result.stderr
    assert "kbctl eval init" in result.stderr and "eval run" not in result.stderr
    out = cli("eval", "--json", db=False)
    assert out.exit_code == 2


def test_many_added_cases_are_counted_not_listed(cli: Cli, workdir: Path) -> None:
    root = book_without_config(workdir / "book")
    cli.json("ingest", "files", str(root), "--base-url", BOOK_URL)
    case = "  - id: {id}\n    question: how does a panic unwind\n"
    suite = write(workdir / "s.yaml", "version: 1\ncases:\n" + case.format(id="first"))
    base = workdir / "base.json"
    assert cli("eval", str(suite), "--save-baseline", str(base)).exit_code == 0
    added = [f"case-{n:02d}" for n in range(12)]
    write(suite, suite.read_text() + "".join(case.format(id=i) for i in added))
    people = cli("eval", str(suite), "--baseline", str(base))
    assert people.exit_code == 0, people.output
    line = next(x for x in people.stdout.splitlines() if "added:" in x)
    assert "12 cases (case-00, case-01, case-02 and 9 more" in " ".join(
        people.stdout.split())
    assert "case-11" not in line
    verbose = cli("eval", str(suite), "--baseline", str(base), "--verbose")
    assert verbose.exit_code == 0
    assert f"added: {', '.join(added)}" in " ".join(verbose.stdout.split())
    report = json.loads(cli("eval", str(suite), "--baseline", str(base), "--json").stdout)
    assert [c["id"] for c in report["baseline"]["added"]] == added


def test_query_json_names_an_empty_namespace_for_what_it_is(cli: Cli, workdir: Path) -> None:
    root = book_without_config(workdir / "book")
    cli.json("ingest", "files", str(root), "--base-url", BOOK_URL)
    out = cli.json("query", "zebracorn")
    assert out["results"] == [] and out["namespaceEmpty"] is False
    assert out["empty"] is out["namespaceEmpty"]  # the former name, kept for scripts


def test_the_package_asks_for_lxml_html_clean_itself() -> None:
    """pip before 23.3 warned that lxml 'does not provide the extra html_clean' when a
    requirement spelled it so: kbctl names the package the extra stood for."""
    project = load_toml((Path(__file__).parents[1] / "pyproject.toml").read_text())
    specs = [*project["project"]["dependencies"],
             *(s for extra in project["project"]["optional-dependencies"].values()
               for s in extra)]
    assert any(s.startswith("lxml_html_clean") for s in specs)
    assert not any("[html_clean]" in s or "[html-clean]" in s for s in specs)


@pytest.mark.skipif(not (RUST_BOOK / "src" / "SUMMARY.md").is_file(),
                    reason="the Rust book corpus (../shared) is absent")
def test_the_rust_book_tour(cli: Cli) -> None:
    out = cli.json("ingest", "files", str(RUST_BOOK), "--base-url", BOOK_URL)
    assert out["added"] == 111 and out["failed"] == 0
    assert all(u.startswith(BOOK_URL) and "/src/" not in u and
               (u.endswith(".html") or u == BOOK_URL) for u in urls(cli)), urls(cli)
    assert not [u for u in urls(cli) if "SUMMARY" in u or "README" in u]
    assert rows(cli.db_url, "SELECT count(*) FROM chunks WHERE text LIKE '%%{{#%%'") == [(0,)]
    assert out["unresolvedIncludes"] and all(
        u["line"] > 0 and u["target"] and u["file"].endswith(".md")
        for u in out["unresolvedIncludes"])
    query = cli.json("query", "iterater")
    assert query["corrected"] == {"iterater": "iter"}
    assert query["results"][0]["citation"].startswith(BOOK_URL + "ch13-")


@pytest.mark.parametrize(("files", "page", "line", "target"), [
    ({"mkdocs.yml": "site_name: x\nplugins:\n  - include-markdown\n",
      "docs/index.md": "# Home\n\nIntro.\n\n{% include-markdown \"../missing.md\" %}\n"},
     "docs/index.md", 5, "../missing.md"),
    ({"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - pymdownx.snippets\n",
      "docs/index.md": "---\ntitle: Home\n---\n# Home\n\nIntro.\n\n--8<-- \"gone.md\"\n"},
     "docs/index.md", 8, "gone.md"),
    ({"conf.py": "project = 'x'\nextensions = []\n",
      "index.rst": "Home\n====\n\nIntro.\n\n.. include:: missing.rst\n"},
     "index.rst", 6, "missing.rst"),
])
def test_other_generators_report_their_unresolved_includes(
        cli: Cli, workdir: Path, files: dict[str, str], page: str, line: int,
        target: str) -> None:
    for name, text in files.items():
        write(workdir / "site" / name, text)
    out = cli.json("ingest", "files", str(workdir / "site"), "--base-url",
                   "https://x.example.com/")
    assert out["failed"] == 0
    [(text,)] = rows(cli.db_url, "SELECT string_agg(text, ' ') FROM chunks")
    assert "Intro." in text and target not in text and "include" not in text
    assert [(u["file"], u["line"], u["target"], u["reason"].split(" in ")[0])
            for u in out["unresolvedIncludes"]] == [
        (str((workdir / "site" / page).resolve()), line, target, "no such file")]


@pytest.mark.skipif(importlib.util.find_spec("fastembed") is None,
                    reason="fastembed (the local extra) is not installed")
def test_a_local_model_that_cannot_load_is_said_once(db_url: str, workdir: Path) -> None:
    """fastembed logs its own timestamped ERROR lines (through loguru, straight to the
    process's stderr) before kbctl's message: seen only in a real process."""
    write(workdir / "docs" / "a.md", "# A\n\nText.\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "FASTEMBED_CACHE_PATH": str(workdir / "empty-cache"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-c", "from kbctl.cli import main; main()", "ingest", "files",
         "docs", "--db", db_url, "--embedder", "local:sentence-transformers/all-MiniLM-L6-v2",
         "--json"], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 3, proc.stderr  # the environment: the model is not there
    error = json.loads(proc.stdout)["error"]  # the run ends at once, in one line
    assert error["message"].startswith(
        "could not load local model sentence-transformers/all-MiniLM-L6-v2")
    assert "| ERROR" not in proc.stderr and "fastembed.common" not in proc.stderr
