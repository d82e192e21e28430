"""Plain-text chunking: paragraphs, then sentences, then words, then a hard cut.

Every chunk is a contiguous slice of the input, so nothing is rewritten or lost and a
chunk's length is simply ``end - start``. The helpers here work on ``(start, end)`` spans
of one string and are shared with the markdown chunker.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence

from kbctl.chunk.model import (
    CHARS_PER_TOKEN,
    DEFAULT_MAX_TOKENS,
    DEFAULT_OVERLAP_TOKENS,
    Chunk,
    estimate_tokens,
)

Span = tuple[int, int]

_NON_SPACE = re.compile(r"\S")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# A sentence ends with terminal punctuation (plus closing quotes/brackets) and whitespace;
# CJK full stops need no whitespace after them. The lookbehinds make a match start only
# at the beginning of a punctuation run, which keeps a long run of dots linear.
_SENTENCE_END = re.compile(
    r"(?<![.!?])[.!?]+[\"')\]’”»]*\s+|(?<![。！？])[。！？]+[」』）”]*\s*")
_WORD = re.compile(r"\S+")
_TERMINALS = ".!?。！？"
_CJK_STOPS = "。！？"
_CLOSERS = "\"')]’”»」』）"
# Where an overlap may begin: a word start, or right after a CJK full stop.
_CANDIDATE = re.compile(r"(?<!\S)\S|(?<=[。！？」』）])\S")


def budget_chars(max_tokens: int, overlap_tokens: int) -> tuple[int, int]:
    """Translate token budgets into character budgets; overlap is clamped to half a chunk
    so every chunk still carries mostly new text."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if overlap_tokens < 0:
        raise ValueError(f"overlap_tokens must not be negative, got {overlap_tokens}")
    max_chars = max_tokens * CHARS_PER_TOKEN
    return max_chars, min(overlap_tokens * CHARS_PER_TOKEN, max_chars // 2)


def strip_span(text: str, start: int, end: int) -> Span | None:
    """Narrow ``[start, end)`` to its non-whitespace extent (None when it is all blank)."""
    m = _NON_SPACE.search(text, start, end)
    if m is None:
        return None
    start = m.start()
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_span(text: str, start: int, end: int, budget: int) -> Iterator[Span]:
    """Cut one stripped span into pieces of at most ``budget`` characters.

    Sentences first, then words, then a hard cut inside a word longer than the budget.
    The pieces are yielded, not listed: a 4 MB span without a sentence end is a million
    words, and a million listed spans took ~200 MB.
    """
    if end - start <= budget:
        yield (start, end)
        return
    for sentence in _sentences(text, start, end):
        s, e = sentence
        if e - s <= budget:
            yield sentence
            continue
        for word in _WORD.finditer(text, s, e):
            ws, we = word.span()
            if we - ws <= budget:
                yield (ws, we)
            else:
                yield from ((i, min(i + budget, we)) for i in range(ws, we, budget))


def _sentences(text: str, start: int, end: int) -> Iterator[Span]:
    cursor = start
    for m in _SENTENCE_END.finditer(text, start, end):
        stripped = strip_span(text, cursor, m.end())
        if stripped is not None:
            yield stripped
        cursor = m.end()
    stripped = strip_span(text, cursor, end)
    if stripped is not None:
        yield stripped


class Boundaries:
    """Where an overlap may begin: a sentence start (preferred) or a word start, never
    inside a word.

    Only the short window an overlap may come from is ever scanned, so finding
    boundaries costs O(overlap) per chunk, nothing per document. Positions inside
    ``protected`` ranges (code fences) are refused, so an overlap never starts mid-fence.
    """

    def __init__(self, text: str, *, line_starts_are_sentences: bool = False,
                 protected: Sequence[Span] = ()) -> None:
        self._text = text
        self._line_breaks_needed = 1 if line_starts_are_sentences else 2
        self._protected = sorted(protected)
        self._protected_starts = [s for s, _ in self._protected]

    def is_protected(self, pos: int) -> bool:
        i = bisect_right(self._protected_starts, pos) - 1
        return i >= 0 and pos < self._protected[i][1]

    def is_sentence_start(self, pos: int) -> bool:
        """True after terminal punctuation, a paragraph break (or, in markdown, any line
        break), or at the very start of the text. ``pos`` must be a candidate start."""
        text = self._text
        gap = pos
        while gap > 0 and text[gap - 1].isspace():
            gap -= 1
        if gap == 0 or text.count("\n", gap, pos) >= self._line_breaks_needed:
            return True
        q = gap
        while q > 0 and text[q - 1] in _CLOSERS:
            q -= 1
        if q == 0 or text[q - 1] not in _TERMINALS:
            return False
        # Latin punctuation needs whitespace after it; CJK full stops do not.
        return gap < pos or text[q - 1] in _CJK_STOPS

    def overlap_start(self, lo: int, hi: int) -> int | None:
        """Best place in ``[lo, hi)`` to begin an overlap that ends at ``hi``."""
        if lo >= hi:
            return None
        min_sentence_overlap = max(1, (hi - lo) // 2)
        first_word: int | None = None
        for m in _CANDIDATE.finditer(self._text, lo, hi):
            p = m.start()
            if self.is_protected(p):
                continue
            if first_word is None:
                first_word = p
            if hi - p < min_sentence_overlap:
                break
            if self.is_sentence_start(p):
                return p
        # None: no word starts in the window (one long word, such as a link's URL): no
        # overlap rather than a chunk that opens mid-word ("0.1:8850/blog/…")
        return first_word


def pack(pieces: Iterable[Span], budget: int, overlap: int, bounds: Boundaries) -> list[Span]:
    """Greedily pack ordered pieces (each within ``budget``) into chunk spans, reading
    them once, in order (they may be a stream).

    A chunk after the first may start up to ``overlap`` characters before the previous
    chunk's end, at a sentence or word boundary, provided its first new piece still fits.
    """
    out: list[Span] = []
    stream = iter(pieces)
    piece = next(stream, None)
    while piece is not None:
        start, end = piece
        if out and overlap > 0:
            prev_start, prev_end = out[-1]
            lo = max(prev_end - overlap, end - budget, prev_start + 1)
            p = bounds.overlap_start(lo, prev_end)
            if p is not None:
                start = p
        piece = next(stream, None)
        while piece is not None and piece[1] - start <= budget:
            end = piece[1]
            piece = next(stream, None)
        out.append((start, end))
    return out


def chunk_text(text: str, *, max_tokens: int = DEFAULT_MAX_TOKENS,
               overlap_tokens: int = DEFAULT_OVERLAP_TOKENS) -> list[Chunk]:
    """Chunk unstructured text into retrieval units of at most ``max_tokens`` (≈4 chars each).

    Paragraph boundaries are preferred, then sentence boundaries, then word boundaries,
    then a hard cut; consecutive chunks share about ``overlap_tokens`` of text so a fact
    that straddles a boundary stays retrievable.
    """
    budget, overlap = budget_chars(max_tokens, overlap_tokens)
    spans = pack(_paragraph_pieces(text, budget), budget, overlap, Boundaries(text))
    return [_chunk(text[s:e]) for s, e in spans]


def _paragraph_pieces(text: str, budget: int) -> Iterator[Span]:
    cursor = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        yield from _paragraph(text, cursor, m.start(), budget)
        cursor = m.end()
    yield from _paragraph(text, cursor, len(text), budget)


def _paragraph(text: str, start: int, end: int, budget: int) -> Iterator[Span]:
    stripped = strip_span(text, start, end)
    if stripped is not None:
        yield from split_span(text, *stripped, budget)


def _chunk(body: str) -> Chunk:
    return Chunk(text=body, anchor=None, heading_path=(), token_count=estimate_tokens(body))
