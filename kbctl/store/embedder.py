"""The embedder a knowledge base was built with: its identity and the address it was
last reached at (recorded in ``kb_meta``), the width of the vector column and its HNSW
index, and a re-embed's swap of every vector and the record at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..embed.base import NO_EMBEDDER, EmbedderIdentity
from ..errors import EmbedderMismatch
from .documents import set_page_vectors, table_exists
from .vectors import vector_param

_EMBEDDER_KEY = "embedder"


class EmbedderRecord:
    """The KB's record of its embedder, over one connection."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def identity(self) -> EmbedderIdentity | None:
        """The embedder this KB was built with; None while the KB has never been written."""
        return self.state()[0]

    def bind(self, identity: EmbedderIdentity) -> EmbedderIdentity:
        """Record ``identity`` on a fresh KB, or check it matches the recorded one. A KB
        that holds nothing yet (its first write failed: no key, a provider down) takes
        the new one instead: there is nothing to mix. Writes only what changes: a role
        that may only read opens the KB (and its memory) as long as nothing must."""
        if self.identity() == identity:
            return identity
        with self.conn.transaction():
            inserted = self.conn.execute(
                "INSERT INTO kb_meta (key, value) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (_EMBEDDER_KEY, Jsonb(_identity_json(identity))),
            ).rowcount
            if inserted and identity.dimensions > 0:
                self._set_vector_dimensions(identity.dimensions)
            recorded = self.identity()
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

    def state(self) -> tuple[EmbedderIdentity | None, str | None]:
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

    def record_endpoint(self, base_url: str | None, *,
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

    def _set_vector_dimensions(self, dims: int) -> None:
        """Give the vector column a fixed width (HNSW needs one); existing vectors go."""
        self.conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
        self.conn.execute(
            f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({int(dims)}) USING NULL")
        # keep vectors in the row (a 1536-d vector would otherwise be TOASTed, and an
        # exact cosine scan would pay a detour per row)
        self.conn.execute("ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN")
        self.conn.execute("UPDATE sources SET embedding = NULL WHERE embedding IS NOT NULL")

    def ensure_vector_index(self) -> bool:
        """Build the HNSW index once vectors exist (after a bulk load, where it is cheapest
        to build); later writes maintain it. Returns True when it was just built."""
        ident = self.identity()
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

    def create_stage(self, stage: str) -> None:
        """A session table that collects re-embedded vectors before the swap."""
        self.drop_stage(stage)
        self.conn.execute(f"CREATE TEMP TABLE {stage} (chunk_id bigint PRIMARY KEY, "
                          f"embedding vector)")

    def drop_stage(self, stage: str) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS {stage}")

    def stage(self, stage: str, ids: Sequence[int],
                         vectors: Sequence[Sequence[float]]) -> None:
        self.conn.execute(
            f"""INSERT INTO {stage} (chunk_id, embedding)
                SELECT i, v FROM unnest(%b::bigint[], %b::vector[]) AS u(i, v)""",
            (list(ids), [vector_param(v) for v in vectors]))

    def swap(self, identity: EmbedderIdentity, staged_table: str,
                        staged_memory: str | None = None, *,
                        endpoint: str | None = None, private_network: bool = False) -> None:
        """Replace every vector (KB chunks and, when staged, memory chunks) and the recorded
        identity, with the base URL the new embedder was reached at (``endpoint``), in one
        transaction: recorded later, a long-lived reader that looked in between resolved the
        new model at its provider's default address and kept it. ``private_network``: the
        endpoint was reached with the private-network opt-in (``record_endpoint``)."""
        with self.conn.transaction():
            if staged_memory is not None and table_exists(self.conn, "memory_chunks"):
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
            set_page_vectors(self.conn)
            recorded = _identity_json(identity) | ({"baseUrl": endpoint} if endpoint else {}) \
                | ({"privateNetwork": True} if endpoint and private_network else {})
            self.conn.execute(
                "UPDATE kb_meta SET value = %s WHERE key = %s",
                (Jsonb(recorded), _EMBEDDER_KEY))
        self.ensure_vector_index()


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

