"""`kbctl resync` and `kbctl status` on files sources: cheap, exact, guarded, locked, and
safe against SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kbctl.pipeline.progress import ProgressEvent
from kbctl.store.db import connect
from kbctl.store.knowledge import KnowledgeStore

from .conftest import Cli, rows
from .test_store import _consistent


def _site(root: Path, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"page{i:03d}.md").write_text(
            f"# Page {i}\n\n## Details\n\nBody of page {i}. " + "filler words " * 60 + "\n")
    return root


def test_resync_unchanged_is_cheap(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 6)
    cli.json("ingest", "files", str(site))
    before = rows(cli.db_url, "SELECT id FROM chunks ORDER BY id")
    report = cli.json("resync")
    t = report["totals"]
    assert (t["added"], t["updated"], t["deleted"], t["failed"], t["chunksWritten"]) == (
        0, 0, 0, 0, 0)
    assert t["notModified"] == 6  # size and mtime matched: not even read
    assert rows(cli.db_url, "SELECT id FROM chunks ORDER BY id") == before
    started = datetime.fromisoformat(report["startedAt"])  # a cron log's reports are dated
    assert started.utcoffset() == timedelta(0)
    assert abs((datetime.now(timezone.utc) - started).total_seconds()) < 600


def test_resync_applies_exactly_the_differences(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 6)
    cli.json("ingest", "files", str(site))
    untouched = rows(cli.db_url, "SELECT id FROM chunks WHERE source_ref LIKE '%%page000%%'")
    (site / "page001.md").write_text("# Page 1\n\nrewritten\n")
    (site / "page002.md").unlink()
    (site / "page009.md").write_text("# Page 9\n\nnew\n")
    report = cli.json("resync")
    ns = report["namespaces"][0]
    assert [r.rsplit("/", 1)[-1] for r in ns["changes"]["updated"]] == ["page001.md"]
    assert [r.rsplit("/", 1)[-1] for r in ns["changes"]["added"]] == ["page009.md"]
    assert [r.rsplit("/", 1)[-1] for r in ns["changes"]["deleted"]] == ["page002.md"]
    assert rows(cli.db_url,
                "SELECT id FROM chunks WHERE source_ref LIKE '%%page000%%'") == untouched
    _consistent(cli.db_url)


def test_plan_writes_nothing(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 5)
    cli.json("ingest", "files", str(site))
    (site / "page001.md").write_text("# Page 1\n\nchanged\n")
    (site / "page002.md").unlink()
    snapshot = rows(cli.db_url, "SELECT ref, content_hash, fetched_at FROM sources ORDER BY 1")
    chunks = rows(cli.db_url, "SELECT id, text FROM chunks ORDER BY id")
    plan = cli.json("resync", "--plan")
    ns = plan["namespaces"][0]
    assert plan["plan"] is True and len(ns["changes"]["updated"]) == 1
    assert len(ns["changes"]["deleted"]) == 1
    assert rows(cli.db_url,
                "SELECT ref, content_hash, fetched_at FROM sources ORDER BY 1") == snapshot
    assert rows(cli.db_url, "SELECT id, text FROM chunks ORDER BY id") == chunks
    human = cli("resync", "--plan")
    assert "updated" in human.stdout and "deleted" in human.stdout
    other = _site(workdir / "other", 2)
    cli.json("ingest", "files", str(other), "-n", "other")
    (other / "page000.md").write_text("# Page 0\n\nchanged too\n")
    every = cli("resync", "--plan", "--all").stdout.splitlines()  # each line names its own
    assert [line.split()[:2] for line in every] == [
        ["updated", "default"], ["deleted", "default"], ["updated", "other"]]


def test_mass_delete_guard(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 10)
    cli.json("ingest", "files", str(site))
    for i in range(3):
        (site / f"page{i:03d}.md").unlink()
    tripped = cli.json("resync", code=1)
    ns = tripped["namespaces"][0]
    assert ns["guardTripped"] is True and ns["deleted"] == 0
    assert "guard" not in ns  # the typed verdict; the JSON says it as guardTripped and a note
    assert any("mass-delete guard" in n for n in ns["notes"])
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(10,)]
    # not a sync: status does not show the run as a good one
    [shown] = cli.json("status")["namespaces"]
    assert shown["lastRunFailures"] == 1 and shown["lastOkAt"] < shown["lastRunAt"]
    assert cli.json("resync", "--max-delete", "0.5")["totals"]["deleted"] == 3
    [shown] = cli.json("status")["namespaces"]
    assert shown["lastRunFailures"] == 0 and shown["lastOkAt"] == shown["lastRunAt"]
    _consistent(cli.db_url)


def test_force_passes_the_guard(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 4)
    cli.json("ingest", "files", str(site))
    for i in range(3):
        (site / f"page{i:03d}.md").unlink()
    assert cli.json("resync", "--force")["totals"]["deleted"] == 3


def test_failed_source_keeps_its_chunks(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 3)
    cli.json("ingest", "files", str(site))
    before = rows(cli.db_url, "SELECT text FROM chunks WHERE source_ref LIKE '%%page001%%'")
    (site / "page001.md").write_bytes(b"\xff\xfe broken \x00 bytes")
    report = cli.json("resync", code=1)
    assert report["totals"]["failed"] == 1 and report["totals"]["deleted"] == 0
    assert rows(cli.db_url,
                "SELECT text FROM chunks WHERE source_ref LIKE '%%page001%%'") == before
    status = cli.json("status")
    [ns] = status["namespaces"]
    assert ns["lastRunFailures"] == 1 and ns["sources"] == 3
    # the morning after: which page failed, and why, without running it again
    [definition] = status["sourceDefinitions"]
    [error] = definition["lastErrors"]
    assert "page001.md" in error["error"] and error["type"] == "ExtractError"
    shown = cli("status").stdout
    assert "last run: " in shown and "page001.md" in shown


def test_status_reports_each_namespace(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 2)
    cli.json("ingest", "files", str(site), "-n", "docs")
    cli.json("ingest", "text", "--ref", "x", "-n", "notes", input="# X\n\n" + "y " * 200)
    status = cli.json("status")
    options = {d["namespace"]: d["options"] for d in status["sourceDefinitions"]}
    assert options["notes"]["body"] == "<405 characters>"  # a text's body, not shown whole
    assert [n["namespace"] for n in cli.json("status", "-n", "docs")["namespaces"]] == ["docs"]
    typo = cli("status", "-n", "dosc")
    assert typo.exit_code == 2 and "'docs', 'notes'" in typo.stderr
    got = {n["namespace"]: (n["sources"], n["definitions"]) for n in status["namespaces"]}
    assert got == {"docs": (2, 1), "notes": (1, 1)}
    assert all(n["lastOkAt"] for n in status["namespaces"])
    assert status["embedder"] == "none"


def test_resync_all_covers_every_namespace(cli: Cli, workdir: Path) -> None:
    a, b = _site(workdir / "a", 2), _site(workdir / "b", 3)
    cli.json("ingest", "files", str(a), "-n", "one")
    cli.json("ingest", "files", str(b), "-n", "two")
    report = cli.json("resync", "--all")
    assert sorted(n["namespace"] for n in report["namespaces"]) == ["one", "two"]
    assert cli("resync", "--all", "-n", "one").exit_code == 2


@pytest.mark.timeout(300)
def test_second_run_on_a_locked_namespace(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 2)
    cli.json("ingest", "files", str(site))
    cli.json("ingest", "text", "Gears mesh.", "--ref", "gears", "-n", "elsewhere")
    holder = KnowledgeStore(connect(cli.db_url))
    try:
        with holder.locks.namespace("default"):
            busy = cli("resync", "--no-wait", "--json")
            assert busy.exit_code == 1
            assert "another kbctl run" in busy.stderr
            timed_out = cli("resync", "--lock-timeout", "0.5")
            assert timed_out.exit_code == 1 and "still locked" in timed_out.stderr
            # a run that waits says so first: silent for minutes, a cron job looks hung
            assert ("namespace 'default' is being written by another kbctl run; waiting "
                    "for it to finish (at most 0 s)") in timed_out.stderr
            assert cli.json("resync", "-n", "elsewhere")["ok"] is True  # other namespaces run
            waiter = ThreadPoolExecutor(1).submit(cli, "ingest", "files", str(site), "--json")
            waits = ("SELECT count(*) FROM pg_locks JOIN pg_database d ON d.oid = database "
                     "WHERE NOT granted AND locktype = 'advisory' "
                     "AND d.datname = current_database()")
            while not rows(cli.db_url, waits)[0][0]:  # until it waits on the lock
                assert not waiter.done(), waiter.result().stderr
                time.sleep(0.05)
            assert not waiter.done()
    finally:
        holder.conn.close()
    ingest = waiter.result(timeout=60)  # the lock is free: the waiting ingest runs
    assert ingest.exit_code == 0, ingest.stderr
    assert "is being written by another kbctl run; waiting" in ingest.stderr


@pytest.mark.empty_db
def test_nothing_recorded_to_resync_is_an_error_not_a_clean_sync(cli: Cli,
                                                                   workdir: Path) -> None:
    """A cron line pointed at the wrong namespace or data directory must not report a clean
    sync every night while the knowledge base it meant goes stale."""
    for args in (("resync",), ("resync", "--all")):
        empty = cli(*args, "--json")
        assert empty.exit_code == 2, empty.stderr
        error = json.loads(empty.stdout)["error"]
        # a database kbctl never wrote to is refused before anything is made in it
        assert error["message"].startswith("no knowledge base in ")
        assert "ingest first" in error["hint"]
        assert "new knowledge base" not in empty.stderr  # refused before anything is bound
    cli.json("ingest", "text", "Gears mesh.", "--ref", "gears")
    wrong = cli("resync", "-n", "docs")
    assert wrong.exit_code == 2
    assert "nothing to resync: namespace 'docs' in " in wrong.stderr
    assert "has no recorded sources" in wrong.stderr
    assert cli.json("resync")["totals"]["unchanged"] == 1
    assert cli.json("resync", "--all")["ok"] is True


def test_a_run_that_never_finished_shows_as_failed_in_status(cli: Cli, workdir: Path) -> None:
    site = _site(workdir / "site", 3)
    cli.json("ingest", "files", str(site))
    [definition] = cli.json("status")["sourceDefinitions"]
    # what a resync killed after it began leaves in the database
    store = KnowledgeStore(connect(cli.db_url))
    try:
        store.definitions.begin("default", definition["id"], {"ref": str(site), "error": "x",
                                                              "type": "Interrupted"})
    finally:
        store.conn.close()
    [shown] = cli.json("status")["namespaces"]
    assert shown["lastRunFailures"] == 1 and shown["lastOkAt"] < shown["lastRunAt"]
    cli.json("resync")  # the next run that ends says so
    [shown] = cli.json("status")["namespaces"]
    assert shown["lastRunFailures"] == 0 and shown["lastOkAt"] == shown["lastRunAt"]


def test_a_new_source_whose_first_run_never_finished_shows_as_failed(cli: Cli,
                                                                       workdir: Path) -> None:
    """A definition the run itself records was not there to stamp when the run began: a
    first ingest killed half-way showed as a healthy source in status."""
    from kbctl.pipeline.ingest import ingest
    from kbctl.sources.registry import source_spec

    class Killed(BaseException):
        pass

    def killed_after_a_page(event: ProgressEvent) -> None:
        if event.stage == "written":
            raise Killed

    site = _site(workdir / "site", 3)
    store = KnowledgeStore(connect(cli.db_url))
    try:
        with pytest.raises(Killed):
            ingest(store, [source_spec("files", str(site), {})], namespace="default",
                   embedder=None, progress=killed_after_a_page)
    finally:
        store.conn.close()
    status = cli.json("status")
    [shown] = status["namespaces"]
    assert shown["lastRunFailures"] == 1
    [definition] = status["sourceDefinitions"]
    assert [e["type"] for e in definition["lastErrors"]] == ["Interrupted"]
    cli.json("resync")  # the next run that ends says so
    assert cli.json("status")["namespaces"][0]["lastRunFailures"] == 0


@pytest.mark.parametrize("kill_after", [0.4, 0.8, 1.3, 2.0])
def test_sigkill_at_any_moment_leaves_a_consistent_kb(cli: Cli, workdir: Path,
                                                      kill_after: float) -> None:
    site = _site(workdir / "site", 150)
    cli.json("ingest", "files", str(site))
    for i in range(150):  # change every page so the resync rewrites all of them
        (site / f"page{i:03d}.md").write_text(f"# Page {i}\n\nversion two " * 30 + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBCTL_")}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kbctl.cli import main; main()", "resync", "--db",
         cli.db_url, "--json"], cwd=workdir, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _consistent(cli.db_url)
    # every source is at its old or its new version, never a mix
    for text, ref in rows(cli.db_url, "SELECT string_agg(text, ' '), source_ref FROM chunks "
                                      "GROUP BY source_ref"):
        assert ("version two" in text) != ("filler words" in text), ref
    # the next run converges and the one after that has nothing to do
    cli.json("resync")
    assert rows(cli.db_url, "SELECT count(*) FROM chunks WHERE text LIKE '%%filler%%'") == [(0,)]
    again = cli.json("resync")
    assert again["totals"]["chunksWritten"] == 0
    _consistent(cli.db_url)


def test_a_hugo_page_past_its_expiry_date_leaves_on_the_next_resync(
        cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The file does not change; the site stops publishing it once expiryDate passes.
    from kbctl.generators import hugo
    from kbctl.sources import files

    expires = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)

    class Clock(datetime):  # kbctl's clock, a day before the expiry date, then after it
        at = expires - timedelta(days=1)

        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return cls.at

    monkeypatch.setattr(hugo, "datetime", Clock)
    monkeypatch.setattr(files, "datetime", Clock)
    site = workdir / "hugo"
    (site / "content").mkdir(parents=True)
    (site / "hugo.toml").write_text("baseURL = 'https://docs.test/'\n")
    stamp = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    (site / "content" / "sale.md").write_text(
        f"---\ntitle: Sale\nexpiryDate: {stamp}\n---\n\n## Offer\n\nHalf price.\n")
    (site / "content" / "about.md").write_text("---\ntitle: About\n---\n\n## Us\n\nHi.\n")
    assert cli.json("ingest", "files", str(site), "--base-url", "https://docs.test/")[
        "added"] == 2
    assert cli.json("resync")["totals"]["notModified"] == 2  # not expired yet: not read
    Clock.at = expires + timedelta(seconds=1)
    report = cli.json("resync", "--force")  # one of two pages is past --max-delete
    assert report["totals"]["deleted"] == 1 and report["totals"]["notModified"] == 1
    assert rows(cli.db_url, "SELECT url FROM sources") == [("https://docs.test/about/",)]


def test_resync_all_gives_a_config_s_sources_to_its_namespace_alone(cli: Cli,
                                                                     workdir: Path) -> None:
    notes, web = _site(workdir / "notes", 2), _site(workdir / "web", 3)
    cli.json("ingest", "files", str(web), "-n", "web")
    (workdir / "kbctl.yaml").write_text(f"sources:\n  - kind: files\n    target: {notes}\n",
                                        encoding="utf-8")
    report = cli.json("resync", "--all")
    synced = {ns["namespace"]: ns for ns in report["namespaces"]}
    assert set(synced) == {"default", "web"}
    assert synced["default"]["added"] == 2  # the config's sources, in its namespace
    assert synced["web"]["added"] == 0 and synced["web"]["notModified"] == 3  # its own
    by_namespace = rows(cli.db_url, "SELECT namespace, count(*) FROM sources "
                                    "GROUP BY namespace ORDER BY namespace")
    assert by_namespace == [("default", 2), ("web", 3)]


def test_forget_stops_resyncing_a_source_and_takes_its_pages_out(cli: Cli,
                                                                 workdir: Path) -> None:
    old, new, kept = (_site(workdir / name, n) for name, n in (("old", 2), ("new", 3),
                                                                 ("kept", 1)))
    for folder in (old, new, kept):  # each its own text: copies would be stored once
        for page in folder.iterdir():
            page.write_text(f"# {folder.name} {page.stem}\n\nAbout {folder.name}.\n",
                            encoding="utf-8")
    for folder in (old, new, kept):
        cli.json("ingest", "files", str(folder), "--base-url", f"https://d.test/{folder.name}/")
    unknown = cli("forget", "nope")
    assert unknown.exit_code == 2 and str(old) in unknown.stderr  # names what is recorded
    other = cli("forget", str(old), "-n", "elsewhere")
    assert other.exit_code == 2 and "recorded in namespace 'default': pass -n" in other.stderr
    gone = cli.json("forget", f"{old}/")  # as a shell's completion writes a folder
    assert (gone["pagesDeleted"], len(gone["forgotten"])) == (2, 1)
    assert gone["chunksDeleted"] >= 2
    assert cli.json("forget", str(kept), "--keep-pages")["pagesDeleted"] == 0
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(4,)]  # new's 3, kept's 1
    assert rows(cli.db_url, "SELECT target FROM source_defs") == [(str(new),)]
    report = cli.json("resync")
    assert report["namespaces"][0]["notModified"] == 3
    _consistent(cli.db_url)


def test_resyncs_leave_no_pile_of_dead_rows(cli: Cli, workdir: Path) -> None:
    """Each resync that rewrites pages leaves their old rows dead; the embedded server
    never lived long enough for autovacuum, and the database grew with every night."""
    docs = workdir / "docs"
    docs.mkdir()
    for round_ in range(3):
        for i in range(30):
            (docs / f"p{i}.md").write_text(f"# Page {i}\n\n" + " ".join(
                f"word{round_}x{i}x{j}" for j in range(300)) + "\n")
        if round_ == 0:
            cli.json("ingest", "files", str(docs))
            for table in ("postings", "chunks"):  # as on a server that lives seconds
                _no_autovacuum(cli, table)
        else:
            cli.json("resync")
    with psycopg.connect(cli.db_url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        conn.execute("SELECT 1")
        dead, live = conn.execute("SELECT n_dead_tup, n_live_tup FROM pg_stat_user_tables "
                                  "WHERE relname = 'postings'").fetchone()
    assert live > 5000 and dead <= 0.2 * live, (dead, live)


def _no_autovacuum(cli: Cli, table: str) -> None:
    with psycopg.connect(cli.db_url, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")


def test_pages_of_a_folder_resync_cannot_read_through_are_kept(
        cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deploy user's permission slip (``chmod 000 team``): the folder's pages were
    deleted as gone, exit 0, with a note. A file whose folder cannot be searched (stat
    refused) was skipped, and counted for deletion too."""
    docs = _site(workdir / "docs", 12)
    team = docs / "team"
    team.mkdir()
    for i in range(3):
        (team / f"page{i:03d}.md").write_text(f"# Team page {i}\n\nWho owns part {i}.\n")
    cli.json("ingest", "files", str(docs))
    real_scandir, real_stat = os.scandir, os.stat

    def scandir(path: Any = ".") -> Any:
        if Path(path) == team:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(path) == docs / "page000.md":
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    (docs / "page011.md").unlink()  # gone for real: kept this run all the same
    report = cli.json("resync")["namespaces"][0]
    assert report["deleted"] == 0, report
    assert any("cannot list: Permission denied" in n for n in report["notes"])
    assert any("no page of this source is deleted as gone this run" in n
               for n in report["notes"])
    refs = {r for (r,) in rows(cli.db_url, "SELECT ref FROM sources")}
    assert {r.rsplit("/", 2)[-2] + "/" + r.rsplit("/", 1)[-1] for r in refs
            if "/team/" in r} == {"team/page000.md", "team/page001.md", "team/page002.md"}
    assert any(r.endswith("docs/page000.md") for r in refs)
    monkeypatch.undo()
    after = cli.json("resync")["namespaces"][0]  # readable again: the real orphan goes
    assert after["deleted"] == 1


