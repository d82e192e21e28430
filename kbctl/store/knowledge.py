"""KnowledgeStore: every read and write of documents and chunks, fenced by namespace."""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, NamedTuple, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ..embed.base import NO_EMBEDDER, EmbedderIdentity
from ..errors import DatabaseError, EmbedderMismatch, LockBusy
from . import lexical, ranking, spelling
from .db import bounded_read
from .records import ChunkRecord, NamespaceStatus, ScoredChunk, SourceDef, SourceRecord
from .thesaurus import BUILT_IN, Thesaurus
from .vectors import vector_param, vector_text

_T = TypeVar("_T")
#: Tries of one write before a deadlock PostgreSQL keeps choosing it for is an error.
DEADLOCK_ATTEMPTS = 5
# ``reclaim``: a table is vacuumed once its dead rows pass this share of its live ones (as
# autovacuum's default scale factor), and this many.
DEAD_SHARE = 0.2
MIN_DEAD_ROWS = 1000
VACUUM_LOCK_WAIT_S = 5
# A knowledge base with fewer postings than this is given its first load: its postings
# indexes are built once at the end of the run (``defer_postings_indexes``).
FIRST_LOAD_POSTINGS = 50_000
# The memory a first load's postings indexes are built with (``build_postings_indexes``).
INDEX_BUILD_MEMORY = "256MB"

_EMBEDDER_KEY = "embedder"
# Each cache's age column: a vector ages from its last use, a rerank score from its write.
_CACHE_AGE = {"embedding_cache": "used_at", "rerank_cache": "created_at"}


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


