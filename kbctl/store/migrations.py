"""Versioned schema migrations, recorded in ``kbctl_migrations``.

Each migration runs once, in its own transaction, under an advisory lock so that two
processes opening a fresh database at the same moment do not race.
"""

from __future__ import annotations

import psycopg

from ..errors import DatabaseError

_MIGRATION_LOCK = 0x6B62_6374_6C00  # "kbctl\0": one lock id for schema changes

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "knowledge base core",
        """
        CREATE TABLE kb_meta (
            key   text PRIMARY KEY,
            value jsonb NOT NULL
        );

        -- What a user asked to ingest (a folder, a sitemap, ...), so resync can re-run it.
        CREATE TABLE source_defs (
            namespace   text NOT NULL,
            id          text NOT NULL,
            kind        text NOT NULL,
            target      text NOT NULL,
            options     jsonb NOT NULL DEFAULT '{}',
            created_at  timestamptz NOT NULL DEFAULT now(),
            last_run_at timestamptz,
            last_ok_at  timestamptz,
            last_errors jsonb NOT NULL DEFAULT '[]',
            PRIMARY KEY (namespace, id)
        );

        -- One row per document (a page, a file, a text).
        CREATE TABLE sources (
            namespace    text NOT NULL,
            ref          text NOT NULL,
            def_id       text,
            kind         text NOT NULL,
            url          text NOT NULL,
            title        text NOT NULL DEFAULT '',
            content_hash text NOT NULL,
            fetched_at   timestamptz NOT NULL DEFAULT now(),
            chunk_count  integer NOT NULL DEFAULT 0,
            meta         jsonb NOT NULL DEFAULT '{}',
            PRIMARY KEY (namespace, ref)
        );
        CREATE INDEX sources_def ON sources (namespace, def_id);

        CREATE TABLE chunks (
            id           bigserial PRIMARY KEY,
            namespace    text NOT NULL,
            source_ref   text NOT NULL,
            ordinal      integer NOT NULL,
            text         text NOT NULL,
            meta         jsonb NOT NULL DEFAULT '{}',
            lexeme_count integer NOT NULL DEFAULT 0,
            embedding    vector,
            UNIQUE (namespace, source_ref, ordinal),
            FOREIGN KEY (namespace, source_ref)
                REFERENCES sources (namespace, ref) ON DELETE CASCADE
        );

        -- BM25 postings: one row per (chunk, lexeme), from to_tsvector. ``impact`` orders a
        -- lexeme's postings by how much they can contribute, so large namespaces can be
        -- pruned to the best candidates per lexeme before exact rescoring.
        CREATE TABLE postings (
            namespace text NOT NULL,
            lexeme    text NOT NULL,
            chunk_id  bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
            tf        integer NOT NULL,
            dl        integer NOT NULL,
            impact    real NOT NULL,
            PRIMARY KEY (namespace, lexeme, chunk_id)
        );
        CREATE INDEX postings_impact ON postings (namespace, lexeme, impact DESC)
            INCLUDE (chunk_id, tf, dl);
        CREATE INDEX postings_chunk ON postings (chunk_id);

        -- Per-namespace corpus statistics for BM25 (N and average length).
        CREATE TABLE namespace_stats (
            namespace   text PRIMARY KEY,
            chunk_count bigint NOT NULL DEFAULT 0,
            total_len   bigint NOT NULL DEFAULT 0
        );
        """,
    ),
]


def migrate(conn: psycopg.Connection) -> None:
    """Bring the schema up to date; a no-op (one cheap query) when it already is."""
    try:
        if _current_version(conn) >= MIGRATIONS[-1][0]:
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            _ensure_vector(conn)
            conn.execute(
                """CREATE TABLE IF NOT EXISTS kbctl_migrations (
                       version    integer PRIMARY KEY,
                       name       text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
        done = _applied(conn)
        for version, name, sql in MIGRATIONS:
            if version in done:
                continue
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                if version in _applied(conn):  # another process got here first
                    continue
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO kbctl_migrations (version, name) VALUES (%s, %s)",
                    (version, name),
                )
    except psycopg.Error as exc:
        raise DatabaseError(f"schema migration failed: {str(exc).strip()}") from exc


def _current_version(conn: psycopg.Connection) -> int:
    exists = conn.execute("SELECT to_regclass('kbctl_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM kbctl_migrations").fetchone()
    return int(row[0]) if row else 0


def _applied(conn: psycopg.Connection) -> set[int]:
    return {r[0] for r in conn.execute("SELECT version FROM kbctl_migrations")}


def _ensure_vector(conn: psycopg.Connection) -> None:
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise DatabaseError(
            f"the database lacks the pgvector extension: {str(exc).strip()}",
            hint="install pgvector on the server (CREATE EXTENSION vector) or use the "
            "embedded default by omitting --db",
        ) from exc
