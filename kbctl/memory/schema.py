"""Memory's own migrations (versions from 100), applied through the shared migration table.

Files hold the text (what ``get`` reads); chunks are line ranges of a file with their
embedding; postings are BM25's inverted index over chunks, built from ``to_tsvector`` like
the knowledge base's. Every table carries ``agent_id`` and ``user_id`` (NULL for the agent
tier) so every read can be fenced by the same predicate without a join.
"""

from __future__ import annotations

import psycopg

from ..store import lexical
from ..store.migrations import REBUILD_BATCH, Migration


def rebuild_memory_postings(conn: psycopg.Connection) -> None:
    """Re-tokenise every memory chunk with the current lexical engine (identifier-aware
    tokens) and rebuild its postings, lengths and per-scope totals."""
    conn.execute("TRUNCATE memory_postings")
    after = 0
    while True:
        rows = conn.execute(
            "SELECT id, agent_id, user_id, text FROM memory_chunks WHERE id > %s "
            "ORDER BY id LIMIT %s", (after, REBUILD_BATCH)).fetchall()
        if not rows:
            break
        after = rows[-1][0]
        analysed = [lexical.analyse(r[3]) for r in rows]
        conn.execute(
            f"""WITH src AS (
                    SELECT * FROM unnest(%(ids)s::bigint[], %(t)s::text[], %(x)s::text[])
                        AS u(id, t, x)),
                {lexical.lexeme_ctes("id")},
                upd AS (UPDATE memory_chunks c SET lexeme_count = coalesce(len.dl, 0)
                        FROM src LEFT JOIN len USING (id) WHERE c.id = src.id)
                INSERT INTO memory_postings (chunk_id, lexeme, agent_id, user_id, tf, dl,
                                             impact)
                SELECT lex.id, lex.lexeme, c.agent_id, c.user_id, lex.tf, len.dl,
                       {lexical.impact_sql("lex.tf", "len.dl")}
                FROM lex JOIN len USING (id) JOIN memory_chunks c ON c.id = lex.id""",
            {"ids": [r[0] for r in rows], "t": [a.text for a in analysed],
             "x": [a.exact_text for a in analysed]})
    conn.execute("""UPDATE memory_stats s SET total_len = coalesce(
                        (SELECT sum(c.lexeme_count) FROM memory_chunks c
                         WHERE c.agent_id = s.agent_id
                           AND coalesce(c.user_id, '') = coalesce(s.user_id, '')), 0)""")


MEMORY_MIGRATIONS: list[Migration] = [
    (
        100,
        "agent memory",
        """
        CREATE TABLE memory_files (
            id           bigserial PRIMARY KEY,
            agent_id     text NOT NULL,
            user_id      text,
            path         text NOT NULL,
            content      text NOT NULL,
            content_hash text NOT NULL,
            file_date    date,
            created_at   timestamptz NOT NULL DEFAULT now(),
            updated_at   timestamptz NOT NULL DEFAULT now(),
            CHECK ((user_id IS NULL) = (path LIKE 'memory/agent/%'))
        );
        CREATE UNIQUE INDEX memory_files_key
            ON memory_files (agent_id, (coalesce(user_id, '')), path);

        CREATE TABLE memory_chunks (
            id           bigserial PRIMARY KEY,
            file_id      bigint NOT NULL REFERENCES memory_files (id) ON DELETE CASCADE,
            agent_id     text NOT NULL,
            user_id      text,
            path         text NOT NULL,
            ordinal      integer NOT NULL,
            start_line   integer NOT NULL,
            end_line     integer NOT NULL,
            text         text NOT NULL,
            text_hash    text NOT NULL,
            lexeme_count integer NOT NULL DEFAULT 0,
            file_date    date,
            created_at   timestamptz NOT NULL DEFAULT now(),
            embedding    vector,
            UNIQUE (file_id, ordinal)
        );
        CREATE INDEX memory_chunks_scope ON memory_chunks (agent_id, user_id);
        -- Keep vectors in the heap row (the text is moved out instead): an exact scan of a
        -- scope then reads no TOAST, about 6x faster for 384 dimensions.
        ALTER TABLE memory_chunks ALTER COLUMN embedding SET STORAGE MAIN;

        CREATE TABLE memory_postings (
            chunk_id bigint NOT NULL REFERENCES memory_chunks (id) ON DELETE CASCADE,
            lexeme   text NOT NULL,
            agent_id text NOT NULL,
            user_id  text,
            tf       integer NOT NULL,
            dl       integer NOT NULL,
            impact   real NOT NULL,
            PRIMARY KEY (chunk_id, lexeme)
        );
        CREATE INDEX memory_postings_impact
            ON memory_postings (agent_id, lexeme, impact DESC)
            INCLUDE (user_id, chunk_id, tf, dl);

        -- BM25 corpus statistics per (agent, user); a reader sums the rows it may see.
        CREATE TABLE memory_stats (
            agent_id    text NOT NULL,
            user_id     text,
            chunk_count bigint NOT NULL DEFAULT 0,
            total_len   bigint NOT NULL DEFAULT 0
        );
        CREATE UNIQUE INDEX memory_stats_key
            ON memory_stats (agent_id, (coalesce(user_id, '')));

        -- Recall tracking: who searched what, and which entries came back.
        CREATE TABLE memory_recalls (
            id         bigserial PRIMARY KEY,
            agent_id   text NOT NULL,
            user_id    text,
            query      text NOT NULL,
            hit_count  integer NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX memory_recalls_scope ON memory_recalls (agent_id, user_id);

        -- ``user_id`` is the recalled entry's owner (NULL for agent-tier entries), so a
        -- reader's statistics obey the same fence as its searches.
        CREATE TABLE memory_recall_hits (
            recall_id  bigint NOT NULL REFERENCES memory_recalls (id) ON DELETE CASCADE,
            chunk_id   bigint NOT NULL REFERENCES memory_chunks (id) ON DELETE CASCADE,
            agent_id   text NOT NULL,
            user_id    text,
            rank       integer NOT NULL,
            score      real NOT NULL,
            PRIMARY KEY (recall_id, chunk_id)
        );
        CREATE INDEX memory_recall_hits_scope ON memory_recall_hits (agent_id, user_id);
        CREATE INDEX memory_recall_hits_chunk ON memory_recall_hits (chunk_id);
        """,
    ),
    (101, "identifier-aware memory postings", rebuild_memory_postings),
    # Postings are walked per tier (the agent's, the caller's own): walked per agent and
    # fenced after, a search read every user's postings of its words, and its time told
    # another user which words fill someone's private notes.
    (102, "memory postings indexed per tier", """
        CREATE INDEX memory_postings_tier
            ON memory_postings (agent_id, user_id, lexeme, impact DESC)
            INCLUDE (chunk_id, tf, dl);
        DROP INDEX memory_postings_impact;
        """),
    (103, "words joined by slashes indexed apart as well", rebuild_memory_postings),
]