def test_a_folder_deeper_than_the_walk_goes_is_skipped_not_the_source(workdir: Path) -> None:
    """A generated tree a thousand levels deep ended the walk with a RecursionError and
    failed the whole source."""
    from kbctl.sources.files import MAX_FOLDER_DEPTH, FilesSource
    from kbctl.sources.registry import source_spec

    docs = _site(workdir / "docs", 2)
    deep = docs / "build"
    for _ in range(MAX_FOLDER_DEPTH + 5):
        deep = deep / "x"
    deep.mkdir(parents=True)
    (deep / "bottom.md").write_text("# Bottom\n")
    expansion = FilesSource().expand(source_spec("files", str(docs), {}))
    assert len(expansion.leaves) == 2 and not expansion.complete
    assert any(f"deeper than {MAX_FOLDER_DEPTH} levels" in n for n in expansion.notes)


def test_full_reads_a_file_whose_size_and_mtime_were_kept(cli: Cli, workdir: Path) -> None:
    """``rsync -a``, ``tar -x`` and ``cp -p`` keep a file's mtime: new text of the same
    size was never read again, and ``--full`` did not read it either."""
    site = _site(workdir / "site", 2)
    page = site / "page000.md"
    cli.json("ingest", "files", str(site))
    stamp = page.stat()
    page.write_text(page.read_text().replace("Body of page 0.", "Text of page 0."))
    os.utime(page, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert page.stat().st_size == stamp.st_size
    assert cli.json("resync")["totals"]["notModified"] == 2
    full = cli.json("resync", "--full")["totals"]
    assert (full["updated"], full["notModified"]) == (1, 0)
    assert rows(cli.db_url, "SELECT count(*) FROM chunks WHERE text LIKE %s",
                "%Text of page 0.%") == [(1,)]


def test_the_guard_s_note_outlives_the_bound_on_notes() -> None:
    from kbctl.pipeline.ingest import MAX_NOTES, MassDeleteStop, _bounded_notes

    guard = MassDeleteStop(9, 10, 0.5, "mass-delete guard: this run would delete 9 of 10")
    notes = [f"note {i}" for i in range(MAX_NOTES + 5)] + [guard.message]
    kept = _bounded_notes(notes, guard)
    assert kept[MAX_NOTES] == guard.message and kept[-1] == "… and 5 more notes"
    assert _bounded_notes(notes[:3], guard) == notes[:3]
