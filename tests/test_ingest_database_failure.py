"""A database failure in the middle of an ingest (a full disk, a data directory deleted
under the server) ends the run with exit 3 and the disk hint: it was taken for the failure
of the source being read (exit 1, "cannot read it"), so cron's alert on 3 stayed quiet and
the operator was sent to look at the website."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from kbctl.store.documents import Documents

from .conftest import Cli, rows


def test_a_full_disk_mid_ingest_is_exit_3_not_a_failed_source(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(300):  # batches are written while later pages are still read
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\nText {i}.\n")
    real = Documents.replace_many
    calls = []

    def full(self: Documents, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # a query's temporary file did not fit; the next ones do
            raise psycopg.errors.DiskFull('could not write to file "base/pgsql_tmp/t.1": '
                                          "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Documents, "replace_many", full)
    result = cli("ingest", "files", str(docs), "--json")
    assert result.exit_code == 3, result.output
    assert "No space left on device" in result.output and "cannot read" not in result.output
    monkeypatch.setattr(Documents, "replace_many", real)
    report = cli.json("ingest", "files", str(docs))  # space freed: the next run does it all
    assert report["failed"] == 0
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(300,)]
