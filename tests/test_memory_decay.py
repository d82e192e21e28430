"""Temporal decay never fails and keeps its promise, from today to centuries ago.

The factor ``0.5 ** (age / half_life)`` underflows float8 in SQL for old notes and short
half-lives; these properties run against the real database, in both search modes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import date, timedelta

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbctl.errors import InputError
from kbctl.memory.model import SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.memory.ranking import MAX_HALF_LIVES, decay_factor
from kbctl.store.db import connect

from .embedders import HashingEmbedder

SHARED = MemoryScope("bot")
TODAY = date(2026, 11, 30)
BODY = "the staging database password rotates weekly"
# Ages from today to five centuries, dense near the present where half-lives bite.
AGES = (0, 1, 2, 7, 30, 90, 365, 3 * 365, 10 * 365, 50 * 365, 126 * 365, 500 * 365)
half_lives = st.one_of(
    st.floats(min_value=1 / 24, max_value=2.0),        # hours
    st.floats(min_value=2.0, max_value=3650.0),        # days to ten years
    st.sampled_from([0.001, 1 / 24, 1.0, 30.0, 365.25, 36525.0]),
)


@pytest.fixture(scope="module")
def backends(pg_admin_url: str) -> Iterator[dict[str, PostgresMemoryBackend]]:
    """A database per mode, each holding the same dated notes (and one undated)."""
    conns: list[psycopg.Connection] = []
    out: dict[str, PostgresMemoryBackend] = {}
    run = uuid.uuid4().hex[:8]  # workers may share one server (KBCTL_TEST_DATABASE_URL)
    names = {"hybrid": f"kbtest_decay_hybrid_{run}", "keyword": f"kbtest_decay_keyword_{run}"}
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        for name in names.values():
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {name}")
    try:
        for mode, name in names.items():
            conn = connect(psycopg.conninfo.make_conninfo(pg_admin_url, dbname=name))
            conns.append(conn)
            backend = PostgresMemoryBackend(conn, HashingEmbedder() if mode == "hybrid"
                                            else None)
            for age in AGES:
                day = TODAY - timedelta(days=age)
                backend.append(SHARED, f"memory/agent/{day.isoformat()}.md", BODY)
            backend.append(SHARED, "memory/agent/MEMORY.md", BODY)
            out[mode] = backend
        yield out
    finally:
        for conn in conns:
            conn.close()
        with psycopg.connect(pg_admin_url, autocommit=True) as admin:
            for name in names.values():
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _age(path: str) -> int | None:
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    return None if stem == "MEMORY" else (TODAY - date.fromisoformat(stem)).days


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(half_life=half_lives, mode=st.sampled_from(["hybrid", "keyword"]),
       shift=st.integers(min_value=0, max_value=200 * 365))
def test_decay_never_fails_and_newer_never_ranks_below_older(
        backends: dict[str, PostgresMemoryBackend], half_life: float, mode: str,
        shift: int) -> None:
    today = TODAY + timedelta(days=shift)
    hits = backends[mode].search(SHARED, "staging database password", SearchOptions(
        max_results=len(AGES) + 1, decay=True, half_life_days=half_life, today=today)).hits
    assert len(hits) == len(AGES) + 1
    ages = [_age(h.path) for h in hits]
    # Undated notes never decay, so they lead; dated ones follow newest first.
    assert ages[0] is None
    assert ages[1:] == sorted(ages[1:])
    scores = [h.score for h in hits]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    raw = scores[0]
    for h in hits[1:]:
        expected = raw * decay_factor(date.fromisoformat(h.path[13:23]), today, half_life)
        assert h.score == pytest.approx(expected, abs=2e-6)  # scores carry 6 decimals


@given(age=st.integers(min_value=0, max_value=1_500_000),
       later=st.integers(min_value=0, max_value=1_500_000),
       half_life=half_lives)
def test_decay_factor_is_bounded_and_non_increasing(age: int, later: int,
                                                     half_life: float) -> None:
    day = date(9000, 1, 1)  # 3.2M days after year 1: room for both ages
    young = decay_factor(day - timedelta(days=age), day, half_life)
    old = decay_factor(day - timedelta(days=age + later), day, half_life)
    assert 0.5 ** MAX_HALF_LIVES <= old <= young <= 1.0


def test_a_note_from_1900_with_a_one_day_half_life(
        backends: dict[str, PostgresMemoryBackend]) -> None:
    for backend in backends.values():
        hits = backend.search(SHARED, "staging password", SearchOptions(
            max_results=20, decay=True, half_life_days=1.0, today=TODAY)).hits
        assert hits[0].path == "memory/agent/MEMORY.md"
        assert hits[-1].score == 0.0  # 0.5 ** 300 of a score, rounded


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), 1e-9])
def test_half_life_must_be_finite_and_sensible(bad: float) -> None:
    with pytest.raises(InputError, match="half-life-days"):
        SearchOptions(decay=True, half_life_days=bad)
