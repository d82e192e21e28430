"""What a chunk is embedded by: the text a reader sees, without link destinations, while
the stored chunk and the lexical index keep the links."""

from __future__ import annotations

import pytest

from kbctl.pipeline.cached_embedder import CachedEmbedder
from kbctl.pipeline.embedding_text import embedding_text
from kbctl.pipeline.ingest import ingest
from kbctl.pipeline.reembed import reembed
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore

from .conftest import rows
from .embedders import HashingEmbedder


@pytest.mark.parametrize(("markdown", "seen"), [
    ("The [`shutil`](https://d.example/library/shutil.html#module-shutil) module.",
     "The `shutil` module."),
    ("See ![a diagram](img/flow.png) and [the guide](<docs/a b.html> \"Guide\").",
     "See a diagram and the guide."),
    ("[`dict[str, int]`](https://d.example/typing.html#x) or [f(x)](https://w.example/F_(x))",
     "`dict[str, int]` or f(x)"),
    ("Plain [brackets] (and parentheses), a ](b) and https://bare.example/url stay.",
     "Plain [brackets] (and parentheses), a ](b) and https://bare.example/url stay."),
    ("```python\nx = [1](2)\n```", "```python\nx = 1\n```"),
    ("Use a [`Vec<T>`][vec].\n\n[vec]: ../std/vec/struct.Vec.html\n"
     "  [union]: <../unions.html> \"Unions\"\n[^1]: A footnote stays.\n",
     "Use a [`Vec<T>`][vec].\n\n[^1]: A footnote stays.\n"),
    ("[a]: is prose when more words follow", "[a]: is prose when more words follow"),
])
def test_links_become_their_labels(markdown: str, seen: str) -> None:
    assert embedding_text(markdown) == seen


@pytest.mark.timeout(60)
def test_hostile_brackets_stay_linear() -> None:
    for text in ("[" * 200_000, "[a" * 100_000 + "](" * 100_000, "[x](" + "(" * 200_000,
                 "[" + "a" * 200_000 + "]: " + "b " * 100_000, "]:\n[" * 100_000,
                 "[a](" + " " * 200_000, "[a](  " * 50_000):
        assert embedding_text(text) == text


def test_ingest_and_reembed_embed_what_a_reader_sees(store: KnowledgeStore,
                                                     db_url: str) -> None:
    body = ("# Files\n\nCopy with [`shutil.copy2`](https://d.example/library/shutil.html"
            "#shutil.copy2) to keep metadata.")
    emb = HashingEmbedder(dimensions=16)
    store.embedder.bind(emb.identity)
    ingest(store, [source_spec("text", "files", {"body": body, "title": "Files"})],
           namespace="ns", embedder=CachedEmbedder(emb, store))
    embedded = [t for call in emb.calls for t in call]
    assert embedded and all("https://" not in t for t in embedded)
    assert any("`shutil.copy2` to keep metadata" in t for t in embedded)
    # the stored chunk keeps its link for display, and BM25 still matches its anchor
    (text,), = rows(db_url, "SELECT text FROM chunks WHERE namespace = 'ns'")
    assert "https://d.example/library/shutil.html#shutil.copy2" in text
    assert store.search.rank("ns", "library shutil.html", k=1)

    fresh = HashingEmbedder(dimensions=16, model="fresh")
    reembed(store, fresh)
    assert [t for call in fresh.calls for t in call] == embedded
