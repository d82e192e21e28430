"""A production database behind an assistant: roles that may only read, servers that make
every transaction read-only, and limits a DBA set. Reads must need nothing but SELECT, and
a read pointed at a database kbctl never wrote to must leave it as it was."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from kbctl.store.db import bounded_read, connect

from .conftest import Cli, rows

SUITE = """version: 1
cases:
  - id: spin
    question: which way does the widget spin
    expect: {sourceIncludes: widgets}
"""


@pytest.fixture
def reader_url(db_url: str) -> Iterator[str]:
    """A role of db_url's database that may connect and SELECT, nothing more (made after
    the KB's tables exist: the grant covers the tables there are)."""
    role = f"kbreader_{uuid.uuid4().hex[:10]}"
    yield psycopg.conninfo.make_conninfo(db_url, user=role)
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _grant_reads(db_url: str, reader_url: str) -> None:
    role = psycopg.conninfo.conninfo_to_dict(reader_url)["user"]
    dbname = psycopg.conninfo.conninfo_to_dict(db_url)["dbname"]
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
            sql.Identifier(dbname), sql.Identifier(role)))
        admin.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(role)))
        admin.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(
            sql.Identifier(role)))
        # what the database's owner could not do as it: the server's own schema stays shut
        admin.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))


def _as(cli: Cli, url: str) -> Cli:
    return Cli(url)


def test_a_role_that_may_only_read_queries_evaluates_and_calls_tools(
        cli: Cli, db_url: str, reader_url: str, workdir: Path) -> None:
    assert cli("ingest", "text", "The widget spins clockwise.", "--ref", "widgets").exit_code == 0
    assert cli("memory", "append", "memory/agent/runbook.md", "deploy on fridays",
               "--agent", "bot").exit_code == 0
    _grant_reads(db_url, reader_url)
    reader = _as(cli, reader_url)
    # memory's reads too: opening it recorded the KB's embedder again, a write
    assert reader.json("memory", "search", "deploy", "--agent", "bot")["results"]
    as_agent = reader("tools", "call", "search_knowledge", "--agent", "bot", "--args",
                      '{"query": "widget spin"}', "--json")
    assert as_agent.exit_code == 0, as_agent.output
    found = reader.json("query", "widget spin")
    assert found["results"][0]["sourceRef"].endswith("/widgets")
    (workdir / "suite.yaml").write_text(SUITE)
    report = reader.json("eval", "suite.yaml")
    assert report["totals"]["passed"] == 1, report["totals"]
    called = reader("tools", "call", "search_knowledge", "--args", '{"query": "widget spin"}',
                    "--json")
    assert called.exit_code == 0, called.output
    assert "widgets" in called.stdout
    assert reader("status", "--json").exit_code == 0
    # a write says what the role lacks, as the environment's failure it is
    refused = reader("ingest", "text", "another note", "--ref", "more")
    assert refused.exit_code == 3
    assert "permission denied" in refused.output


def test_a_server_whose_transactions_are_read_only_answers_reads(cli: Cli, db_url: str) -> None:
    """``default_transaction_read_only=on`` (a replica, a DBA's guard): every read wrote a
    row to record the KB's embedder, and failed."""
    assert cli("ingest", "text", "The widget spins clockwise.", "--ref", "widgets").exit_code == 0
    read_only = _as(cli, psycopg.conninfo.make_conninfo(
        db_url, options="-c default_transaction_read_only=on"))
    found = read_only.json("query", "widget spin")
    assert found["results"][0]["sourceRef"].endswith("/widgets")


