"""Test databases handed from one test to the next: a test's database is emptied afterwards
and given to the worker's next test.

Why: most tests need a migrated database, and a copy of the template (CREATE DATABASE …
TEMPLATE) took 0.19-0.26 s against 0.03 s for emptying its tables, on 2 cores, some 600
times a run. What a test adds to the schema (a table, an index, a vector column's
dimensions) is undone; then the catalog is compared, item by item, with the template's
(tables, columns, indexes, grants, the database's settings, the migrations' record), and
on any difference the database is dropped, as every database was before.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

# What a copy of the template holds beyond its rows, by name: an index kbctl drops and
# builds again around a bulk write is the same index under a new object id. The storage
# columns TRUNCATE changes (relfilenode, relpages, reltuples, frozen xids) are left out;
# temporary schemas outlive the sessions that made them and say nothing of the database.
FINGERPRINT = """
WITH own AS (
  SELECT n.nspname || '.' || c.relname AS name, c.* FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid >= 16384 AND n.nspname NOT LIKE 'pg\\_temp\\_%'
      AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%'
)
SELECT md5(string_agg(item, E'\\n' ORDER BY item)) FROM (
  SELECT format('relation %s %s %s %s %s %s %s %s', name, relkind, relpersistence, relacl,
                reloptions, relnatts, relhastriggers, relrowsecurity) FROM own
  UNION ALL
  SELECT format('column %s %s %s %s %s %s %s %s', own.name, attnum, attname, atttypid,
                atttypmod, attnotnull, attisdropped, attacl)
    FROM pg_attribute JOIN own ON own.oid = attrelid
  UNION ALL
  SELECT format('default %s %s %s', own.name, adnum, pg_get_expr(adbin, adrelid))
    FROM pg_attrdef JOIN own ON own.oid = adrelid
  UNION ALL
  SELECT format('index %s %s %s %s', own.name, pg_get_indexdef(indexrelid), indisvalid,
                indisready) FROM pg_index JOIN own ON own.oid = indexrelid
  UNION ALL
  SELECT format('constraint %s %s %s', conrelid::regclass, conname,
                pg_get_constraintdef(oid)) FROM pg_constraint WHERE oid >= 16384
  UNION ALL
  SELECT format('trigger %s %s %s', tgrelid::regclass, tgname, tgenabled) FROM pg_trigger
    WHERE oid >= 16384
  UNION ALL
  SELECT format('function %s %s %s %s', proname, pg_get_function_identity_arguments(oid),
                md5(prosrc), proacl) FROM pg_proc WHERE oid >= 16384
  UNION ALL
  SELECT format('schema %s %s', nspname, nspacl) FROM pg_namespace
    WHERE nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'
  UNION ALL
  SELECT format('extension %s %s', extname, extversion) FROM pg_extension
  UNION ALL
  SELECT format('type %s %s', typnamespace::regnamespace, typname) FROM pg_type
    WHERE oid >= 16384 AND typnamespace IN (SELECT relnamespace FROM own)
  UNION ALL
  SELECT format('rule %s %s', ev_class::regclass, rulename) FROM pg_rewrite
    WHERE oid >= 16384
  UNION ALL
  SELECT format('policy %s %s', polrelid::regclass, polname) FROM pg_policy
  UNION ALL
  SELECT format('sequence %s %s %s', seqrelid::regclass, seqstart, seqincrement)
    FROM pg_sequence WHERE seqrelid >= 16384
  UNION ALL
  SELECT format('unowned sequence %s', seqrelid::regclass) FROM pg_sequence s
    WHERE seqrelid >= 16384 AND NOT EXISTS (
      SELECT 1 FROM pg_depend d WHERE d.objid = s.seqrelid AND d.deptype IN ('a', 'i'))
  UNION ALL
  SELECT format('default privileges %s', defaclacl) FROM pg_default_acl
  UNION ALL
  SELECT format('large object %s', oid) FROM pg_largeobject_metadata
  UNION ALL
  SELECT format('event trigger %s', evtname) FROM pg_event_trigger
  UNION ALL
  SELECT format('setting %s', setconfig) FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  UNION ALL
  SELECT format('database %s %s %s', datacl, datconnlimit, datallowconn) FROM pg_database
    WHERE datname = current_database()
) AS catalog(item)
"""

KEPT_ROWS = "kbctl_migrations"  # the only table the template holds rows in

# The template's tables, indexes and column types, by name: what a test adds to them (the
# memory tables a memory command makes, an embedder's vector index, the vector column's
# dimensions) is undone once the rows are gone, and the fingerprint compared again.
RELATIONS = """
SELECT c.oid::regclass::text, c.relkind FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'i', 'S', 'v', 'm')
"""
COLUMN_TYPES = """
SELECT c.oid::regclass::text, a.attname, format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attnum > 0
    AND NOT a.attisdropped
