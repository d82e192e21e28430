"""What a vector stands for: a run of a page's small sections merged into one embedded unit,
while lexical search and citations keep every section and its anchor."""

from __future__ import annotations

from collections.abc import Sequence

from kbctl.pipeline.cached_embedder import CachedEmbedder
from kbctl.pipeline.embedding_units import (
    SEPARATOR,
    embed_pages,
    embedding_units,
    fair_shares,
    read_budget,
    unit_budget,
)
from kbctl.pipeline.ingest import ingest
from kbctl.pipeline.reembed import reembed
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore

from .conftest import rows
from .embedders import HashingEmbedder


def _entry(name: str, words: int = 12) -> str:
    return f"Module › {name}\n\n" + " ".join(f"{name}{i}" for i in range(words))


def test_small_sections_merge_in_order_up_to_the_budget() -> None:
    texts = [_entry(f"e{i}") for i in range(10)]
    units = embedding_units(texts, budget=400, read=None)
    assert [i for u in units for i in u.members] == list(range(10))  # each once, in order
    assert 1 < len(units) < len(texts)
    for unit in units:
        assert unit.text == SEPARATOR.join(texts[i] for i in unit.members)
        assert len(unit.text) <= 400
    # a section over the budget is a unit of its own, and its neighbours stay apart
    big = _entry("big", words=200)
    units = embedding_units([texts[0], big, texts[1]], budget=400, read=None)
    assert [u.members for u in units] == [(0,), (1,), (2,)]


def test_a_unit_longer_than_the_model_reads_gives_each_section_its_share() -> None:
    parts = [_entry("short", 3), _entry("long", 150), _entry("other", 150)]
    text = fair_shares(parts, read=600)
    assert len(text) <= 600
    assert parts[0] in text  # a short section is whole
    chunks = text.split(SEPARATOR)
    # every section is there by its breadcrumb and opening words
    for name in ("long", "other"):
        assert f"Module › {name}" in text and f"{name}0 {name}1" in text
    assert not text.endswith("other149") and len(chunks) == 6
    assert fair_shares(parts[:1], read=600) == parts[0]  # fits: as is
    assert fair_shares(parts, read=None) == SEPARATOR.join(parts)


def test_budgets_follow_the_chunker_and_the_model_window() -> None:
    assert unit_budget(512) == 2048  # the chunker's 4 characters a token
    assert read_budget(256) == 896  # what MiniLM reads, at windows.py's 3.5
    assert read_budget(None) is None


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(dimensions=32)
        self.texts = 0

    def embed(self, texts: Sequence[str],
              titles: Sequence[str | None] | None = None) -> list[list[float]]:
        self.texts += len(texts)
        return super().embed(texts, titles)


def test_embed_pages_gives_each_chunk_its_units_vector() -> None:
    emb = Counting()
    pages = [("A", [_entry("a1"), _entry("a2"), _entry("a3")]), ("B", [_entry("b1")])]
    vectors = embed_pages(emb, pages, max_tokens=512)
    assert len(vectors) == 4 and emb.texts == 2  # page A is one unit, page B another
    assert vectors[0] == vectors[1] == vectors[2] != vectors[3]


PAGE = "\n\n".join(f"## Function f{i}\n\nf{i} computes thing{i} from its argument."
                   for i in range(12))


def test_ingest_embeds_units_and_keeps_every_section_for_search_and_citation(
        store: KnowledgeStore, db_url: str) -> None:
    emb = Counting()
    store.bind_embedder(emb.identity)
    cached = CachedEmbedder(emb, store)
    report = ingest(store, [source_spec("text", "api", {"body": f"# API\n\n{PAGE}",
                                                         "title": "API"})],
                    namespace="ns", embedder=cached)
    assert report.chunks_written >= 12
    assert cached.provider_texts == emb.texts < report.chunks_written
    # lexical search still finds the finest section, cited by its own anchor
    hits = store.search("ns", "thing7", k=1)
    assert hits[0].meta["anchor"] == "function-f7"
    shared = rows(db_url, "SELECT count(DISTINCT embedding::text), count(*) FROM chunks")
    assert shared[0][0] == emb.texts < shared[0][1]
    # re-embedding the knowledge base reads the same units: the cache answers them all
    before = rows(db_url, "SELECT id, embedding::text FROM chunks ORDER BY id")
    again = reembed(store, emb, again=True)
    assert again.chunks == report.chunks_written and again.embedded == 0
    assert rows(db_url, "SELECT id, embedding::text FROM chunks ORDER BY id") == before
