"""`kbctl ingest files|text` through the real Typer app and a real database."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest

from kbctl.pipeline.ingest import CHUNKER_VERSION

from .conftest import Cli, rows


def _write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def docs(workdir: Path) -> Path:
    root = workdir / "docs"
    _write(root, "index.md", "---\ntitle: Home\nlang: en\n---\n# Welcome\n\nStart here.\n")
    _write(root, "guide/install.md",
           "# Install\n\n## With pnpm\n\nRun pnpm add widget.\n\n## With npm\n\nnpm i widget\n")
    _write(root, "guide/index.md", "# Guide\n\nThe guide section.\n")
    _write(root, "notes.txt", "Plain text notes about widgets.")
    _write(root, "skip.png", "not a doc")
    return root


def test_ingest_files_reports_and_writes_rows(cli: Cli, docs: Path) -> None:
    report = cli.json("ingest", "files", str(docs), "--base-url", "https://docs.example.com/")
    assert (report["added"], report["updated"], report["unchanged"], report["failed"]) == (
        4, 0, 0, 0)
    assert report["chunksWritten"] == sum(
        n for (n,) in rows(cli.db_url, "SELECT chunk_count FROM sources"))
    urls = {u for (u,) in rows(cli.db_url, "SELECT url FROM sources")}
    assert urls == {"https://docs.example.com/", "https://docs.example.com/guide/install",
                    "https://docs.example.com/guide/", "https://docs.example.com/notes.txt"}
    # front matter is metadata, not body
    texts = " ".join(t for (t,) in rows(cli.db_url, "SELECT text FROM chunks"))
    assert "title: Home" not in texts and "Start here." in texts
    [(meta,)] = rows(cli.db_url, "SELECT meta FROM chunks WHERE text LIKE '%%Start here%%'")
    assert meta["lang"] == "en" and meta["title"] == "Home"


def test_without_base_url_refs_are_stable_kb_urls(cli: Cli, docs: Path) -> None:
    cli.json("ingest", "files", str(docs))
    urls = {u for (u,) in rows(cli.db_url, "SELECT url FROM sources")}
    assert "kb://docs/guide/install.md" in urls


def test_reingest_unchanged_writes_nothing(cli: Cli, docs: Path) -> None:
    cli.json("ingest", "files", str(docs))
    before = rows(cli.db_url, "SELECT id FROM chunks ORDER BY id")
    again = cli.json("ingest", "files", str(docs))
    assert (again["added"], again["updated"], again["chunksWritten"]) == (0, 0, 0)
    assert again["unchanged"] + again["notModified"] == 4
    assert rows(cli.db_url, "SELECT id FROM chunks ORDER BY id") == before
    # touching the mtime without changing content re-hashes but still writes nothing
    p = docs / "guide" / "install.md"
    os.utime(p, (p.stat().st_atime, p.stat().st_mtime + 10))
    third = cli.json("ingest", "files", str(docs))
    assert third["unchanged"] == 1 and third["chunksWritten"] == 0


def test_shrunken_page_loses_its_tail(cli: Cli, workdir: Path) -> None:
    root = workdir / "d"
    long = "# Big\n\n" + "\n\n".join(f"## Part {i}\n\n" + ("text " * 300) for i in range(6))
    _write(root, "big.md", long)
    cli.json("ingest", "files", str(root))
    [(n_before,)] = rows(cli.db_url, "SELECT count(*) FROM chunks")
    _write(root, "big.md", "# Big\n\n## Part 0\n\nshort now\n")
    report = cli.json("ingest", "files", str(root))
    assert report["updated"] == 1
    assert rows(cli.db_url, "SELECT count(*) FROM chunks") == [(1,)]
    assert n_before > 1
    # the report's counts add up to the change: the old version's chunks were deleted
    assert (report["chunksWritten"], report["chunksDeleted"]) == (1, n_before)


def test_removed_file_is_deleted_with_its_chunks(cli: Cli, docs: Path) -> None:
    cli.json("ingest", "files", str(docs))
    (docs / "notes.txt").unlink()
    report = cli.json("ingest", "files", str(docs))
    assert report["deleted"] == 1 and report["chunksDeleted"] >= 1
    assert rows(cli.db_url, "SELECT count(*) FROM sources WHERE url LIKE '%%notes%%'") == [(0,)]


def test_json_given_to_the_ingest_group_is_the_commands(cli: Cli, docs: Path) -> None:
    result = cli("ingest", "--json", "files", str(docs))
    assert result.exit_code == 0 and json.loads(result.stdout)["added"] == 4
    failed = cli("ingest", "--json", "files", str(docs / "nope"))
    assert failed.exit_code == 2
    assert json.loads(failed.stdout)["error"]["type"] == "InputError"


def test_a_source_whose_first_run_reads_nothing_is_not_recorded(cli: Cli,
                                                                workdir: Path) -> None:
    bad = _write(workdir / "bad", "page.md", "# Page\n\nText.\n")
    bad.write_bytes(b"\x00\x01 not text")
    report = cli.json("ingest", "files", str(bad.parent), code=1)
    assert report["failed"] == 1
    assert any("not recorded for resync" in note for note in report["notes"])
    assert rows(cli.db_url, "SELECT count(*) FROM source_defs") == [(0,)]
    # one that read something once stays recorded when it fails later
    bad.write_text("# Page\n\nText.\n", encoding="utf-8")
    cli.json("ingest", "files", str(bad.parent))
    bad.write_bytes(b"\x00\x01 not text")
    again = cli.json("ingest", "files", str(bad.parent), code=1)
    assert not any("not recorded" in note for note in again["notes"])
    assert rows(cli.db_url, "SELECT count(*) FROM source_defs") == [(1,)]


def test_pages_read_under_new_addresses_replace_their_old_ones(cli: Cli, docs: Path) -> None:
    cli.json("ingest", "files", str(docs))
    # the same folder with a --base-url: every page has a new address and the same text
    moved = cli.json("ingest", "files", str(docs), "--base-url", "https://docs.example.com/")
    assert (moved["added"], moved["deleted"], moved["dropped"]) == (4, 4, {})
    assert moved["chunksWritten"] - moved["chunksDeleted"] == 0
    refs = sorted(r for (r,) in rows(cli.db_url, "SELECT url FROM sources"))
    assert refs == ["https://docs.example.com/", "https://docs.example.com/guide/",
                    "https://docs.example.com/guide/install",
                    "https://docs.example.com/notes.txt"]
    # a renamed file moves in one run
    (docs / "notes.txt").rename(docs / "widget-notes.txt")
    renamed = cli.json("ingest", "files", str(docs), "--base-url", "https://docs.example.com/")
    assert (renamed["added"], renamed["deleted"]) == (1, 1)
    assert renamed["changes"]["added"] == ["https://docs.example.com/widget-notes.txt"]


def test_a_new_copy_of_a_page_that_stays_is_stored_once(cli: Cli, docs: Path) -> None:
    cli.json("ingest", "files", str(docs))
    # read before the page it copies (files are read in order): stored, then taken out
    _write(docs, "a/install.md", (docs / "guide" / "install.md").read_text(encoding="utf-8"))
    report = cli.json("ingest", "files", str(docs))
    assert (report["added"], report["deleted"], report["dropped"]) == (0, 0, {"duplicate": 1})
    assert report["chunksWritten"] == report["chunksDeleted"]
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(4,)]
    assert rows(cli.db_url, "SELECT count(*) FROM sources WHERE ref LIKE '%%a/install%%'") == [(0,)]
    assert rows(cli.db_url, "SELECT count(*) FROM chunks WHERE source_ref LIKE '%%a/install%%'"
                ) == [(0,)]


def test_bad_files_are_error_entries_and_the_rest_goes_on(cli: Cli, docs: Path) -> None:
    (docs / "latin1.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
    (docs / "binary.md").write_bytes(b"\x00\x01\x02PNG")
    (docs / "huge.txt").write_bytes(b"x" * (5 * 1024 * 1024 + 1))
    _write(docs, "badfm.md", "---\ntitle: [unclosed\n---\n# X\n")
    report = cli.json("ingest", "files", str(docs), code=1)
    assert report["added"] == 4 and report["failed"] == 4
    failed = {e["ref"].rsplit("/", 1)[-1]: e["error"] for e in report["errors"]}
    assert set(failed) == {"latin1.md", "binary.md", "huge.txt", "badfm.md"}
    assert "not valid utf-8" in failed["latin1.md"] and "byte limit" in failed["huge.txt"]
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(4,)]


def test_a_stray_nul_in_a_long_page_is_dropped_not_the_page(cli: Cli, docs: Path) -> None:
    # Javadoc prints a '\0' constant verbatim: one NUL in a page of real text.
    prose = "<p>Counts characters of every kind in a string.</p>\n" * 40
    (docs / "chars.html").write_bytes(
        f"<main><h2 id='nul'>NUL</h2><p>The <code>\x00</code> character.</p>{prose}</main>"
        .encode())
    (docs / "dense.html").write_bytes(b"<main>" + b"\x00x" * 50 + b"</main>")
    report = cli.json("ingest", "files", str(docs), code=1)
    failed = {e["ref"].rsplit("/", 1)[-1]: e["error"] for e in report["errors"]}
    assert set(failed) == {"dense.html"} and "binary" in failed["dense.html"]
    [(text,)] = rows(cli.db_url, "SELECT string_agg(text, ' ') FROM chunks c "
                     "JOIN sources s ON s.ref = c.source_ref WHERE s.url LIKE '%%chars%%'")
    assert "character." in text and "\x00" not in text


def test_symlink_escaping_the_root_is_refused(cli: Cli, docs: Path, workdir: Path) -> None:
    secret = _write(workdir, "outside/secret.md", "# Secret\n\ntoken 12345\n")
    (docs / "link.md").symlink_to(secret)
    report = cli.json("ingest", "files", str(docs), code=1)
    assert any("outside the source root" in e["error"] for e in report["errors"])
    assert rows(cli.db_url, "SELECT count(*) FROM chunks WHERE text LIKE '%%12345%%'") == [(0,)]


def test_files_citing_one_address_are_both_reported(cli: Cli, docs: Path) -> None:
    _write(docs, "guide/README.md", "# Guide again\n\nA second index page.\n")
    _write(docs, "notes.md", "# Notes\n\nMarkdown notes.\n")
    _write(docs, "notes.rst", "Notes\n=====\n\nThe same notes in reStructuredText.\n")
    report = cli.json("ingest", "files", str(docs), "--base-url", "https://d.test/", code=1)
    failed = sorted((e["ref"], e["error"]) for e in report["errors"])
    assert [ref for ref, _ in failed] == ["https://d.test/guide/"] * 2 + [
        "https://d.test/notes"] * 2
    for ref, error in failed:
        pair = (("guide/index.md", "guide/README.md") if ref.endswith("guide/")
                else ("notes.md", "notes.rst"))
        assert all(str(docs / name) in error for name in pair), error
    refs = {ref for (ref,) in rows(cli.db_url, "SELECT ref FROM sources")}
    assert refs == {"https://d.test/", "https://d.test/guide/install",
                    "https://d.test/notes.txt"}  # a text file is served under its name


def test_long_work_off_a_terminal_says_how_far_it_is(cli: Cli, docs: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI log or a cron mail showed nothing for a 40 s ingest, then one line."""
    from kbctl.render import output

    monkeypatch.setattr(output, "PROGRESS_LINE_S", 0.0)
    result = cli("ingest", "files", str(docs))
    assert result.exit_code == 0
    lines = [line for line in result.stderr.splitlines() if "done (written" in line]
    assert lines and lines[-1].startswith("ingest → default: 4 of 4 done (written 4")


