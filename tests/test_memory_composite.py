"""The composite backend over two real Postgres backends in two databases."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from kbctl.errors import InputError
from kbctl.memory.backend import MemoryBackend
from kbctl.memory.composite import CompositeMemoryBackend
from kbctl.memory.model import SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.policy import AppendGuard, GuardedBackend
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.store.db import connect

from .embedders import HashingEmbedder

ALICE = MemoryScope("bot", "alice")


@pytest.fixture
def second_db(pg_admin_url: str) -> Iterator[str]:
    name = f"kbtest_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield psycopg.conninfo.make_conninfo(pg_admin_url, dbname=name)
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


@pytest.fixture
def pair(db_url: str, second_db: str) -> Iterator[tuple[PostgresMemoryBackend,
                                                        PostgresMemoryBackend]]:
    c1, c2 = connect(db_url), connect(second_db)
    yield PostgresMemoryBackend(c1, HashingEmbedder()), PostgresMemoryBackend(c2, None)
    c1.close()
    c2.close()


def test_backends_satisfy_the_protocol(pair: tuple[PostgresMemoryBackend, ...]) -> None:
    composite = CompositeMemoryBackend(pair)
    for b in (*pair, composite, GuardedBackend(pair[0], AppendGuard())):
        assert isinstance(b, MemoryBackend)
    assert composite.names == ["postgres", "postgres#2"]


def test_merge_normalises_folds_and_tags(pair: tuple[PostgresMemoryBackend, ...]) -> None:
    live, archive = pair
    both = "the vpn certificate expires in march, renew it with the ops portal"
    live.append(ALICE, "memory/agent/MEMORY.md", both)
    archive.append(ALICE, "memory/agent/MEMORY.md", both)
    live.append(ALICE, "memory/user/live.md", "vpn split tunnel is disabled for alice")
    archive.append(ALICE, "memory/user/old.md", "old vpn client config lived in archive")
    composite = CompositeMemoryBackend([live, archive], names=["live", "archive"])
    result = composite.search(ALICE, "vpn certificate renew", SearchOptions(max_results=10))
    assert result.backend == "composite" and result.mode == "mixed"
    by_path = {h.path: h for h in result.hits}
    assert set(by_path) == {"memory/agent/MEMORY.md", "memory/user/live.md",
                            "memory/user/old.md"}  # the shared entry appears once
    shared = by_path["memory/agent/MEMORY.md"]
    assert {shared.backend, *shared.also_in} == {"live", "archive"}
    assert by_path["memory/user/live.md"].backend == "live"
    assert by_path["memory/user/old.md"].backend == "archive"
    assert all(h.id.startswith(f"{h.backend}:") for h in result.hits)
    assert shared.score == 1.0 and all(0 <= h.score <= 1 for h in result.hits)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits),
                                                    reverse=True)
    raw = {h.path: h.score for h in archive.search(ALICE, "vpn certificate renew").hits}
    assert by_path["memory/user/old.md"].score == pytest.approx(
        raw["memory/user/old.md"] / max(raw.values()), abs=1e-5)
    assert any("keyword-only" in n and n.startswith("archive") for n in result.notes)


def test_writes_go_to_the_primary_and_reads_fall_back(
        pair: tuple[PostgresMemoryBackend, ...]) -> None:
    live, archive = pair
    archive.append(ALICE, "memory/user/2023-01-01.md", "archived day")
    composite = CompositeMemoryBackend([live, archive])
    composite.append(ALICE, "memory/user/today.md", "fresh note")
    assert [f.path for f in live.list_files(ALICE).files] == ["memory/user/today.md"]
    assert [f.path for f in archive.list_files(ALICE).files] == ["memory/user/2023-01-01.md"]
    assert composite.get(ALICE, "memory/user/2023-01-01.md").text == "archived day"
    with pytest.raises(InputError):
        composite.get(ALICE, "memory/user/nowhere.md")


def test_health_is_ok_only_when_every_backend_is(pair: tuple[PostgresMemoryBackend, ...]
                                                 ) -> None:
    composite = CompositeMemoryBackend(pair, names=["live", "archive"])
    assert composite.health().ok
    pair[1].conn.close()
    health = composite.health()
    assert not health.ok and health.error and health.error.startswith("archive:")
    assert health.details["live"]["ok"] and not health.details["archive"]["ok"]
    with pytest.raises(InputError):
        CompositeMemoryBackend([])
