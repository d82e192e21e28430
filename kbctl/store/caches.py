"""The caches a knowledge base keeps beside its documents: embeddings by input hash (per
embedder), rerank scores by question and passage (per reranker), and their pruning."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from .vectors import vector_param

# Each cache's age column: a vector ages from its last use, a rerank score from its write.
_CACHE_AGE = {"embedding_cache": "used_at", "rerank_cache": "created_at"}


class Caches:
    """The embedding and rerank caches of one database."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def embeddings(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, list[float]]:
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

    def add_embeddings(self, identity: str, vectors: dict[bytes, list[float]]) -> None:
        self._add("embedding_cache (identity, input_hash, embedding)", "vector", identity,
                  {key: vector_param(v) for key, v in vectors.items()})

    def rerank_scores(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, float]:
        if not keys:
            return {}
        rows = self.conn.execute(
            "SELECT pair_hash, score FROM rerank_cache "
            "WHERE identity = %s AND pair_hash = ANY(%s)",
            (identity, list(keys)),
        ).fetchall()
        return {bytes(k): float(v) for k, v in rows}

    def add_rerank_scores(self, identity: str, scores: dict[bytes, float]) -> None:
        self._add("rerank_cache (identity, pair_hash, score)", "float8", identity, scores)

    def _add(self, into: str, kind: str, identity: str, values: Mapping[bytes, Any]) -> None:
        """Insert ``values`` (key → value of SQL type ``kind``) of ``identity`` ``into`` a
        cache table (its columns: identity, key, value), in binary; a key it holds stays."""
        if not values:
            return
        self.conn.execute(
            f"""INSERT INTO {into}
                SELECT %s, k, v FROM unnest(%b::bytea[], %b::{kind}[]) AS u(k, v)
                ON CONFLICT DO NOTHING""",
            (identity, list(values), list(values.values())))

    def prune(self, table: str, older_than_days: float) -> int:
        """Drop rows of a cache (``embedding_cache``: last used; ``rerank_cache``: written)
        more than ``older_than_days`` ago; how many."""
        column = _CACHE_AGE[table]
        cursor = self.conn.execute(
            f"DELETE FROM {table} WHERE {column} < now() - make_interval(secs => %s)",
            (older_than_days * 86400.0,))
        return cursor.rowcount
