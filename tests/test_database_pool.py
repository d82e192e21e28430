"""The test databases handed from test to test: the next test sees none of the last one's
rows, and a database whose schema a test changed is never handed on."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from .databases import DatabasePool


@pytest.fixture
def pool(pg_admin_url: str, migrated_template: str) -> Iterator[DatabasePool]:
    made = DatabasePool(pg_admin_url, migrated_template)
    yield made
    made.close()


def _url(pool: DatabasePool, name: str) -> str:
    return psycopg.conninfo.make_conninfo(pool.admin_url, dbname=name)


def _databases(pool: DatabasePool) -> set[str]:
    with psycopg.connect(pool.admin_url) as admin:
        return {name for (name,) in admin.execute("SELECT datname FROM pg_database")}


def _add_a_chunk(url: str) -> int:
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO sources (namespace, ref, kind, url, content_hash) "
                     "VALUES ('ns', 'r', 'text', 'kb://r', 'h')")
        return conn.execute("INSERT INTO chunks (namespace, source_ref, ordinal, text) "
                            "VALUES ('ns', 'r', 0, 'words') RETURNING id").fetchone()[0]


def _changed(pool: DatabasePool, change: str) -> str:
    """A database of the pool, with ``change`` made to it, as a test would."""
    name = pool.take()
    with psycopg.connect(_url(pool, name)) as conn:
        conn.execute(change)
    return name


def test_the_next_test_gets_the_database_emptied_and_its_ids_started_over(
        pool: DatabasePool) -> None:
    first = pool.take()
    first_id = _add_a_chunk(_url(pool, first))
    pool.give_back(first)
    second = pool.take()
    assert pool.handed_on == 1 and second != first and first not in _databases(pool)
    with psycopg.connect(_url(pool, second)) as conn:
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM kbctl_migrations").fetchone()[0] > 0
    assert _add_a_chunk(_url(pool, second)) == first_id


@pytest.mark.parametrize("change", [
    "CREATE TABLE extra (x int)",
    "CREATE INDEX extra ON sources (title)",
    "CREATE SEQUENCE extra",
    "ALTER TABLE chunks ALTER COLUMN embedding TYPE vector(3)",
])
def test_what_a_test_added_is_undone_before_the_next_test(pool: DatabasePool,
                                                          change: str) -> None:
    pool.give_back(_changed(pool, change))
    handed = pool.take()
    assert pool.handed_on == 1
    with psycopg.connect(_url(pool, handed)) as conn:
        assert conn.execute("SELECT to_regclass('extra')").fetchone()[0] is None
        assert conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                            "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
                            ).fetchone()[0] == "vector"


@pytest.mark.parametrize("change", [
    "GRANT SELECT ON sources TO PUBLIC",
    "ALTER TABLE sources ADD COLUMN extra int",
    "ALTER TABLE sources DROP COLUMN title",
    "DROP INDEX postings_chunk",
    "DELETE FROM kbctl_migrations",
    "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET work_mem = 8192', "
    "current_database()); END $$",
])
def test_a_database_a_test_changed_otherwise_is_dropped(pool: DatabasePool,
                                                        change: str) -> None:
    name = _changed(pool, change)
    before = _databases(pool)
    pool.give_back(name)
    assert pool.spare is None and _databases(pool) == before - {name}
    assert pool.take() != name and pool.handed_on == 0


def test_a_connection_left_open_cannot_reach_the_next_test_s_database(
        pool: DatabasePool) -> None:
    name = pool.take()
    left = psycopg.connect(_url(pool, name), autocommit=True)
    try:
        pool.give_back(name)
        assert pool.spare is not None
        with pytest.raises(psycopg.OperationalError):
            left.execute("SELECT 1")
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(_url(pool, name)).close()
    finally:
        left.close()
