"""What ``kbctl status`` reads of a whole knowledge base: its namespaces, and per namespace
its sources, chunks and the history of its definitions' runs."""

from __future__ import annotations

import psycopg

from .records import NamespaceStatus


class Status:
    """The namespaces of one database, and how each stands."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def namespaces(self) -> list[str]:
        rows = self.conn.execute(
            """SELECT namespace FROM sources UNION SELECT namespace FROM source_defs
               ORDER BY 1"""
        ).fetchall()
        return [r[0] for r in rows]

    def per_namespace(self, namespace: str | None = None) -> list[NamespaceStatus]:
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