class KnowledgeStore:
    """A knowledge base in one PostgreSQL database.

    The store owns SQL; callers hand it records and get records back. A source's chunks
    are always replaced in one transaction, so readers see the old version or the new one.
    """

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    # --- embedder identity ------------------------------------------------------------

    def embedder_identity(self) -> EmbedderIdentity | None:
        """The embedder this KB was built with; None while the KB has never been written."""
        return self.embedder_state()[0]

    def bind_embedder(self, identity: EmbedderIdentity) -> EmbedderIdentity:
        """Record ``identity`` on a fresh KB, or check it matches the recorded one. A KB
        that holds nothing yet (its first write failed: no key, a provider down) takes
        the new one instead: there is nothing to mix. Writes only what changes: a role
        that may only read opens the KB (and its memory) as long as nothing must."""
        if self.embedder_identity() == identity:
            return identity
        with self.conn.transaction():
            inserted = self.conn.execute(
                "INSERT INTO kb_meta (key, value) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (_EMBEDDER_KEY, Jsonb(_identity_json(identity))),
            ).rowcount
            if inserted and identity.dimensions > 0:
                self._set_vector_dimensions(identity.dimensions)
            recorded = self.embedder_identity()
            if recorded != identity and self.holds_nothing():
                self.conn.execute("UPDATE kb_meta SET value = %s WHERE key = %s",
                                  (Jsonb(_identity_json(identity)), _EMBEDDER_KEY))
                if identity.dimensions > 0:
                    self._set_vector_dimensions(identity.dimensions)
                recorded = identity
        assert recorded is not None
        if recorded != identity:
            raise embedder_mismatch(recorded, identity)
        return recorded

    def holds_nothing(self) -> bool:
        """No chunk, of the knowledge base or of memory, was ever kept."""
        tables = ["chunks"]
        memory = self.conn.execute("SELECT to_regclass('memory_chunks')").fetchone()
        if memory and memory[0] is not None:  # memory's tables come with its first use
            tables.append("memory_chunks")
        return not any((self.conn.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
                        .fetchone() or (False,))[0] for table in tables)

    def embedder_state(self) -> tuple[EmbedderIdentity | None, str | None]:
        """The KB's embedder and the base URL it was last reached at (recorded with it, so a
        re-embed with another embedder forgets it), read at once: what a long-lived reader
        compares to know it must resolve its embedder again."""
        row = self.conn.execute(
            "SELECT value FROM kb_meta WHERE key = %s", (_EMBEDDER_KEY,)).fetchone()
        if not row:
            return None, None
        v = row[0]
        return (EmbedderIdentity(v["provider"], v["model"], int(v["dimensions"])),
                v.get("baseUrl"))

    def record_embedder_endpoint(self, base_url: str | None, *,
                                 allow_private_network: bool = False) -> None:
        """Remember (or, with None, forget) the embedder's base URL beside its identity,
        and whether it was reached with ``--allow-private-network`` (as a web source's
        definition remembers it), so later commands may reach it again without the flag."""
        self.conn.execute(
            """UPDATE kb_meta SET value = CASE WHEN %(url)s::text IS NULL
                                              THEN value - 'baseUrl' - 'privateNetwork'
                                         WHEN %(private)s
                                              THEN value || jsonb_build_object(
                                                  'baseUrl', %(url)s::text,
                                                  'privateNetwork', true)
                                         ELSE (value - 'privateNetwork')
                                              || jsonb_build_object('baseUrl', %(url)s::text)
                                         END
               WHERE key = %(key)s""",
            {"url": base_url, "key": _EMBEDDER_KEY, "private": allow_private_network})

    def endpoint_opt_in(self) -> bool:
        """Whether the recorded embedder endpoint was reached with the private-network
        opt-in."""
        row = self.conn.execute(
            "SELECT value -> 'privateNetwork' FROM kb_meta WHERE key = %s",
            (_EMBEDDER_KEY,)).fetchone()
        return bool(row and row[0] is True)

    # --- source definitions (what resync re-runs) ---------------------------------------

    def record_def(self, d: SourceDef) -> None:
        self.conn.execute(
            """INSERT INTO source_defs (namespace, id, kind, target, options)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (namespace, id) DO UPDATE
                 SET kind = excluded.kind, target = excluded.target,
                     options = excluded.options""",
            (d.namespace, d.id, d.kind, d.target, Jsonb(d.options)),
        )

    def forget_def(self, namespace: str, def_id: str) -> bool:
        """Remove a recorded definition (its pages stay); False when there was none."""
        return self.conn.execute("DELETE FROM source_defs WHERE namespace = %s AND id = %s",
                                 (namespace, def_id)).rowcount > 0

    def begin_def(self, namespace: str, def_id: str, interrupted: dict[str, Any]) -> None:
        """Stamp a recorded definition's run as begun, with ``interrupted`` as its error
        until ``finish_def`` records how it ended: a run killed on the way (SIGKILL, a
        lost database) shows in ``status`` as a failed run, not as the one before it."""
        self.conn.execute(
            """UPDATE source_defs SET last_run_at = now(), last_errors = %s
               WHERE namespace = %s AND id = %s""",
            (Jsonb([interrupted]), namespace, def_id),
        )

    def finish_def(self, namespace: str, def_id: str, errors: list[dict[str, Any]]) -> None:
        """Stamp a definition's run; ``last_ok_at`` moves only when nothing failed."""
        self.conn.execute(
            """UPDATE source_defs SET last_run_at = now(), last_errors = %s,
                      last_ok_at = CASE WHEN %s THEN now() ELSE last_ok_at END
               WHERE namespace = %s AND id = %s""",
            (Jsonb(errors), not errors, namespace, def_id),
        )

    def list_defs(self, namespace: str | None = None) -> list[SourceDef]:
        rows = self.conn.execute(
            """SELECT namespace, id, kind, target, options, last_run_at, last_ok_at,
                      last_errors
               FROM source_defs WHERE %(ns)s::text IS NULL OR namespace = %(ns)s
               ORDER BY namespace, created_at, id""",
            {"ns": namespace},
        ).fetchall()
        return [SourceDef(*r) for r in rows]

    # --- sources ------------------------------------------------------------------------

    def get_source(self, namespace: str, ref: str) -> SourceRecord | None:
        row = self.conn.execute(
            """SELECT namespace, ref, kind, url, title, content_hash, def_id, chunk_count,
                      meta, fetched_at
               FROM sources WHERE namespace = %s AND ref = %s""",
            (namespace, ref),
        ).fetchone()
        return SourceRecord(*row) if row else None

    def list_sources(self, namespace: str, def_id: str | None = None) -> list[SourceRecord]:
        rows = self.conn.execute(
            """SELECT namespace, ref, kind, url, title, content_hash, def_id, chunk_count,
                      meta, fetched_at
               FROM sources
               WHERE namespace = %(ns)s AND (%(def)s::text IS NULL OR def_id = %(def)s)
               ORDER BY ref""",
            {"ns": namespace, "def": def_id},
        ).fetchall()
        return [SourceRecord(*r) for r in rows]

    def replace_source(self, source: SourceRecord, chunks: Sequence[ChunkRecord]) -> Replaced:
        """Write a source and its chunks atomically."""
        return self.replace_sources(source.namespace, [(source, chunks)])

    def replace_sources(self, namespace: str,
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
            raise ValueError("replace_sources: a batch must not repeat a ref")
        if fields is None:
            chunks = [c for _, cs in items for c in cs]
            fields = lexical.kb_field_arrays([c.text for c in chunks], [c.meta for c in chunks])
        count = sum(len(chunks) for _, chunks in items)
        if any(len(values) != count for values in fields.values()):
            raise ValueError("replace_sources: one analysed field per chunk")
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
        self._set_page_vectors(namespace, refs)
        new_pages = sum(1 for _, chunks in items if chunks)
        self.conn.execute(
            """UPDATE namespace_stats
               SET chunk_count = chunk_count + %s, total_len = total_len + %s,
                   page_count = page_count + %s
               WHERE namespace = %s""",
            (written - old_n, new_len - old_len, new_pages - old_pages, namespace),
        )
        return Replaced(written, old_n)

    def touch_sources(self, namespace: str,
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

    def delete_source(self, namespace: str, ref: str) -> int:
        """Delete a source with its chunks; returns the number of chunks removed."""
        return self._atomically(lambda: self._delete(namespace, ref))

    def _delete(self, namespace: str, ref: str) -> int:
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

    def _set_page_vectors(self, namespace: str | None = None,
                          refs: Sequence[str] = ()) -> None:
        """Each source's vector: the mean of its chunks' (NULL without any), for the sources
        ``refs`` of ``namespace``, or for every source when no namespace is given."""
        mean = """UPDATE sources s SET embedding = (
                      SELECT avg(c.embedding) FROM chunks c
                      WHERE c.namespace = s.namespace AND c.source_ref = s.ref)"""
        if namespace is None:
            self.conn.execute(mean)
        else:
            self.conn.execute(mean + " WHERE s.namespace = %s AND s.ref = ANY(%s)",
                              (namespace, list(refs)))

    # --- a first load -------------------------------------------------------------------

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

    # --- vectors ------------------------------------------------------------------------

    def _set_vector_dimensions(self, dims: int) -> None:
        """Give the vector column a fixed width (HNSW needs one); existing vectors go."""
        self.conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
        self.conn.execute(
            f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({int(dims)}) USING NULL")
        # keep vectors in the row (a 1536-d vector would otherwise be TOASTed, and an
        # exact cosine scan would pay a detour per row)
        self.conn.execute("ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN")
        self.conn.execute("UPDATE sources SET embedding = NULL WHERE embedding IS NOT NULL")

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

    def ensure_vector_index(self) -> bool:
        """Build the HNSW index once vectors exist (after a bulk load, where it is cheapest
        to build); later writes maintain it. Returns True when it was just built."""
        ident = self.embedder_identity()
        if ident is None or ident.dimensions <= 0:
            return False
        exists = self.conn.execute(
            "SELECT to_regclass('chunks_embedding_hnsw') IS NOT NULL").fetchone()
        if exists and exists[0]:
            return False
        self.conn.execute(
            "CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks "
            "USING hnsw (embedding vector_cosine_ops)")
        return True

    def cached_embeddings(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, list[float]]:
        if not keys:
            return {}
        rows = self.conn.execute(
            # renewing never waits on a row another writer holds (no deadlock between
            # concurrent ingests): that row was just used anyway
            """WITH stale AS (SELECT input_hash FROM embedding_cache
                              WHERE identity = %(id)s AND input_hash = ANY(%(keys)s)
                                AND used_at < now() - interval '1 day'
                              FOR UPDATE SKIP LOCKED),
                    renewed AS (UPDATE embedding_cache e SET used_at = now() FROM stale
                                WHERE e.identity = %(id)s AND e.input_hash = stale.input_hash)
               SELECT input_hash, embedding FROM embedding_cache
               WHERE identity = %(id)s AND input_hash = ANY(%(keys)s)""",
            {"id": identity, "keys": list(keys)}, binary=True,
        ).fetchall()
        return {bytes(k): v.to_list() for k, v in rows}  # binary: no number parsed

    def cache_embeddings(self, identity: str, vectors: dict[bytes, list[float]]) -> None:
        if not vectors:
            return
        items = list(vectors.items())
        self.conn.execute(
            """INSERT INTO embedding_cache (identity, input_hash, embedding)
               SELECT %s, k, v FROM unnest(%b::bytea[], %b::vector[]) AS u(k, v)
               ON CONFLICT DO NOTHING""",
            (identity, [k for k, _ in items], [vector_param(v) for _, v in items]),
        )

    def cached_rerank_scores(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, float]:
        if not keys:
            return {}
        rows = self.conn.execute(
            "SELECT pair_hash, score FROM rerank_cache "
            "WHERE identity = %s AND pair_hash = ANY(%s)",
            (identity, list(keys)),
        ).fetchall()
        return {bytes(k): float(v) for k, v in rows}

    def cache_rerank_scores(self, identity: str, scores: dict[bytes, float]) -> None:
        if not scores:
            return
        items = list(scores.items())
        self.conn.execute(
            """INSERT INTO rerank_cache (identity, pair_hash, score)
               SELECT %s, k, s FROM unnest(%s::bytea[], %s::float8[]) AS u(k, s)
               ON CONFLICT DO NOTHING""",
            (identity, [k for k, _ in items], [v for _, v in items]),
        )

    def prune_cache(self, table: str, older_than_days: float) -> int:
        """Drop rows of a cache (``embedding_cache``: last used; ``rerank_cache``: written)
        more than ``older_than_days`` ago; how many."""
        column = _CACHE_AGE[table]
        cursor = self.conn.execute(
            f"DELETE FROM {table} WHERE {column} < now() - make_interval(secs => %s)",
            (older_than_days * 86400.0,))
        return cursor.rowcount

    def chunk_texts(self, after_id: int, limit: int, *, table: str = "chunks"
                    ) -> list[tuple[int, str, str]]:
        """(id, text, title) of chunks in id order, for re-embedding in batches.

        ``table`` is ``chunks`` or ``memory_chunks``: agent memory shares the KB's embedder,
        so a re-embed covers both."""
        title = "coalesce(c.meta ->> 'title', '')" if table == "chunks" else "c.path"
        if table not in ("chunks", "memory_chunks"):
            raise ValueError(table)
        if not self._table_exists(table):
            return []
        return self.conn.execute(
            f"""SELECT c.id, c.text, {title} FROM {table} c
                WHERE c.id > %s ORDER BY c.id LIMIT %s""",
            (after_id, limit),
        ).fetchall()

    def page_chunk_texts(self, after: tuple[str, str], pages: int, *,
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

    def _table_exists(self, name: str) -> bool:
        row = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
        return bool(row and row[0])

    def create_stage(self, stage: str) -> None:
        """A session table that collects re-embedded vectors before the swap."""
        self.drop_stage(stage)
        self.conn.execute(f"CREATE TEMP TABLE {stage} (chunk_id bigint PRIMARY KEY, "
                          f"embedding vector)")

    def drop_stage(self, stage: str) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS {stage}")

    def stage_embeddings(self, stage: str, ids: Sequence[int],
                         vectors: Sequence[Sequence[float]]) -> None:
        self.conn.execute(
            f"""INSERT INTO {stage} (chunk_id, embedding)
                SELECT i, v FROM unnest(%b::bigint[], %b::vector[]) AS u(i, v)""",
            (list(ids), [vector_param(v) for v in vectors]))

    def swap_embeddings(self, identity: EmbedderIdentity, staged_table: str,
                        staged_memory: str | None = None, *,
                        endpoint: str | None = None, private_network: bool = False) -> None:
        """Replace every vector (KB chunks and, when staged, memory chunks) and the recorded
        identity, with the base URL the new embedder was reached at (``endpoint``), in one
        transaction: recorded later, a long-lived reader that looked in between resolved the
        new model at its provider's default address and kept it. ``private_network``: the
        endpoint was reached with the private-network opt-in (``record_embedder_endpoint``)."""
        with self.conn.transaction():
            if staged_memory is not None and self._table_exists("memory_chunks"):
                self.conn.execute(
                    f"UPDATE memory_chunks m SET embedding = s.embedding FROM {staged_memory} s "
                    f"WHERE s.chunk_id = m.id")
                self.conn.execute(
                    f"UPDATE memory_chunks m SET embedding = NULL WHERE NOT EXISTS "
                    f"(SELECT 1 FROM {staged_memory} s WHERE s.chunk_id = m.id)")
            self.conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
            if identity.dimensions > 0:
                self.conn.execute(
                    f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector"
                    f"({int(identity.dimensions)}) USING NULL")
                self.conn.execute("ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN")
                self.conn.execute(
                    f"UPDATE chunks c SET embedding = s.embedding FROM {staged_table} s "
                    f"WHERE s.chunk_id = c.id")
            else:
                self.conn.execute(
                    "ALTER TABLE chunks ALTER COLUMN embedding TYPE vector USING NULL")
            self._set_page_vectors()
            recorded = _identity_json(identity) | ({"baseUrl": endpoint} if endpoint else {}) \
                | ({"privateNetwork": True} if endpoint and private_network else {})
            self.conn.execute(
                "UPDATE kb_meta SET value = %s WHERE key = %s",
                (Jsonb(recorded), _EMBEDDER_KEY))
        self.ensure_vector_index()

    # --- upkeep -------------------------------------------------------------------------

    def reclaim(self) -> list[str]:
        """Vacuum (and analyse) the tables whose dead rows, left by updates and deletes,
        pass ``DEAD_SHARE`` of their live ones; the tables vacuumed.

        Why: the embedded server lives for a command and a few seconds after it, too short
        for autovacuum, which never ran, so a nightly resync grew the database for good
        (~15 MB a run on the Rust book, 433 → 814 MB over 25 runs; 1.7M dead postings
        against 556k live). A server of yours vacuums on its own and rarely gets here. A
        failure is left to the next run: the work it follows is done and committed. A table
        another session holds a conflicting lock on (an index being built, another vacuum)
        is passed over after ``VACUUM_LOCK_WAIT_S``: waiting, the run never ended.
        """
        # this run's own counts too, which reach the statistics once the session idles
        # (PostgreSQL before 15 has no such call: the counts of earlier runs decide)
        with contextlib.suppress(psycopg.Error):
            self.conn.execute("SELECT pg_stat_force_next_flush()")
        try:
            names = [name for (name,) in self.conn.execute(
                """SELECT relname FROM pg_stat_user_tables
                   WHERE schemaname = current_schema() AND n_dead_tup >= %s
                     AND n_dead_tup > %s * n_live_tup ORDER BY relname""",
                (MIN_DEAD_ROWS, DEAD_SHARE)).fetchall()]
        except psycopg.Error:
            return []
        done = []
        try:
            self.conn.execute(f"SET lock_timeout = '{VACUUM_LOCK_WAIT_S}s'")
            for name in names:
                with contextlib.suppress(psycopg.errors.LockNotAvailable):
                    self.conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(
                        sql.Identifier(name)))
                    done.append(name)
        except psycopg.Error:
            pass  # the next run tries again
        finally:
            with contextlib.suppress(psycopg.Error):
                self.conn.execute("RESET lock_timeout")
        return done

    # --- retrieval ----------------------------------------------------------------------

    def search(
        self,
        namespace: str,
        query: str,
        *,
        k: int = 5,
        filters: dict[str, str] | None = None,
        query_vector: Sequence[float] | None = None,
        vector_weight: float = 0.7,
        fusion: str = "weighted",
        also_match: Sequence[str] = (),
        missing: int = 0,
        ranked_for: int | None = None,
        thesaurus: Thesaurus = BUILT_IN,
    ) -> list[ScoredChunk]:
        """Top-k chunks of one namespace: BM25 alone, or fused with cosine similarity.
        ``also_match`` adds lexemes to the query's own (``spelling``'s corrections);
        ``missing`` counts its words no chunk uses that nothing corrected (they lower the
        score, not the ranking); ``thesaurus`` relates its words to others it looks for.
        ``ranked_for``: the fusion's candidates are those of that many results (default
        ``k``), so a caller that asks for spare rows gets the same ranking, extended."""
        filters = filters or {}
        params: dict[str, Any] = {"ns": namespace, "k": k, "cap": lexical.LEXEME_CANDIDATES,
                                  "missing": missing,
                                  **lexical.query_params(query, also_match, thesaurus)}
        related = bool(params["sg"])  # a thesaurus rule may apply
        cand = max((ranked_for or k) * ranking.CANDIDATES_PER_RESULT, ranking.MIN_CANDIDATES)
        if query_vector is None:
            # one side fills the pool that hybrid search's two sides fill
            params.update(cand=2 * cand, pool=2 * cand)
            stmt, fparams = ranking.lexical_query(filters, related=related)
        else:
            params.update(cand=cand, pool=2 * cand, qv=vector_text(query_vector),
                          w=vector_weight)
            stmt, fparams = ranking.hybrid_query(filters, fusion, related=related)
        params.update(fparams)
        try:
            with bounded_read(self.conn), self.conn.cursor(row_factory=dict_row) as cur:
                if query_vector is not None:
                    params["vids"] = self._vector_candidates(namespace, params["qv"],
                                                             filters, params["cand"])
                # a search a thesaurus rule may apply to is planned for its question every
                # time: a cached generic plan of its concepts' CTEs, blind to the question's
                # lexemes, took 69 ms a hybrid search on the dev set, not 46; the plain
                # search's cached plan is as fast as a fresh one, and saves the planning
                rows = cur.execute(stmt, params, prepare=None if not related else False
                                   ).fetchall()
        except psycopg.Error as exc:
            raise DatabaseError(f"search failed: {str(exc).strip()}") from exc
        out = []
        for r in rows:
            text_score = float(r["text_score"] or 0.0)
            vector_score = r.get("vector_score")
            score = r.get("score")
            out.append(ScoredChunk(
                id=r["id"], namespace=r["namespace"], source_ref=r["source_ref"],
                ordinal=r["ordinal"], text=r["text"], meta=r["meta"],
                score=float(score) if score is not None else text_score,
                text_score=text_score,
                vector_score=float(vector_score) if vector_score is not None else None,
                source_url=r["source_url"], source_title=r["source_title"],
            ))
        return ranking.crowd_pages(out, k)

    def spelling(self, namespace: str, query: str, *, correct: bool = True
                 ) -> spelling.Spelling:
        """The query's words that no chunk of the namespace uses, and the lexemes they most
        likely meant (``kbctl.store.spelling``); ``correct=False`` only finds them."""
        try:
            with bounded_read(self.conn), self.conn.cursor() as cur:
                return spelling.check(
                    cur, lexical.analyse(query), known=lexical.KB_KNOWN_WORD,
                    words=lexical.KB_WORDS, params={"ns": namespace}, correct=correct)
        except psycopg.Error as exc:
            raise DatabaseError(f"search failed: {str(exc).strip()}") from exc

    def related_words(self, query: str, thesaurus: Thesaurus, also_match: Sequence[str] = ()
                      ) -> dict[str, tuple[str, ...]]:
        """The synonyms the query's words bring into its search (``lexical.related_words``)."""
        try:
            with bounded_read(self.conn), self.conn.cursor() as cur:
                return lexical.related_words(cur, query, thesaurus, also_match)
        except psycopg.Error as exc:
            raise DatabaseError(f"search failed: {str(exc).strip()}") from exc

    def searchable(self, query: str) -> bool:
        """Whether ``query`` has a word the index keeps (``spelling.searchable``)."""
        try:
            with self.conn.cursor() as cur:
                return spelling.searchable(cur, lexical.analyse(query))
        except psycopg.Error as exc:
            raise DatabaseError(f"search failed: {str(exc).strip()}") from exc

    def _vector_candidates(self, namespace: str, qv: str, filters: dict[str, str],
                           cand: int) -> list[int]:
        """Nearest chunks by cosine, never under-filled by the namespace or filters.

        Small namespaces are scanned exactly. Large ones use HNSW with iterative scans; if
        that still returns fewer rows than asked (a selective filter), an exact scan of the
        matching rows decides, so a filtered top-k is complete whenever enough rows match.
        """
        size = self.conn.execute(
            "SELECT chunk_count FROM namespace_stats WHERE namespace = %s", (namespace,)
        ).fetchone()
        exact = size is None or size[0] <= ranking.EXACT_SCAN_LIMIT
        ids = self._vector_scan(namespace, qv, filters, cand, exact=exact)
        if not exact and len(ids) < cand:
            ids = self._vector_scan(namespace, qv, filters, cand, exact=True)
        return ids

    def _vector_scan(self, namespace: str, qv: str, filters: dict[str, str], cand: int, *,
                     exact: bool) -> list[int]:
        stmt, params = ranking.vector_candidates_query(filters, exact=exact)
        params.update(ns=namespace, qv=qv, cand=cand)
        try:
            with self.conn.transaction():
                if not exact:
                    self.conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                    ef_search = max(ranking.HNSW_EF_SEARCH, cand)
                    self.conn.execute(f"SET LOCAL hnsw.ef_search = {ef_search}")
                return [r[0] for r in self.conn.execute(stmt, params).fetchall()]
        except psycopg.Error as exc:
            raise DatabaseError(f"vector search failed: {str(exc).strip()}") from exc

    # --- namespace-wide -----------------------------------------------------------------

    def namespaces(self) -> list[str]:
        rows = self.conn.execute(
            """SELECT namespace FROM sources UNION SELECT namespace FROM source_defs
               ORDER BY 1"""
        ).fetchall()
        return [r[0] for r in rows]

    def namespace_status(self, namespace: str | None = None) -> list[NamespaceStatus]:
        """Sources, chunks and sync history per namespace (all when ``namespace`` is None)."""
        rows = self.conn.execute(
            """WITH ns AS (SELECT namespace FROM sources UNION SELECT namespace FROM source_defs)
               SELECT ns.namespace,
                      (SELECT count(*) FROM sources s WHERE s.namespace = ns.namespace),
                      (SELECT count(*) FROM chunks c WHERE c.namespace = ns.namespace),
                      (SELECT count(*) FROM source_defs d WHERE d.namespace = ns.namespace),
                      (SELECT max(last_run_at) FROM source_defs d
                        WHERE d.namespace = ns.namespace),
                      (SELECT max(last_ok_at) FROM source_defs d
                        WHERE d.namespace = ns.namespace),
                      (SELECT coalesce(sum(jsonb_array_length(last_errors)), 0)
                         FROM source_defs d WHERE d.namespace = ns.namespace),
                      (SELECT coalesce(array_agg(DISTINCT s.meta->>'generator'
                                                 ORDER BY s.meta->>'generator'), '{}')
                         FROM sources s
                        WHERE s.namespace = ns.namespace AND s.meta ? 'generator')
               FROM ns WHERE %(ns)s::text IS NULL OR ns.namespace = %(ns)s
               ORDER BY ns.namespace""",
            {"ns": namespace},
        ).fetchall()
        return [NamespaceStatus(r[0], int(r[1]), int(r[2]), int(r[3]), r[4], r[5], int(r[6]),
                                list(r[7])) for r in rows]

    def chunk_count(self) -> int:
        """Chunks in the whole KB, every namespace."""
        row = self.conn.execute("SELECT count(*) FROM chunks").fetchone()
        return int(row[0]) if row else 0

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """One bounded transaction for several reads (``db.bounded_read``): those of one
        question share it, rather than each opening its own."""
        return bounded_read(self.conn)

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

    @contextmanager
    def all_namespace_locks(self, namespaces: Sequence[str]) -> Iterator[None]:
        """Hold every listed namespace's write lock (in a fixed order: no deadlocks)."""
        with ExitStack() as stack:
            for ns in sorted(namespaces):
                stack.enter_context(self.namespace_lock(ns))
            yield

    @contextmanager
    def namespace_lock(self, namespace: str, *, wait: bool = True, timeout_s: float = 600.0,
                       waiting: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the per-namespace advisory lock that serialises ingest and resync. A run
        that has to wait for another one says so through ``waiting`` first: a cron job
        that sits silent for minutes looks hung."""
        with self._advisory_lock(
                f"kbctl:ns:{namespace}", wait=wait, timeout_s=timeout_s, waiting=waiting,
                busy=f"another kbctl run is writing namespace '{namespace}'",
                waits=f"namespace '{namespace}' is being written by another kbctl run",
                still=f"namespace '{namespace}' is still locked by another kbctl run"):
            yield

    @contextmanager
    def embedder_lock(self, *, exclusive: bool = False, timeout_s: float = 600.0,
                      waiting: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the knowledge base's embedder steady: shared by every run that embeds (it
        resolves its embedder inside), exclusive for ``reembed``, which changes it. Taken
        before any namespace lock, in every run, so the two never deadlock. Without it an
        ingest that waited out a reembed wrote with the embedder it had resolved before:
        chunks without vectors, or another model's, under the new identity."""
        doing = ("writing with the knowledge base's embedder" if exclusive
                 else "changing the knowledge base's embedder (reembed)")
        with self._advisory_lock(
                "kbctl:embedder", shared=not exclusive, timeout_s=timeout_s, waiting=waiting,
                waits=f"another kbctl run is {doing}",
                still=("the knowledge base's embedder is still in use by another kbctl run"
                       if exclusive else "the knowledge base is still being re-embedded "
                       "(kbctl reembed)"),
                hint=("nothing was changed; run it again when the other run has finished"
                      if exclusive else "nothing was written; run it again when the "
                      "reembed has finished")):
            yield

    @contextmanager
    def _advisory_lock(self, key: str, *, shared: bool = False, wait: bool = True,
                       timeout_s: float, waiting: Callable[[str], None] | None,
                       waits: str, still: str, busy: str = "",
                       hint: str | None = None) -> Iterator[None]:
        """Hold the session advisory lock ``key`` (``shared`` or exclusive): taken at once
        if free; else refused (``wait=False``: ``LockBusy`` saying ``busy``), or waited for
        at most ``timeout_s`` after ``waiting`` is told ``waits`` (then ``LockBusy`` saying
        ``still``)."""
        mode = "_shared" if shared else ""
        got = self.conn.execute(f"SELECT pg_try_advisory_lock{mode}(hashtextextended(%s, 0))",
                                (key,)).fetchone()
        if not (got and got[0]):
            if not wait:
                raise LockBusy(busy, hint="wait for it to finish, or run with --wait")
            if waiting is not None:
                waiting(f"{waits}; waiting for it to finish (at most {timeout_s:.0f} s)")
            self.conn.execute(f"SET lock_timeout = '{int(timeout_s * 1000)}ms'")
            try:
                self.conn.execute(f"SELECT pg_advisory_lock{mode}(hashtextextended(%s, 0))",
                                  (key,))
            except psycopg.errors.LockNotAvailable as exc:
                raise LockBusy(f"{still} after {timeout_s:.0f}s", hint=hint) from exc
            finally:
                self.conn.execute("SET lock_timeout = 0")
        try:
            yield
        finally:
            self.conn.execute(f"SELECT pg_advisory_unlock{mode}(hashtextextended(%s, 0))",
                              (key,))


def embedder_mismatch(recorded: EmbedderIdentity, asked: EmbedderIdentity) -> EmbedderMismatch:
    """The refusal of an embedder other than the one the KB was built with."""
    return EmbedderMismatch(
        f"this knowledge base was built with embedder '{recorded}', not '{asked}'",
        hint=f"ask for no embedder (drop --embedder, or embedder: in kbctl.yaml, or "
             f"KBCTL_EMBEDDER: the KB's own is used), or rebuild with "
             f"'kbctl reembed --embedder {asked.provider}"
             f"{'' if asked == NO_EMBEDDER else ':' + asked.model}'")


def _identity_json(identity: EmbedderIdentity) -> dict[str, Any]:
    return {"provider": identity.provider, "model": identity.model,
            "dimensions": identity.dimensions}

