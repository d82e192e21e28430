"""The documents of a knowledge base: sources and their chunks with their postings and
vectors, written one batch in one transaction, read back, deleted; a first load's postings
indexes, durability, and the space their replaced rows leave."""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import psycopg
from psycopg import sql

from . import lexical
from .records import ChunkRecord, SourceRecord
from .vectors import vector_param

_T = TypeVar("_T")
#: Tries of one write before a deadlock PostgreSQL keeps choosing it for is an error.
DEADLOCK_ATTEMPTS = 5
# ``reclaim``: a table is vacuumed once its dead rows pass this share of its live ones (as
# autovacuum's default scale factor), and this many.
DEAD_SHARE = 0.2
MIN_DEAD_ROWS = 1000
# ``reclaim``: a table is analysed once the rows written since its last analysis pass this
# share of its live ones (as autovacuum's default scale factor), and this many.
CHANGED_SHARE = 0.1
MIN_CHANGED_ROWS = 1000
VACUUM_LOCK_WAIT_S = 5
# A knowledge base with fewer postings than this is given its first load: its postings
# indexes are built once at the end of the run (``defer_postings_indexes``).
FIRST_LOAD_POSTINGS = 50_000
# The memory a first load's postings indexes are built with (``build_postings_indexes``).
INDEX_BUILD_MEMORY = "256MB"


class Replaced(NamedTuple):
    """What a write of sources did: chunks written, and old chunks it took out (the earlier
    versions of the sources it replaced), so a report's written and deleted counts add up
    to the change in the knowledge base's size."""

    written: int
    removed: int


class _Gone(NamedTuple):
    """Deleted postings' lexemes, in order, and how many documents each was in (negative)."""

    lexemes: list[str]
    counts: list[int]


