"""Flush policy (a pure function) and the append guard around a real backend."""

from __future__ import annotations

import pytest

from kbctl.errors import InputError
from kbctl.memory.model import SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.policy import (
    FLUSHING_PHASE,
    RESERVE_FLOOR_TOKENS,
    SOFT_THRESHOLD_TOKENS,
    AppendGuard,
    FlushPolicy,
    GuardedBackend,
    MemoryWriteRefused,
    should_flush,
)
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.store.db import connect


@pytest.mark.parametrize("window", [32_000, 128_000, 1_000_000])
def test_flush_starts_just_past_window_minus_reserve_minus_soft(window: int) -> None:
    edge = window - RESERVE_FLOOR_TOKENS - SOFT_THRESHOLD_TOKENS
    assert not should_flush(edge, window)
    assert should_flush(edge + 1, window)
    assert not should_flush(0, window)


def test_policy_defaults_and_custom_thresholds() -> None:
    assert (SOFT_THRESHOLD_TOKENS, RESERVE_FLOOR_TOKENS) == (4000, 20000)
    tight = FlushPolicy(soft_threshold_tokens=1000, reserve_floor_tokens=2000)
    assert tight.threshold(10_000) == 7000
    assert should_flush(7001, 10_000, tight) and not should_flush(7000, 10_000, tight)
    assert should_flush(1, 20_000)  # a window smaller than the reserve: always flush
    for bad in ({"soft_threshold_tokens": -1}, {"reserve_floor_tokens": -5}):
        with pytest.raises(InputError):
            FlushPolicy(**bad)
    with pytest.raises(InputError):
        should_flush(-1, 1000)


def test_guard_without_a_phase_accessor_permits_writes() -> None:
    assert AppendGuard().allowed()
    AppendGuard().check()


def test_guard_permits_writes_only_while_flushing(db_url: str) -> None:
    phase = {"now": "responding"}
    conn = connect(db_url)
    backend = GuardedBackend(PostgresMemoryBackend(conn), AppendGuard(lambda: phase["now"]))
    scope = MemoryScope("bot", "alice")
    with pytest.raises(MemoryWriteRefused) as info:
        backend.append(scope, "memory/user/notes.md", "remember this")
    assert info.value.exit_code == 2 and "memory_flushing" in info.value.message
    assert backend.inner.list_files(scope).files == []  # type: ignore[attr-defined]
    phase["now"] = FLUSHING_PHASE
    backend.append(scope, "memory/user/notes.md", "remember this")
    phase["now"] = "responding"
    assert [h.path for h in backend.search(scope, "remember", SearchOptions()).hits] == [
        "memory/user/notes.md"]
    assert backend.get(scope, "memory/user/notes.md").text == "remember this"
    assert backend.health().ok and backend.kind == "postgres"
    conn.close()