def test_exclude_and_glob_targets(cli: Cli, docs: Path) -> None:
    report = cli.json("ingest", "files", str(docs / "**" / "*.md"), "--exclude", "guide/*")
    assert report["added"] == 1
    [(url,)] = rows(cli.db_url, "SELECT url FROM sources")
    assert url.endswith("/index.md")
    assert not any("matched no file" in note for note in report["notes"])
    # a pattern written from elsewhere than the folder matches nothing: said, not silent
    typo = cli.json("ingest", "files", str(docs), "--exclude", "docs/guide/*", "-n", "t")
    assert any("--exclude 'docs/guide/*' matched no file (patterns match paths relative "
               "to" in note for note in typo["notes"])


def test_a_built_site_in_several_languages_and_versions_keeps_one_copy(
        cli: Cli, workdir: Path) -> None:
    site = workdir / "built"
    for lang in ("", "fr/", "de/"):
        for version in ("v1/", "v2/"):
            _write(site, f"{lang}{version}guide/install.html",
                   f"<html><body><main><h1>Install {lang}{version}</h1><p>Words.</p></main>"
                   "</body></html>")
    _write(site, "about.html", "<html><body><main><h1>About</h1><p>Us.</p></main></body></html>")
    base = "https://d.test/"
    report = cli.json("ingest", "files", str(site), "--base-url", base)
    urls = {u for (u,) in rows(cli.db_url, "SELECT url FROM sources")}
    assert urls == {base + "v2/guide/install.html", base + "about.html"}
    assert report["dropped"] == {"other versions": 1, "other languages": 4}
    assert any("kept version 'v2'" in note and "language '(unprefixed)'" in note
               for note in report["notes"])
    # the choice is recorded: a resync keeps it; another namespace takes French, v1
    cli.json("ingest", "files", str(site), "--base-url", base, "--lang", "FR",
             "--version", "v1", "-n", "fr")
    fr = {u for (u,) in rows(cli.db_url, "SELECT url FROM sources WHERE namespace = 'fr'")}
    assert fr == {base + "fr/v1/guide/install.html", base + "about.html"}
    [(opts,)] = rows(cli.db_url, "SELECT options FROM source_defs WHERE namespace = 'fr'")
    assert opts["lang"] == "FR" and opts["version"] == "v1"
    unknown = cli.json("ingest", "files", str(site), "--base-url", base, "--lang", "ja",
                       "-n", "ja", code=1)
    assert "'ja' is not among the site's versions or languages" in str(unknown["errors"])
    assert rows(cli.db_url, "SELECT count(*) FROM sources WHERE namespace = 'ja'") == [(0,)]
    one = cli.json("ingest", "files", str(workdir / "built" / "about.html"), "--lang", "fr",
                   "-n", "one")
    assert any("--lang changed nothing" in note for note in one["notes"])


