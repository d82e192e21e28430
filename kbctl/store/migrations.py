"""Versioned schema migrations, recorded in ``kbctl_migrations``.

Each migration runs once, in its own transaction, under an advisory lock so that two
processes opening a fresh database at the same moment do not race. A migration is SQL, or a
function of the connection when rows must pass through Python (re-tokenising text).
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from psycopg import pq

from ..embedded.server import say_on_stderr
from ..errors import DatabaseError
from . import lexical

Migration = tuple[int, str, "str | Callable[[psycopg.Connection], None]"]
REBUILD_BATCH = 2000


def rebuild_postings(conn: psycopg.Connection) -> None:
    """Re-tokenise every chunk with the current lexical engine (identifier-aware tokens,
    title and heading fields) and rebuild postings, document frequencies and lengths."""
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()
    if chunks and chunks[0]:  # rows pass through Python: minutes on a large KB
        say_on_stderr(f"upgrading the database: re-indexing {chunks[0]} chunks for this "
                      "version's lexical ranking (once; a large knowledge base takes minutes)")
    conn.execute("ALTER TABLE postings ALTER COLUMN tf TYPE real")
    conn.execute("DROP INDEX IF EXISTS postings_impact")
    conn.execute("TRUNCATE postings, lexeme_stats")
    after = 0
    while True:
        rows = conn.execute(
            "SELECT id, namespace, text, meta FROM chunks WHERE id > %s ORDER BY id LIMIT %s",
            (after, REBUILD_BATCH)).fetchall()
        if not rows:
            break
        after = rows[-1][0]
        conn.execute(
            f"""WITH src AS (
                    SELECT * FROM unnest(%(ids)s::bigint[], %(nss)s::text[], %(t)s::text[],
                                         %(x)s::text[], %(tt)s::text[], %(tx)s::text[],
                                         %(ht)s::text[], %(hx)s::text[])
                        AS u(id, ns, t, x, tt, tx, ht, hx)),
                {lexical.lexeme_ctes("id, ns", lexical.KB_FIELDS)},
                upd AS (UPDATE chunks c SET lexeme_count = coalesce(len.dl, 0)
                        FROM src LEFT JOIN len USING (id, ns) WHERE c.id = src.id)
                INSERT INTO postings (namespace, lexeme, chunk_id, tf, dl, impact)
                SELECT lex.ns, lex.lexeme, lex.id, lex.tf, len.dl,
                       {lexical.impact_sql("lex.tf", "len.dl")}
                FROM lex JOIN len USING (id, ns)""",
            {"ids": [r[0] for r in rows], "nss": [r[1] for r in rows],
             **lexical.kb_field_arrays([r[2] for r in rows], [r[3] for r in rows])})
    conn.execute("""INSERT INTO lexeme_stats (namespace, lexeme, df)
                    SELECT namespace, lexeme, count(*) FROM postings GROUP BY 1, 2""")
    conn.execute("""UPDATE namespace_stats n SET total_len = coalesce(
                        (SELECT sum(c.lexeme_count) FROM chunks c
                         WHERE c.namespace = n.namespace), 0)""")
    conn.execute(lexical.KB_DEFERRED_INDEXES["postings_impact"].create)
    conn.execute("ANALYZE postings, lexeme_stats, chunks")


def rebuild_lexical_index(conn: psycopg.Connection) -> None:
    """``rebuild_postings``, then the page postings and page lengths summed from them: for a
    change of how chunks are tokenised once pages are indexed too."""
    rebuild_postings(conn)
    conn.execute("TRUNCATE page_postings")
    conn.execute("""INSERT INTO page_postings (namespace, source_ref, lexeme, tf)
                    SELECT c.namespace, c.source_ref, p.lexeme, sum(p.tf)
                    FROM postings p JOIN chunks c ON c.id = p.chunk_id
                    GROUP BY 1, 2, 3""")
    conn.execute("""UPDATE sources s SET lexeme_count = coalesce(c.n, 0)
                    FROM sources s2 LEFT JOIN (
                        SELECT namespace, source_ref, sum(lexeme_count) AS n FROM chunks
                        GROUP BY namespace, source_ref) c
                      ON c.namespace = s2.namespace AND c.source_ref = s2.ref
                    WHERE s.namespace = s2.namespace AND s.ref = s2.ref""")
    conn.execute("ANALYZE page_postings")


_MIGRATION_LOCK = 0x6B62_6374_6C00  # "kbctl\0": one lock id for schema changes
# How long a schema change waits for a table another session holds (a psql left inside
# BEGIN, a reader's open transaction) before it gives up and says so: without a bound a
# cron job's command waited for ever. Another kbctl changing the schema is waited for
# without it (its advisory lock is taken first).
MIGRATION_LOCK_WAIT = "30s"

MIGRATIONS: list[Migration] = [
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
        -- No foreign key and no primary key on purpose: postings are written and deleted
        -- only together with their chunk, in the same transaction (KnowledgeStore), and
        -- per-row constraint checks would dominate the cost of a bulk load.
        CREATE TABLE postings (
            namespace text NOT NULL,
            lexeme    text NOT NULL,
            chunk_id  bigint NOT NULL,
            tf        integer NOT NULL,
            dl        integer NOT NULL,
            impact    real NOT NULL
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
    (
        2,
        "embedding cache",
        """
        -- Vectors keyed by the embedder identity and sha256 of the exact input, so
        -- re-ingest, resync and re-embed never pay twice for the same text.
        CREATE TABLE embedding_cache (
            identity   text NOT NULL,
            input_hash bytea NOT NULL,
            embedding  vector NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (identity, input_hash)
        );
        """,
    ),
    (
        3,
        "lexeme document frequencies",
        """
        -- BM25's document frequency per (namespace, lexeme), kept in step with postings by
        -- the same statements that write and delete them: counting a common lexeme's
        -- postings at query time costs tens of milliseconds in a 100k-chunk namespace.
        CREATE TABLE lexeme_stats (
            namespace text NOT NULL,
            lexeme    text NOT NULL,
            df        integer NOT NULL,
            PRIMARY KEY (namespace, lexeme)
        );
        INSERT INTO lexeme_stats (namespace, lexeme, df)
            SELECT namespace, lexeme, count(*) FROM postings GROUP BY namespace, lexeme;
        """,
    ),
    (
        4,
        "rerank score cache",
        """
        -- Cross-encoder scores keyed by the reranker identity and sha256 of the exact
        -- (query, passage) pair: an eval suite re-run against an unchanged KB pays nothing.
        CREATE TABLE rerank_cache (
            identity   text NOT NULL,
            pair_hash  bytea NOT NULL,
            score      double precision NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (identity, pair_hash)
        );
        """,
    ),
    (5, "identifier-aware, field-weighted postings", rebuild_postings),
    (
        6,
        "rerank cache age index",
        """
        -- The rerank cache grows with every new question; rows past their age are pruned
        -- on each write, which this index keeps cheap.
        CREATE INDEX rerank_cache_created ON rerank_cache (created_at);
        """,
    ),
    (
        7,
        "embedding cache last use",
        """
        -- Cached vectors are kept while they are used: each hit renews used_at (at most
        -- daily), and rows unused past their age are pruned on each write.
        ALTER TABLE embedding_cache ADD COLUMN used_at timestamptz NOT NULL DEFAULT now();
        CREATE INDEX embedding_cache_used ON embedding_cache (used_at);
        """,
    ),
    (
        8,
        "page vectors",
        """
        -- A page's vector is the mean of its chunks' vectors (its centroid): hybrid search
        -- blends it into each chunk's similarity. Kept in step with the chunks on every write.
        ALTER TABLE sources ADD COLUMN embedding vector;
        UPDATE sources s SET embedding = c.centroid
        FROM (SELECT namespace, source_ref, avg(embedding) AS centroid FROM chunks
              WHERE embedding IS NOT NULL GROUP BY namespace, source_ref) c
        WHERE s.namespace = c.namespace AND s.ref = c.source_ref;
        """,
    ),
    (
        9,
        "page postings",
        """
        -- A page's term frequencies (its chunks' summed) and its length: hybrid search
        -- blends the page's BM25 into each chunk's text score. Kept in step on every write.
        CREATE TABLE page_postings (
            namespace  text NOT NULL,
            source_ref text NOT NULL,
            lexeme     text NOT NULL,
            tf         real NOT NULL,
            PRIMARY KEY (namespace, source_ref, lexeme)
        );
        ALTER TABLE sources ADD COLUMN lexeme_count integer NOT NULL DEFAULT 0;
        ALTER TABLE namespace_stats ADD COLUMN page_count bigint NOT NULL DEFAULT 0;
        INSERT INTO page_postings (namespace, source_ref, lexeme, tf)
        SELECT c.namespace, c.source_ref, p.lexeme, sum(p.tf)
        FROM postings p JOIN chunks c ON c.id = p.chunk_id
        GROUP BY 1, 2, 3;
        UPDATE sources s SET lexeme_count = c.n
        FROM (SELECT namespace, source_ref, sum(lexeme_count) AS n FROM chunks
              GROUP BY namespace, source_ref) c
        WHERE s.namespace = c.namespace AND s.ref = c.source_ref;
        UPDATE namespace_stats n SET page_count = (
            SELECT count(DISTINCT c.source_ref) FROM chunks c WHERE c.namespace = n.namespace);
        ANALYZE page_postings;
        """,
    ),
    (10, "headings indexed without signatures' parameter lists", rebuild_lexical_index),
    (11, "words joined by slashes indexed apart as well", rebuild_lexical_index),
    (12, "titles' and heading paths' term frequencies normalised by their length",
     rebuild_lexical_index),
    (
        13,
        "chunks written without a per-row check of their page, pages found by key",
        """
        -- Each written chunk's foreign-key check looked its page up with a plan the server
        -- makes once per connection, from the table's statistics at that moment. On a first
        -- load it could read every page row of the namespace per chunk: 7 million index
        -- entries for a 530-page site, growing with pages x chunks. A page's chunks are
        -- written only by store.documents, in the transaction that writes the page, and
        -- deleted before it, as postings are (which never had a key): the check guarded
        -- nothing the code does not.
        ALTER TABLE chunks DROP CONSTRAINT IF EXISTS chunks_namespace_source_ref_fkey;
        -- The definition index, led by the namespace, was also the young statistics' pick
        -- for a batch's updates of its pages by namespace and ref (every page row read, each
        -- batch). By definition alone it answers only what it is for (a definition's pages)
        -- and leaves a namespace and a ref to the primary key.
        DROP INDEX IF EXISTS sources_def;
        CREATE INDEX sources_def ON sources (def_id);
        """,
    ),
]


def migrate(conn: psycopg.Connection, migrations: list[Migration] | None = None, *,
            applied: set[int] | None = None) -> None:
    """Apply the given migrations (default: the core KB schema) that are not yet recorded.

    Other parts of kbctl (memory) keep their own lists in their own version range and call
    this with them; all share one ``kbctl_migrations`` table. A no-op costs one query, or
    none when the caller read the ``applied`` versions already (``applied_versions``).
    """
    wanted = MIGRATIONS if migrations is None else migrations
    upgrading: tuple[int, str] = (0, "")
    try:
        if applied is None:
            applied = applied_versions(conn) or set()
        _refuse_newer(applied, wanted)
        if {v for v, _, _ in wanted} <= applied:
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
        for version, name, sql in wanted:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                if version in _applied(conn):  # done earlier, or by another process
                    continue
                conn.execute(f"SET LOCAL lock_timeout = '{MIGRATION_LOCK_WAIT}'")
                upgrading = (version, name)
                if callable(sql):
                    sql(conn)
                else:
                    conn.execute(sql)
                conn.execute(
                    "INSERT INTO kbctl_migrations (version, name) VALUES (%s, %s)",
                    (version, name),
                )
    except psycopg.errors.LockNotAvailable as exc:
        version, name = upgrading
        raise DatabaseError(
            f"schema upgrade {version} ({name}) waited {MIGRATION_LOCK_WAIT} for a table "
            "another session holds, and was not made",
            hint="end the session that holds kbctl's tables (in pg_stat_activity, one 'idle "
                 "in transaction': a psql left inside BEGIN, say), then run the command "
                 "again") from exc
    except psycopg.errors.InsufficientPrivilege as exc:
        raise DatabaseError(
            f"schema migration failed: {str(exc).strip().splitlines()[0]}",
            hint="making or upgrading kbctl's tables needs a role that may create them in "
                 "this database (its owner): run one kbctl write (an ingest) as that role, "
                 "then this command") from exc
    except psycopg.Error as exc:
        raise DatabaseError(f"schema migration failed: {str(exc).strip()}") from exc


def _refuse_newer(applied: set[int], wanted: list[Migration]) -> None:
    """A schema written by a newer kbctl (a CI cache shared with a newer job) is refused:
    this version would write rows without what the newer one keeps beside them (say, page
    postings), and the newer one would later read them as complete. Each list owns its
    hundred of versions (the knowledge base 1-99, memory 100-199)."""
    known = max(v for v, _, _ in wanted)
    band = known // 100 * 100
    newer = sorted(v for v in applied if known < v < band + 100)
    if newer:
        raise DatabaseError(
            f"this database was written by a newer kbctl (schema version {newer[-1]}; this "
            f"kbctl knows up to {known})",
            hint="upgrade kbctl (pip install -U kbctl), or point --data-dir / --db at "
                 "another database")


def has_schema(conn: psycopg.Connection) -> bool:
    """Whether kbctl ever made its tables in this database (on its ``search_path``)."""
    exists = conn.execute("SELECT to_regclass('kbctl_migrations') IS NOT NULL").fetchone()
    return bool(exists and exists[0])


def applied_versions(conn: psycopg.Connection) -> set[int] | None:
    """The schema versions recorded in this database; None when kbctl never made its
    tables here. One statement: every command's connection asks."""
    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
        # inside the caller's transaction a missing table would abort it: look first
        return _applied(conn) if has_schema(conn) else None
    try:
        return _applied(conn)
    except psycopg.errors.UndefinedTable:
        return None


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
