"""What one vector stands for: a run of a page's sections, merged up to a chunk's budget.

Lexical search and citations keep the finest section (a chunk, with its anchor); the
vector side does not need that grain. On the Python docs (530 pages) the chunker makes
18,292 chunks, most of them one small API entry each (median 496 characters): embedded one
by one, and long ones in windows, that was 24,331 inputs to the model. Consecutive chunks
of one page are merged here into units of at most the chunk budget, 7,473 of them, and each
chunk stores its unit's vector; its page's vector (the mean of its chunks') is made of them
as before.

A unit is one input to the model. When the model reads less than a unit holds (MiniLM reads
256 word pieces, ``read_chars`` of text), each section gets a fair share of what it reads:
its breadcrumb and its opening words, the shortest sections whole. A vector that saw only
the first sections of a unit would say nothing of the others, which share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..chunk.model import CHARS_PER_TOKEN
from ..embed.base import Embedder
from ..embed.windows import CHARS_PER_TOKEN as MODEL_CHARS_PER_TOKEN
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


def read_budget(window: int | None) -> int | None:
    """Characters of a unit the model reads (``window`` tokens); None: all of it."""
    return int(window * MODEL_CHARS_PER_TOKEN) if window else None


def embedding_units(texts: Sequence[str], budget: int, read: int | None) -> list[Unit]:
    """One page's chunk texts (in order) as units: consecutive chunks merged while the
    unit stays within ``budget`` characters; each unit's text cut to ``read`` characters
    by fair shares (``fair_shares``). A chunk over the budget is a unit of its own."""
    groups: list[list[int]] = []
    size = 0
    for i, text in enumerate(texts):
        if groups and size + len(SEPARATOR) + len(text) <= budget:
            groups[-1].append(i)
            size += len(SEPARATOR) + len(text)
        else:
            groups.append([i])
            size = len(text)
    return [Unit(fair_shares([texts[i] for i in g], read), tuple(g)) for g in groups]


def fair_shares(parts: Sequence[str], read: int | None) -> str:
    """``parts`` joined, within ``read`` characters: each part cut to the same length,
    the largest that fits (parts shorter than it stay whole), at a blank where one is
    near."""
    joined = SEPARATOR.join(parts)
    if read is None or len(joined) <= read:
        return joined
    room = max(len(parts), read - len(SEPARATOR) * (len(parts) - 1))
    cap = _level(sorted(len(p) for p in parts), room)
    return SEPARATOR.join(_head(p, cap) for p in parts)


def _level(lengths: list[int], room: int) -> int:
    """The largest cap with ``sum(min(length, cap)) <= room`` (``lengths`` sorted)."""
    left = len(lengths)
    for length in lengths:
        if length * left > room:
            return max(1, room // left)
        room -= length
        left -= 1
    return lengths[-1] if lengths else room


def _head(text: str, cap: int) -> str:
    """``text`` up to ``cap`` characters, ending at its last blank in the final fifth."""
    if len(text) <= cap:
        return text
    floor = cap - max(1, cap // 5)
    blank = max(text.rfind(" ", floor, cap), text.rfind("\n", floor, cap))
    return text[:blank if blank > 0 else cap].rstrip()


def page_units(chunks: Sequence[str], budget: int, read: int | None) -> list[Unit]:
    """The units of one page, from its chunks' stored markdown (in order)."""
    return embedding_units([embedding_text(c) for c in chunks], budget, read)


def embed_pages(embedder: Embedder, pages: Sequence[tuple[str | None, Sequence[str]]],
                max_tokens: int) -> list[list[float]]:
    """A vector for every chunk of ``pages`` ((title, chunk markdown) each), in order:
    each page's units embedded in one call, each chunk given its unit's vector."""
    read = read_budget(getattr(embedder, "window", None))
    budget = unit_budget(max_tokens)
    units = [(title, page_units(chunks, budget, read)) for title, chunks in pages]
    flat = [(title, u) for title, page in units for u in page]
    vectors = embedder.embed([u.text for _, u in flat], [title for title, _ in flat])
    if len(vectors) != len(flat):
        raise EmbedderError(f"the embedder returned {len(vectors)} vectors for "
                            f"{len(flat)} texts")
    out: list[list[float]] = []
    for (_, unit), vector in zip(flat, vectors, strict=True):
        out.extend(vector for _ in unit.members)
    return out
