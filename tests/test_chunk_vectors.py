"""What a vector stands for: one section, the grain lexical search and citations keep (sections
that shared one merged vector could not be told apart by it)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from kbctl.pipeline.cached_embedder import CachedEmbedder
from kbctl.pipeline.chunk_vectors import embed_pages
from kbctl.pipeline.ingest import ingest
from kbctl.pipeline.reembed import reembed
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore

from .conftest import rows
from .embedders import HashingEmbedder


def _entry(name: str, words: int = 12) -> str:
    return f"Module › {name}\n\n" + " ".join(f"{name}{i}" for i in range(words))


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(dimensions=32)
        self.texts = 0

    def embed(self, texts: Sequence[str],
              titles: Sequence[str | None] | None = None) -> list[list[float]]:
        self.texts += len(texts)
        return super().embed(texts, titles)


def test_embed_pages_gives_each_chunk_its_own_vector() -> None:
    emb = Counting()
    pages = [("A", [_entry("a1"), _entry("a2"), _entry("a3")]), ("B", [_entry("b1")])]
    vectors = embed_pages(emb, pages)
    assert len(vectors) == 4 and emb.texts == 4  # one call, one input a section
    assert len({tuple(v) for v in vectors}) == 4


PAGE = "\n\n".join(f"## Function f{i}\n\nf{i} computes thing{i} from its argument."
                   for i in range(12))


def test_ingest_embeds_each_section_and_cites_it(
        store: KnowledgeStore, db_url: str) -> None:
    emb = Counting()
    store.embedder.bind(emb.identity)
    cached = CachedEmbedder(emb, store, window=16)  # a section past 64 characters: windows
    report = ingest(store, [source_spec("text", "api", {"body": f"# API\n\n{PAGE}",
                                                         "title": "API"})],
                    namespace="ns", embedder=cached)
    assert report.chunks_written >= 12
    assert cached.provider_texts == emb.texts > report.chunks_written  # windows read
    distinct = rows(db_url, "SELECT count(DISTINCT embedding::text), count(*) FROM chunks")
    assert distinct[0][0] == distinct[0][1] == report.chunks_written  # a vector each
    # vector search alone tells the sections apart: the one asked about comes first
    [hit] = store.search.rank("ns", "thing7", k=1, query_vector=emb.embed_query("f7 thing7"),
                              vector_weight=1.0)
    assert hit.meta["anchor"] == "function-f7"
    # re-embedding the knowledge base reads the same inputs: the cache answers them all
    before = rows(db_url, "SELECT id, embedding::text FROM chunks ORDER BY id")
    again = reembed(store, emb, window=16, again=True)
    assert again.chunks == report.chunks_written and again.embedded == 0
    after = rows(db_url, "SELECT id, embedding::text FROM chunks ORDER BY id")
    assert [i for i, _ in after] == [i for i, _ in before]
    for (_, old), (_, new) in zip(before, after, strict=True):  # windows pooled again
        assert json.loads(new) == pytest.approx(json.loads(old), abs=1e-6)
