"""Texts longer than an embedding model reads, embedded whole: overlapping windows, one
vector each, averaged.

A small model reads a fixed number of word pieces and silently drops the rest
(all-MiniLM-L6-v2 reads 256, the BGE and E5 families 512). A default chunk (512 tokens of
~4 characters) holds more than that: on the Python docs a quarter of the chunks ran past
MiniLM's window, so their vectors said nothing of their second half, where the entry a
question asks about often sits. Each window repeats the text's short opening paragraph
(a chunk's heading path), so every window knows where it stands; the chunk's vector is the
normalised mean of its windows'. On the Python docs (bench/bench_ranking.py) this raised
hybrid MRR@10 on the dev set and on the two held-out sets read for it, with no measure
lower; on the held-out set never read it cost one question of 50.

Windows are cut by characters, 3.5 per token: the Python docs' embedding texts average
3.6 characters a MiniLM word piece. A denser window (code runs near 2.9) loses its last
few words to the model's cut, and the overlap gives them to the next window. At 3 per
token, windows that always fit, the same questions scored within a question of these
either way, for 28% more windows to embed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from kbctl.errors import EmbedderError

CHARS_PER_TOKEN = 3.5
# Each window shares this share of its length with the one before it, so a sentence cut at
# one window's edge is whole in the next.
OVERLAP = 0.2
# A text is read up to this many windows (a chunk of the default size needs 2 or 3); a
# bigger one is read as far as they reach, as the model itself would have truncated it.
MAX_WINDOWS = 16
# Below this a window holds too little to embed on its own: such a setting is refused.
MIN_TOKENS = 32
# An opening paragraph repeated in every window holds at most this share of one.
HEAD_SHARE = 0.25

# Input windows, in tokens, of widely used models whose window is smaller than a default
# chunk: matched against the model name, case-insensitive. Models not named here are sent
# whole (hosted APIs read thousands of tokens); ``embedder_window`` sets any other.
_KNOWN: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"(^|[/:_-])all-minilm", re.I), 256),
    (re.compile(r"(^|[/:_-])(paraphrase|multi-qa)-[a-z0-9-]*minilm", re.I), 256),
    (re.compile(r"(^|[/:_-])bge-(small|base|large)", re.I), 512),
    (re.compile(r"(^|[/:_-])(multilingual-)?e5-(small|base|large)", re.I), 512),
    (re.compile(r"(^|[/:_-])mxbai-embed-large", re.I), 512),
    (re.compile(r"(^|[/:_-])snowflake-arctic-embed", re.I), 512),
)


Vectors = list[list[float]]


def embed_read_whole(embed: Callable[[list[str], list[str | None]], Vectors],
                     texts: Sequence[str], titles: Sequence[str | None],
                     window: int | None) -> Vectors:
    """``embed(texts, titles)``, with each text longer than ``window`` tokens sent as its
    windows (one call for all) and given their pooled vector; ``window`` None: as is."""
    if len(titles) != len(texts):
        raise ValueError(f"got {len(texts)} texts but {len(titles)} titles")
    if not window:
        return embed(list(texts), list(titles))
    pieces = [split(t, window) for t in texts]
    flat = embed([w for p in pieces for w in p],
                 [ti for p, ti in zip(pieces, titles, strict=True) for _ in p])
    if len(flat) != sum(map(len, pieces)):
        raise EmbedderError(f"the embedder returned {len(flat)} vectors for "
                            f"{sum(map(len, pieces))} texts")
    pooled, at = [], 0
    for p in pieces:
        pooled.append(pool(flat[at:at + len(p)]))
        at += len(p)
    return pooled


def known_window(model: str) -> int | None:
    """The input window (tokens) of a model kbctl knows to be smaller than a chunk."""
    for pattern, tokens in _KNOWN:
        if pattern.search(model):
            return tokens
    return None


def split(text: str, window_tokens: int) -> list[str]:
    """``text`` as windows of at most ``window_tokens`` (estimated), or ``[text]`` when it
    fits in one."""
    size = int(window_tokens * CHARS_PER_TOKEN)
    if len(text) <= size:
        return [text]
    head, sep, body = text.partition("\n\n")
    if not sep or not head.strip() or len(head) + 2 > size * HEAD_SHARE:
        head, body = "", text
    else:
        head += "\n\n"
    room = size - len(head)
    step = max(1, math.floor(room * (1 - OVERLAP)))
    windows: list[str] = []
    start = 0
    while len(windows) < MAX_WINDOWS:
        end = _cut(body, start, start + room)
        windows.append(head + body[start:end].strip())
        if end >= len(body):
            break
        start = _cut(body, start, start + step) if start + step < end else end
    return windows


def _cut(text: str, start: int, end: int) -> int:
    """``end``, moved back to the last blank in its window's final fifth (a word is not
    split where a blank is near)."""
    if end >= len(text):
        return len(text)
    floor = end - max(1, (end - start) // 5)
    blank = max(text.rfind(" ", floor, end), text.rfind("\n", floor, end))
    return blank if blank > start else end


def pool(vectors: Sequence[Sequence[float]]) -> list[float]:
    """One vector for a text read in windows: their mean, L2-normalised as every
    embedder's are."""
    if len(vectors) == 1:
        return list(vectors[0])
    mean = [sum(column) / len(vectors) for column in zip(*vectors, strict=True)]
    norm = math.sqrt(sum(x * x for x in mean))
    return [x / norm for x in mean] if norm else mean
