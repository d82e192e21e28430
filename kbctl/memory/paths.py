"""Scope and path rules: who is asking, and which stored file a path may name.

The scope always comes from the caller (flags, config, a runtime's pinned session), never
from a path or from stored text. A path only selects the tier; the user a user-tier row
belongs to is the caller's, so no path can reach another user's notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ..errors import InputError, PathError
from ..hygiene import id_problem

ROOT = "memory/"
AGENT_TIER = "agent"
USER_TIER = "user"
TIERS = (AGENT_TIER, USER_TIER)
MAX_PATH_CHARS = 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")
_DATED = re.compile(r"(?:^|/)(\d{4})-(\d{2})-(\d{2})\.md$")


@dataclass(frozen=True)
class MemoryScope:
    """Whose memory an operation sees: one agent, and optionally one of its users.

    ``user_id=None`` sees and writes the agent tier only.
    """

    agent_id: str
    user_id: str | None = None

    def __post_init__(self) -> None:
        _check_id("agent", self.agent_id)
        if self.user_id is not None:
            _check_id("user", self.user_id)


@dataclass(frozen=True)
class MemoryPath:
    """A validated path and the tier it lives in."""

    path: str
    tier: str

    def owner(self, scope: MemoryScope) -> str | None:
        """The ``user_id`` a row at this path is stored under for ``scope``."""
        if self.tier == AGENT_TIER:
            return None
        if scope.user_id is None:
            raise PathError(f"'{self.path}' is a user-tier path and no user was given",
                            hint="pass --user ID (or set KBCTL_USER)")
        return scope.user_id


def _check_id(kind: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"the {kind} id must be a non-empty string",
                         hint=f"pass --{kind} ID (or set KBCTL_{kind.upper()})")
    problem = id_problem(value)
    if problem:
        raise InputError(f"invalid {kind} id {value[:40]!r}: {problem}")


def scope_of(agent: str | None, user: str | None) -> MemoryScope:
    """The scope for the given ids; memory always needs an agent."""
    if agent is None or not str(agent).strip():
        raise InputError("memory commands need an agent id",
                         hint="pass --agent ID (or set KBCTL_AGENT or 'agent:' in kbctl.yaml)")
    return MemoryScope(agent, user or None)


def parse_path(path: str) -> MemoryPath:
    """Validate ``path`` and return its tier; every violation is a ``PathError`` (exit 2).

    Rules: starts with ``memory/``; then ``agent/`` or ``user/`` and at least one more
    segment; no ``..`` anywhere, no backslash, no control character, no empty, ``.`` or
    absolute segment.
    """
    if not isinstance(path, str) or not path:
        raise PathError("the memory path is empty")
    shown = path[:80]
    if len(path) > MAX_PATH_CHARS:
        raise PathError(f"memory path '{shown}…' is longer than {MAX_PATH_CHARS} characters")
    if "\\" in path:
        raise PathError(f"memory path '{shown}' contains a backslash")
    if ".." in path:
        raise PathError(f"memory path '{shown}' contains '..'")
    if _CONTROL.search(path):
        raise PathError(f"memory path {shown!r} contains a control character")
    if not path.startswith(ROOT):
        raise PathError(f"memory path '{shown}' must start with '{ROOT}'",
                        hint="use memory/agent/… (shared) or memory/user/… (private)")
    segments = path.split("/")
    if any(s in ("", ".") or _DRIVE.match(s) for s in segments):
        raise PathError(f"memory path '{shown}' has an empty, '.' or absolute segment")
    if len(segments) < 3 or segments[1] not in TIERS:
        raise PathError(f"memory path '{shown}' is outside the tiers",
                        hint="use memory/agent/<file> (shared) or memory/user/<file> (private)")
    return MemoryPath(path, segments[1])


def tier_prefix(tier: str) -> str:
    """``memory/<tier>/`` for a known tier."""
    if tier not in TIERS:
        raise InputError(f"tier must be one of {', '.join(TIERS)}, got '{tier}'")
    return f"{ROOT}{tier}/"


def file_date(path: str) -> date | None:
    """The date of a daily file (``…/YYYY-MM-DD.md``), else None.

    Only dated files decay; MEMORY.md and other evergreen notes never do.
    """
    m = _DATED.search(path)
    if not m:
        return None
    try:
        return date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None
