"""Two-tier agent memory: scope and path rules, the MemoryBackend protocol (also named
MemoryStore), the Postgres and
composite backends, ranking (MMR, decay), the flush policy and the append guard.

Operations with settings resolution live in ``kbctl.memory.api``.
"""

from __future__ import annotations

from .backend import MemoryBackend, MemoryStore
from .composite import CompositeMemoryBackend
from .model import MemoryHit, MemorySearchResult, SearchOptions
from .paths import MemoryScope, parse_path
from .policy import AppendGuard, FlushPolicy, GuardedBackend, should_flush
from .postgres import PostgresMemoryBackend

__all__ = [
    "AppendGuard",
    "CompositeMemoryBackend",
    "FlushPolicy",
    "GuardedBackend",
    "MemoryBackend",
    "MemoryHit",
    "MemoryScope",
    "MemorySearchResult",
    "MemoryStore",
    "PostgresMemoryBackend",
    "SearchOptions",
    "parse_path",
    "should_flush",
]
