"""The Postgres memory backend: files, line chunks, BM25 postings and vectors in the KB's
database, every read fenced to ``agent_id = $agent AND (user_id IS NULL OR user_id =
$caller)``.

Writes to one file are serialised by an advisory lock and land in one transaction; chunks
whose line range and text are unchanged keep their row (and id, vector, creation time),
so appending to a long file re-indexes only its tail.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime, timezone
from operator import mul
from typing import Any

import psycopg
from psycopg.rows import dict_row

from ..embed.base import NO_EMBEDDER, Embedder
from ..embed.windows import embed_read_whole
from ..errors import DatabaseError, EmbedderMismatch, InputError, KbctlError
from ..search_notes import spelling_notes, synonym_notes
from ..store import lexical, spelling
from ..store import ranking as kb_ranking
from ..store.db import bounded_read, failing_as
from ..store.embedder import EmbedderRecord
from ..store.migrations import migrate
from ..store.search import related_words, searchable
from ..store.vectors import as_floats, vector_text
from . import search_sql
from .chunking import LineChunk, chunk_lines, normalise_newlines, split_lines
from .model import (
    DeleteResult,
    Health,
    ListPage,
    MemoryFile,
    MemoryHit,
    MemoryListing,
    MemorySearchResult,
    MemoryStats,
    MemoryText,
    RecallStat,
    SearchOptions,
    TierCount,
    WriteResult,
    check_file_size,
    check_query,
    check_tier,
    check_window,
    content_sha256,
    missing_file,
    text_window,
)
from .paths import (
    AGENT_TIER,
    TIERS,
    USER_TIER,
    MemoryPath,
    MemoryScope,
    file_date,
    parse_path,
)
from .ranking import mmr, token_overlap, tokens, unit
from .schema import MEMORY_MIGRATIONS

KIND = "postgres"
MMR_POOL_FACTOR = 4
MMR_POOL_MIN = 20


class PostgresMemoryBackend:
    """Memory in PostgreSQL, using the knowledge base's embedder (or none: keyword-only)."""

    def __init__(self, conn: psycopg.Connection, embedder: Embedder | None = None, *,
                 vector_weight: float = 0.7, name: str | None = None,
                 window: int | None = None) -> None:
        self.conn = conn
        self.embedder = embedder
        self.window = window  # the embedder's input window (kbctl.embed.windows)
        self.vector_weight = vector_weight
        self.name = name or KIND
        migrate(conn, MEMORY_MIGRATIONS)
        self._identity = embedder.identity if embedder is not None else NO_EMBEDDER
        self._bound = EmbedderRecord(conn).identity() is not None
        if self._bound:
            self._bind()

    def _bind(self) -> None:
        """Record this embedder on a fresh KB, or refuse one that differs from the KB's."""
        try:
            EmbedderRecord(self.conn).bind(self._identity)
        except EmbedderMismatch as exc:
            raise EmbedderMismatch(
                f"memory was opened with embedder '{self._identity}': {exc.message}",
                hint="memory uses the knowledge base's own embedder") from None
        self._bound = True

    def bind(self) -> None:
        """Record the embedder on the KB now: a backend beside this one (the graph) embeds
        with it, and every later read must resolve the same one."""
        if not self._bound:
            self._bind()

    @property
    def kind(self) -> str:
        return KIND

    @property
    def mode(self) -> str:
        return "keyword" if self.embedder is None else "hybrid"

    # --- reads ------------------------------------------------------------------------

    def search(self, scope: MemoryScope, query: str,
               options: SearchOptions | None = None) -> MemorySearchResult:
        """Rank the caller's visible chunks; keyword-only (and saying so) with no embedder."""
        opts = options or SearchOptions()
        check_query(query)
        started = time.perf_counter()
        k = opts.max_results
        fetch = min(max(k * MMR_POOL_FACTOR, MMR_POOL_MIN), 100) if opts.mmr else k
        fenced = {"agent": scope.agent_id, "user": scope.user_id}
        question = lexical.QueryTerms.of(query, opts.thesaurus)  # analysed once
        found = self._spelling(question.analysed, fenced, opts.typo_tolerance)
        related = related_words(self.conn, question.params(found.lexemes))
        # no rule applied: the plain search
        terms = question.params(found.lexemes, rules=bool(related))
        params: dict[str, Any] = {
            **fenced, "k": fetch, **terms,
            "cap": lexical.LEXEME_CANDIDATES, "missing": len(found.unmatched),
            "today": opts.today or datetime.now(timezone.utc).date(),
            "half_life": opts.half_life_days,
        }
        with_vectors = opts.mmr and self.embedder is not None
        extra = ", ch.embedding" if with_vectors else ""
        if self.embedder is None:
            stmt = search_sql.lexical_sql(decay=opts.decay, extra=extra,
                                          related=bool(terms["sg"]))
        else:
            stmt = search_sql.hybrid_sql(decay=opts.decay, extra=extra,
                                         related=bool(terms["sg"]))
            params.update(qv=vector_text(self.embedder.embed_query(query)),
                          w=self.vector_weight, cand=max(fetch, kb_ranking.VECTOR_CANDIDATES))
        with failing_as("memory search"), bounded_read(self.conn), \
                self.conn.cursor(row_factory=dict_row) as cur:
            # Never server-prepared: a generic plan ignores the scope's size and the
            # query's lexemes and runs ~30% slower than a fresh custom plan.
            rows = cur.execute(stmt, params, prepare=False).fetchall()
        if opts.min_score is not None:
            rows = [r for r in rows if _score(r) >= opts.min_score]
        if opts.mmr:
            rows = _mmr(rows, k, opts.mmr_lambda, with_vectors)
        hits = [self._hit(r) for r in rows[:k]]
        notes = []
        if self.embedder is None:
            notes.append("keyword-only search: this knowledge base has no embedder")
        notes += spelling_notes(found.corrected, found.unmatched,
                                bool(rows) or searchable(self.conn, question.analysed))
        notes += synonym_notes(related)
        tracked = False
        if opts.track:
            tracked, note = self._track(scope, query, hits)
            if note:
                notes.append(note)
        return MemorySearchResult(
            query=query, scope=scope, hits=hits, mode=self.mode,
            embedder=str(self._identity), backend=self.name,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
            notes=notes, tracked=tracked)

    def _spelling(self, analysed: lexical.Analysed, fenced: dict[str, Any], correct: bool
                  ) -> spelling.Spelling:
        """Typo tolerance over the caller's visible rows (``kbctl.store.spelling``)."""
        with failing_as("memory search"), bounded_read(self.conn), self.conn.cursor() as cur:
            return spelling.check(cur, analysed,
                                  known=search_sql.KNOWN_WORD, words=search_sql.WORDS,
                                  params=fenced, correct=correct)

    def get(self, scope: MemoryScope, path: str, *, from_line: int | None = None,
            lines: int | None = None) -> MemoryText:
        """A file's text, or ``lines`` lines from 1-indexed ``from_line``."""
        mp = parse_path(path)
        owner = mp.owner(scope)
        check_window(from_line, lines)
        row = self._file_row(scope, owner, mp.path, "content")
        if row is None:
            raise missing_file(mp.path)
        return text_window(mp, row["content"], from_line, lines, self.name)

    def list_files(self, scope: MemoryScope, tier: str | None = None,
                   page: ListPage | None = None) -> MemoryListing:
        """The visible files, optionally of one tier, one page in path order."""
        check_tier(scope, tier)
        page = page or ListPage()
        p = {"agent": scope.agent_id, "user": scope.user_id, "tier": tier,
             "prefix": page.prefix or "", "after": page.after, "more": page.limit + 1}
        where = f"""{search_sql.fence("f")}
                  AND (%(tier)s::text IS NULL OR (f.user_id IS NULL) = (%(tier)s = 'agent'))
                  AND starts_with(f.path, %(prefix)s)"""
        rows = self._query(
            f"""SELECT f.path, f.user_id,
                       (length(f.content) - length(replace(f.content, E'\\n', '')))
                         + CASE WHEN f.content = '' OR right(f.content, 1) = E'\\n'
                                THEN 0 ELSE 1 END AS lines,
                       (SELECT count(*) FROM memory_chunks c WHERE c.file_id = f.id) AS chunks,
                       length(f.content) AS chars, f.content_hash, f.created_at, f.updated_at
                FROM memory_files f
                WHERE {where} AND (%(after)s::text IS NULL OR f.path COLLATE "C" > %(after)s)
                ORDER BY f.path COLLATE "C" LIMIT %(more)s""", p)
        total = self._query(f"SELECT count(*) AS n FROM memory_files f WHERE {where}",
                            p)[0]["n"]
        shown = rows[:page.limit]
        files = [MemoryFile(path=r["path"], tier=_tier(r["user_id"]), lines=r["lines"],
                            chunks=r["chunks"], chars=r["chars"],
                            content_hash=r["content_hash"], created_at=r["created_at"],
                            updated_at=r["updated_at"]) for r in shown]
        return MemoryListing(scope=scope, tier=tier, files=files, total=int(total),
                             next_after=shown[-1]["path"] if len(rows) > page.limit else None)

    def stats(self, scope: MemoryScope, *, top: int = 10) -> MemoryStats:
        """Counts per tier, tracked searches, and the most recalled entries.

        Recall counts of agent-tier entries include every user's searches (usage of a shared
        playbook, never the queries themselves); user-tier entries count only for their
        owner. When an entry was last recalled is the caller's own searches' (None when only
        others recalled it): another user's timestamps would tell when they searched.
        """
        p = {"agent": scope.agent_id, "user": scope.user_id, "top": top}
        tiers = self._query(
            f"""SELECT (f.user_id IS NULL) AS agent_tier, count(*) AS files,
                       coalesce(sum((SELECT count(*) FROM memory_chunks c
                                     WHERE c.file_id = f.id)), 0) AS chunks
                FROM memory_files f WHERE {search_sql.fence("f")}
                GROUP BY 1""", p)
        by_tier = {AGENT_TIER if r["agent_tier"] else USER_TIER: r for r in tiers}
        searches = self._query(
            """SELECT count(*) AS n FROM memory_recalls
               WHERE agent_id = %(agent)s AND user_id IS NOT DISTINCT FROM %(user)s::text""",
            p)[0]["n"]
        recalled = self._query(
            f"""SELECT c.path, c.user_id, c.start_line, c.end_line, count(*) AS recalls,
                       max(r.created_at) FILTER (
                           WHERE r.user_id IS NOT DISTINCT FROM %(user)s::text) AS last_at
                FROM memory_recall_hits h
                JOIN memory_chunks c ON c.id = h.chunk_id
                JOIN memory_recalls r ON r.id = h.recall_id
                WHERE {search_sql.fence("h")} AND {search_sql.fence("c")}
                GROUP BY c.id, c.path, c.user_id, c.start_line, c.end_line
                ORDER BY recalls DESC, last_at DESC NULLS LAST, c.path
                LIMIT %(top)s""", p)
        tier_counts = [TierCount(t, int(by_tier[t]["files"]) if t in by_tier else 0,
                                 int(by_tier[t]["chunks"]) if t in by_tier else 0)
                       for t in TIERS if t == AGENT_TIER or scope.user_id is not None]
        return MemoryStats(
            scope=scope, backend=self.name, mode=self.mode, embedder=str(self._identity),
            tiers=tier_counts, searches_tracked=int(searches),
            top=[RecallStat(path=r["path"], tier=_tier(r["user_id"]),
                            start_line=r["start_line"], end_line=r["end_line"],
                            recalls=int(r["recalls"]), last_recalled_at=r["last_at"])
                 for r in recalled])

    def health(self) -> Health:
        """Whether the database answers, the memory schema is in place, and the embedder
        (when there is one) embeds: with it down, search and append fail, and a health
        check that said ok sent no one to look."""
        try:
            row = self.conn.execute(
                "SELECT to_regclass('memory_chunks') IS NOT NULL").fetchone()
        except psycopg.Error as exc:
            return Health(kind=KIND, ok=False, error=str(exc).strip())
        if not row or not row[0]:
            return Health(kind=KIND, ok=False, error="the memory schema is missing")
        details = {"mode": self.mode, "embedder": str(self._identity)}
        if self.embedder is not None:
            try:
                self.embedder.embed_query("health check")
            except KbctlError as exc:
                return Health(kind=KIND, ok=False, details=details,
                              error=f"the embedder does not embed: {exc.message}")
        return Health(kind=KIND, ok=True, details=details)

    # --- writes -----------------------------------------------------------------------

    def append(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        """Append ``text`` (on a line of its own) to the file, creating it."""
        mp = parse_path(path)
        owner = mp.owner(scope)
        text = normalise_newlines(text)
        if not text.strip():
            raise InputError("nothing to append: the text is empty")
        with self._file_lock(scope, owner, mp.path):
            row = self._file_row(scope, owner, mp.path, "content")
            old = row["content"] if row else ""
            sep = "" if not old or old.endswith("\n") else "\n"
            content = old + sep + text + ("" if text.endswith("\n") else "\n")
            check_file_size(mp, content, appending=bool(row))
            return self._write(scope, mp, owner, content,
                               "appended" if row else "created")

    def put(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        """Set the file's whole text; a file whose hash is unchanged is left alone."""
        mp = parse_path(path)
        owner = mp.owner(scope)
        content = normalise_newlines(text)
        check_file_size(mp, content, appending=False)
        with self._file_lock(scope, owner, mp.path):
            row = self._file_row(scope, owner, mp.path,
                                 "content_hash, (SELECT count(*) FROM memory_chunks c "
                                 "WHERE c.file_id = f.id) AS chunks")
            if row and row["content_hash"] == content_sha256(content):
                return WriteResult(path=mp.path, tier=mp.tier, status="unchanged",
                                   lines=len(split_lines(content)), chunks=int(row["chunks"]),
                                   reindexed=0, embedded=0, content_hash=row["content_hash"])
            return self._write(scope, mp, owner, content, "updated" if row else "created")

    def delete(self, scope: MemoryScope, path: str) -> DeleteResult:
        """Delete a file with its chunks, postings and recall records."""
        mp = parse_path(path)
        owner = mp.owner(scope)
        with self._file_lock(scope, owner, mp.path), self._durable():
            row = self._file_row(scope, owner, mp.path, "id")
            if row is None:
                raise missing_file(mp.path)
            gone = self.conn.execute(
                """WITH gone AS (DELETE FROM memory_chunks WHERE file_id = %s
                                 RETURNING lexeme_count)
                   SELECT count(*), coalesce(sum(lexeme_count), 0) FROM gone""",
                (row["id"],)).fetchone()
            assert gone is not None
            self.conn.execute("DELETE FROM memory_files WHERE id = %s", (row["id"],))
            self._bump_stats(scope.agent_id, owner, -int(gone[0]), -int(gone[1]))
        return DeleteResult(path=mp.path, tier=mp.tier, chunks=int(gone[0]))

    @contextmanager
    def _durable(self) -> Iterator[None]:
        """A transaction whose commit waits for the WAL flush. kbctl's connections skip that
        wait (an ingest lost in a crash is rewritten by the next run), but a memory write
        reported done is an agent's only copy: a server killed a moment later lost it."""
        with self.conn.transaction():
            self.conn.execute("SET LOCAL synchronous_commit = on")
            yield

    def _write(self, scope: MemoryScope, mp: MemoryPath, owner: str | None, content: str,
               status: str) -> WriteResult:
        """Store ``content`` as the file's text and bring its chunks up to date atomically.

        Called with the file lock held, so nobody else changes the file in between.
        """
        if not self._bound:
            self._bind()
        chunks = chunk_lines(content)
        digest = content_sha256(content)
        old = self._query(
            """SELECT c.id, c.ordinal, c.start_line, c.end_line, c.text_hash, c.created_at,
                      c.embedding
               FROM memory_chunks c JOIN memory_files f ON f.id = c.file_id
               WHERE f.agent_id = %(agent)s AND coalesce(f.user_id, '') = coalesce(%(owner)s, '')
                 AND f.path = %(path)s""",
            {"agent": scope.agent_id, "owner": owner, "path": mp.path})
        by_ordinal = {r["ordinal"]: r for r in old}
        by_hash = {r["text_hash"]: r for r in old}
        keep: set[int] = set()
        fresh: list[LineChunk] = []
        for c in chunks:
            was = by_ordinal.get(c.ordinal)
            if was and (was["start_line"], was["end_line"], was["text_hash"]) == (
                    c.start_line, c.end_line, content_sha256(c.text)):
                keep.add(was["id"])
            else:
                fresh.append(c)
        vectors = self._vectors(mp.path, fresh, by_hash)
        when = [by_hash[h]["created_at"] if h in by_hash else None
                for h in (content_sha256(c.text) for c in fresh)]
        dated = file_date(mp.path)
        try:
            with self._durable():
                file_id = self.conn.execute(
                    """INSERT INTO memory_files (agent_id, user_id, path, content, content_hash,
                                                 file_date)
                       VALUES (%s, %s, %s, %s, %s, %s)
                       ON CONFLICT (agent_id, (coalesce(user_id, '')), path) DO UPDATE SET
                         content = excluded.content, content_hash = excluded.content_hash,
                         updated_at = now()
                       RETURNING id""",
                    (scope.agent_id, owner, mp.path, content, digest, dated)).fetchone()[0]
                drop = [r["id"] for r in old if r["id"] not in keep]
                gone = self.conn.execute(
                    """WITH gone AS (DELETE FROM memory_chunks WHERE id = ANY(%s)
                                     RETURNING lexeme_count)
                       SELECT count(*), coalesce(sum(lexeme_count), 0) FROM gone""",
                    (drop,)).fetchone()
                added = self._insert_chunks(file_id, scope.agent_id, owner, mp.path, dated,
                                            fresh, vectors, when)
                self._bump_stats(scope.agent_id, owner, len(fresh) - int(gone[0]),
                                 added - int(gone[1]))
        except psycopg.Error as exc:
            raise DatabaseError(f"writing {mp.path} failed: {str(exc).strip()}") from exc
        return WriteResult(path=mp.path, tier=mp.tier, status=status,
                           lines=len(split_lines(content)), chunks=len(chunks),
                           reindexed=len(fresh),
                           embedded=sum(1 for c in fresh if content_sha256(c.text) not in by_hash)
                           if self.embedder is not None else 0,
                           content_hash=digest)

    def _vectors(self, path: str, fresh: Sequence[LineChunk],
                 by_hash: dict[str, dict[str, Any]]) -> list[str | None]:
        """Vectors for new chunks: reused when the same text was embedded before."""
        if self.embedder is None or not fresh:
            return [None] * len(fresh)
        hashes = [content_sha256(c.text) for c in fresh]
        todo = [i for i, h in enumerate(hashes) if h not in by_hash
                or by_hash[h]["embedding"] is None]
        made = embed_read_whole(self.embedder.embed, [fresh[i].text for i in todo],
                                [path] * len(todo), self.window)
        if len(made) != len(todo):
            raise DatabaseError("the embedder returned a wrong number of vectors")
        out: list[str | None] = [None] * len(fresh)
        for i, v in zip(todo, made, strict=True):
            out[i] = vector_text(v)
        for i, h in enumerate(hashes):
            if out[i] is None:
                out[i] = vector_text(by_hash[h]["embedding"])
        return out

    def _insert_chunks(self, file_id: int, agent: str, owner: str | None, path: str,
                       dated: date | None, chunks: Sequence[LineChunk],
                       vectors: Sequence[str | None],
                       created: Sequence[datetime | None]) -> int:
        """Insert chunks with their postings in one statement; returns their total length.

        ``to_tsvector`` runs once per chunk and each row is written once (no follow-up
        UPDATE for its length), so the heap holds no dead copies of wide vector rows.
        """
        if not chunks:
            return 0
        analysed = [lexical.analyse(c.text) for c in chunks]
        row = self.conn.execute(
            f"""WITH src AS (
                    SELECT * FROM unnest(
                        %(o)s::int[], %(s)s::int[], %(e)s::int[], %(raw)s::text[],
                        %(h)s::text[], %(c)s::timestamptz[], %(v)s::text[], %(t)s::text[],
                        %(x)s::text[]) AS u(o, s, e, raw, h, c, v, t, x)),
                {lexical.lexeme_ctes("o")},
                ins AS (
                    INSERT INTO memory_chunks (file_id, agent_id, user_id, path, ordinal,
                                               start_line, end_line, text, text_hash,
                                               file_date, created_at, embedding, lexeme_count)
                    SELECT %(file)s, %(agent)s, %(owner)s, %(path)s, src.o, src.s, src.e,
                           src.raw, src.h, %(dated)s, coalesce(src.c, now()), src.v::vector,
                           coalesce(len.dl, 0)
                    FROM src LEFT JOIN len USING (o)
                    RETURNING id, ordinal, lexeme_count),
                post AS ({lexical.insert_postings_sql(
                    "memory_postings", {"agent_id": "%(agent)s", "user_id": "%(owner)s"},
                    chunks="ins", on="lex.o = ins.ordinal")})
                SELECT coalesce(sum(lexeme_count), 0) FROM ins""",
            {"file": file_id, "agent": agent, "owner": owner, "path": path, "dated": dated,
             "o": [c.ordinal for c in chunks], "s": [c.start_line for c in chunks],
             "e": [c.end_line for c in chunks], "raw": [c.text for c in chunks],
             "t": [a.text for a in analysed], "x": [a.exact_text for a in analysed],
             "h": [content_sha256(c.text) for c in chunks], "c": list(created), "v": list(vectors)},
        ).fetchone()
        return int(row[0]) if row else 0

    def _bump_stats(self, agent: str, owner: str | None, chunks: int, length: int) -> None:
        self.conn.execute(
            """INSERT INTO memory_stats AS s (agent_id, user_id, chunk_count, total_len)
               VALUES (%s, %s, %s, %s)
               ON CONFLICT (agent_id, (coalesce(user_id, ''))) DO UPDATE SET
                 chunk_count = s.chunk_count + excluded.chunk_count,
                 total_len = s.total_len + excluded.total_len""",
            (agent, owner, chunks, length))

    # --- recall tracking --------------------------------------------------------------

    def _track(self, scope: MemoryScope, query: str,
               hits: Sequence[MemoryHit]) -> tuple[bool, str | None]:
        """Record a search and its hits; a failure is reported, never raised."""
        try:
            with self.conn.transaction():
                rid = self.conn.execute(
                    """INSERT INTO memory_recalls (agent_id, user_id, query, hit_count)
                       VALUES (%s, %s, %s, %s) RETURNING id""",
                    (scope.agent_id, scope.user_id, query, len(hits))).fetchone()[0]
                if hits:
                    self.conn.execute(
                        """INSERT INTO memory_recall_hits (recall_id, chunk_id, agent_id,
                                                           user_id, rank, score)
                           SELECT %s, c, %s, u, r, s
                           FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::real[])
                                AS x(c, u, r, s)""",
                        (rid, scope.agent_id, [int(h.id) for h in hits],
                         [None if h.tier == AGENT_TIER else scope.user_id for h in hits],
                         list(range(1, len(hits) + 1)), [h.score for h in hits]))
        except (psycopg.Error, ValueError) as exc:
            return False, f"recall tracking failed (the search is unaffected): {exc}"
        return True, None

    # --- helpers ----------------------------------------------------------------------

    def _hit(self, r: dict[str, Any]) -> MemoryHit:
        return MemoryHit(
            id=str(r["id"]), path=r["path"], tier=_tier(r["user_id"]),
            score=_score(r), start_line=r["start_line"],
            end_line=r["end_line"], content=r["text"], created_at=r["created_at"],
            backend=self.name, text_score=round(float(r["text_score"]), 6),
            vector_score=(round(float(r["vector_score"]), 6)
                          if r["vector_score"] is not None else None))

    def _file_row(self, scope: MemoryScope, owner: str | None, path: str,
                  columns: str) -> dict[str, Any] | None:
        rows = self._query(
            f"""SELECT {columns} FROM memory_files f
                WHERE {search_sql.fence("f")}
                  AND coalesce(f.user_id, '') = coalesce(%(owner)s, '') AND f.path = %(path)s""",
            {"agent": scope.agent_id, "user": scope.user_id, "owner": owner, "path": path})
        return rows[0] if rows else None

    def _query(self, stmt: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with failing_as("memory query"), self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(stmt, params).fetchall()

    @contextmanager
    def _file_lock(self, scope: MemoryScope, owner: str | None, path: str) -> Iterator[None]:
        """Serialise writers of one file across processes (reads never wait)."""
        key = "\x1f".join(("kbctl:memory", scope.agent_id, owner or "", path))
        self.conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        try:
            yield
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))


def _mmr(rows: list[dict[str, Any]], k: int, lam: float,
         with_vectors: bool) -> list[dict[str, Any]]:
    if with_vectors and all(r.get("embedding") is not None for r in rows):
        vecs = {r["id"]: unit(as_floats(r["embedding"])) for r in rows}
        return mmr(rows, k, lam, lambda r: float(r["score"]),
                   lambda a, b: sum(map(mul, vecs[a["id"]], vecs[b["id"]])))
    toks = {r["id"]: tokens(r["text"]) for r in rows}
    return mmr(rows, k, lam, lambda r: float(r["score"]),
               lambda a, b: token_overlap(toks[a["id"]], toks[b["id"]]))


def _score(row: dict[str, Any]) -> float:
    """The score as reported (6 decimals), so ``--min-score`` filters what users see."""
    return round(float(row["score"]), 6)


def _tier(user_id: str | None) -> str:
    return AGENT_TIER if user_id is None else USER_TIER
