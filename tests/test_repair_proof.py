"""Repairs touch only what kbctl made: a half-made database is removed only when kbctl's
mark (written before its ``initdb``) names that very directory, or when it carries the
skeleton only ``initdb`` makes (a data directory from before the mark). A folder a person
keeps at the same path is reported and left as it is, by ``doctor`` and by every command.
Real CLI, real server starts."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbctl.embedded import initmark

from .test_chaos_server import Box, fresh_root, wait_until


@pytest.fixture
def box() -> Iterator[Box]:
    b = Box(fresh_root())
    try:
        yield b
    finally:
        b.cleanup()


def users_folder(pgdata: Path) -> None:
    (pgdata / "log").mkdir(parents=True)
    (pgdata / "log" / "keep.txt").write_text("mine")
    (pgdata / "postgresql.conf").write_text("# my settings\n")


def untouched(pgdata: Path) -> bool:
    return ((pgdata / "log" / "keep.txt").read_text() == "mine"
            and (pgdata / "postgresql.conf").read_text() == "# my settings\n")


def test_doctor_reports_a_users_folder_and_leaves_it(box: Box) -> None:
    users_folder(box.pgdata)
    check = box.run("doctor", "--json")
    assert check.returncode == 1, check.stderr
    report = json.loads(check.stdout)
    assert not report["ok"] and report["repaired"] == []
    assert any("files kbctl did not make; left as it is" in p for p in report["remaining"])
    assert untouched(box.pgdata)
    # nor does any command that starts the server remove it
    for args in (("status",), ("ingest", "text", "The widget spins.", "--ref", "w")):
        run = box.run(*args, "--json")
        assert run.returncode in (2, 3), run.stderr
        assert "Traceback" not in run.stderr and "removed" not in run.stderr
        assert untouched(box.pgdata)


def test_a_marked_interrupted_initdb_is_started_over(box: Box) -> None:
    box.data_dir.mkdir()
    initmark.mark_before_initdb(box.pgdata)
    for name in ("global", "pg_xact"):  # killed before it wrote PG_VERSION
        (box.pgdata / name).mkdir()
    (box.pgdata / "postgresql.conf").write_text("")
    assert initmark.made_by_kbctl(box.pgdata)
    ingest = box.run("ingest", "text", "The widget spins.", "--ref", "w", "--json")
    assert ingest.returncode == 0, ingest.stderr
    assert "removed the data directory an interrupted initdb left" in ingest.stderr
    assert (box.pgdata / "global" / "pg_control").exists()


def test_the_same_skeleton_without_the_mark_is_left(box: Box) -> None:
    """No mark, no PG_VERSION: nothing proves kbctl made it."""
    box.pgdata.mkdir(parents=True)
    for name in ("global", "pg_xact"):
        (box.pgdata / name).mkdir()
    (box.pgdata / "postgresql.conf").write_text("")
    doctor = box.run("doctor", "--json")
    assert doctor.returncode == 1
    assert (box.pgdata / "global").is_dir()
    assert json.loads(doctor.stdout)["repaired"] == []


def test_a_mark_of_another_folder_proves_nothing(box: Box) -> None:
    """The mark names the folder kbctl made; a folder put in its place later is not it."""
    box.data_dir.mkdir()
    initmark.mark_before_initdb(box.pgdata)
    mine = box.data_dir / "mine"
    users_folder(mine)  # the same names as initdb's, and a folder of one's own
    shutil.rmtree(box.pgdata)
    mine.rename(box.pgdata)
    assert not initmark.made_by_kbctl(box.pgdata)
    assert box.run("doctor").returncode == 1
    assert untouched(box.pgdata)


def test_a_working_database_made_before_the_mark_keeps_working(box: Box) -> None:
    first = box.run("ingest", "text", "The widget spins.", "--ref", "w", "--json",
                    linger=0)
    assert first.returncode == 0, first.stderr
    wait_until(lambda: not box.server_processes(), 60, "the server stops")
    (box.data_dir / initmark.MARK_FILE).unlink()
    query = box.run("query", "widget", "--json")
    assert query.returncode == 0, query.stderr
    assert json.loads(query.stdout)["results"]
    assert json.loads(box.run("doctor", "--json").stdout)["ok"]
