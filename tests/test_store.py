"""KnowledgeStore against a real PostgreSQL + pgvector."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kbctl.embed.base import NO_EMBEDDER, EmbedderIdentity
from kbctl.errors import ConfigError, DatabaseError, EmbedderMismatch, InputError, LockBusy
from kbctl.store import documents, migrations
from kbctl.store.db import connect
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.migrations import MIGRATIONS
from kbctl.store.records import ChunkRecord, SourceRecord

from .conftest import rows


def _source(ref: str, ns: str = "ns", hash_: str = "h") -> SourceRecord:
    return SourceRecord(namespace=ns, ref=ref, kind="text", url=ref, title=ref.title(),
                        content_hash=hash_)


def _chunks(*texts: str, anchor: str | None = None) -> list[ChunkRecord]:
    return [ChunkRecord(ordinal=i, text=t, meta={"anchor": anchor, "url": "u"})
            for i, t in enumerate(texts)]


def _consistent(url: str) -> None:
    """Source rows, chunks, postings and namespace stats agree with each other."""
    assert rows(url, """SELECT s.ref FROM sources s
                        WHERE s.chunk_count <> (SELECT count(*) FROM chunks c
                              WHERE c.namespace = s.namespace AND c.source_ref = s.ref)""") == []
    assert rows(url, """SELECT n.namespace FROM namespace_stats n
                        WHERE n.chunk_count <> (SELECT count(*) FROM chunks c
                                                WHERE c.namespace = n.namespace)
                           OR n.total_len <> (SELECT coalesce(sum(lexeme_count), 0)
                                              FROM chunks c WHERE c.namespace = n.namespace)
                     """) == []
    assert rows(url, """SELECT p.chunk_id FROM postings p LEFT JOIN chunks c
                        ON c.id = p.chunk_id WHERE c.id IS NULL""") == []
    assert rows(url, """SELECT coalesce(p.namespace, s.namespace), coalesce(p.lexeme, s.lexeme)
                        FROM (SELECT namespace, lexeme, count(*) AS df FROM postings
                              GROUP BY 1, 2) p
                        FULL JOIN (SELECT * FROM lexeme_stats WHERE df > 0) s
                          ON s.namespace = p.namespace AND s.lexeme = p.lexeme
                        WHERE p.df IS DISTINCT FROM s.df""") == []


@pytest.mark.empty_db
def test_migrations_are_recorded_and_idempotent(db_url: str) -> None:
    connect(db_url).close()
    connect(db_url).close()
    versions = rows(db_url, "SELECT version FROM kbctl_migrations ORDER BY version")
    assert [v for (v,) in versions] == [m[0] for m in MIGRATIONS]
    assert rows(db_url, "SELECT extname FROM pg_extension WHERE extname = 'vector'")


def test_concurrent_first_connections_migrate_once(db_url: str) -> None:
    errors: list[BaseException] = []

    def open_once() -> None:
        try:
            connect(db_url).close()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_once) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(rows(db_url, "SELECT version FROM kbctl_migrations")) == len(MIGRATIONS)


def test_unreachable_database_is_an_environment_error() -> None:
    with pytest.raises(DatabaseError) as info:
        connect("postgresql://nobody:secret@127.0.0.1:1/none")
    assert info.value.exit_code == 3
    assert "secret" not in info.value.message
    assert "127.0.0.1:1" in info.value.message


def test_embedder_identity_is_recorded_and_mismatch_refused(store: KnowledgeStore) -> None:
    assert store.embedder.identity() is None
    gem = EmbedderIdentity("gemini", "gemini-embedding-2", 1536)
    store.embedder.bind(gem)
    assert store.embedder.identity() == gem
    store.embedder.bind(gem)  # the same again is fine
    # a KB that holds nothing yet (its first write failed) takes another embedder
    assert store.embedder.bind(NO_EMBEDDER) == NO_EMBEDDER == store.embedder.identity()
    assert store.embedder.bind(gem) == gem
    store.documents.replace(_source("a"), _chunks("alpha one"))
    with pytest.raises(EmbedderMismatch) as info:
        store.embedder.bind(NO_EMBEDDER)
    assert "gemini/gemini-embedding-2@1536" in info.value.message
    assert info.value.exit_code == 2


def test_replace_source_drops_the_tail_and_keeps_stats(store: KnowledgeStore,
                                                       db_url: str) -> None:
    store.documents.replace(_source("a"), _chunks("alpha one", "alpha two", "alpha three"))
    store.documents.replace(_source("a", hash_="h2"), _chunks("alpha uno"))
    texts = rows(db_url, "SELECT text FROM chunks WHERE source_ref = 'a' ORDER BY ordinal")
    assert texts == [("alpha uno",)]
    assert store.documents.get("ns", "a").chunk_count == 1
    _consistent(db_url)


def test_failed_replace_leaves_the_old_version(store: KnowledgeStore, db_url: str) -> None:
    store.documents.replace(_source("a"), _chunks("original text"))
    bad = [ChunkRecord(0, "new", {}), ChunkRecord(0, "duplicate ordinal", {})]
    with pytest.raises(psycopg.errors.UniqueViolation):
        store.documents.replace(_source("a", hash_="new"), bad)
    assert rows(db_url, "SELECT text FROM chunks") == [("original text",)]
    assert store.documents.get("ns", "a").content_hash == "h"
    _consistent(db_url)


def test_delete_source_removes_chunks_and_postings(store: KnowledgeStore, db_url: str) -> None:
    store.documents.replace(_source("a"), _chunks("cargo builds crates"))
    store.documents.replace(_source("b"), _chunks("rustup installs toolchains"))
    assert store.documents.delete("ns", "a") == 1
    assert rows(db_url, "SELECT DISTINCT source_ref FROM chunks") == [("b",)]
    assert rows(db_url, "SELECT count(*) FROM postings WHERE lexeme = 'cargo'") == [(0,)]
    _consistent(db_url)


def test_namespaces_fence_reads(store: KnowledgeStore) -> None:
    store.documents.replace(_source("a", ns="one"), _chunks("ownership and borrowing"))
    store.documents.replace(_source("b", ns="two"), _chunks("ownership rules explained"))
    hits = store.search.rank("one", "ownership", k=10)
    assert [h.source_ref for h in hits] == ["a"]
    assert {h.namespace for h in hits} == {"one"}
    assert store.search.rank("three", "ownership", k=10) == []


def test_bm25_weighs_rare_terms_over_common_ones(store: KnowledgeStore) -> None:
    # "rust" is everywhere; "lifetimes" is rare. A chunk mentioning "rust" many times must
    # not beat the one chunk about lifetimes (plain ts_rank has no IDF and would tie-break
    # on frequency alone).
    docs = {f"d{i}": f"rust program number {i} uses rust and rust tools" for i in range(20)}
    docs["life"] = "lifetimes annotate references in rust"
    for ref, text in docs.items():
        store.documents.replace(_source(ref), _chunks(text))
    hits = store.search.rank("ns", "rust lifetimes", k=3)
    assert hits[0].source_ref == "life"
    assert all(0.0 < h.score < 1.0 for h in hits)
    assert hits == sorted(hits, key=lambda h: -h.score)


def test_stemming_and_stop_words(store: KnowledgeStore) -> None:
    store.documents.replace(_source("inst"), _chunks("Installing packages with the installer"))
    store.documents.replace(_source("other"), _chunks("Configuring the proxy"))
    hits = store.search.rank("ns", "how do I install", k=5)
    assert [h.source_ref for h in hits] == ["inst"]
    assert store.search.rank("ns", "the and of", k=5) == []


def test_filters_match_metadata_and_never_under_fill(store: KnowledgeStore) -> None:
    for i in range(30):
        lang = "en" if i % 10 == 0 else "de"
        store.documents.replace(_source(f"p{i}"), [ChunkRecord(
            0, f"configuration guide page {i} configuration", {"lang": lang})])
    hits = store.search.rank("ns", "configuration", k=5, filters={"lang": "en"})
    assert len(hits) == 3
    assert {h.meta["lang"] for h in hits} == {"en"}


def test_pruned_candidates_agree_with_exact_ranking(store: KnowledgeStore, monkeypatch) -> None:
    from kbctl.store import lexical

    for i in range(60):
        words = " ".join(["error"] * (1 + i % 7) + ["handling"] * (i % 3) + [f"w{i}"])
        store.documents.replace(_source(f"e{i}"), _chunks(words))
    exact = [h.source_ref for h in store.search.rank("ns", "error handling", k=10)]
    monkeypatch.setattr(lexical, "LEXEME_CANDIDATES", 25)
    pruned = [h.source_ref for h in store.search.rank("ns", "error handling", k=10)]
    assert len(set(exact[:5]) & set(pruned[:5])) >= 4


def test_hybrid_scores_fuse_cosine_and_text(store: KnowledgeStore) -> None:
    from .embedders import HashingEmbedder

    emb = HashingEmbedder(dimensions=32)
    store.embedder.bind(emb.identity)
    texts = {"a": "borrow checker rules", "b": "cargo workspaces", "c": "borrow the book"}
    for ref, text in texts.items():
        [vec] = emb.embed([text])
        store.documents.replace(_source(ref), [ChunkRecord(0, text, {}, vec)])
    qv = emb.embed_query("borrow checker")
    hits = store.search.rank("ns", "borrow checker", k=3, query_vector=qv, vector_weight=0.7)
    assert hits[0].source_ref == "a"
    for h in hits:
        assert 0.0 <= h.score <= 1.0
        assert h.vector_score is not None
        assert h.score == pytest.approx(0.7 * h.vector_score + 0.3 * h.text_score, abs=1e-6)
    rrf = store.search.rank("ns", "borrow checker", k=3, query_vector=qv, fusion="rrf")
    # first on both lists: the whole match strength, as the weighted fusion's top result
    assert (hits[0].vector_score, hits[0].text_score) == (
        pytest.approx(hits[0].score), pytest.approx(hits[0].score))
    assert rrf[0].source_ref == "a" and rrf[0].score == pytest.approx(hits[0].score)
    assert rrf[0].score < 0.9


def test_namespace_lock_excludes_a_second_writer(db_url: str) -> None:
    a, b = KnowledgeStore(connect(db_url)), KnowledgeStore(connect(db_url))
    try:
        with a.locks.namespace("docs"):
            with pytest.raises(LockBusy), b.locks.namespace("docs", wait=False):
                pass
            with b.locks.namespace("other", wait=False):
                pass
        with b.locks.namespace("docs", wait=False):
            pass
    finally:
        a.conn.close()
        b.conn.close()


@pytest.mark.timeout(120)
def test_a_write_resolves_its_embedder_after_a_reembed_is_done(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ingest that waited out a reembed wrote with the embedder it had resolved before
    the wait: chunks without vectors, or another model's, under the new identity."""
    import time

    from kbctl.config import Settings
    from kbctl.pipeline import api
    from kbctl.sources.registry import source_spec

    reembed = KnowledgeStore(connect(db_url))
    happened: list[str] = []
    real = api.resolve_embedder

    def resolve(*args: Any, **kwargs: Any) -> Any:
        happened.append("resolved")
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "resolve_embedder", resolve)
    said: list[str] = []
    settings = Settings(db_url=db_url, namespace="docs")
    spec = source_spec("text", "note", {"body": "a note on lifetimes", "title": "Note"})
    try:
        with reembed.locks.embedder(exclusive=True):
            writer = threading.Thread(target=api.ingest_sources, args=(settings, [spec]),
                                      kwargs={"announce": said.append})
            writer.start()
            while not any("reembed" in m for m in said):  # it waits on the lock: the
                time.sleep(0.05)  # test's timeout ends a write that never says so
            assert not happened
            happened.append("released")
        writer.join(timeout=60)
        assert happened == ["released", "resolved"]
        with reembed.locks.embedder(exclusive=True):  # a shared holder never blocks alone
            pass
    finally:
        reembed.conn.close()


