"""The Postgres memory backend on a real database: writes, reads, ranking, tracking."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import date

import psycopg
import pytest

from kbctl.embed.windows import CHARS_PER_TOKEN
from kbctl.errors import EmbedderMismatch, InputError
from kbctl.memory.model import ListPage, SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.memory.ranking import decay_factor, mmr
from kbctl.store.db import connect

from .conftest import rows
from .embedders import HashingEmbedder

ALICE = MemoryScope("bot", "alice")
BOB = MemoryScope("bot", "bob")
SHARED = MemoryScope("bot")


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    c = connect(db_url)
    yield c
    c.close()


@pytest.fixture
def hybrid(conn: psycopg.Connection) -> PostgresMemoryBackend:
    return PostgresMemoryBackend(conn, HashingEmbedder())


@pytest.fixture
def keyword(conn: psycopg.Connection) -> PostgresMemoryBackend:
    return PostgresMemoryBackend(conn, None)


def consistent(url: str) -> None:
    """Files, chunks, postings and per-scope statistics agree."""
    assert rows(url, """SELECT s.agent_id, s.user_id FROM memory_stats s
        WHERE s.chunk_count <> (SELECT count(*) FROM memory_chunks c
                                WHERE c.agent_id = s.agent_id
                                  AND c.user_id IS NOT DISTINCT FROM s.user_id)
           OR s.total_len <> (SELECT coalesce(sum(lexeme_count), 0) FROM memory_chunks c
                              WHERE c.agent_id = s.agent_id
                                AND c.user_id IS NOT DISTINCT FROM s.user_id)""") == []
    assert rows(url, """SELECT c.id FROM memory_chunks c JOIN memory_files f ON f.id = c.file_id
        WHERE (c.agent_id, c.path) <> (f.agent_id, f.path)
           OR c.user_id IS DISTINCT FROM f.user_id""") == []
    assert rows(url, """SELECT p.chunk_id FROM memory_postings p
        JOIN memory_chunks c ON c.id = p.chunk_id
        WHERE p.agent_id <> c.agent_id OR p.user_id IS DISTINCT FROM c.user_id""") == []


def long_text(tag: str, n: int) -> str:
    return "\n".join(f"{tag} note {i}: " + " ".join(f"w{i}x{j}" for j in range(12))
                     for i in range(n))


# --- writes ------------------------------------------------------------------------------


def test_append_creates_then_extends_on_a_new_line(hybrid: PostgresMemoryBackend,
                                                   db_url: str) -> None:
    first = hybrid.append(ALICE, "memory/user/prefs.md", "likes short answers")
    second = hybrid.append(ALICE, "memory/user/prefs.md", "prefers metric units\r\n")
    assert (first.status, second.status) == ("created", "appended")
    text = hybrid.get(ALICE, "memory/user/prefs.md").text
    assert text == "likes short answers\nprefers metric units"
    assert rows(db_url, "SELECT user_id, content FROM memory_files") == [
        ("alice", "likes short answers\nprefers metric units\n")]
    with pytest.raises(InputError):
        hybrid.append(ALICE, "memory/user/prefs.md", " \n ")
    consistent(db_url)


def test_append_reindexes_only_the_tail(conn: psycopg.Connection, db_url: str) -> None:
    embedder = HashingEmbedder()
    backend = PostgresMemoryBackend(conn, embedder)
    backend.append(SHARED, "memory/agent/log.md", long_text("alpha", 120))
    before = rows(db_url, "SELECT id, start_line, end_line FROM memory_chunks ORDER BY ordinal")
    assert len(before) > 3
    embedder.calls.clear()
    result = backend.append(SHARED, "memory/agent/log.md", "one more line about beta")
    after = rows(db_url, "SELECT id, start_line, end_line FROM memory_chunks ORDER BY ordinal")
    assert after[:-1] == before[:-1]  # same rows, same ids
    assert after[-1][0] != before[-1][0] and after[-1][2] == before[-1][2] + 1
    assert result.reindexed == 1 and sum(len(c) for c in embedder.calls) == 1
    consistent(db_url)


def test_a_file_is_capped_and_a_refused_write_changes_nothing(
        keyword: PostgresMemoryBackend, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbctl.memory import model

    monkeypatch.setattr(model, "MAX_FILE_BYTES", 2000)  # the cap both backends share
    line = "a line of notes that an agent keeps appending, day after day\n"
    path = "memory/agent/log.md"
    appended = 0
    with pytest.raises(InputError) as refused:
        for _ in range(100):
            keyword.append(SHARED, path, line)
            appended += 1
    assert appended == 2000 // len(line)
    assert f"appending would grow {path} to 2,0" in refused.value.message
    dated = f"memory/agent/{date.today().isoformat()}.md"  # a file to go on in, in its tier
    assert dated in (refused.value.hint or "")
    stored = rows(db_url, "SELECT content FROM memory_files")
    assert stored == [(line * appended,)]
    with pytest.raises(InputError, match="split it|would hold 2,100 bytes"):
        keyword.put(SHARED, "memory/agent/big.md", "x" * 2100)
    assert keyword.put(SHARED, path, line).status == "updated"  # a condensed version fits
    assert keyword.append(SHARED, dated, line).status == "created"
    consistent(db_url)


def test_put_is_idempotent_by_content_hash(hybrid: PostgresMemoryBackend, db_url: str) -> None:
    assert hybrid.put(SHARED, "memory/agent/MEMORY.md", "a\nb\n").status == "created"
    again = hybrid.put(SHARED, "memory/agent/MEMORY.md", "a\nb\n")
    assert (again.status, again.reindexed, again.chunks) == ("unchanged", 0, 1)
    assert hybrid.put(SHARED, "memory/agent/MEMORY.md", "a\nc\n").status == "updated"
    assert hybrid.get(SHARED, "memory/agent/MEMORY.md").text == "a\nc"
    consistent(db_url)


def test_delete_removes_file_chunks_postings_and_stats(hybrid: PostgresMemoryBackend,
                                                       db_url: str) -> None:
    hybrid.append(ALICE, "memory/user/a.md", long_text("gamma", 40))
    hybrid.append(ALICE, "memory/agent/b.md", "shared delta")
    gone = hybrid.delete(ALICE, "memory/user/a.md")
    assert gone.chunks > 0 and gone.tier == "user"
    assert rows(db_url, "SELECT path FROM memory_chunks") == [("memory/agent/b.md",)]
    assert rows(db_url, "SELECT count(*) FROM memory_postings p JOIN memory_chunks c "
                        "ON c.id = p.chunk_id WHERE c.path = 'memory/user/a.md'") == [(0,)]
    assert hybrid.search(ALICE, "gamma").hits == []
    with pytest.raises(InputError):
        hybrid.delete(ALICE, "memory/user/a.md")
    hybrid.append(ALICE, "memory/user/c.md", "x")
    with pytest.raises(InputError):  # bob cannot delete alice's file by naming it
        hybrid.delete(BOB, "memory/user/c.md")
    assert hybrid.get(ALICE, "memory/user/c.md").text == "x"
    consistent(db_url)


def test_embedder_identity_is_the_kbs(hybrid: PostgresMemoryBackend, db_url: str) -> None:
    hybrid.append(SHARED, "memory/agent/x.md", "bind the embedder")
    for other in (None, HashingEmbedder(dimensions=32)):
        with pytest.raises(EmbedderMismatch):
            PostgresMemoryBackend(connect(db_url), other)


# --- reads -------------------------------------------------------------------------------


def test_get_windows_and_citations_agree(hybrid: PostgresMemoryBackend) -> None:
    hybrid.append(ALICE, "memory/user/long.md", long_text("epsilon", 150))
    text = hybrid.get(ALICE, "memory/user/long.md")
    assert text.total_lines == 150 and text.line_count == 150
    window = hybrid.get(ALICE, "memory/user/long.md", from_line=10, lines=3)
    assert window.text.splitlines() == text.text.splitlines()[9:12]
    assert hybrid.get(ALICE, "memory/user/long.md", from_line=149, lines=10).line_count == 2
    assert hybrid.get(ALICE, "memory/user/long.md", from_line=500).text == ""
    hits = hybrid.search(ALICE, "epsilon note", SearchOptions(max_results=20)).hits
    assert len(hits) > 2
    for h in hits:
        path, _, lines = h.citation.partition("#L")
        start, end = (int(x.lstrip("L")) for x in lines.split("-"))
        got = hybrid.get(ALICE, path, from_line=start, lines=end - start + 1)
        assert (start, end) == (h.start_line, h.end_line) and got.text == h.content
    for bad in ({"from_line": 0}, {"lines": 0}):
        with pytest.raises(InputError):
            hybrid.get(ALICE, "memory/user/long.md", **bad)


def test_list_shows_visible_files_by_tier(hybrid: PostgresMemoryBackend) -> None:
    hybrid.append(ALICE, "memory/user/a.md", "one\ntwo")
    hybrid.append(BOB, "memory/user/b.md", "three")
    hybrid.append(SHARED, "memory/agent/s.md", "four")
    assert [(f.path, f.tier, f.lines) for f in hybrid.list_files(ALICE).files] == [
        ("memory/agent/s.md", "agent", 1), ("memory/user/a.md", "user", 2)]
    assert [f.path for f in hybrid.list_files(ALICE, "user").files] == ["memory/user/a.md"]
    assert [f.path for f in hybrid.list_files(SHARED).files] == ["memory/agent/s.md"]
    with pytest.raises(InputError):
        hybrid.list_files(SHARED, "user")
    with pytest.raises(InputError):
        hybrid.list_files(ALICE, "team")


def test_list_pages_through_many_files_in_path_order(keyword: PostgresMemoryBackend) -> None:
    names = [f"memory/agent/{d}/n{i:02}.md" for d in ("Z", "a", "b_c") for i in range(7)]
    for name in names:
        keyword.put(SHARED, name, "a note")
    seen: list[str] = []
    after = None
    while True:
        page = keyword.list_files(SHARED, page=ListPage(limit=4, after=after))
        assert page.total == len(names) and len(page.files) <= 4
        seen += [f.path for f in page.files]
        if page.next_after is None:
            break
        after = page.next_after
    assert seen == sorted(names)  # byte order: every page follows the one before
    under = keyword.list_files(SHARED, page=ListPage(prefix="memory/agent/b_", limit=100))
    assert [f.path for f in under.files] == [n for n in names if "/b_c/" in n]
    assert under.total == 7 and under.next_after is None
    assert keyword.list_files(SHARED, page=ListPage(prefix="memory/agent/b%")).files == []
    with pytest.raises(InputError, match="--limit"):
        ListPage(limit=0)


def test_keyword_only_mode_finds_matches_and_says_so(keyword: PostgresMemoryBackend) -> None:
    keyword.append(SHARED, "memory/agent/deploy.md", "Deploying uses blue green switches")
    keyword.append(SHARED, "memory/agent/other.md", "Lunch is at noon")
    result = keyword.search(SHARED, "deployment")
    assert result.mode == "keyword" and result.keyword_only
    assert any("keyword-only" in n for n in result.notes)
    assert [h.path for h in result.hits] == ["memory/agent/deploy.md"]  # stemmed match
    assert result.hits[0].vector_score is None and 0 < result.hits[0].score < 1
    assert keyword.search(SHARED, "zebra").hits == []


def test_hybrid_score_is_weighted_cosine_plus_text(hybrid: PostgresMemoryBackend) -> None:
    hybrid.append(SHARED, "memory/agent/a.md", "rotate the signing keys every month")
    hybrid.append(SHARED, "memory/agent/b.md", "keys are stored in the vault")
    hybrid.append(SHARED, "memory/agent/c.md", "unrelated text about gardening")
    result = hybrid.search(SHARED, "rotate signing keys")
    assert result.mode == "hybrid" and not result.notes
    assert result.hits[0].path == "memory/agent/a.md"
    for h in result.hits:
        assert h.vector_score is not None and h.text_score is not None
        assert h.score == pytest.approx(0.7 * h.vector_score + 0.3 * h.text_score, abs=1e-5)
        assert 0 <= h.score <= 1
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


def test_hybrid_top_k_is_not_underfilled_by_other_users(hybrid: PostgresMemoryBackend) -> None:
    for i in range(130):  # bob's rows are the nearest vectors to the query
        hybrid.append(BOB, f"memory/user/n{i}.md", "quarterly budget review meeting")
    for i in range(4):
        hybrid.append(ALICE, f"memory/user/a{i}.md", f"budget item {i} for travel")
    hits = hybrid.search(ALICE, "quarterly budget review meeting",
                         SearchOptions(max_results=10)).hits
    assert sorted(h.path for h in hits) == [f"memory/user/a{i}.md" for i in range(4)]


def test_min_score_and_max_results(hybrid: PostgresMemoryBackend) -> None:
    for i in range(8):
        hybrid.append(SHARED, f"memory/agent/f{i}.md", f"backup policy number {i}")
    all_hits = hybrid.search(SHARED, "backup policy", SearchOptions(max_results=8)).hits
    assert len(all_hits) == 8
    assert len(hybrid.search(SHARED, "backup policy", SearchOptions(max_results=3)).hits) == 3
    cut = all_hits[3].score
    kept = hybrid.search(SHARED, "backup policy",
                         SearchOptions(max_results=8, min_score=cut)).hits
    assert [h.path for h in kept] == [h.path for h in all_hits if h.score >= cut]
    assert len(kept) >= 4


# --- decay and MMR -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_decay_applies_to_dated_files_only(mode: str, request: pytest.FixtureRequest) -> None:
    backend: PostgresMemoryBackend = request.getfixturevalue(mode)
    body = "the staging database password rotates weekly"
    paths = ["memory/agent/MEMORY.md", "memory/agent/2024-01-01.md",
             "memory/agent/2024-06-01.md", "memory/agent/2024-01-01/notes.md"]
    for p in paths:
        backend.append(SHARED, p, body)
    today = date(2024, 6, 11)
    plain = backend.search(SHARED, "staging database password",
                           SearchOptions(max_results=4, today=today)).hits
    assert len({h.score for h in plain}) == 1  # same text, same score
    raw = plain[0].score
    for half_life in (30.0, 5.0):
        decayed = backend.search(SHARED, "staging database password", SearchOptions(
            max_results=4, decay=True, half_life_days=half_life, today=today)).hits
        by_path = {h.path: h.score for h in decayed}
        assert by_path["memory/agent/MEMORY.md"] == pytest.approx(raw)
        assert by_path["memory/agent/2024-01-01/notes.md"] == pytest.approx(raw)
        for p, d in (("memory/agent/2024-01-01.md", date(2024, 1, 1)),
                     ("memory/agent/2024-06-01.md", date(2024, 6, 1))):
            assert by_path[p] == pytest.approx(raw * decay_factor(d, today, half_life), abs=2e-6)
        assert [h.path for h in decayed][-2:] == ["memory/agent/2024-06-01.md",
                                                  "memory/agent/2024-01-01.md"]


def test_decay_can_lift_a_recent_note_above_an_old_better_match(
        hybrid: PostgresMemoryBackend) -> None:
    hybrid.append(SHARED, "memory/agent/2023-01-01.md",
                  "incident runbook: page the on-call, open the incident channel")
    hybrid.append(SHARED, "memory/agent/2024-06-10.md", "incident channel renamed")
    opts = SearchOptions(today=date(2024, 6, 11))
    assert hybrid.search(SHARED, "incident runbook on-call channel", opts).hits[0].path == \
        "memory/agent/2023-01-01.md"
    decayed = SearchOptions(today=date(2024, 6, 11), decay=True)
    assert hybrid.search(SHARED, "incident runbook on-call channel", decayed).hits[0].path == \
        "memory/agent/2024-06-10.md"


def test_mmr_pure_function_trades_relevance_for_novelty() -> None:
    items = ["a", "a2", "b"]
    rel = {"a": 0.9, "a2": 0.88, "b": 0.6}
    sim = {frozenset(("a", "a2")): 0.95, frozenset(("a", "b")): 0.1,
           frozenset(("a2", "b")): 0.1}

    def similarity(x: str, y: str) -> float:
        return sim[frozenset((x, y))]

    assert mmr(items, 3, 1.0, rel.__getitem__, similarity) == ["a", "a2", "b"]
    assert mmr(items, 3, 0.5, rel.__getitem__, similarity) == ["a", "b", "a2"]
    assert mmr(items, 2, 0.5, rel.__getitem__, similarity) == ["a", "b"]
    assert mmr([], 3, 0.5, rel.__getitem__, similarity) == []


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_mmr_demotes_a_near_duplicate(mode: str, request: pytest.FixtureRequest) -> None:
    backend: PostgresMemoryBackend = request.getfixturevalue(mode)
    backend.append(SHARED, "memory/agent/a.md",
                   "deploy rollback steps kubectl apply manifests for the api service")
    backend.append(SHARED, "memory/agent/b.md",
                   "deploy rollback steps kubectl apply manifests for the api service again")
    backend.append(SHARED, "memory/agent/c.md", "deploy rollback notes database migrations")
    query = "deploy rollback kubectl apply manifests"
    plain = [h.path for h in backend.search(SHARED, query).hits]
    assert set(plain[:2]) == {"memory/agent/a.md", "memory/agent/b.md"}
    diverse = [h.path for h in backend.search(
        SHARED, query, SearchOptions(mmr=True, mmr_lambda=0.5)).hits]
    assert diverse[0] == plain[0] and diverse[1] == "memory/agent/c.md"
    same = [h.path for h in backend.search(SHARED, query,
                                           SearchOptions(mmr=True, mmr_lambda=1.0)).hits]
    assert same == plain


# --- recall tracking ---------------------------------------------------------------------


def test_tracking_records_recalls_within_the_fence(hybrid: PostgresMemoryBackend) -> None:
    hybrid.append(SHARED, "memory/agent/play.md", "escalation playbook for outages")
    hybrid.append(ALICE, "memory/user/mine.md", "alice handles outages on fridays")
    track = SearchOptions(track=True)
    for _ in range(3):
        assert hybrid.search(ALICE, "outages", track).tracked
    hybrid.search(BOB, "outages playbook", track)
    hybrid.search(ALICE, "outages")  # not tracked
    alice = hybrid.stats(ALICE)
    assert alice.searches_tracked == 3
    recalled = {s.path: s.recalls for s in alice.top}
    assert recalled == {"memory/agent/play.md": 4, "memory/user/mine.md": 3}
    bob = hybrid.stats(BOB)
    assert bob.searches_tracked == 1
    assert {s.path for s in bob.top} == {"memory/agent/play.md"}
    # a shared entry's count is everyone's, its time only the caller's own
    def play(scope: MemoryScope) -> tuple[int, object]:
        entry = next(s for s in hybrid.stats(scope).top if s.path == "memory/agent/play.md")
        return entry.recalls, entry.last_recalled_at

    bob_before, alice_before = play(BOB), play(ALICE)
    hybrid.search(ALICE, "outages playbook", track)
    assert play(BOB) == (5, bob_before[1])  # Bob does not learn when Alice searched
    assert play(ALICE)[0] == 5 and play(ALICE)[1] > alice_before[1]
    carol = hybrid.stats(MemoryScope("bot", "carol"))
    assert [(s.recalls, s.last_recalled_at) for s in carol.top] == [(5, None)]
    assert {t.tier: (t.files, t.chunks) for t in alice.tiers} == {"agent": (1, 1),
                                                                   "user": (1, 1)}
    assert [t.tier for t in hybrid.stats(SHARED).tiers] == ["agent"]


def test_a_tracking_failure_never_fails_the_search(hybrid: PostgresMemoryBackend,
                                                   conn: psycopg.Connection) -> None:
    hybrid.append(SHARED, "memory/agent/x.md", "tracking survives failures")
    conn.execute("DROP TABLE memory_recall_hits")
    result = hybrid.search(SHARED, "tracking failures", SearchOptions(track=True))
    assert [h.path for h in result.hits] == ["memory/agent/x.md"]
    assert not result.tracked and any("tracking failed" in n for n in result.notes)
    assert hybrid.search(SHARED, "tracking").hits  # the connection is still usable


def test_health_reports_kind_and_state(hybrid: PostgresMemoryBackend,
                                       conn: psycopg.Connection) -> None:
    ok = hybrid.health()
    assert (ok.kind, ok.ok, ok.error) == ("postgres", True, None)
    conn.close()
    bad = hybrid.health()
    assert not bad.ok and bad.error


def test_scores_ignore_other_users_rows(hybrid: PostgresMemoryBackend) -> None:
    """BM25 statistics come from the caller's visible rows only, so another user's
    writes cannot shift (and so reveal themselves through) the caller's scores."""
    hybrid.append(SHARED, "memory/agent/a.md", "invoice approval needs two signatures")
    hybrid.append(ALICE, "memory/user/b.md", "alice approves invoices under 500")
    before = [(h.path, h.score) for h in hybrid.search(ALICE, "invoice approval").hits]
    for i in range(40):
        hybrid.append(BOB, f"memory/user/n{i}.md", "invoice invoice approval approval")
    hybrid.append(MemoryScope("other-bot"), "memory/agent/x.md", "invoice approval")
    after = [(h.path, h.score) for h in hybrid.search(ALICE, "invoice approval").hits]
    assert after == before and len(before) == 2


