"""The MemoryBackend seam: what an agent runtime (CLI, MCP server) needs from a store.

Every call takes the caller's scope explicitly; a backend never derives it from a path or
from stored text.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .model import Health, MemorySearchResult, MemoryText, SearchOptions, WriteResult
from .paths import MemoryScope


@runtime_checkable
class MemoryBackend(Protocol):
    @property
    def kind(self) -> str:
        """What the backend is (``postgres``, ``composite``, …)."""
        ...

    def search(self, scope: MemoryScope, query: str,
               options: SearchOptions | None = None) -> MemorySearchResult: ...

    def get(self, scope: MemoryScope, path: str, *, from_line: int | None = None,
            lines: int | None = None) -> MemoryText: ...

    def append(self, scope: MemoryScope, path: str, text: str) -> WriteResult: ...

    def health(self) -> Health: ...


# The name the memory design uses for the same protocol.
MemoryStore = MemoryBackend