def test_ingest_text_from_stdin_and_argument(cli: Cli) -> None:
    cli.json("ingest", "text", "--ref", "notes/one", "--title", "One",
             input="# Notes\n\nReleased widgets.\n")
    cli.json("ingest", "text", "Plain words here", "--ref", "https://x.test/p",
             "--format", "text")
    got = dict(rows(cli.db_url, "SELECT url, title FROM sources"))
    assert got == {"kb://text/notes/one": "One", "https://x.test/p": "https://x.test/p"}
    missing = cli("ingest", "text", "x")
    assert missing.exit_code == 2 and "--ref" in missing.stderr


def test_missing_folder_is_bad_input(cli: Cli, workdir: Path) -> None:
    result = cli("ingest", "files", str(workdir / "nope"))
    assert result.exit_code == 2
    assert "nope" in result.stderr
    # refused before the database was touched: not even its tables were made
    [(table,)] = rows(cli.db_url, "SELECT to_regclass('sources')")
    assert table is None or rows(cli.db_url, "SELECT count(*) FROM sources") == [(0,)]


def test_config_sources_and_namespace(cli: Cli, docs: Path, workdir: Path) -> None:
    (workdir / "kbctl.yaml").write_text(
        f"namespace: site\nchunking:\n  max_tokens: 128\nsources:\n"
        f"  - kind: files\n    target: {docs}\n    base_url: https://d.test/\n")
    report = cli.json("ingest")
    assert report["namespace"] == "site" and report["added"] == 4
    assert rows(cli.db_url, "SELECT DISTINCT namespace FROM sources") == [("site",)]
    [(opts,)] = rows(cli.db_url, "SELECT options FROM source_defs")
    assert opts == {"base_url": "https://d.test/"}


