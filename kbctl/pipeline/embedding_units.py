"""What one vector stands for: a run of a page's sections, merged up to a chunk's budget.

Lexical search and citations keep the finest section (a chunk, with its anchor); the
vector side does not need that grain. On the Python docs (530 pages) the chunker makes
18,292 chunks, most of them one small API entry each (median 496 characters). Consecutive
chunks of one page are merged here into units of at most the chunk budget, 7,469 of them;
each chunk stores its unit's vector, and its page's vector (the mean of its chunks') is
made of them as before. A provider that reads a unit whole (Gemini, OpenAI) gets 7,469
inputs instead of 18,292 (with Gemini, as many requests).

A unit longer than a small model reads is read whole in windows (``kbctl.embed.windows``),
as a long chunk was: on the Rust book, where most units are one long chunk, cutting each
unit to the model's window instead (MiniLM: 256 word pieces) lowered hybrid MRR@5 from
0.972 to 0.958 (to 0.954 when every paragraph kept its opening words).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..chunk.model import CHARS_PER_TOKEN
from ..embed.base import Embedder
from ..errors import EmbedderError
from .embedding_text import embedding_text

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Unit:
    """The text embedded for a run of one page's chunks (``members``: their indexes)."""

    text: str
    members: tuple[int, ...]


def unit_budget(max_tokens: int) -> int:
    """Characters a unit may hold: a chunk's budget, as the chunker counts it."""
    return int(max_tokens * CHARS_PER_TOKEN)


def embedding_units(texts: Sequence[str], budget: int) -> list[Unit]:
    """One page's chunk texts (in order) as units: consecutive chunks merged while the
    unit stays within ``budget`` characters. A chunk over the budget is a unit of its
    own."""
    groups: list[list[int]] = []
    size = 0
    for i, text in enumerate(texts):
        if groups and size + len(SEPARATOR) + len(text) <= budget:
            groups[-1].append(i)
            size += len(SEPARATOR) + len(text)
        else:
            groups.append([i])
            size = len(text)
    return [Unit(SEPARATOR.join(texts[i] for i in g), tuple(g)) for g in groups]


def page_units(chunks: Sequence[str], budget: int) -> list[Unit]:
    """The units of one page, from its chunks' stored markdown (in order)."""
    return embedding_units([embedding_text(c) for c in chunks], budget)


def embed_pages(embedder: Embedder, pages: Sequence[tuple[str | None, Sequence[str]]],
                max_tokens: int) -> list[list[float]]:
    """A vector for every chunk of ``pages`` ((title, chunk markdown) each), in order:
    each page's units embedded in one call, each chunk given its unit's vector."""
    budget = unit_budget(max_tokens)
    units = [(title, page_units(chunks, budget)) for title, chunks in pages]
    flat = [(title, u) for title, page in units for u in page]
    vectors = embedder.embed([u.text for _, u in flat], [title for title, _ in flat])
    if len(vectors) != len(flat):
        raise EmbedderError(f"the embedder returned {len(vectors)} vectors for "
                            f"{len(flat)} texts")
    out: list[list[float]] = []
    for (_, unit), vector in zip(flat, vectors, strict=True):
        out.extend(vector for _ in unit.members)
    return out
