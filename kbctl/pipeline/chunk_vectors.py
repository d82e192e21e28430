"""What one vector stands for: one chunk, the section lexical search and citations keep.

Merging a page's consecutive small sections into one embedded unit (each chunk then
storing its unit's vector) was tried and measured, and lost: on the Python docs with
all-MiniLM-L6-v2 (``bench/bench_ranking.py``) hybrid MRR@10 fell from 0.854 to 0.844 on
the dev set and from 0.761/0.738/0.794 to 0.706/0.704/0.774 on three held-out sets, and
anchor@5 from 0.658 to 0.526 on the first: sections that share a vector cannot be told
apart by it. What a CI run pays per push is kept down by the embedding cache instead
(``cache_carry``): only changed chunks are embedded.

A chunk longer than a small model reads is read whole in windows (``kbctl.embed.windows``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..embed.base import Embedder
from ..errors import EmbedderError
from .embedding_text import embedding_text


def page_inputs(chunks: Sequence[str]) -> list[str]:
    """The texts embedded for one page's chunks (their stored markdown), in order."""
    return [embedding_text(c) for c in chunks]


def embed_pages(embedder: Embedder, pages: Sequence[tuple[str | None, Sequence[str]]]
                ) -> list[list[float]]:
    """A vector for every chunk of ``pages`` ((title, chunk markdown) each), in order, in
    one call."""
    flat = [(title, text) for title, chunks in pages for text in page_inputs(chunks)]
    vectors = embedder.embed([text for _, text in flat], [title for title, _ in flat])
    if len(vectors) != len(flat):
        raise EmbedderError(f"the embedder returned {len(vectors)} vectors for "
                            f"{len(flat)} texts")
    return vectors
