"""Every path a user can type is input: a data directory in a loop of symbolic links, one
with a 5,000-character name, one whose ``pg`` is a file, and the same shapes for the
other path options (suite, baseline, JUnit report, config, files source) end every command
with exit 2 and one line naming the path, one JSON document under ``--json``, never a
traceback. Run through the real CLI, with no database needed to refuse them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from .conftest import Cli

LONG = "x" * 5000

COMMANDS = [
    ("status",),
    ("query", "widget"),
    ("ingest", "text", "The widget spins.", "--ref", "w"),
    ("doctor",),
    ("resync",),
    ("memory", "search", "widget", "--agent", "a"),
]


def run(*args: str) -> tuple[int, str, str]:
    from kbctl.cli import app

    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("KBCTL_")]:
        monkeypatch.delenv(name)
    (tmp_path / "loop-a").symlink_to("loop-b")
    (tmp_path / "loop-b").symlink_to("loop-a")
    (tmp_path / "with-file").mkdir()
    (tmp_path / "with-file" / "pg").write_text("not a database")
    return tmp_path


def refused(args: tuple[str, ...], *, shown: str) -> str:
    code, out, err = run(*args, "--json")
    assert code == 2, (args, out, err)
    assert "Traceback" not in err
    error = json.loads(out)["error"]
    assert error["type"] == "InputError" and shown in error["message"], error
    assert "\n" not in error["message"]
    code, out, err = run(*args)
    assert code == 2 and out == "" and "Traceback" not in err
    assert shown in err.splitlines()[0]
    return error["message"]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_a_data_directory_in_a_loop_of_links(here: Path, command: tuple[str, ...]) -> None:
    message = refused((*command, "--data-dir", "loop-a/kb"), shown="loop-a/kb")
    assert "loop of symbolic links" in message


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_a_data_directory_with_too_long_a_name(here: Path, command: tuple[str, ...]) -> None:
    message = refused((*command, "--data-dir", LONG), shown="xxxx")
    assert "too long" in message and "(5,000 characters)" in message
    assert len(message) < 400


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_a_data_directory_whose_pg_is_a_file(here: Path, command: tuple[str, ...]) -> None:
    message = refused((*command, "--data-dir", "with-file"), shown=str(here / "with-file" / "pg"))
    assert "is a file, not a directory" in message
    assert (here / "with-file" / "pg").read_text() == "not a database"


def test_a_data_directory_that_is_a_file(here: Path) -> None:
    (here / "plain").write_text("x")
    refused(("status", "--data-dir", "plain"), shown="plain")


def test_a_data_directory_from_the_environment(here: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBCTL_DATA_DIR", "loop-a/kb")
    refused(("status",), shown="loop-a/kb")


@pytest.mark.parametrize("path", ["loop-a/x.yaml", LONG, "with-file/pg/x.yaml"])
@pytest.mark.parametrize("option", ["suite", "--baseline", "--config"])
def test_other_path_options(here: Path, option: str, path: str) -> None:
    suite = here / "suite.yaml"
    suite.write_text("version: 1\ncases:\n  - id: a\n    question: widget\n"
                     "    expect: {sourceIncludes: w}\n")
    args: tuple[str, ...] = (
        ("eval", path) if option == "suite" else
        ("status", "--config", path) if option == "--config" else
        ("eval", str(suite), option, path))
    code, out, err = run(*args, "--data-dir", "loop-a/kb", "--json")
    assert code == 2, (out, err)
    assert "Traceback" not in err
    assert path[:40] in json.loads(out)["error"]["message"]


@pytest.mark.parametrize("path", ["loop-a", LONG, "with-file/pg/docs"])
def test_a_files_source_path(here: Path, path: str) -> None:
    code, out, err = run("ingest", "files", path, "--data-dir", "kb", "--json")
    assert code == 2, (out, err)
    assert "Traceback" not in err
    assert path[:40] in json.loads(out)["error"]["message"]
    assert not (here / "kb" / "pg").exists()  # refused before any server was made


@pytest.mark.parametrize("path", ["loop-a/r.xml", LONG, "with-file/pg/r.xml", "with-file"])
def test_a_report_path(here: Path, cli: Cli, path: str) -> None:
    assert cli("ingest", "text", "The widget spins.", "--ref", "w").exit_code == 0
    suite = here / "suite.yaml"
    suite.write_text("version: 1\ncases:\n  - id: a\n    question: widget\n"
                     "    expect: {sourceIncludes: w}\n")
    result = cli("eval", str(suite), "--junit", path, "--json")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.stderr
    assert path[:40] in json.loads(result.stdout)["error"]["message"]