"""
DROP = {"r": "TABLE", "p": "TABLE", "i": "INDEX", "S": "SEQUENCE", "v": "VIEW",
        "m": "MATERIALIZED VIEW"}


class DatabasePool:
    """One worker's test databases, copies of ``template`` on the server at ``admin_url``."""

    def __init__(self, admin_url: str, template: str) -> None:
        self.admin_url = admin_url
        self.template = template
        with psycopg.connect(self._url(template)) as conn:
            self.expected = self._fingerprint(conn)
            self.relations = dict(conn.execute(RELATIONS).fetchall())
            self.column_types = {(table, column): kind for table, column, kind
                                 in conn.execute(COLUMN_TYPES).fetchall()}
        self.spare: str | None = None
        self.handed_on = 0  # how many tests got an emptied database: the pool's own test

    def _url(self, name: str) -> str:
        return psycopg.conninfo.make_conninfo(self.admin_url, dbname=name)

    def _fingerprint(self, conn: psycopg.Connection) -> tuple[str, list[tuple[object, ...]]]:
        catalog = conn.execute(FINGERPRINT).fetchone()[0]
        kept = conn.execute(sql.SQL("SELECT * FROM {} ORDER BY 1").format(
            sql.Identifier(KEPT_ROWS))).fetchall()
        return catalog, kept

    def take(self) -> str:
        """A database named for this test alone: the spare, or a new copy of the template."""
        name = f"kbtest_{uuid.uuid4().hex[:12]}"
        with self._admin() as admin:
            if self.spare is not None:
                spare, self.spare = self.spare, None
                try:
                    admin.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
                        sql.Identifier(spare), sql.Identifier(name)))
                    self.handed_on += 1
                    return name
                except psycopg.Error:
                    self._drop(admin, spare)
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(self.template)))
        return name

    def give_back(self, name: str) -> None:
        """Empty ``name`` for the next test, or drop it when it cannot be made the template's
        copy again. It is renamed first: a process the test left behind cannot reconnect to
        the next test's data by the old name."""
        spare = f"kbspare_{uuid.uuid4().hex[:12]}"
        with self._admin() as admin:
            try:
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))
                admin.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
                    sql.Identifier(name), sql.Identifier(spare)))
            except psycopg.Error:
                self._drop(admin, name)
                return
            if self._emptied(spare):
                self.spare = spare
            else:
                self._drop(admin, spare)

    def _emptied(self, name: str) -> bool:
        try:
            with psycopg.connect(self._url(name), autocommit=True) as conn:
                with conn.transaction():
                    self._restore(conn)
                return self._fingerprint(conn) == self.expected
        except psycopg.Error:
            return False

    def _restore(self, conn: psycopg.Connection) -> None:
        """Every row gone but the migrations', and what the test added undone."""
        relations = dict(conn.execute(RELATIONS).fetchall())
        tables = [sql.SQL(table) for table, kind in relations.items()
                  if kind in ("r", "p") and table != KEPT_ROWS]
        conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(
            sql.SQL(", ").join(tables)))
        for table, kind in relations.items():
            if table not in self.relations:  # regclass text is already quoted
                conn.execute(sql.SQL("DROP {} IF EXISTS {} CASCADE").format(
                    sql.SQL(DROP[kind]), sql.SQL(table)))
        for table, column, kind in conn.execute(COLUMN_TYPES).fetchall():
            wanted = self.column_types.get((table, column))
            if wanted is not None and wanted != kind:
                conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} TYPE {}").format(
                    sql.SQL(table), sql.Identifier(column), sql.SQL(wanted)))

    def close(self) -> None:
        if self.spare is not None:
            with self._admin() as admin:
                self._drop(admin, self.spare)
            self.spare = None

    @contextmanager
    def _admin(self) -> Iterator[psycopg.Connection]:
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            yield admin

    @staticmethod
    def _drop(admin: psycopg.Connection, name: str) -> None:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
