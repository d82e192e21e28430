"""Source definitions: what a user asked to ingest (kind, target, options), kept per
namespace so that resync runs it again, with how its last run went."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .records import SourceDef


class Definitions:
    """The recorded source definitions of one database."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def record(self, d: SourceDef) -> None:
        self.conn.execute(
            """INSERT INTO source_defs (namespace, id, kind, target, options)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (namespace, id) DO UPDATE
                 SET kind = excluded.kind, target = excluded.target,
                     options = excluded.options""",
            (d.namespace, d.id, d.kind, d.target, Jsonb(d.options)),
        )

    def forget(self, namespace: str, def_id: str) -> bool:
        """Remove a recorded definition (its pages stay); False when there was none."""
        return self.conn.execute("DELETE FROM source_defs WHERE namespace = %s AND id = %s",
                                 (namespace, def_id)).rowcount > 0

    def begin(self, namespace: str, def_id: str, interrupted: dict[str, Any]) -> None:
        """Stamp a recorded definition's run as begun, with ``interrupted`` as its error
        until ``finish`` records how it ended: a run killed on the way (SIGKILL, a
        lost database) shows in ``status`` as a failed run, not as the one before it."""
        self.conn.execute(
            """UPDATE source_defs SET last_run_at = now(), last_errors = %s
               WHERE namespace = %s AND id = %s""",
            (Jsonb([interrupted]), namespace, def_id),
        )

    def finish(self, namespace: str, def_id: str, errors: list[dict[str, Any]]) -> None:
        """Stamp a definition's run; ``last_ok_at`` moves only when nothing failed."""
        self.conn.execute(
            """UPDATE source_defs SET last_run_at = now(), last_errors = %s,
                      last_ok_at = CASE WHEN %s THEN now() ELSE last_ok_at END
               WHERE namespace = %s AND id = %s""",
            (Jsonb(errors), not errors, namespace, def_id),
        )

    def recorded(self, namespace: str | None = None) -> list[SourceDef]:
        rows = self.conn.execute(
            """SELECT namespace, id, kind, target, options, last_run_at, last_ok_at,
                      last_errors
               FROM source_defs WHERE %(ns)s::text IS NULL OR namespace = %(ns)s
               ORDER BY namespace, created_at, id""",
            {"ns": namespace},
        ).fetchall()
        return [SourceDef(*r) for r in rows]
