"""A path a user typed is input: when the file system refuses it for what it is (a loop of
symbolic links, a name too long, a file where a folder belongs, a folder where a file
belongs), that is bad input (exit 2) naming the path, whichever command met it."""

from __future__ import annotations

import errno
from pathlib import Path

from .errors import InputError

# What the file system says of a path itself, not of the machine it runs on.
PATH_ERRNOS = {
    errno.ELOOP: "is in a loop of symbolic links",
    errno.ENAMETOOLONG: "is too long a name for the file system",
    errno.ENOTDIR: "goes through a file where a folder belongs",
    errno.EISDIR: "is a folder where a file belongs",
}
# A name longer than this is shown cut, with its length: one line, even for 5,000 characters.
SHOWN_CHARS = 160


def shown_path(path: object) -> str:
    text = str(path)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]}… ({len(text):,} characters)"


def path_error(exc: BaseException, path: object | None = None) -> InputError | None:
    """The input error for a path the file system refused for what it is (None: ``exc``
    is some other failure). ``path`` names it when the exception does not."""
    if isinstance(exc, OSError) and exc.errno in PATH_ERRNOS:
        where = path if path is not None else exc.filename
        return InputError(f"the path {shown_path(where)} {PATH_ERRNOS[exc.errno]}",
                          hint="check the path, or pass another")
    # pathlib's resolve() reports a loop so, before Python 3.13
    if isinstance(exc, RuntimeError) and str(exc).startswith("Symlink loop from"):
        where = path if path is not None else str(exc).removeprefix("Symlink loop from ")
        return InputError(f"the path {shown_path(where)} {PATH_ERRNOS[errno.ELOOP]}",
                          hint="check the path, or pass another")
    return None


def resolved(path: str | Path) -> Path:
    """``path`` made absolute with its links followed; a path the file system refuses for
    what it is raises the input error naming it."""
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError) as exc:
        error = path_error(exc, path)
        if error is None:
            raise
        raise error from None