def test_filtered_candidates_are_capped_after_the_filter(store: KnowledgeStore,
                                                         monkeypatch) -> None:
    from kbctl.store import lexical

    # the five best postings for "widget" all belong to lang=de chunks; the English ones
    # rank lower, yet a filtered query must still find them with a cap of five
    for i in range(5):
        store.documents.replace(_source(f"de{i}"), [ChunkRecord(
            0, "widget " * 8, {"lang": "de"})])
    for i in range(4):
        store.documents.replace(_source(f"en{i}"), [ChunkRecord(
            0, "widget " + "padding words here " * 20, {"lang": "en"})])
    monkeypatch.setattr(lexical, "LEXEME_CANDIDATES", 5)
    assert {h.source_ref for h in store.search.rank("ns", "widget", k=5)} == {
        f"de{i}" for i in range(5)}
    hits = store.search.rank("ns", "widget", k=5, filters={"lang": "en"})
    assert sorted(h.source_ref for h in hits) == [f"en{i}" for i in range(4)]


RECOVERING = ("connection failed: FATAL:  the database system is not yet accepting "
              "connections\nDETAIL:  Consistent recovery state has not been yet reached.")


def test_a_server_in_crash_recovery_is_waited_for(db_url: str, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from kbctl.store import db

    real, calls = psycopg.connect, []

    def recovering_twice(*args: object, **kwargs: object) -> psycopg.Connection:
        calls.append(args)
        if len(calls) <= 2:
            raise psycopg.OperationalError(RECOVERING)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(db.psycopg, "connect", recovering_twice)
    monkeypatch.setattr(db, "RECOVERY_POLL_S", 0.01)
    connect(db_url).close()
    assert len(calls) == 3
    assert "is recovering from a crash; waiting for it" in capsys.readouterr().err


@pytest.mark.parametrize(("message", "attempts"), [(RECOVERING, None), ("refused", 1)])
def test_the_recovery_wait_is_bounded_and_other_failures_fail_at_once(
        monkeypatch: pytest.MonkeyPatch, message: str, attempts: int | None) -> None:
    from kbctl.store import db

    calls = []

    def refuse(*args: object, **kwargs: object) -> None:
        calls.append(args)
        raise psycopg.OperationalError(message)

    monkeypatch.setattr(db.psycopg, "connect", refuse)
    monkeypatch.setattr(db, "RECOVERY_WAIT_S", 0.2)
    monkeypatch.setattr(db, "RECOVERY_POLL_S", 0.01)
    with pytest.raises(DatabaseError) as info:
        connect("postgresql://kb@127.0.0.1:1/kb")
    assert info.value.exit_code == 3
    if attempts is None:
        assert len(calls) > 2 and "still recovering after 0 s" in str(info.value.hint)
    else:
        assert len(calls) == attempts and "check --db" in str(info.value.hint)


def test_a_statement_the_server_refuses_is_an_environment_error(db_url: str) -> None:
    """A full disk mid-run (the server's own SQLSTATE 53100) ends the run with exit 3 and
    a hint, not a traceback; the statement's transaction is rolled back."""
    from pathlib import Path

    from kbctl.config import Settings
    from kbctl.wiring import open_store

    with pytest.raises(DatabaseError) as info, open_store(Settings(db_url=db_url,
                                                                   data_dir=Path("."))) as st:
        st.conn.execute("DO $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left "
                        "on device' USING ERRCODE = 'disk_full'; END $$")
    assert info.value.exit_code == 3
    assert "No space left on device (SQLSTATE 53100)" in str(info.value)
    assert info.value.hint and "free disk space on the database server" in info.value.hint


def test_a_schema_written_by_a_newer_kbctl_is_refused(db_url: str) -> None:
    """A CI cache shared with a job running a newer kbctl: an older one must not write rows
    without what the newer one keeps beside them."""
    from kbctl.memory.schema import MEMORY_MIGRATIONS
    from kbctl.store.migrations import migrate

    connect(db_url).close()
    newer = MIGRATIONS[-1][0] + 1
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("INSERT INTO kbctl_migrations (version, name) VALUES (%s, 'future')",
                     (newer,))
        migrate(conn, MEMORY_MIGRATIONS)  # another list's versions are not its business
    with pytest.raises(DatabaseError) as info:
        connect(db_url)
    assert info.value.exit_code == 3
    assert f"written by a newer kbctl (schema version {newer};" in str(info.value)
    assert info.value.hint and "upgrade kbctl" in info.value.hint


def test_a_malformed_database_url_is_bad_input_and_never_echoed() -> None:
    with pytest.raises(ConfigError) as info:
        connect("postgresql//kb:s3cret@db.internal:5432/kb")  # the ':' after the scheme lost
    assert info.value.exit_code == 2
    assert "s3cret" not in str(info.value) and "s3cret" not in str(info.value.hint)


def test_a_data_directory_that_is_a_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "kb").write_text("not a directory")
    with pytest.raises(InputError, match="is a file, not a directory") as info:
        connect(None, tmp_path / "kb")
    assert info.value.exit_code == 2
    # and a command that only reads says so too, not "no knowledge base"
    from kbctl.wiring import require_embedded

    with pytest.raises(InputError, match="is a file, not a directory"):
        require_embedded(tmp_path / "kb")


