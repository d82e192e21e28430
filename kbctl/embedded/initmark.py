"""Proof that kbctl made a data directory, so that a repair removes only what kbctl made.

An interrupted ``initdb`` leaves a directory that never held data and that ``initdb``
refuses to use again; kbctl clears it and starts over. A folder a person keeps at the same
path (a ``pg/`` holding their own ``log/`` and ``postgresql.conf``) can look the same, and
must never be removed. So before it runs ``initdb``, kbctl records the identity (device and
inode) of the directory it is about to fill in ``DATA_DIR/MARK_FILE``; a half-made
directory is removed only when it is that very directory. (A folder made at once in the
place of a deleted one may be given its inode again, and is then taken for it.)

A data directory made by a kbctl from before the mark has none; what proves it there is
what ``initdb`` makes before anything else: ``PG_VERSION`` is written only after every
subdirectory of a cluster was made, so a ``PG_VERSION`` beside ``global/``, ``base/`` and
``pg_wal/`` (and a ``log`` that is a file, the server's, if any) is ``initdb``'s work.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..atomic import write_replacing

MARK_FILE = "pg.initdb"
# What initdb makes before it writes PG_VERSION.
_SKELETON = ("global", "base", "pg_wal")


def _identity(path: Path) -> str | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"


def mark_before_initdb(pgdata: Path) -> None:
    """Make ``pgdata`` (if it is not there) and record it as kbctl's, when it holds nothing
    yet; a directory that holds something is never claimed."""
    pgdata.mkdir(exist_ok=True)
    if any(pgdata.iterdir()):
        return
    identity = _identity(pgdata)
    if identity is not None:
        write_replacing(pgdata.parent / MARK_FILE, identity + "\n")


def made_by_kbctl(pgdata: Path) -> bool:
    """Whether ``pgdata`` is the directory kbctl marked before its ``initdb``, or carries
    the skeleton only ``initdb`` makes."""
    try:
        with open(pgdata.parent / MARK_FILE, encoding="ascii", errors="replace") as f:
            recorded = f.read(128).strip()
    except OSError:
        recorded = ""
    if recorded and recorded == _identity(pgdata):
        return True
    try:
        version = (pgdata / "PG_VERSION").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    log = pgdata / "log"
    return (version.strip().isdigit()
            and all((pgdata / name).is_dir() and not (pgdata / name).is_symlink()
                    for name in _SKELETON)
            and (not os.path.lexists(log) or (log.is_file() and not log.is_symlink())))


def holds_no_cluster(pgdata: Path) -> bool:
    """A directory with something in it but no cluster (no ``global/pg_control``)."""
    with contextlib.suppress(OSError):
        if pgdata.is_dir() and any(pgdata.iterdir()):
            return not (pgdata / "global" / "pg_control").exists()
    return False
