"""When an agent runtime should flush its context into memory, and a guard that keeps
memory writes inside that flush.

Both are runtime-facing: ``should_flush`` is a pure function of token counts, and
``GuardedBackend`` wraps any backend so ``append`` works only in the ``memory_flushing``
phase when the runtime tells it the phase.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InputError, MemoryWriteRefused
from ..memory_config import FlushSettings
from .backend import MemoryBackend
from .model import Health, MemorySearchResult, MemoryText, SearchOptions, WriteResult
from .paths import MemoryScope

SOFT_THRESHOLD_TOKENS = FlushSettings().soft_threshold_tokens
RESERVE_FLOOR_TOKENS = FlushSettings().reserve_floor_tokens
FLUSHING_PHASE = "memory_flushing"


@dataclass(frozen=True)
class FlushPolicy:
    """Flush once used tokens pass ``window - reserve_floor - soft_threshold``: the soft
    threshold leaves room to write the flush itself before the reserve is touched."""

    soft_threshold_tokens: int = SOFT_THRESHOLD_TOKENS
    reserve_floor_tokens: int = RESERVE_FLOOR_TOKENS

    def __post_init__(self) -> None:
        if self.soft_threshold_tokens < 0 or self.reserve_floor_tokens < 0:
            raise InputError("flush thresholds must not be negative")

    @classmethod
    def from_settings(cls, flush: FlushSettings) -> FlushPolicy:
        """The policy a ``memory.flush`` config section sets."""
        return cls(soft_threshold_tokens=flush.soft_threshold_tokens,
                   reserve_floor_tokens=flush.reserve_floor_tokens)

    def threshold(self, context_window: int) -> int:
        """Used tokens above which a flush is due (may be negative for tiny windows)."""
        return context_window - self.reserve_floor_tokens - self.soft_threshold_tokens


def should_flush(used_tokens: int, context_window: int,
                 policy: FlushPolicy | None = None) -> bool:
    """True when ``used_tokens`` exceed ``context_window - reserve - soft``."""
    if used_tokens < 0 or context_window <= 0:
        raise InputError("token counts must be non-negative and the window positive")
    return used_tokens > (policy or FlushPolicy()).threshold(context_window)


class AppendGuard:
    """Permits writes always, or, given a phase accessor, only in ``memory_flushing``."""

    def __init__(self, phase: Callable[[], str | None] | None = None) -> None:
        self.phase = phase

    def allowed(self) -> bool:
        return self.phase is None or self.phase() == FLUSHING_PHASE

    def check(self) -> None:
        if not self.allowed():
            current = self.phase() if self.phase else None
            raise MemoryWriteRefused(
                f"memory writes are allowed only in the '{FLUSHING_PHASE}' phase "
                f"(current phase: {current!r})")


class GuardedBackend:
    """A backend whose ``append`` consults an ``AppendGuard`` first; reads pass through."""

    def __init__(self, inner: MemoryBackend, guard: AppendGuard) -> None:
        self.inner = inner
        self.guard = guard

    @property
    def kind(self) -> str:
        return self.inner.kind

    def search(self, scope: MemoryScope, query: str,
               options: SearchOptions | None = None) -> MemorySearchResult:
        return self.inner.search(scope, query, options)

    def get(self, scope: MemoryScope, path: str, *, from_line: int | None = None,
            lines: int | None = None) -> MemoryText:
        return self.inner.get(scope, path, from_line=from_line, lines=lines)

    def append(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        self.guard.check()
        return self.inner.append(scope, path, text)

    def health(self) -> Health:
        return self.inner.health()