@pytest.mark.parametrize(("yaml_text", "needle"), [
    ("namespace: a\nbogus: 1\n", "kbctl.yaml:2: unknown key 'bogus'"),
    ("vector_weight: high\n", "kbctl.yaml:1: 'vector_weight' must be a number"),
    ("chunking:\n  max_tokens: -4\n", "kbctl.yaml:2: 'chunking.max_tokens'"),
    ("sources:\n  - kind: ftp\n    target: x\n", "kbctl.yaml:2: sources[0].kind"),
    ("namespace: [unclosed\n", "kbctl.yaml:2: invalid YAML"),
])
def test_invalid_config_names_field_and_line(cli: Cli, workdir: Path, yaml_text: str,
                                             needle: str) -> None:
    (workdir / "kbctl.yaml").write_text(yaml_text)
    result = cli("query", "anything")
    assert result.exit_code == 2
    assert needle in result.stderr.replace("\n", "")


def test_unreachable_database_exits_3(workdir: Path) -> None:
    result = Cli("postgresql://u@127.0.0.1:1/x")("query", "hello", "--json")
    assert result.exit_code == 3
    assert '"exitCode": 3' in result.stdout


def test_unknown_flag_exits_2(cli: Cli) -> None:
    assert cli("query", "x", "--no-such-flag").exit_code == 2