class Documents:
    """The documents of one database, fenced by namespace. A source's chunks are always
    replaced in one transaction, so readers see the old version or the new one."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def get(self, namespace: str, ref: str) -> SourceRecord | None:
        row = self.conn.execute(
            """SELECT namespace, ref, kind, url, title, content_hash, def_id, chunk_count,
                      meta, fetched_at
               FROM sources WHERE namespace = %s AND ref = %s""",
            (namespace, ref),
        ).fetchone()
        return SourceRecord(*row) if row else None

    def stored(self, namespace: str, def_id: str | None = None) -> list[SourceRecord]:
        rows = self.conn.execute(
            """SELECT namespace, ref, kind, url, title, content_hash, def_id, chunk_count,
                      meta, fetched_at
               FROM sources
               WHERE namespace = %(ns)s AND (%(def)s::text IS NULL OR def_id = %(def)s)
               ORDER BY ref""",
            {"ns": namespace, "def": def_id},
        ).fetchall()
        return [SourceRecord(*r) for r in rows]

    def replace(self, source: SourceRecord, chunks: Sequence[ChunkRecord]) -> Replaced:
        """Write a source and its chunks atomically."""
        return self.replace_many(source.namespace, [(source, chunks)])

    def replace_many(self, namespace: str,
                        items: Sequence[tuple[SourceRecord, Sequence[ChunkRecord]]],
                        fields: Mapping[str, Sequence[str]] | None = None) -> Replaced:
        """Write several sources with their chunks in ONE transaction and a handful of
        statements.

        Each source's old chunks and postings go in the same transaction, so a shorter new
        version loses its tail and a crash leaves every source of the batch at its old
        version. Batching keeps a 500-page site from paying per-statement round trips.
        ``fields``: the chunks' indexed fields as ``lexical.kb_field_arrays`` gives them, in
        the items' order, when the caller analysed them already (the ingest pipeline does,
        as a stage of its own); else they are analysed here.
        """
        if not items:
            return Replaced(0, 0)
        refs = [src.ref for src, _ in items]
        if len(set(refs)) != len(refs):
            raise ValueError("replace_many: a batch must not repeat a ref")
        if fields is None:
            chunks = [c for _, cs in items for c in cs]
            fields = lexical.kb_field_arrays([c.text for c in chunks], [c.meta for c in chunks])
        count = sum(len(chunks) for _, chunks in items)
        if any(len(values) != count for values in fields.values()):
            raise ValueError("replace_many: one analysed field per chunk")
        return self._atomically(lambda: self._replace(namespace, refs, items, fields))

    def _atomically(self, work: Callable[[], _T]) -> _T:
        """``work`` in one transaction, run again when PostgreSQL ends it to break a
        deadlock: two writers of one namespace each hold words' document counts the
        other's batch needs (its deleted pages' words, then its new ones)."""
        for attempt in range(1, DEADLOCK_ATTEMPTS):
            try:
                with self.conn.transaction():
                    return work()
            except psycopg.errors.DeadlockDetected:
                time.sleep(random.uniform(0.02, 0.1) * attempt)  # apart, not in step
        with self.conn.transaction():  # the last try: its deadlock is the caller's error
            return work()

    def _replace(self, namespace: str, refs: list[str],
                 items: Sequence[tuple[SourceRecord, Sequence[ChunkRecord]]],
                 fields: Mapping[str, Sequence[str]]) -> Replaced:
        self._ensure_stats_row(namespace)
        old_n, old_len, old_pages, gone = self._delete_chunks(namespace, refs, counted=False)
        self.conn.execute(
            """INSERT INTO sources (namespace, ref, def_id, kind, url, title, content_hash,
                                    fetched_at, chunk_count, meta)
               SELECT %s, r, d, k, u, t, h, now(), n, m
               FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
                           %s::text[], %s::int[], %s::jsonb[]) AS x(r, d, k, u, t, h, n, m)
               ON CONFLICT (namespace, ref) DO UPDATE SET
                 def_id = excluded.def_id, kind = excluded.kind, url = excluded.url,
                 title = excluded.title, content_hash = excluded.content_hash,
                 fetched_at = excluded.fetched_at, chunk_count = excluded.chunk_count,
                 meta = excluded.meta, lexeme_count = 0""",
            (namespace, refs, [s.def_id for s, _ in items], [s.kind for s, _ in items],
             [s.url for s, _ in items], [s.title for s, _ in items],
             [s.content_hash for s, _ in items], [len(c) for _, c in items],
             [json.dumps(s.meta, default=str) for s, _ in items]),
        )
        written, new_len = self._insert_chunks(namespace, items, fields, gone)
        set_page_vectors(self.conn, namespace, refs)
        new_pages = sum(1 for _, chunks in items if chunks)
        self.conn.execute(
            """UPDATE namespace_stats
               SET chunk_count = chunk_count + %s, total_len = total_len + %s,
                   page_count = page_count + %s
               WHERE namespace = %s""",
            (written - old_n, new_len - old_len, new_pages - old_pages, namespace),
        )
        return Replaced(written, old_n)

    def touch(self, namespace: str,
                      items: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Mark unchanged sources as fetched now, merging fresh fetch metadata (ETag…)."""
        if not items:
            return
        self.conn.execute(
            """UPDATE sources s SET fetched_at = now(), meta = s.meta || u.m
               FROM unnest(%s::text[], %s::jsonb[]) AS u(r, m)
               WHERE s.namespace = %s AND s.ref = u.r""",
            ([r for r, _ in items], [json.dumps(m, default=str) for _, m in items], namespace),
        )

    def delete(self, namespace: str, ref: str) -> int:
        """Delete a source with its chunks; returns the number of chunks removed."""
        return self._atomically(lambda: self._delete_one(namespace, ref))

    def _delete_one(self, namespace: str, ref: str) -> int:
        self._ensure_stats_row(namespace)
        n, length, pages, _ = self._delete_chunks(namespace, [ref])
        self.conn.execute("DELETE FROM sources WHERE namespace = %s AND ref = %s",
                          (namespace, ref))
        self.conn.execute(
            """UPDATE namespace_stats
               SET chunk_count = chunk_count - %s, total_len = total_len - %s,
                   page_count = page_count - %s
               WHERE namespace = %s""",
            (n, length, pages, namespace),
        )
        return n

    def _ensure_stats_row(self, namespace: str) -> None:
        self.conn.execute(
            "INSERT INTO namespace_stats (namespace) VALUES (%s) ON CONFLICT DO NOTHING",
            (namespace,),
        )

    def _delete_chunks(self, namespace: str, refs: Sequence[str], *, counted: bool = True
                       ) -> tuple[int, int, int, _Gone]:
        """Delete the chunks of ``refs`` and their chunk and page postings; returns (count,
        total length, pages that had chunks, and unless ``counted`` the document frequencies
        the deleted postings took away, for the caller to change with its new postings'
        in one write: ``lexical.kb_write_postings_ctes``)."""
        postings = (lexical.kb_delete_postings_ctes(chunks="gone") if counted
                    else lexical.kb_gone_lexemes_ctes(chunks="gone"))
        lexemes = ("NULL::text[], NULL::int[]" if counted else
                   "(SELECT array_agg(lexeme ORDER BY lexeme) FROM g), "
                   "(SELECT array_agg(n ORDER BY lexeme) FROM g)")
        row = self.conn.execute(
            f"""WITH gone AS (DELETE FROM chunks WHERE namespace = %(ns)s
                                AND source_ref = ANY(%(refs)s)
                              RETURNING id, source_ref, lexeme_count),
                {postings},
                {lexical.kb_delete_page_postings_cte(chunks="gone")}
               SELECT count(*), coalesce(sum(lexeme_count), 0), count(DISTINCT source_ref),
                      {lexemes}
               FROM gone""",
            {"ns": namespace, "refs": list(refs)},
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2]), _Gone(row[3] or [], row[4] or [])

    def _insert_chunks(self, namespace: str,
                       items: Sequence[tuple[SourceRecord, Sequence[ChunkRecord]]],
                       fields: Mapping[str, Sequence[str]], gone: _Gone) -> tuple[int, int]:
        """Insert chunks and their postings in one statement, tokenising each text once,
        and change the document frequencies by theirs less the ``gone`` postings'. The
        arrays of text go in binary: quoting each element for an array literal was a tenth
        of the writer's CPU.

        Returns (chunks written, their total lexeme count)."""
        refs = [src.ref for src, chunks in items for _ in chunks]
        chunks = [c for _, cs in items for c in cs]
        changed = {"ns": namespace, "gone_lexemes": gone.lexemes, "gone_counts": gone.counts}
        if not chunks:
            if gone.lexemes:
                self.conn.execute(lexical.kb_add_document_frequencies_sql(), changed)
            return 0, 0
        row = self.conn.execute(
            f"""WITH src AS (
                    SELECT * FROM unnest(
                        %(refs)b::text[], %(ords)b::int[], %(texts)b::text[],
                        %(metas)b::text[]::jsonb[], %(vecs)b::vector[], %(t)b::text[],
                        %(x)b::text[], %(tt)b::text[], %(tx)b::text[], %(ht)b::text[],
                        %(hx)b::text[])
                        AS u(r, o, raw, m, e, t, x, tt, tx, ht, hx)),
                {lexical.lexeme_ctes("r, o", lexical.KB_FIELDS)},
                ins AS (
                    INSERT INTO chunks (namespace, source_ref, ordinal, text, meta, embedding,
                                        lexeme_count)
                    SELECT %(ns)s, src.r, src.o, src.raw, src.m, src.e,
                           coalesce(len.dl, 0)
                    FROM src LEFT JOIN len USING (r, o)
                    RETURNING id, source_ref, ordinal, lexeme_count),
                {lexical.kb_write_postings_ctes(
                    chunks="ins", on="ins.source_ref = lex.r AND ins.ordinal = lex.o")},
                {lexical.kb_write_page_postings_ctes(chunks="ins")}
                SELECT count(*), coalesce(sum(lexeme_count), 0) FROM ins""",
            {**changed, "refs": refs, "ords": [c.ordinal for c in chunks],
             "texts": [c.text for c in chunks],
             "metas": [json.dumps(c.meta, default=str) for c in chunks],
             "vecs": [vector_param(c.embedding) for c in chunks],
             **{key: list(values) for key, values in fields.items()}},
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def defer_postings_indexes(self, namespace: str) -> bool:
        """Before a write run into ``namespace``: when it is a first load (the namespace
        holds nothing yet, and the knowledge base next to no postings: fewer than
        ``FIRST_LOAD_POSTINGS``, which a search scans as fast as it reads an index), drop
        the postings indexes (``lexical.KB_DEFERRED_INDEXES``) so that the run's postings
        are written without them, and ``build_postings_indexes`` builds them once when it
        ends; else make sure they exist (a run that died first left them out). True when
        they were dropped. The lock that takes is waited for a moment at most: behind a
        reader, the run maintains them as it goes."""
        few = f"SELECT count(*) < {FIRST_LOAD_POSTINGS} FROM (SELECT FROM postings LIMIT " \
              f"{FIRST_LOAD_POSTINGS}) AS p"
        row = self.conn.execute(
            f"SELECT NOT EXISTS (SELECT 1 FROM chunks WHERE namespace = %s) AND ({few})",
            (namespace,)).fetchone()
        if row is not None and row[0]:
            tables = sorted({index.table for index in lexical.KB_DEFERRED_INDEXES.values()})
            try:
                with self.conn.transaction():
                    self.conn.execute("SET LOCAL lock_timeout = '1s'")
                    self.conn.execute(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE")
                    again = self.conn.execute(few).fetchone()
                    if again is not None and again[0]:
                        for index in lexical.KB_DEFERRED_INDEXES.values():
                            self.conn.execute(index.drop)
                        return True
            except psycopg.errors.LockNotAvailable:
                pass
        self.build_postings_indexes()
        return False

    def build_postings_indexes(self) -> None:
        """Build the postings indexes a first load deferred (or a run that died left out);
        a no-op without a lock when they exist."""
        row = self.conn.execute(
            "SELECT array_agg(n) FROM unnest(%s::text[]) AS n WHERE to_regclass(n) IS NULL",
            (list(lexical.KB_DEFERRED_INDEXES),)).fetchone()
        for name in (row[0] if row is not None and row[0] else []):
            index = lexical.KB_DEFERRED_INDEXES[name]
            with self.conn.transaction():
                # two first loads that end together build one after the other, and the
                # second finds the index made: two CREATE INDEX IF NOT EXISTS of one name at
                # once fail one of them, and a primary key has no IF NOT EXISTS. A table
                # lock (self-exclusive, writers still pass) rather than an advisory one:
                # taking it refreshes what this connection knows of the catalog
                self.conn.execute(f"LOCK TABLE {index.table} IN SHARE UPDATE EXCLUSIVE MODE")
                made = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                                         (name,)).fetchone()
                if made is not None and made[0]:
                    continue
                # the sort in memory: a quarter less CPU than the server's default 64 MB
                self.conn.execute(f"SET LOCAL maintenance_work_mem = '{INDEX_BUILD_MEMORY}'")
                self.conn.execute(index.create)

    def make_durable(self) -> None:
        """Wait until everything committed so far is on disk. Writes commit without waiting
        for the WAL flush (``store.db.connect``), so a server killed a moment after a run
        could lose the last sources it reported written; one commit that waits flushes the
        WAL up to itself, every earlier commit of every connection included.

        The transaction must write WAL of its own: PostgreSQL commits one that only took a
        transaction id without waiting, whatever ``synchronous_commit`` says. A
        transactional logical message is the smallest such record any role may write."""
        with self.conn.transaction():
            self.conn.execute("SET LOCAL synchronous_commit = on")
            self.conn.execute(
                "SELECT pg_catalog.pg_logical_emit_message(true, 'kbctl', 'durable')")

    def has_chunks(self, namespace: str) -> bool:
        """Whether the namespace holds any chunk (one index probe, not a count)."""
        row = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM chunks WHERE namespace = %s)", (namespace,)
        ).fetchone()
        return bool(row and row[0])

    def counts(self, namespace: str) -> tuple[int, int]:
        """(sources, chunks) in a namespace."""
        row = self.conn.execute(
            """SELECT (SELECT count(*) FROM sources WHERE namespace = %(ns)s),
                      (SELECT count(*) FROM chunks WHERE namespace = %(ns)s)""",
            {"ns": namespace},
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def chunk_count(self) -> int:
        """Chunks in the whole KB, every namespace."""
        row = self.conn.execute("SELECT count(*) FROM chunks").fetchone()
        return int(row[0]) if row else 0

    def top_sections(self, namespace: str) -> list[tuple[str, str, str | None]]:
        """(heading, url, anchor) of each page and top-level section (heading path of at
        most two levels), once per heading, ordered by source then position.

        The heading is the section's own (the last of its path), the source title for text
        before any heading; a section's first anchored chunk stands for it.
        """
        rows = self.conn.execute(
            """WITH c AS (
                   SELECT c.source_ref, c.ordinal, c.meta->>'anchor' AS anchor,
                          coalesce(nullif(c.meta->'headingPath'->>-1, ''), s.title) AS heading,
                          coalesce(nullif(c.meta->>'url', ''), s.url) AS url
                   FROM chunks c
                   JOIN sources s ON s.namespace = c.namespace AND s.ref = c.source_ref
                   WHERE c.namespace = %s
                     AND CASE jsonb_typeof(c.meta->'headingPath')
                           WHEN 'array' THEN jsonb_array_length(c.meta->'headingPath')
                           ELSE 0 END <= 2),
               firsts AS (
                   SELECT DISTINCT ON (source_ref, heading) *
                   FROM c ORDER BY source_ref, heading, anchor IS NULL, ordinal)
               SELECT heading, url, anchor FROM firsts ORDER BY source_ref, ordinal""",
            (namespace,),
        ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def chunk_texts(self, after_id: int, limit: int, *, table: str = "chunks"
                    ) -> list[tuple[int, str, str]]:
        """(id, text, title) of chunks in id order, for re-embedding in batches.

        ``table`` is ``chunks`` or ``memory_chunks``: agent memory shares the KB's embedder,
        so a re-embed covers both."""
        title = "coalesce(c.meta ->> 'title', '')" if table == "chunks" else "c.path"
        if table not in ("chunks", "memory_chunks"):
            raise ValueError(table)
        if not table_exists(self.conn, table):
            return []
        return self.conn.execute(
            f"""SELECT c.id, c.text, {title} FROM {table} c
                WHERE c.id > %s ORDER BY c.id LIMIT %s""",
            (after_id, limit),
        ).fetchall()

    def page_texts(self, after: tuple[str, str], pages: int, *,
                         namespace: str | None = None
                         ) -> list[tuple[str, str, str, list[tuple[int, str]]]]:
        """Up to ``pages`` pages after ``after`` ((namespace, ref) order), each as
        (namespace, ref, title, its chunks' (id, text) in order): what a page's embedding
        units are made of. ``namespace``: that namespace's pages only."""
        rows = self.conn.execute(
            """WITH p AS (SELECT namespace, ref, title FROM sources
                          WHERE (namespace, ref) > (%(ns)s, %(ref)s)
                            AND (%(only)s::text IS NULL OR namespace = %(only)s)
                          ORDER BY namespace, ref LIMIT %(pages)s)
               SELECT p.namespace, p.ref, p.title, c.id, c.text
               FROM p JOIN chunks c ON c.namespace = p.namespace AND c.source_ref = p.ref
               ORDER BY p.namespace, p.ref, c.ordinal""",
            {"ns": after[0], "ref": after[1], "only": namespace, "pages": pages},
        ).fetchall()
        out: list[tuple[str, str, str, list[tuple[int, str]]]] = []
        for ns, ref, title, chunk_id, text in rows:
            if not out or out[-1][:2] != (ns, ref):
                out.append((ns, ref, title, []))
            out[-1][3].append((chunk_id, text))
        return out

    def reclaim(self) -> list[str]:
        """Vacuum (and analyse) the tables whose dead rows, left by updates and deletes,
        pass ``DEAD_SHARE`` of their live ones, and analyse those whose rows written since
        their last analysis pass ``CHANGED_SHARE``; the tables so kept.

        Why: the embedded server lives for a command and a few seconds after it, too short
        for autovacuum, which never ran, so a nightly resync grew the database for good
        (~15 MB a run on the Rust book, 433 → 814 MB over 25 runs; 1.7M dead postings
        against 556k live); and the planner went on reading the statistics of the empty
        tables a knowledge base was made with, so every search after a first load scanned a
        page's postings for its words instead of looking them up (the Rust book's 53-case
        eval: 1.25 s, 0.72 s once analysed). A server of yours does this on its own and
        rarely gets here. A failure is left to the next run: the work it follows is done
        and committed. A table another session holds a conflicting lock on (an index being
        built, another vacuum) is passed over after ``VACUUM_LOCK_WAIT_S``: waiting, the
        run never ended.
        """
        # this run's own counts too, which reach the statistics once the session idles
        # (PostgreSQL before 15 has no such call: the counts of earlier runs decide)
        with contextlib.suppress(psycopg.Error):
            self.conn.execute("SELECT pg_stat_force_next_flush()")
        try:
            due = self.conn.execute(
                """SELECT relname, dead FROM (
                       SELECT relname,
                              n_dead_tup >= %(dead_rows)s
                                  AND n_dead_tup > %(dead_share)s * n_live_tup AS dead,
                              n_mod_since_analyze >= %(changed_rows)s
                                  AND n_mod_since_analyze > %(changed_share)s * n_live_tup
                                  AS changed
                       FROM pg_stat_user_tables WHERE schemaname = current_schema()) t
                   WHERE dead OR changed ORDER BY relname""",
                {"dead_rows": MIN_DEAD_ROWS, "dead_share": DEAD_SHARE,
                 "changed_rows": MIN_CHANGED_ROWS, "changed_share": CHANGED_SHARE}).fetchall()
        except psycopg.Error:
            return []
        done = []
        try:
            self.conn.execute(f"SET lock_timeout = '{VACUUM_LOCK_WAIT_S}s'")
            for name, dead in due:
                with contextlib.suppress(psycopg.errors.LockNotAvailable):
                    self.conn.execute(sql.SQL("VACUUM (ANALYZE) {}" if dead else "ANALYZE {}"
                                              ).format(sql.Identifier(name)))
                    done.append(name)
        except psycopg.Error:
            pass  # the next run tries again
        finally:
            with contextlib.suppress(psycopg.Error):
                self.conn.execute("RESET lock_timeout")
        return done


def set_page_vectors(conn: psycopg.Connection, namespace: str | None = None,
                     refs: Sequence[str] = ()) -> None:
    """Each source's vector: the mean of its chunks' (NULL without any), for the sources
    ``refs`` of ``namespace``, or for every source when no namespace is given."""
    mean = """UPDATE sources s SET embedding = (
                      SELECT avg(c.embedding) FROM chunks c
                      WHERE c.namespace = s.namespace AND c.source_ref = s.ref)"""
    if namespace is None:
        conn.execute(mean)
    else:
        conn.execute(mean + " WHERE s.namespace = %s AND s.ref = ANY(%s)",
                     (namespace, list(refs)))


def table_exists(conn: psycopg.Connection, name: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    return bool(row and row[0])