def test_a_connection_lost_inside_a_transaction_adds_no_aside_on_stderr(db_url: str) -> None:
    """A failure inside a transaction whose connection has gone makes its rollback fail
    too, and psycopg warns "error ignored in rollback" through logging's last resort;
    kbctl reports the failure itself, so a cron's stderr carries one message, not two."""
    script = """
import sys
import psycopg
from kbctl.store.db import connect
url = sys.argv[1]
conn = connect(url)
try:
    with conn.transaction():
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        raise ValueError("a failure of its own while the connection is gone")
except ValueError:
    print("lost")
"""
    run = subprocess.run([sys.executable, "-c", script, db_url], capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0 and run.stdout.strip() == "lost", run.stderr
    assert run.stderr == ""


def test_two_writers_trading_words_never_deadlock_a_write(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each writer replaces its own page, dropping one vocabulary and taking up the other,
    # in opposite phase. Writing the old words' document counts, then the new ones', one
    # held the first set's while it waited for the second's, the other the reverse, and
    # PostgreSQL ended one of them (a nightly resync went red at random). One write of the
    # counts' change, in the words' order, leaves no such cycle: not even the one try
    # (a write that still meets a deadlock is tried again) is needed.
    monkeypatch.setattr(documents, "DEADLOCK_ATTEMPTS", 1)
    first = " ".join(f"alpha{i}" for i in range(150))
    second = " ".join(f"omega{i}" for i in range(150))
    errors: list[BaseException] = []

    def writer(ref: str, flip: bool) -> None:
        store = KnowledgeStore(connect(db_url))
        try:
            for i in range(24):
                text = first if (i % 2 == 0) != flip else second
                store.documents.replace(_source(ref, hash_=str(i)), _chunks(text, text + " x"))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            store.conn.close()

    threads = [threading.Thread(target=writer, args=(ref, flip))
               for ref, flip in (("p1", False), ("p2", True))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    _consistent(db_url)


def test_a_replaced_page_writes_only_the_document_frequencies_that_change(
        store: KnowledgeStore, db_url: str) -> None:
    def written() -> tuple[int, int]:
        """This backend's rows inserted and updated in lexeme_stats, not yet flushed."""
        inserted, updated = store.conn.execute(
            "SELECT pg_stat_get_xact_tuples_inserted(t), pg_stat_get_xact_tuples_updated(t)"
            " FROM CAST('lexeme_stats'::regclass AS oid) AS t").fetchone()
        return int(inserted), int(updated)

    store.documents.replace(_source("p"), _chunks("alpha beta gamma", "beta delta"))
    with store.conn.transaction():  # read before it commits: not flushed meanwhile
        before = written()
        store.documents.replace(_source("p", hash_="2"),
                                _chunks("alpha beta gamma", "beta epsilon"))
        after = written()
    # epsilon is new, delta is in no chunk now; the words that stay are not written
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)
    assert rows(db_url, "SELECT lexeme, df FROM lexeme_stats WHERE namespace = 'ns' "
                        "AND lexeme IN ('beta', 'delta', 'epsilon') ORDER BY 1") == [
        ("beta", 2), ("delta", 0), ("epsilon", 1)]
    store.documents.replace(_source("p", hash_="3"), [])  # no chunks: the counts still go
    assert rows(db_url, "SELECT count(*) FROM lexeme_stats WHERE df <> 0") == [(0,)]
    _consistent(db_url)


def test_a_write_run_reclaims_the_space_of_the_rows_it_replaced(
        store: KnowledgeStore, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded server lives seconds, too short for autovacuum: a nightly resync grew
    the database for good until write runs vacuumed what they left dead."""
    def dead(table: str) -> int:
        store.conn.execute("SELECT pg_stat_force_next_flush()")
        store.conn.execute("SELECT 1")  # idle once: the counts are flushed
        return int(store.conn.execute(
            "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = %s",
            (table,)).fetchone()[0])

    for round_ in range(3):  # the same pages rewritten: every old row is left dead
        for i in range(40):
            store.documents.replace(
                SourceRecord(namespace="reclaim", ref=f"p{i}", kind="text",
                             url=f"kb://p{i}", title="t", content_hash=str(round_)),
                [ChunkRecord(j, f"round {round_} page {i} part {j} words here", {})
                 for j in range(10)])
    assert dead("postings") >= 1000
    # a table another session holds a conflicting lock on is passed over, not waited for
    monkeypatch.setattr(documents, "VACUUM_LOCK_WAIT_S", 1)
    with psycopg.connect(db_url) as holder:
        holder.execute("LOCK TABLE postings IN SHARE MODE")  # as CREATE INDEX holds it
        assert "postings" not in store.documents.reclaim()
    assert "postings" in store.documents.reclaim()
    assert dead("postings") < 1000
    assert store.documents.reclaim() == []  # nothing left worth the work


def test_a_write_run_leaves_the_planner_the_statistics_of_what_it_wrote(
        store: KnowledgeStore, db_url: str) -> None:
    """The planner read the statistics of the empty tables a knowledge base was made with
    until autovacuum, which the embedded server never lives long enough to run, analysed
    them: every search after a first load scanned a page's postings for its words."""
    def estimated_and_real(table: str) -> tuple[float, int]:
        (estimate,) = rows(db_url, f"SELECT reltuples FROM pg_class WHERE relname = '{table}'")[0]
        (count,) = rows(db_url, f"SELECT count(*) FROM {table}")[0]
        return float(estimate), int(count)

    for i in range(40):
        store.documents.replace(
            SourceRecord(namespace="fresh", ref=f"p{i}", kind="text", url=f"kb://p{i}",
                         title="t", content_hash="h"),
            [ChunkRecord(j, f"page {i} part {j} says word{i * 10 + j} and more", {})
             for j in range(10)])
    estimate, count = estimated_and_real("postings")
    assert count >= 2000 and abs(estimate - count) > count / 2  # as the tables were made
    assert "postings" in store.documents.reclaim()
    estimate, count = estimated_and_real("postings")
    assert abs(estimate - count) <= count / 10
    assert "postings" not in store.documents.reclaim()  # analysed: nothing new to learn


def test_a_search_behind_another_sessions_lock_gives_up(store: KnowledgeStore, db_url: str,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """A table locked by another session (by hand, a migration) left a query, an eval case
    or an agent's tool call waiting for ever."""
    from kbctl.store import db

    store.documents.replace(SourceRecord(namespace="ns", ref="a", kind="text", url="kb://a",
                                         title="a", content_hash="h"),
                         [ChunkRecord(0, "the borrow checker", {})])
    monkeypatch.setattr(db, "READ_TIMEOUT_S", 1)
    with psycopg.connect(db_url) as holder:
        holder.execute("LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(DatabaseError, match="statement timeout"):
            store.search.rank("ns", "borrow checker", k=3)
    assert [r.source_ref for r in store.search.rank("ns", "borrow checker", k=3)] == ["a"]


def test_make_durable_flushes_what_other_connections_committed_without_waiting(
        store: KnowledgeStore, db_url: str) -> None:
    """Writers commit without waiting for the WAL flush; the run's last step must flush it
    all. PostgreSQL commits a transaction that wrote no WAL of its own without waiting, so
    a commit of nothing but a transaction id left a run's sources to a crash."""
    writer = connect(db_url)
    try:
        writer.execute("SET synchronous_commit = off")
        with writer.transaction():
            KnowledgeStore(writer).documents.replace(_source("a"), _chunks("gears mesh"))
        (written,) = writer.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
    finally:
        writer.close()
    store.documents.make_durable()
    flushed = rows(db_url, "SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", str(written))
    assert flushed == [(True,)]


def test_a_written_chunk_finds_its_page_by_its_key_not_by_scanning_the_namespace(
        store: KnowledgeStore, db_url: str) -> None:
    """Each chunk's check that its page exists (the foreign key, gone since) read every
    page row of the namespace when the plan the server kept for it scanned the namespace:
    7 million index entries for the 530-page site, growing with pages x chunks; and each
    batch's page lengths were set through a join on the namespace alone. Counted in a new
    connection's own statistics of the page table and its indexes."""
    pages = [(SourceRecord(namespace="ns", ref=f"p{i}", kind="url", url=f"u{i}",
                           title=f"P{i}", content_hash="h", def_id="site"), _chunks("text"))
             for i in range(300)]
    store.documents.replace_many("ns", pages)
    chunks = _chunks(*(f"section {i} of the last page" for i in range(40)))
    conn = connect(db_url)  # its statistics count this write alone
    try:
        with conn.transaction():
            KnowledgeStore(conn).documents.replace(
                SourceRecord(namespace="ns", ref="last", kind="url", url="u", title="Last",
                             content_hash="h", def_id="site"), chunks)
            # the entries its indexes returned, and the rows sequential scans read
            read = conn.execute(
                """SELECT sum(pg_stat_get_xact_tuples_returned(oid)) FROM (
                       SELECT indexrelid AS oid FROM pg_index
                       WHERE indrelid = 'sources'::regclass
                       UNION ALL SELECT 'sources'::regclass) AS r""").fetchone()[0]
    finally:
        conn.close()
    assert read <= 4 * len(chunks) + 20, read


def test_a_schema_change_behind_another_sessions_table_gives_up_and_says_so(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A psql left inside BEGIN after reading a table kbctl must change held every kbctl
    command (a cron job's too) for ever; the change now waits ``MIGRATION_LOCK_WAIT``,
    fails with what to do, and is made once the table is free."""
    monkeypatch.setattr(migrations, "MIGRATION_LOCK_WAIT", "200ms")
    probe = [*MIGRATIONS, (90, "a probe column", "ALTER TABLE lock_probe ADD COLUMN y int")]
    conn = connect(db_url)
    with psycopg.connect(db_url) as holder:
        holder.execute("CREATE TABLE lock_probe (x int)")
        holder.commit()
        holder.execute("SELECT count(*) FROM lock_probe").fetchone()  # idle in transaction
        with pytest.raises(DatabaseError, match=r"schema upgrade 90 \(a probe column\) "
                                                r"waited 200ms") as failed:
            migrations.migrate(conn, probe)
        assert "idle in transaction" in (failed.value.hint or "")
        assert 90 not in migrations.applied_versions(conn)
        holder.rollback()
        migrations.migrate(conn, probe)
    assert 90 in migrations.applied_versions(conn)
    conn.close()


def test_another_kbctl_changing_the_schema_is_waited_for_past_the_lock_wait(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is for tables held by others, not for a kbctl whose own schema change
    (a postings rebuild of a large knowledge base) takes longer than it."""
    monkeypatch.setattr(migrations, "MIGRATION_LOCK_WAIT", "100ms")
    probe = [*MIGRATIONS, (90, "a probe table", "CREATE TABLE lock_probe (x int)")]
    conn = connect(db_url)
    with psycopg.connect(db_url) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", (migrations._MIGRATION_LOCK,))
        release = threading.Timer(0.6, other.commit)
        release.start()
        migrations.migrate(conn, probe)  # waits the 0.6 s, then makes it
        release.join()
    assert 90 in migrations.applied_versions(conn)
    conn.close()