def test_concurrent_appends_to_one_file_lose_nothing(db_url: str) -> None:
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        conn = connect(db_url)
        try:
            backend = PostgresMemoryBackend(conn, HashingEmbedder())
            for i in range(15):
                backend.append(ALICE, "memory/user/log.md", f"{tag} entry {i}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            conn.close()

    with connect(db_url) as setup:
        PostgresMemoryBackend(setup)  # schema in place before the race
    threads = [threading.Thread(target=writer, args=(t,)) for t in ("red", "blue")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    conn = connect(db_url)
    lines = PostgresMemoryBackend(conn, HashingEmbedder()).get(
        ALICE, "memory/user/log.md").text.splitlines()
    conn.close()
    assert sorted(lines) == sorted(f"{t} entry {i}" for t in ("red", "blue") for i in range(15))
    for tag in ("red", "blue"):  # each writer's own order survives
        assert [x for x in lines if x.startswith(tag)] == [f"{tag} entry {i}" for i in range(15)]
    consistent(db_url)


def test_memory_chunks_longer_than_the_models_window_are_embedded_in_windows(
        conn: psycopg.Connection, db_url: str) -> None:
    embedder = HashingEmbedder()
    backend = PostgresMemoryBackend(conn, embedder, window=64)
    backend.append(SHARED, "memory/agent/log.md", long_text("alpha", 30))
    sent = [t for call in embedder.calls for t in call]
    chunks = rows(db_url, "SELECT count(*), max(length(text)) FROM memory_chunks")[0]
    assert chunks[1] > 64 * CHARS_PER_TOKEN  # a chunk the model could not read whole
    assert len(sent) > chunks[0] and all(len(t) <= 64 * CHARS_PER_TOKEN for t in sent)
    # no window set: each chunk is sent whole, as before
    whole = HashingEmbedder()
    PostgresMemoryBackend(conn, whole).append(SHARED, "memory/agent/other.md",
                                              long_text("beta", 30))
    assert max(len(t) for call in whole.calls for t in call) > 64 * CHARS_PER_TOKEN