@pytest.mark.empty_db
@pytest.mark.parametrize("command", [("status",), ("query", "widget"), ("eval", "suite.yaml")])
def test_a_read_of_a_database_kbctl_never_wrote_to_leaves_it_as_it_was(
        cli: Cli, db_url: str, workdir: Path, command: tuple[str, ...]) -> None:
    """The server's own ``postgres`` named by mistake: exit 2, and no extension, no tables
    made there."""
    (workdir / "suite.yaml").write_text(SUITE)
    result = cli(*command, "--json")
    assert result.exit_code == 2, result.output
    assert "no knowledge base in" in json.loads(result.stdout)["error"]["message"]
    assert rows(db_url, "SELECT count(*) FROM pg_extension WHERE extname = 'vector'") == [(0,)]
    assert rows(db_url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == [(0,)]


def test_a_reader_lacking_kbctls_tables_is_told_to_make_them_as_the_owner(
        cli: Cli, db_url: str, reader_url: str) -> None:
    """A role without CREATE meets tables to make (memory's first use, an upgrade): the
    message says which role can make them."""
    assert cli("ingest", "text", "The widget spins clockwise.", "--ref", "widgets").exit_code == 0
    _grant_reads(db_url, reader_url)
    failed = _as(cli, reader_url)("memory", "search", "deploy", "--agent", "bot")
    assert failed.exit_code == 3, failed.output
    assert "permission denied" in failed.output
    assert "run one kbctl write (an ingest) as that role" in " ".join(failed.output.split())


@pytest.mark.parametrize(("server_ms", "kept_ms"), [(0, 60000), (1500, 1500), (90000, 60000)])
def test_a_bounded_read_keeps_a_lower_statement_timeout(db_url: str, server_ms: int,
                                                        kept_ms: int) -> None:
    conn = connect(psycopg.conninfo.make_conninfo(
        db_url, options=f"-c statement_timeout={server_ms}"))
    try:
        with bounded_read(conn):
            shown = conn.execute("SELECT setting::int FROM pg_settings "
                                 "WHERE name = 'statement_timeout'").fetchone()
        assert shown == (kept_ms,)
    finally:
        conn.close()


def test_a_connection_waits_for_a_slot_the_server_frees(
        db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A server at max_connections (or a role at its CONNECTION LIMIT): concurrent MCP calls
    failed at once with 'too many clients already'; a slot frees as a client leaves."""
    role = f"kblimited_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN CONNECTION LIMIT 1").format(
            sql.Identifier(role)))
    url = psycopg.conninfo.make_conninfo(db_url, user=role)
    try:
        connect(db_url).close()  # the schema made by its owner, readable by the role
        with psycopg.connect(db_url, autocommit=True) as admin:
            admin.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(
                sql.Identifier(role)))
        holder = psycopg.connect(url)
        threading.Timer(1.0, holder.close).start()
        connect(url).close()  # waited for the holder to leave
        assert "has no connection slot free" in capsys.readouterr().err
    finally:
        with psycopg.connect(db_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE usename = %s", (role,))
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.mark.timeout(60)
def test_a_urls_own_connect_timeout_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that accepts and never answers: the URL's connect_timeout=1 lost to a
    hard-coded 10 s (made an hour here, so that losing it fails at the test's timeout)."""
    from kbctl.errors import DatabaseError
    from kbctl.store import db

    monkeypatch.setattr(db, "CONNECT_TIMEOUT_S", 3600)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        with pytest.raises(DatabaseError):
            connect(f"postgresql://kb@127.0.0.1:{port}/kb?connect_timeout=1")


def test_serve_mcp_whose_first_look_times_out_says_so(cli: Cli, db_url: str,
                                                        workdir: Path) -> None:
    """Its startup check (does the namespace hold chunks?) behind another session's lock,
    under the DBA's statement_timeout: a traceback and exit 1."""
    assert cli("ingest", "text", "The widget spins clockwise.", "--ref", "widgets").exit_code == 0
    url = psycopg.conninfo.make_conninfo(db_url, options="-c statement_timeout=500")
    with psycopg.connect(db_url) as locker:
        locker.execute("LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE")
        done = subprocess.run([sys.executable, "-c", "from kbctl.cli import main; main()",
                               "serve", "mcp", "--db", url], input="", capture_output=True,
                              text=True, cwd=workdir, timeout=120, check=False)
    assert done.returncode == 3, done.stderr
    assert "statement timeout" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.empty_db
def test_vector_in_a_schema_off_the_search_path_is_named_with_the_fix(db_url: str) -> None:
    """A DBA's ``CREATE EXTENSION vector SCHEMA extensions``: the type is there but not on
    the role's search_path, which CREATE EXTENSION IF NOT EXISTS cannot mend. The failure
    is the environment's (exit 3) and its hint names the schema and the setting."""
    from kbctl.errors import DatabaseError

    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute("CREATE SCHEMA extensions")
        admin.execute("CREATE EXTENSION vector SCHEMA extensions")
    with pytest.raises(DatabaseError) as refused:
        connect(db_url)
    assert refused.value.exit_code == 3
    assert refused.value.hint is not None
    assert "schema 'extensions'" in refused.value.hint and "search_path" in refused.value.hint
    # the fix the hint gives works
    fixed = psycopg.conninfo.make_conninfo(db_url, options="-csearch_path=public,extensions")
    connect(fixed).close()
