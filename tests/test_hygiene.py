"""Text hygiene: NULs and lone surrogates are input errors in arguments, files and --args,
removed with a note from document content; control characters are escaped for humans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbctl.cli import app
from kbctl.errors import InputError
from kbctl.hygiene import describe_bad_char, drop_bad_chars, escape_control, require_clean
from kbctl.sources.files import MAX_FILE_BYTES

from .conftest import Cli, rows


def test_bad_characters_are_named() -> None:
    assert describe_bad_char("fine ✓ 😀") is None
    assert describe_bad_char("a\x00b") == "a NUL byte"
    assert describe_bad_char("a\udcffb") == "a lone surrogate (U+DCFF)"
    assert drop_bad_chars("a\x00b\ud800c") == ("abc", 2)


def test_require_clean_looks_inside_lists_and_mappings() -> None:
    require_clean("--args", {"query": "ok", "tags": ["a", "b"], "n": 3})
    with pytest.raises(InputError, match=r"^--args: a NUL byte is not allowed in 'x\\\\x00y'"):
        require_clean("--args", {"filter": {"k": ["x\x00y"]}})
    with pytest.raises(InputError, match="lone surrogate"):
        require_clean("--args", {"k\ud800": 1})


def test_control_characters_are_escaped_for_humans() -> None:
    forged = "a.md\n[1] https://evil.test \x1b[31mred\x1b[0m\r\u202eexe.md"
    shown = escape_control(forged)
    assert "\n" not in shown and "\x1b" not in shown and "\r" not in shown
    assert shown == ("a.md\\x0a[1] https://evil.test \\x1b[31mred\\x1b[0m\\x0d\\u202eexe.md")
    assert escape_control("line one\n\tline two\x07", keep_newlines=True) == (
        "line one\n\tline two\\x07")
    assert escape_control("plain café ✓") == "plain café ✓"


@pytest.mark.parametrize(("argv", "named"), [
    (["query", "a\x00b"], "QUESTION"),
    (["query", "install", "--namespace", "docs\udcff"], "--namespace"),
    (["ingest", "text", "body", "--ref", "r\x00"], "--ref"),
    (["ingest", "text", "body", "--ref", "r", "--title", "t\ud800"], "--title"),
    (["ingest", "files", "docs\x00"], "TARGET"),
])
def test_bad_characters_in_arguments_are_input_errors(workdir: Path, argv: list[str],
                                                      named: str) -> None:
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert f"{named}: a " in result.stderr
    assert "Traceback" not in result.output


def test_bad_characters_in_tool_arguments_are_input_errors(workdir: Path) -> None:
    for raw in ('{"query": "a\\u0000b"}', '{"query": "\\udcff"}'):
        result = CliRunner().invoke(app, ["tools", "call", "search_knowledge", "--args", raw],
                                    catch_exceptions=False)
        assert result.exit_code == 2, result.output
        payload = json.loads(result.stdout)
        assert payload["isError"] and "--args: a " in payload["error"]["message"]


@pytest.mark.parametrize(("name", "text", "line"), [
    ("kbctl.yaml", 'namespace: "docs\\0"\n', 1),
    ("kbctl.json", '{\n  "namespace": "docs\\ud800"\n}\n', 2),
])
def test_bad_characters_in_config_are_input_errors(workdir: Path, name: str, text: str,
                                                   line: int) -> None:
    (workdir / name).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["query", "install", "--config", name],
                                catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert f"{name}:{line}:" in result.stderr


def test_bad_characters_in_a_suite_are_input_errors(workdir: Path) -> None:
    (workdir / "suite.yaml").write_text(
        'version: 1\ncases:\n  - id: a\n    question: "how\\0 to"\n    expect:\n'
        '      - url: https://x.test/\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "run", "suite.yaml"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "suite.yaml:4:" in result.stderr and "a NUL byte" in result.stderr


def test_stdin_over_the_cap_is_refused(workdir: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", "text", "--ref", "big"],
                                input=b"x" * (MAX_FILE_BYTES + 1), catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert f"over the {MAX_FILE_BYTES} byte limit" in result.stderr


def test_nul_in_document_content_is_removed_with_a_note(cli: Cli) -> None:
    report = cli.json("ingest", "text", "--ref", "notes", "--title", "Notes",
                      input="# Notes\n\nwid\x00gets work.\n")
    assert report["ok"] and report["added"] == 1
    assert report["notes"] == [
        "kb://text/notes: removed 1 NUL byte(s) or lone surrogate(s), which cannot be stored"]
    [(text,)] = rows(cli.db_url, "SELECT string_agg(text, ' ') FROM chunks")
    assert "widgets work" in text


def test_titles_and_refs_cannot_forge_lines_or_colours(cli: Cli) -> None:
    cli.json("ingest", "text", "Widgets are configured with a file.", "--ref", "evil\nref",
             "--title", "Widgets\x1b[31m red\r\n[9] https://forged.test")
    result = cli("query", "widgets configured", "--format", "sources")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines == ["[1] kb://text/evil\\x0aref  Widgets\\x1b[31m red\\x0d\\x0a[9] "
                     "https://forged.test"]
    table = cli("query", "widgets configured")
    assert "\x1b" not in table.stdout and "Widgets\\x1b[31m red\\x0d\\x0a" in table.stdout
    assert "kb://text/evil\\x0aref" in table.stdout


def test_failed_file_names_are_escaped_in_the_report(cli: Cli, workdir: Path) -> None:
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("# Fine\n\nwords\n", encoding="utf-8")
    (docs / "evil\x1b[2J.md").write_bytes(b"# caf\xe9\n")
    result = cli("ingest", "files", str(docs))
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr and "evil\\x1b[2J.md" in result.stderr


def test_memory_import_reports_a_file_holding_nul_and_goes_on(cli: Cli, workdir: Path) -> None:
    src = workdir / "mem"
    src.mkdir()
    (src / "good.md").write_text("# Memory\n\nThe deploy window is Tuesday.\n")
    (src / "bad.md").write_text("# Bad\n\nzero\x00byte\n")
    report = cli.json("memory", "import", str(src), "--agent", "bot", code=1)
    assert (report["created"], report["failed"]) == (1, 1)
    assert report["errors"] == [{"file": "bad.md",
                                 "error": "holds a NUL byte, which cannot be stored"}]


def test_memory_append_refuses_nul_from_stdin(cli: Cli) -> None:
    result = cli("memory", "append", "memory/agent/notes.md", "--agent", "bot",
                 input="one\x00two\n")
    assert result.exit_code == 2 and "the text: a NUL byte" in result.stderr


def test_bad_characters_in_the_environment_are_input_errors(
        workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBCTL_NAMESPACE", "docs\udcff")
    result = CliRunner().invoke(app, ["query", "install"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "KBCTL_NAMESPACE: a lone surrogate" in result.stderr
