"""What a vector stands for: a run of a page's small sections merged into one embedded unit,
while lexical search and citations keep every section and its anchor."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from kbctl.pipeline.cached_embedder import CachedEmbedder
from kbctl.pipeline.embedding_units import (
    SEPARATOR,
    embed_pages,
    embedding_units,
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
    units = embedding_units(texts, budget=400)
    assert [i for u in units for i in u.members] == list(range(10))  # each once, in order
    assert 1 < len(units) < len(texts)
    for unit in units:
        assert unit.text == SEPARATOR.join(texts[i] for i in unit.members)
        assert len(unit.text) <= 400
    # a section over the budget is a unit of its own, and its neighbours stay apart
    big = _entry("big", words=200)
    units = embedding_units([texts[0], big, texts[1]], budget=400)
    assert [u.members for u in units] == [(0,), (1,), (2,)]


def test_the_budget_is_the_chunkers() -> None:
    assert unit_budget(512) == 2048  # the chunker's 4 characters a token


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
    cached = CachedEmbedder(emb, store, window=64)  # a unit past 224 characters: windows
    report = ingest(store, [source_spec("text", "api", {"body": f"# API\n\n{PAGE}",
                                                         "title": "API"})],
                    namespace="ns", embedder=cached)
    assert report.chunks_written >= 12
    assert cached.provider_texts == emb.texts < report.chunks_written
    units = rows(db_url, "SELECT count(DISTINCT embedding::text) FROM chunks")[0][0]
    assert units < emb.texts  # the units longer than the window were read in windows
    # lexical search still finds the finest section, cited by its own anchor
    hits = store.search("ns", "thing7", k=1)
    assert hits[0].meta["anchor"] == "function-f7"
    shared = rows(db_url, "SELECT count(DISTINCT embedding::text), count(*) FROM chunks")
    assert shared[0][0] < shared[0][1]  # chunks of one unit share its vector
    # re-embedding the knowledge base reads the same units: the cache answers them all
    before = rows(db_url, "SELECT id, embedding::text FROM chunks ORDER BY id")
    again = reembed(store, emb, window=64, again=True)
    assert again.chunks == report.chunks_written and again.embedded == 0
    after = rows(db_url, "SELECT id, embedding::text FROM chunks ORDER BY id")
    assert [i for i, _ in after] == [i for i, _ in before]
    for (_, old), (_, new) in zip(before, after, strict=True):  # windows pooled again
        assert json.loads(new) == pytest.approx(json.loads(old), abs=1e-6)
