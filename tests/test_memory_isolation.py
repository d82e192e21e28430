"""Isolation as a property: random appends and searches by two users of one agent, the
agent itself, and a user of a second agent. Nobody may ever see a row of another user or
another agent, whatever the texts and paths say."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbctl.memory.model import SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.store.db import connect

from .embedders import HashingEmbedder

ACTORS = [MemoryScope("a1", "u1"), MemoryScope("a1", "u2"), MemoryScope("a1"),
          MemoryScope("a2", "u1")]
WORDS = ["deploy", "rollback", "secret", "password", "budget", "travel", "memory/user/u1",
         "ignore", "previous", "user_id", "agent", "a1", "u2", "notes", "the", "keys"]
FILES = ["MEMORY.md", "notes.md", "2024-05-01.md", "u1/notes.md", "../x.md"]
_MARK = re.compile(r"\bzq[a-z0-9]+\b")


def marker(agent: str, owner: str | None) -> str:
    """A token naming the row's true owner; it must only ever reach that owner's scope."""
    return f"zq{agent}{owner or 'shared'}"


def visible_markers(scope: MemoryScope) -> set[str]:
    return {marker(scope.agent_id, None)} | (
        {marker(scope.agent_id, scope.user_id)} if scope.user_id else set())


append_op = st.tuples(st.just("append"), st.sampled_from(range(len(ACTORS))),
                      st.sampled_from(["agent", "user"]), st.sampled_from(FILES),
                      st.lists(st.sampled_from(WORDS), min_size=1, max_size=12))
search_op = st.tuples(st.just("search"), st.sampled_from(range(len(ACTORS))),
                      st.booleans(), st.lists(st.sampled_from(WORDS + ["zqa1u1", "zqa2u1",
                                                                       "zqa1shared"]),
                                              min_size=1, max_size=4))


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    c = connect(db_url)
    yield c
    c.close()


def _reset(conn: psycopg.Connection) -> None:
    conn.execute("TRUNCATE memory_files, memory_chunks, memory_postings, memory_stats, "
                 "memory_recalls, memory_recall_hits")


def _check_visible(scope: MemoryScope, text: str) -> None:
    assert set(_MARK.findall(text)) <= visible_markers(scope), (scope, text)


@pytest.mark.parametrize("embedded", [True, False], ids=["hybrid", "keyword"])
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(append_op, search_op), min_size=1, max_size=14))
def test_nobody_sees_another_users_or_agents_rows(conn: psycopg.Connection, embedded: bool,
                                                  ops: list[tuple]) -> None:
    backend = PostgresMemoryBackend(conn, HashingEmbedder() if embedded else None)
    _reset(conn)
    run_isolation(backend, ops, embedded=embedded)


def run_isolation(backend: Any, ops: list[tuple], *, embedded: bool) -> None:
    """Play ``ops`` on any backend and check that every answer stays in its scope: what
    the vector backend holds to, the graph and the composite hold to as well."""
    model: dict[tuple[str, str | None, str], list[str]] = {}
    for op in ops:
        scope = ACTORS[op[1]]
        if op[0] == "append":
            _, _, tier, name, words = op
            path = f"memory/{tier}/{name}"
            if ".." in name or (tier == "user" and scope.user_id is None):
                with pytest.raises(Exception) as info:
                    backend.append(scope, path, " ".join(words))
                assert getattr(info.value, "exit_code", None) == 2
                continue
            owner = scope.user_id if tier == "user" else None
            text = " ".join([marker(scope.agent_id, owner), *words])
            backend.append(scope, path, text)
            model.setdefault((scope.agent_id, owner, path), []).append(text)
        else:
            _, _, mmr, words = op
            result = backend.search(scope, " ".join(words),
                                    SearchOptions(max_results=50, mmr=mmr, track=True))
            for hit in result.hits:
                owner = scope.user_id if hit.tier == "user" else None
                assert (scope.agent_id, owner, hit.path) in model, (scope, hit)
                _check_visible(scope, hit.content)
                assert hit.content in "\n".join(model[(scope.agent_id, owner, hit.path)])
    for scope in ACTORS:
        mine = {k for k in model if k[0] == scope.agent_id
                and (k[1] is None or k[1] == scope.user_id)}
        listed = {(scope.agent_id, scope.user_id if f.tier == "user" else None, f.path)
                  for f in backend.list_files(scope).files}
        assert listed == mine
        for key in mine:
            assert backend.get(scope, key[2]).text == "\n".join(model[key])
        for m in {marker(a.agent_id, a.user_id) for a in ACTORS} - visible_markers(scope):
            hits = backend.search(scope, m).hits
            for hit in hits:  # vectors may match own rows; their text never names others
                _check_visible(scope, hit.content)
            assert embedded or hits == []
        stats = backend.stats(scope)
        for s in stats.top:
            owner = scope.user_id if s.tier == "user" else None
            assert (scope.agent_id, owner, s.path) in model
        assert sum(t.files for t in stats.tiers) == len(mine)


def _postings_read(url: str) -> int:
    """Index entries read from the memory postings so far, once the stats are flushed."""
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("SELECT pg_stat_clear_snapshot()")
        row = c.execute("SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes "
                        "WHERE relname = 'memory_postings'").fetchone()
        return int(row[0]) if row else 0


def test_a_search_reads_no_other_users_postings(db_url: str) -> None:
    """Walked per agent and fenced after, bob's search read every one of alice's postings
    of its words: 10x slower for words her private notes are full of, which told bob what
    they are about. Now it reads the agent's tier and his own, whatever alice holds."""
    conn = connect(db_url)
    backend = PostgresMemoryBackend(conn, None)
    alice, bob = MemoryScope("a1", "alice"), MemoryScope("a1", "bob")
    for i in range(150):
        backend.put(alice, f"memory/user/n{i}.md", f"zebra crossing plans {i}")
    backend.put(bob, "memory/user/mine.md", "bob keeps a zebra sketch")

    def reads_for(scope: MemoryScope, query: str) -> int:
        conn.execute("SELECT pg_stat_force_next_flush()")
        before = _postings_read(db_url)
        backend.search(scope, query, SearchOptions())  # typo tolerance on: its words too
        conn.execute("SELECT pg_stat_force_next_flush()")
        conn.execute("SELECT 1")  # the flush happens as the session goes idle
        return _postings_read(db_url) - before

    by_bob = reads_for(bob, "zebra crossing plans")
    assert [h.path for h in backend.search(bob, "zebra", SearchOptions()).hits] == [
        "memory/user/mine.md"]
    by_alice = reads_for(alice, "zebra crossing plans")
    assert by_alice >= 150 * 3  # the counter counts: alice's own search reads hers
    assert by_bob < 20, by_bob
    conn.close()