def test_a_question_that_reads_as_an_option_says_how_to_ask_it(cli: Cli) -> None:
    result = cli("query", "--torch-backend=auto", db=False)
    assert result.exit_code == 2
    assert ("goes after `--`, the options before it: kbctl query [OPTIONS] -- "
            "--torch-backend=auto") in result.stderr
    searched = cli("memory", "search", "-x y", "--agent", "a", "--user", "b", db=False)
    assert searched.exit_code == 2 and "kbctl memory search [OPTIONS] -- '-x y'" in \
        searched.stderr
    # options written after `--` are the question's words: said so, not only "extra"
    after = cli("query", "--", "-k", "--format", "sources", db=False)
    assert after.exit_code == 2 and "options go before `--`" in after.stderr


def test_help_has_examples(cli: Cli) -> None:
    for argv in (["ingest", "files", "--help"], ["ingest", "text", "--help"],
                 ["query", "--help"]):
        result = cli(*argv, db=False)
        assert result.exit_code == 0 and "Example" in result.stdout
    assert cli("--version", db=False).stdout.startswith("kbctl ")
    for argv in (["-h"], ["query", "-h"], ["memory", "append", "-h"]):  # as -h is elsewhere
        result = cli(*argv, db=False)
        assert result.exit_code == 0 and result.stdout.startswith("Usage: kbctl")
    # the group's help leads to the options of a run, which it cannot list itself
    assert "kbctl eval run --help" in cli("eval", "--help", db=False).stdout


