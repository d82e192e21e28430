"""Embeddings in the KB: hybrid retrieval, the embedding cache, KB-bound identity, HNSW
filtering that never under-fills, and atomic re-embedding."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kbctl.errors import EmbedderError
from kbctl.pipeline.cached_embedder import CachedEmbedder
from kbctl.pipeline.ingest import ingest
from kbctl.pipeline.reembed import reembed
from kbctl.sources.base import SourceSpec
from kbctl.sources.registry import source_spec
from kbctl.store import ranking
from kbctl.store.db import connect
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.records import ChunkRecord, SourceRecord

from .conftest import Cli, rows
from .embedders import HashingEmbedder


def _text_spec(ref: str, body: str) -> SourceSpec:
    return source_spec("text", ref, {"body": body, "title": ref})


def test_ingest_embeds_once_and_queries_hybrid(store: KnowledgeStore, db_url: str) -> None:
    emb = HashingEmbedder(dimensions=32)
    store.embedder.bind(emb.identity)
    cached = CachedEmbedder(emb, store)
    specs = [_text_spec("a", "# Borrowing\n\nReferences borrow values."),
             _text_spec("b", "# Cargo\n\nCargo builds crates.")]
    ingest(store, specs, namespace="ns", embedder=cached)
    assert cached.provider_texts == 2
    assert rows(db_url, "SELECT count(*) FROM chunks WHERE embedding IS NOT NULL") == [(2,)]
    # same texts again, even under another namespace: no provider calls at all
    again = CachedEmbedder(emb, store)
    ingest(store, specs, namespace="other", embedder=again)
    assert again.provider_texts == 0 and again.cache_hits == 2
    # one changed document: only its new chunk text is embedded
    ingest(store, [_text_spec("a", "# Borrowing\n\nReferences borrow values mutably.")],
           namespace="ns", embedder=again)
    assert again.provider_texts == 1
    hits = store.search.rank("ns", "borrow references", k=2,
                             query_vector=emb.embed_query("borrow references"))
    assert hits[0].source_ref == "kb://text/a" and hits[0].vector_score is not None


def test_vector_index_is_built_after_a_load(store: KnowledgeStore, db_url: str) -> None:
    emb = HashingEmbedder(dimensions=16)
    store.embedder.bind(emb.identity)
    ingest(store, [_text_spec("a", "text one")], namespace="ns",
           embedder=CachedEmbedder(emb, store))
    assert store.embedder.ensure_vector_index() is True
    assert store.embedder.ensure_vector_index() is False
    [(indexdef,)] = rows(db_url, "SELECT indexdef FROM pg_indexes WHERE indexname = "
                                 "'chunks_embedding_hnsw'")
    assert indexdef.endswith("USING hnsw (embedding vector_cosine_ops)")


def _bulk(store: KnowledgeStore, emb: HashingEmbedder, ns: str, n: int,
          meta: dict | None = None, word: str = "alpha") -> None:
    for i in range(n):
        text = f"{word} document {i} about topic {i % 7}"
        [vec] = emb.embed([text])
        store.documents.replace(
            SourceRecord(namespace=ns, ref=f"{ns}-{i}", kind="text", url=f"kb://{ns}/{i}",
                         title=str(i), content_hash=str(i)),
            [ChunkRecord(0, text, dict(meta or {}), vec)])


def test_small_namespace_in_large_table_is_never_under_filled(
        store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = HashingEmbedder(dimensions=16)
    store.embedder.bind(emb.identity)
    _bulk(store, emb, "large", 1500, {"lang": "en"})
    _bulk(store, emb, "large-de", 0)
    for i in range(3):  # three German pages hidden in the large namespace
        text = f"zebra seite {i}"
        [vec] = emb.embed([text])
        store.documents.replace(
            SourceRecord(namespace="large", ref=f"de-{i}", kind="text", url=f"kb://de/{i}",
                         title="de", content_hash="x"),
            [ChunkRecord(0, text, {"lang": "de"}, vec)])
    _bulk(store, emb, "small", 8, word="beta")
    store.embedder.ensure_vector_index()
    # force the HNSW path even for these sizes
    monkeypatch.setattr(ranking, "EXACT_SCAN_LIMIT", 0)
    qv = emb.embed_query("alpha document topic")
    small = store.search.rank("small", "alpha document topic", k=5, query_vector=qv)
    assert len(small) == 5 and {h.namespace for h in small} == {"small"}
    filtered = store.search.rank("large", "alpha document", k=5, query_vector=qv,
                                 filters={"lang": "de"})
    assert len(filtered) == 3 and {h.meta["lang"] for h in filtered} == {"de"}
    # the vector candidates alone are complete too
    ids = store.search._vector_candidates("small", "[" + ",".join(map(str, qv)) + "]", {}, 100)
    assert len(ids) == 8


def test_reembed_swaps_atomically(store: KnowledgeStore, db_url: str) -> None:
    old = HashingEmbedder(dimensions=16, model="old")
    store.embedder.bind(old.identity)
    ingest(store, [_text_spec(f"d{i}", f"# Doc {i}\n\nbody {i}") for i in range(5)],
           namespace="ns", embedder=CachedEmbedder(old, store))
    store.embedder.ensure_vector_index()

    class Failing(HashingEmbedder):
        def embed(self, texts, titles=None):
            raise EmbedderError("provider down (HTTP 503) for model broken")

    with pytest.raises(EmbedderError):
        reembed(store, Failing(dimensions=24, model="broken"))
    assert store.embedder.identity() == old.identity
    assert rows(db_url, "SELECT DISTINCT vector_dims(embedding) FROM chunks") == [(16,)]

    new = HashingEmbedder(dimensions=24, model="new")
    report = reembed(store, new, endpoint="http://embed.internal:8080/v1")
    assert report.chunks == 5 and report.embedded == 5
    # the model and the address it is reached at change together: a reader between two
    # commits resolved the new model at its provider's default address, and kept it
    assert store.embedder.state() == (new.identity, "http://embed.internal:8080/v1")
    assert rows(db_url, "SELECT DISTINCT vector_dims(embedding) FROM chunks") == [(24,)]
    assert store.search.rank("ns", "body 3", k=1, query_vector=new.embed_query("body 3"))
    assert reembed(store, new).changed is False
    # page vectors follow the swap: each page's is its (single) chunk's new vector
    assert rows(db_url, """SELECT count(*) FROM sources s JOIN chunks c
                           ON c.namespace = s.namespace AND c.source_ref = s.ref
                           WHERE s.embedding = c.embedding""") == [(5,)]


def _page(store: KnowledgeStore, ref: str, *vectors: list[float]) -> None:
    store.documents.replace(
        SourceRecord(namespace="ns", ref=ref, kind="text", url=f"kb://{ref}", title=ref,
                     content_hash=str(vectors)),
        [ChunkRecord(i, f"chunk {i}", {}, v) for i, v in enumerate(vectors)])


def _page_vectors(db_url: str) -> dict[str, str | None]:
    return dict(rows(db_url, "SELECT ref, embedding::text FROM sources ORDER BY ref"))


def test_a_pages_vector_is_the_mean_of_its_chunks_and_kept_in_step(
        store: KnowledgeStore, db_url: str) -> None:
    store.embedder.bind(HashingEmbedder(dimensions=4).identity)
    _page(store, "a", [1, 0, 0, 0], [0, 1, 0, 0])
    _page(store, "b", [0, 0, 1, 0])
    assert _page_vectors(db_url) == {"a": "[0.5,0.5,0,0]", "b": "[0,0,1,0]"}
    _page(store, "a", [0, 0, 0, 1])  # a new, shorter version
    assert _page_vectors(db_url) == {"a": "[0,0,0,1]", "b": "[0,0,1,0]"}
    _page(store, "c")  # a page without chunks has no vector
    assert _page_vectors(db_url)["c"] is None


def test_a_knowledge_base_from_before_page_vectors_gets_them_on_open(
        store: KnowledgeStore, db_url: str) -> None:
    from kbctl.store.migrations import migrate

    store.embedder.bind(HashingEmbedder(dimensions=4).identity)
    _page(store, "a", [1, 0, 0, 0], [0, 0, 1, 0])
    store.conn.execute("ALTER TABLE sources DROP COLUMN embedding")
    store.conn.execute("DELETE FROM kbctl_migrations WHERE version = 8")
    migrate(store.conn)
    assert _page_vectors(db_url) == {"a": "[0.5,0,0.5,0]"}


def _text_page(store: KnowledgeStore, ref: str, *texts: str) -> None:
    store.documents.replace(
        SourceRecord(namespace="ns", ref=ref, kind="text", url=f"kb://{ref}", title=ref,
                     content_hash=str(texts)),
        [ChunkRecord(i, t, {}, None) for i, t in enumerate(texts)])


def _page_lexical(db_url: str) -> tuple[dict[str, dict[str, float]], dict[str, int], tuple]:
    """(page -> lexeme -> tf, page -> length, the namespace's (chunks, length, pages))."""
    postings: dict[str, dict[str, float]] = {}
    for ref, lexeme, tf in rows(db_url, "SELECT source_ref, lexeme, tf FROM page_postings"):
        postings.setdefault(ref, {})[lexeme] = tf
    lengths = dict(rows(db_url, "SELECT ref, lexeme_count FROM sources"))
    [stats] = rows(db_url, "SELECT chunk_count, total_len, page_count FROM namespace_stats")
    return postings, lengths, stats


def test_a_pages_postings_and_length_are_its_chunks_summed_and_kept_in_step(
        store: KnowledgeStore, db_url: str) -> None:
    _text_page(store, "a", "alpha beta", "alpha gamma")
    _text_page(store, "b", "delta")
    assert _page_lexical(db_url) == (
        {"a": {"alpha": 2, "beta": 1, "gamma": 1}, "b": {"delta": 1}}, {"a": 4, "b": 1},
        (3, 5, 2))
    _text_page(store, "a", "beta")  # a new, shorter version
    _text_page(store, "c")  # a page without chunks: no postings, not counted as a page
    assert _page_lexical(db_url) == (
        {"a": {"beta": 1}, "b": {"delta": 1}}, {"a": 1, "b": 1, "c": 0}, (2, 2, 2))
    store.documents.delete("ns", "a")
    store.documents.delete("ns", "c")
    assert _page_lexical(db_url) == ({"b": {"delta": 1}}, {"b": 1}, (1, 1, 1))


def test_a_knowledge_base_from_before_page_postings_gets_them_on_open(
        store: KnowledgeStore, db_url: str) -> None:
    from kbctl.store.migrations import migrate

    _text_page(store, "a", "alpha beta", "alpha gamma")
    _text_page(store, "b", "delta")
    _text_page(store, "c")
    before = _page_lexical(db_url)
    store.conn.execute("DROP TABLE page_postings")
    store.conn.execute("ALTER TABLE sources DROP COLUMN lexeme_count")
    store.conn.execute("ALTER TABLE namespace_stats DROP COLUMN page_count")
    store.conn.execute("DELETE FROM kbctl_migrations WHERE version = 9")
    migrate(store.conn)
    assert _page_lexical(db_url) == before


# --- the CLI against a real OpenAI-compatible HTTP server on loopback ----------------------


@pytest.fixture
def openai_server() -> Iterator[tuple[str, list[dict]]]:
    server, seen = _openai_server()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()


def _openai_server(before_answer: Callable[[], object] | None = None
                   ) -> tuple[ThreadingHTTPServer, list[dict]]:
    """An OpenAI-compatible embeddings server on loopback, serving in a thread;
    ``before_answer`` runs before each answer (a test stalls it there)."""
    emb = HashingEmbedder(dimensions=24)
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            if before_answer is not None:
                before_answer()
            data = [{"index": i, "embedding": v}
                    for i, v in enumerate(emb.embed(body["input"]))]
            out = json.dumps({"data": data, "model": body["model"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def test_cli_kb_remembers_its_embedder(cli: Cli, workdir: Path, openai_server,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    base, seen = openai_server
    monkeypatch.setenv("KBCTL_EMBEDDER_BASE_URL", base)
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Install\n\n## With pnpm\n\npnpm add widget\n")
    (docs / "b.md").write_text("# Upgrade\n\nUpgrade with the upgrade command.\n")
    report = cli.json("ingest", "files", str(docs), "--embedder", "openai:fake-model@24",
                      "--allow-private-network")  # recorded: later commands reach it too
    assert report["embedder"] == "openai/fake-model@24" and report["embedded"] == 2
    assert len(seen) == 1 and seen[0]["dimensions"] == 24
    # later commands use the recorded embedder without being told
    out = cli.json("query", "install with pnpm")
    assert out["mode"] == "hybrid" and out["embedder"] == "openai/fake-model@24"
    assert out["results"][0]["vectorScore"] is not None
    # the fusion is a setting: a flag, or kbctl.yaml, for query and eval alike
    assert cli.json("query", "install with pnpm", "--fusion", "rrf")["mode"] == "rrf"
    (workdir / "suite.yaml").write_text("version: 1\ncases:\n  - {id: pnpm, question: install "
                                        "with pnpm, expect: {sourceIncludes: a}}\n")

    def eval_top(*flags: str) -> float:
        return cli.json("eval", "suite.yaml", *flags)["cases"][0]["topScore"]

    assert eval_top() == pytest.approx(out["results"][0]["score"])
    # first on both lists: the match strength, the weighted fusion's top score
    weighted_top = eval_top()
    assert eval_top("--fusion", "rrf") == pytest.approx(weighted_top)
    assert eval_top("--vector-weight", "0.2") != pytest.approx(weighted_top)
    (workdir / "kbctl.yaml").write_text("fusion: rrf\n")
    assert cli.json("query", "install with pnpm")["mode"] == "rrf"
    assert eval_top() == pytest.approx(weighted_top)
    (workdir / "kbctl.yaml").unlink()
    # re-ingest: nothing to embed
    assert cli.json("ingest", "files", str(docs))["embedded"] == 0
    # a resync counts what it embedded, per namespace and in its totals
    (docs / "b.md").write_text("# Upgrade\n\nUpgrade with the upgrade command, then check.\n")
    synced = cli.json("resync")
    assert synced["totals"]["embedded"] == 1 and synced["namespaces"][0]["embedded"] == 1
    # another embedder is refused, naming both and the fix
    bad = cli("query", "x", "--embedder", "none")
    assert bad.exit_code == 2
    assert "openai/fake-model@24" in bad.stderr and "reembed" in bad.stderr
    # re-embed in place, then queries use the new identity
    moved = cli.json("reembed", "--embedder", "openai:fake-model-2@24")
    assert moved["chunks"] == 2 and moved["embedder"] == "openai/fake-model-2@24"
    assert cli.json("query", "upgrade")["embedder"] == "openai/fake-model-2@24"


def test_a_long_lived_tool_session_follows_a_reembed(cli: Cli, workdir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from kbctl.agent.session import AgentTools
    from kbctl.config import Settings

    old_server, _seen = _openai_server()
    base = f"http://127.0.0.1:{old_server.server_address[1]}/v1"
    monkeypatch.setenv("KBCTL_EMBEDDER_BASE_URL", base)
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Install\n\nInstall the widget with pnpm.\n")
    assert cli("ingest", "files", str(docs), "--embedder", "openai:fake-model@24",
               "--allow-private-network").exit_code == 0
    settings = Settings(db_url=cli.db_url, agent="bot")  # type: ignore[call-arg]
    with AgentTools(settings) as tools:  # as `serve mcp` keeps one for days
        first = tools.call("search_knowledge", {"query": "install widget"})
        assert first.data["embedder"] == "openai/fake-model@24"
        assert cli("reembed", "--embedder", "openai:fake-model-2@24").exit_code == 0
        after = tools.call("search_knowledge", {"query": "install widget"})
        assert not after.is_error and after.data["embedder"] == "openai/fake-model-2@24"
        note = tools.call("memory_append", {"path": "memory/agent/n.md", "content": "pnpm tip"})
        assert not note.is_error
        recalled = tools.call("memory_search", {"query": "pnpm tip"})
        assert recalled.data["embedder"] == "openai/fake-model-2@24"
        assert recalled.data["results"][0]["path"] == "memory/agent/n.md"
        # the note was written with the new model: no chunk lacks a vector
        assert rows(cli.db_url, "SELECT count(*) FROM memory_chunks "
                                "WHERE embedding IS NULL") == [(0,)]
        # a write waits for a reembed in progress rather than writing across it
        holder = KnowledgeStore(connect(cli.db_url))
        done: dict[str, object] = {}
        writer = threading.Thread(target=lambda: done.update(r=tools.call(
            "memory_append", {"path": "memory/agent/n.md", "content": "later tip"})))
        with holder.locks.embedder(exclusive=True):
            writer.start()
            writer.join(1.5)
            assert writer.is_alive() and not done
        writer.join(30)
        holder.conn.close()
        assert not done["r"].is_error  # type: ignore[attr-defined]
        # the reembed recorded the address in the same transaction as the model, so no
        # reader between them resolved the new model at the provider's default address
        store = KnowledgeStore(connect(cli.db_url))
        assert store.embedder.state()[1] == base
        # and when only the address moves (the old server gone), the session follows it
        moved, _ = _openai_server()
        try:
            new_base = f"http://127.0.0.1:{moved.server_address[1]}/v1"
            monkeypatch.setenv("KBCTL_EMBEDDER_BASE_URL", new_base)
            assert cli("reembed", "--embedder", "openai:fake-model-2@24",
                       "--allow-private-network").exit_code == 0
            assert store.embedder.state()[1] == new_base
            old_server.shutdown()
            old_server.server_close()
            again = tools.call("search_knowledge", {"query": "install widget"})
            assert not again.is_error, again.text
        finally:
            moved.shutdown()
            store.conn.close()


def test_new_kb_without_key_is_lexical_and_says_so(cli: Cli, workdir: Path) -> None:
    (workdir / "a.md").write_text("# A\n\ntext\n")
    result = cli("ingest", "files", str(workdir))
    assert result.exit_code == 0
    assert "lexical-only" in result.stderr
    assert rows(cli.db_url, "SELECT value->>'provider' FROM kb_meta") == [("none",)]
    # options that shape hybrid search are said to do nothing here, not passed over
    ignored = cli("query", "text", "--fusion", "rrf", "--vector-weight", "0.3")
    assert ignored.exit_code == 0
    assert "--vector-weight and --fusion shape hybrid search only" in ignored.stderr
    assert "hybrid search only" not in cli("query", "text").stderr
    (workdir / "suite.yaml").write_text("version: 1\ncases:\n  - {id: a, question: text, "
                                        "expect: {sourceIncludes: a}}\n")
    assert "--fusion shapes hybrid search only" in cli("eval", "suite.yaml", "--fusion",
                                                        "rrf").stderr


def test_reembed_covers_agent_memory(store: KnowledgeStore, db_url: str) -> None:
    from kbctl.memory.paths import scope_of
    from kbctl.memory.postgres import PostgresMemoryBackend

    old = HashingEmbedder(dimensions=16, model="old")
    store.embedder.bind(old.identity)
    memory = PostgresMemoryBackend(store.conn, old)
    scope = scope_of("bot", "alice")
    memory.append(scope, "memory/agent/playbook.md", "Escalate billing issues to finance.")
    memory.append(scope, "memory/user/prefs.md", "Prefers short answers.")
    new = HashingEmbedder(dimensions=24, model="new")
    report = reembed(store, new)
    assert report.memory_chunks == 2
    assert rows(db_url, "SELECT DISTINCT vector_dims(embedding) FROM memory_chunks") == [(24,)]
    found = PostgresMemoryBackend(store.conn, new).search(scope, "billing escalation")
    assert found.mode == "hybrid" and found.hits[0].path == "memory/agent/playbook.md"
