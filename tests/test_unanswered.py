"""The watch that gives up on a server that stops answering (``kbctl.store.unanswered``)
never gives up on one that answers: a slow statement, a refusal. The frozen server itself
is tested on real processes in test_chaos_server.py."""

from __future__ import annotations

import socket
import threading

import psycopg
import pytest

from kbctl.store import db, unanswered


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unanswered, "STALL_S", 0.3)
    monkeypatch.setattr(unanswered, "POLL_S", 0.1)
    monkeypatch.setattr(unanswered, "PROBE_TIMEOUT_S", 2)


@pytest.mark.timeout(120)
def test_a_slow_statement_on_a_live_server_goes_on(db_url: str, quick: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The statement runs (no lock wait) until the watch has probed the server twice."""
    holder, conn = db.connect(db_url), db.connect(db_url)
    holder.execute("SELECT pg_advisory_lock(43)")
    answers = unanswered._answers
    probes: list[bool] = []

    def probed(conninfo: str) -> bool:
        probes.append(answers(conninfo))
        if len(probes) == 2:  # the statement may end now
            holder.execute("SELECT pg_advisory_unlock(43)")
        return probes[-1]

    monkeypatch.setattr(unanswered, "_answers", probed)
    try:
        conn.execute("DO $$ BEGIN WHILE NOT pg_try_advisory_lock(43) LOOP "
                     "PERFORM pg_sleep(0.05); END LOOP; END $$")
        assert conn.execute("SELECT 7").fetchone() == (7,)
        assert probes[:2] == [True, True]  # each probe is answered
        assert not conn.broken
        assert unanswered.given_up(db.describe(db_url)) is None
    finally:
        conn.close()
        holder.close()


def test_a_lock_wait_behind_another_session_goes_on(db_url: str, quick: None) -> None:
    holder, waiter = db.connect(db_url), db.connect(db_url)
    release = threading.Timer(1.2, holder.execute, ("SELECT pg_advisory_unlock(42)",))
    try:
        holder.execute("SELECT pg_advisory_lock(42)")
        release.start()
        assert waiter.execute("SELECT pg_advisory_lock(42), 1").fetchone() == ("", 1)
        assert not waiter.broken
    finally:
        release.join()
        holder.close()
        waiter.close()


def test_a_refusal_is_an_answer(db_url: str) -> None:
    # the server says FATAL (no such database): it is alive
    assert unanswered._answers(psycopg.conninfo.make_conninfo(db_url, dbname="no_such_db"))


@pytest.mark.timeout(60)
def test_a_listener_that_never_speaks_is_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unanswered, "PROBE_TIMEOUT_S", 1)
    with socket.socket() as silent:  # accepts connections (the backlog) and says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        # without its own timeout the probe would wait for good: the test's timeout ends it
        assert not unanswered._answers(f"host=127.0.0.1 port={port} dbname=x user=x")