@pytest.mark.parametrize("argv", [
    "ingest", "ingest files", "ingest text", "ingest url", "ingest sitemap", "ingest crawl",
    "ingest llms", "query", "eval", "eval init", "resync", "status", "forget", "reembed",
    "memory",
    "memory append", "memory search", "memory get", "memory list", "memory delete",
    "memory import", "memory health", "memory stats", "serve", "serve mcp", "tools",
    "tools call",
])
def test_every_command_has_a_worked_example(argv: str) -> None:
    from typer.testing import CliRunner

    from kbctl.cli import app

    result = CliRunner().invoke(app, [*argv.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.stdout


def test_importing_the_cli_changes_nothing() -> None:
    """Commands are registered explicitly, and importing the CLI flips no global switch:
    worker processes are allowed by the commands that run extraction, when they run."""
    import subprocess
    import sys

    code = ("import kbctl.sources.extractpool as pool; "
            "from kbctl.cli.registry import COMMANDS; from kbctl.cli.root import load; "
            "names = load('ingest', COMMANDS['ingest']).list_commands(None); "
            "print(pool._processes_allowed, names)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "False ['files', 'text', 'url', 'sitemap', 'crawl', 'llms']"


def test_markdown_of_too_many_lines_is_plain_text_with_a_note(cli: Cli, workdir: Path) -> None:
    """5 MB of short lines would be millions of parsed blocks (2 GB); past the line budget
    a file is chunked as plain text, and the report says so."""
    from kbctl.chunk.headings import MAX_BLOCK_LINES

    docs = workdir / "big"
    docs.mkdir()
    lines = MAX_BLOCK_LINES // 2 + 10
    (docs / "log.md").write_text("# Log\n\n" + "".join(f"entry {i}\n\n" for i in range(lines)))
    (docs / "small.md").write_text("# Small\n\n## Part\n\nwords\n")
    report = cli.json("ingest", "files", str(docs))
    assert report["failed"] == 0 and report["added"] == 2
    assert report["notes"] == [f"kb://big/log.md: over {MAX_BLOCK_LINES:,} lines, chunked as "
                               "plain text (its sections get no anchors)"]
    anchors = rows(cli.db_url, "SELECT DISTINCT source_ref, meta->>'anchor' FROM chunks")
    assert ("kb://big/log.md", None) in anchors and ("kb://big/small.md", "part") in anchors


def test_a_first_ingest_that_finds_nothing_to_read_fails_and_is_not_recorded(
        cli: Cli, workdir: Path) -> None:
    """An empty folder, a glob that matches nothing, or an --exclude that leaves nothing
    passed (exit 0) and was recorded, so resync synced nothing every night."""
    (workdir / "empty").mkdir()
    (workdir / "docs").mkdir()
    (workdir / "docs" / "a.md").write_text("# A\n\nAlpha.\n")
    for args in (["empty"], ["docs/*.rst"], ["docs", "--exclude", "*.md"]):
        result = cli("ingest", "files", *args, "--json")
        assert result.exit_code == 1, (args, result.output)
        report = json.loads(result.stdout)
        assert report["failed"] == 1 and "found no file to read" in report["errors"][0]["error"]
    assert rows(cli.db_url, "SELECT count(*) FROM source_defs") == [(0,)]
    assert cli.json("ingest", "files", "docs")["added"] == 1  # the folder with a page
    (workdir / "docs" / "a.md").unlink()
    again = cli.json("ingest", "files", "docs", code=1)  # recorded: it stays, pages too
    assert again["failed"] == 1 and again["deleted"] == 0
    assert rows(cli.db_url, "SELECT count(*) FROM source_defs") == [(1,)]


def test_an_ingest_that_changes_a_recorded_sources_options_says_so(cli: Cli,
                                                                    docs: Path) -> None:
    """Run again without the --base-url it was first given, an ingest re-read every page
    under kb:// URLs and deleted the old ones without a word."""
    first = cli.json("ingest", "files", str(docs), "--base-url", "https://docs.example.com/")
    assert not any("options changed" in n for n in first["notes"])
    again = cli.json("ingest", "files", str(docs))
    [note] = [n for n in again["notes"] if "options changed" in n]
    assert note == (f"files {docs}: options changed since it was recorded: base_url "
                    "'https://docs.example.com/' → the default (pass them again to keep "
                    "them; resync uses these now)")
    same = cli.json("ingest", "files", str(docs))
    assert not any("options changed" in n for n in same["notes"])


def test_a_first_ingest_its_embedder_refused_leaves_nothing_behind(cli: Cli,
                                                                    docs: Path) -> None:
    """No key for the embedder asked for: exit 3, and then no definition left recorded as
    "did not finish", nor the embedder claimed: a plain ingest chose it again after."""
    failed = cli("ingest", "files", str(docs), "--embedder", "gemini", "--json")
    assert failed.exit_code == 3, failed.output
    assert json.loads(failed.stdout)["error"]["type"] == "AuthError"
    assert rows(cli.db_url, "SELECT count(*) FROM source_defs") == [(0,)]
    report = cli.json("ingest", "files", str(docs))  # no --embedder: the default again
    assert report["embedder"] == "none" and report["added"] > 0
    [(errors,)] = rows(cli.db_url, "SELECT last_errors FROM source_defs")
    assert not errors


def test_pages_chunked_by_another_chunker_version_are_read_again(cli: Cli,
                                                                 docs: Path) -> None:
    """Unchanged files are skipped by size and mtime, so a new chunker version (or
    budget) reached no page until its file changed."""
    cli.json("ingest", "files", str(docs))
    assert cli.json("ingest", "files", str(docs))["updated"] == 0
    with psycopg.connect(cli.db_url) as conn:
        conn.execute("""UPDATE sources SET meta = meta || '{"pipeline": "md1:512/64"}'""")
    again = cli.json("ingest", "files", str(docs))
    pages = rows(cli.db_url, "SELECT count(*) FROM sources")[0][0]
    assert again["updated"] == pages and again["added"] == 0
    assert rows(cli.db_url, "SELECT DISTINCT meta->>'pipeline' FROM sources") == [
        (f"md{CHUNKER_VERSION}:512/64",)]
    assert cli.json("ingest", "files", str(docs))["updated"] == 0


def test_an_ingest_says_when_its_embedder_does_not_answer(cli: Cli, docs: Path) -> None:
    """A stalled provider costs each batch minutes of retries; stderr is what a cron log
    keeps, and it said nothing until the run gave up."""
    failed = cli("ingest", "files", str(docs), "--embedder", "openai:m@8",
                 "--embedder-base-url", "http://127.0.0.1:1/v1", "--allow-private-network")
    # its one batch failed to embed: the environment's failure (3), as when a second
    # batch in a row fails and stops the run, not the docs' (1)
    assert failed.exit_code == 3
    tries = [line for line in failed.stderr.splitlines() if "no answer (ConnectError)" in line]
    assert len(tries) == 4 and tries[-1].endswith("(attempt 5 of 5)")


def test_front_matter_is_bounded_before_it_is_built_and_before_it_is_copied(
        cli: Cli, workdir: Path) -> None:
    """A 2 MB flow list took 22 s and 824 MB to be refused; a 4 MB description was copied
    into each of a page's chunks until its rows passed PostgreSQL's message limit and the
    whole run ended with a lost connection. Now the one page fails, named, and a long value
    under the block's limit stays out of the chunks' filter fields."""
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "bomb.md").write_text("---\nl: [" + "1," * 200_000 + "1]\n---\n# Bomb\n\ntext\n")
    long_value = "word " * 20_000  # 100,000 characters, twice: a block under the limit
    sections = "".join(f"## Part {i}\n\nThe widget part {i} turns.\n\n" for i in range(40))
    (docs / "long.md").write_text(f"---\ntitle: {long_value}\nlang: en\ndescription: "
                                  f"{long_value}\n---\n# Long page\n\n{sections}")
    (docs / "fine.md").write_text("# Fine\n\nThe widget spins.\n")
    out = cli.json("ingest", "files", str(docs), code=1)
    assert out["added"] == 2 and out["failed"] == 1
    assert "bomb.md" in out["errors"][0]["ref"]
    assert "front matter of 400,007 characters, more than 262,144" in out["errors"][0]["error"]
    assert "move content into the page" in out["errors"][0]["hint"]
    metas = rows(cli.db_url, "SELECT max(length(meta::text)), count(*), "
                             "bool_and(meta->>'lang' = 'en') FROM chunks "
                             "WHERE source_ref LIKE %s", "%long.md")
    assert metas[0][0] < 2000 and metas[0][1] >= 40 and metas[0][2] is True
    titles = rows(cli.db_url, "SELECT title FROM sources WHERE ref LIKE %s", "%long.md")
    assert titles == [("Long page",)]


def test_one_missing_folder_of_the_configs_sources_fails_alone(cli: Cli, workdir: Path) -> None:
    """It stopped the whole run (exit 2) and the good sources were not ingested; DESIGN:
    one source's failure never aborts the run. All of them missing still makes no KB."""
    (workdir / "good").mkdir()
    (workdir / "good" / "a.md").write_text("# Good\n\nThe widget spins.\n")
    (workdir / "kbctl.yaml").write_text("sources:\n  - kind: files\n    target: ./good\n"
                                        "  - kind: files\n    target: ./missing-folder\n")
    out = cli.json("ingest", code=1)
    assert (out["added"], out["failed"]) == (1, 1)
    assert "./missing-folder is not a file, a directory" in out["errors"][0]["error"]
    (workdir / "kbctl.yaml").write_text("sources:\n  - kind: files\n    target: ./gone-a\n"
                                        "  - kind: files\n    target: ./gone-b\n")
    assert cli("ingest", "-n", "other").exit_code == 2


def test_a_file_name_a_url_cannot_hold_is_cited_percent_encoded(cli: Cli, workdir: Path) -> None:
    """``Getting Started.md`` was cited with a raw space (and a name holding ESC with the
    byte itself): curl and browsers reject such a URL. Non-ASCII stays readable."""
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "Getting Started.md").write_text("# Getting started\n\nThe widget spins.\n")
    (docs / "déjà {vu}.md").write_text("# Déjà vu\n\nThe gadget hums.\n")
    cli.json("ingest", "files", str(docs), "--base-url", "https://docs.example.com/")
    urls = {url for (url,) in rows(cli.db_url, "SELECT url FROM sources")}
    assert urls == {"https://docs.example.com/Getting%20Started",
                    "https://docs.example.com/déjà%20%7Bvu%7D"}


def test_a_stray_nul_in_a_markdown_file_is_dropped_with_a_note(cli: Cli, workdir: Path) -> None:
    """The markdown reader turned it into U+FFFD, stored without a word; README: dropped
    with a note."""
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "a.md").write_bytes(b"# T\n\nNUL\x00 here and more words\n\n"
                                + b"filler words here. " * 20 + b"\n")
    out = cli.json("ingest", "files", str(docs))
    assert any("a.md: removed 1 NUL byte(s)" in note for note in out["notes"]), out["notes"]
    texts = [t for (t,) in rows(cli.db_url, "SELECT text FROM chunks")]
    assert any("NUL here and more words" in t for t in texts)
    assert not any("\ufffd" in t for t in texts)


def test_a_report_names_a_bounded_number_of_notes(cli: Cli, workdir: Path) -> None:
    """50,000 broken links made 50,000 notes on every nightly run's stderr and in its JSON."""
    from kbctl.pipeline.ingest import MAX_NOTES

    docs = workdir / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# Page\n\nThe widget spins.\n")
    for i in range(MAX_NOTES + 50):
        (docs / f"gone{i}.md").symlink_to(workdir / f"nowhere{i}.md")
    out = cli.json("ingest", "files", str(docs))
    assert out["added"] == 1
    assert len(out["notes"]) == MAX_NOTES + 1
    assert out["notes"][-1] == "… and 50 more notes"
