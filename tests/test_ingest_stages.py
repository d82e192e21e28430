"""An ingest's stages are measured in its report, and the work the pipeline does once (a
chunk's lexical fields, a text's markdown parse) gives what the store and the chunker would
have computed themselves."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kbctl.chunk.headings import block_tokens
from kbctl.pipeline.ingest import ingest
from kbctl.sources.registry import source_spec
from kbctl.store import documents, lexical
from kbctl.store.documents import Documents
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.records import ChunkRecord, SourceRecord

from .conftest import rows

STAGES = ("load", "normalise", "chunk", "analyse", "write")


def test_the_report_times_each_stage(store: KnowledgeStore, tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"p{i}.md").write_text(f"# Page {i}\n\nThe widget_{i} spins.\n\n"
                                           "## Usage\n\nRun `widget --fast` daily.\n")
    report = ingest(store, [source_spec("files", str(tmp_path), {})], namespace="ns")
    assert report.added == 3
    for stage in STAGES:
        assert isinstance(report.timings[stage], float) and report.timings[stage] >= 0
    # CPU spent on the writer threads is counted: chunking and analysing did happen
    assert report.timings["chunk"] > 0 and report.timings["analyse"] > 0


def test_an_unchanged_run_writes_nothing_and_chunks_nothing(store: KnowledgeStore,
                                                            tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nAlpha text.\n")
    spec = source_spec("files", str(tmp_path), {})
    ingest(store, [spec], namespace="ns")
    again = ingest(store, [spec], namespace="ns")
    assert again.unchanged + again.not_modified == 1
    assert "chunk" not in again.timings and "write" not in again.timings


def _postings(url: str, ns: str) -> list[tuple[object, ...]]:
    return rows(url, """SELECT c.source_ref, c.ordinal, p.lexeme, p.tf, p.dl, p.impact
                        FROM postings p JOIN chunks c ON c.id = p.chunk_id
                        WHERE p.namespace = %s ORDER BY 1, 2, 3""", ns)


def test_fields_analysed_by_the_caller_index_as_the_store_would(store: KnowledgeStore,
                                                                db_url: str) -> None:
    texts = ["Use os.path.splitext on read/write files", "The HTTPServer and snake_case"]
    chunks = [ChunkRecord(ordinal=i, text=t, meta={"title": "Paths", "anchor": f"s{i}",
                                                   "headingPath": ["Paths", f"Part {i}"]})
              for i, t in enumerate(texts)]

    def source(ns: str) -> SourceRecord:
        return SourceRecord(namespace=ns, ref="p", kind="text", url="u", title="Paths",
                            content_hash="h")

    store.documents.replace_many("own", [(source("own"), chunks)])
    fields = lexical.kb_field_arrays(texts, [c.meta for c in chunks])
    store.documents.replace_many("given", [(source("given"), chunks)], fields)
    assert _postings(db_url, "own") == _postings(db_url, "given") != []
    with pytest.raises(ValueError, match="one analysed field per chunk"):
        store.documents.replace_many("given", [(source("given"), chunks)],
                                     {k: v[:1] for k, v in fields.items()})


def test_a_parse_read_again_gives_the_same_tokens() -> None:
    text = "[ref]: https://example.com\n\n# Title\n\nSee [docs][ref].\n"
    first = block_tokens(text)
    assert block_tokens(text) is first  # the thread's last parse, read again
    env: dict[str, object] = {}
    parsed = block_tokens(text, env)  # the chunker's parse, with its definitions
    assert parsed is not first and "references" in env
    assert [t.type for t in parsed] == [t.type for t in first]
    other = block_tokens("plain words\n")
    assert [t.type for t in other] == ["paragraph_open", "inline", "paragraph_close"]
    assert block_tokens(text) is not first  # one text per thread is kept


def _postings_indexes(url: str) -> set[str]:
    return {name for (name,) in rows(
        url, "SELECT indexname FROM pg_indexes "
             "WHERE tablename IN ('postings', 'page_postings')")}


def _index_state(url: str, ns: str) -> list[list[tuple[object, ...]]]:
    """What BM25 reads of a namespace: its postings, document frequencies, page postings
    and page lengths."""
    return [_postings(url, ns),
            rows(url, "SELECT lexeme, df FROM lexeme_stats WHERE namespace = %s ORDER BY 1",
                 ns),
            rows(url, """SELECT source_ref, lexeme, tf FROM page_postings
                         WHERE namespace = %s ORDER BY 1, 2""", ns),
            rows(url, "SELECT ref, lexeme_count FROM sources WHERE namespace = %s ORDER BY 1",
                 ns)]


def test_a_first_load_builds_the_postings_indexes_once_at_its_end(
        store: KnowledgeStore, db_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(4):
        (tmp_path / f"p{i}.md").write_text(f"# Page {i}\n\nThe widget_{i} spins.\n\n"
                                           "## Usage\n\nRun `widget --fast` daily.\n")
    spec = source_spec("files", str(tmp_path), {})
    seen: list[set[str]] = []
    real = Documents.replace_many

    def write(self: Documents, *args: object, **kwargs: object) -> object:
        seen.append(_postings_indexes(db_url))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Documents, "replace_many", write)
    assert ingest(store, [spec], namespace="first").added == 4
    assert seen and all(indexes == set() for indexes in seen)  # written without them
    assert _postings_indexes(db_url) == set(lexical.KB_DEFERRED_INDEXES)

    # past a first load, every write maintains them; what is indexed is the same
    monkeypatch.setattr(documents, "FIRST_LOAD_POSTINGS", 1)
    seen.clear()
    assert ingest(store, [spec], namespace="second").added == 4
    assert seen and all(indexes == set(lexical.KB_DEFERRED_INDEXES) for indexes in seen)
    assert _index_state(db_url, "first") == _index_state(db_url, "second")
    hits = [[(h.source_ref, h.ordinal, h.score) for h in
             store.search.rank(ns, "widget fast usage", k=8)] for ns in ("first", "second")]
    assert hits[0] and hits[0] == hits[1]


def test_a_load_that_fails_or_dies_leaves_the_postings_indexes_built(
        store: KnowledgeStore, db_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.md").write_text("# A\n\nAlpha text.\n")
    spec = source_spec("files", str(tmp_path), {})

    def broken(self: Documents, *args: object, **kwargs: object) -> object:
        raise RuntimeError("the database went away")

    with monkeypatch.context() as patch:
        patch.setattr(Documents, "replace_many", broken)
        with pytest.raises(RuntimeError):
            ingest(store, [spec], namespace="ns")
    assert _postings_indexes(db_url) == set(lexical.KB_DEFERRED_INDEXES)
    ingest(store, [spec], namespace="ns")
    # a process killed mid-load built nothing: the next write run does
    store.conn.execute("DROP INDEX postings_impact")
    again = ingest(store, [spec], namespace="ns")
    assert again.unchanged + again.not_modified == 1
    assert _postings_indexes(db_url) == set(lexical.KB_DEFERRED_INDEXES)


def _build_at_once(store: KnowledgeStore, start: threading.Barrier,
                   errors: list[Exception]) -> None:
    start.wait()
    try:
        store.documents.build_postings_indexes()
    except Exception as exc:  # noqa: BLE001 - the test reports it
        errors.append(exc)


def test_two_first_loads_that_end_together_both_build_the_indexes(db_url: str) -> None:
    """Each builds what is missing under one lock, so the second finds the index made: two
    CREATE INDEX IF NOT EXISTS of one name at once fail one of them, and the page
    postings' primary key has no IF NOT EXISTS at all."""
    from kbctl.store.db import connect

    stores = [KnowledgeStore(connect(db_url)) for _ in range(2)]
    try:
        for _ in range(5):
            for index in lexical.KB_DEFERRED_INDEXES.values():
                stores[0].conn.execute(index.drop)
            assert _postings_indexes(db_url) == set()
            start, errors = threading.Barrier(2), []
            threads = [threading.Thread(target=_build_at_once, args=(s, start, errors))
                       for s in stores]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert not errors
            assert _postings_indexes(db_url) == set(lexical.KB_DEFERRED_INDEXES)
    finally:
        for store in stores:
            store.conn.close()
