"""Replacing a file whole, so that a crash or a full disk mid-write leaves the old file.

Used where a half-written file would do harm the next time it is read: the embedded
server's handle list, the portable embedding cache, and report files such as a JSON report
that the next CI run reads back as its baseline (truncated first and then left
half-written, it would fail every later run, and the old baseline would be gone)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_replacing(path: Path, text: str | bytes) -> None:
    """Write ``text`` (or bytes) to a temporary file beside ``path`` and rename it over
    ``path``; on any failure the temporary file is removed and ``path`` is as it was. A
    ``path`` that exists and is no regular file (``/dev/stdout``, a pipe) is written in
    place: renaming over it would replace the device, not write to it. A symbolic link is
    followed: the file it names is replaced, and the link stays."""
    path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():
        with path.open("wb") as fh:
            fh.write(_encoded(text))
        return
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("wb") as fh:
            fh.write(_encoded(text))
        with contextlib.suppress(OSError):  # keep the old file's permissions
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def _encoded(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8")
