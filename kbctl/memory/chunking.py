"""Line chunking for memory files.

A chunk is always a run of whole lines, so its citation ``path#Lstart-Lend`` and
``get --from start --lines (end-start+1)`` name exactly the same text. Lines are split on
``\\n`` only (text is normalised to ``\\n`` when written), the same way for both.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..chunk.model import CHARS_PER_TOKEN

MAX_TOKENS = 400
OVERLAP_TOKENS = 80


@dataclass(frozen=True)
class LineChunk:
    """Lines ``start_line..end_line`` (1-indexed, inclusive) of a file, and their text."""

    ordinal: int
    start_line: int
    end_line: int
    text: str


def normalise_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n``, so every reader counts lines alike."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str) -> list[str]:
    """A file's lines; a final newline ends the last line rather than opening a new one."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def line_window(lines: list[str], start: int, count: int | None) -> str:
    """The text of ``count`` lines from 1-indexed ``start`` (all remaining when None)."""
    begin = start - 1
    end = len(lines) if count is None else begin + count
    return "\n".join(lines[begin:end])


def chunk_lines(text: str, max_tokens: int = MAX_TOKENS,
                overlap_tokens: int = OVERLAP_TOKENS) -> list[LineChunk]:
    """Greedy line packing up to ``max_tokens`` with ``overlap_tokens`` of trailing lines
    repeated at the start of the next chunk.

    A line longer than the budget becomes a chunk of its own (never cut, so citations stay
    line-exact). Blank lines at a chunk's edges are left out of its range.
    """
    if max_tokens < 1 or overlap_tokens < 0:
        raise ValueError("max_tokens must be positive and overlap_tokens non-negative")
    lines = split_lines(text)
    max_chars = max_tokens * CHARS_PER_TOKEN
    overlap_chars = min(overlap_tokens * CHARS_PER_TOKEN, max_chars // 2)
    chunks: list[LineChunk] = []
    start, must_reach, n = 0, 1, len(lines)
    while start < n:
        while start < n and not lines[start].strip():
            start += 1
        if start >= n:
            break
        must_reach = max(must_reach, start + 1)
        end, size = start, 0
        while end < n and (end < must_reach or size + len(lines[end]) + 1 <= max_chars):
            size += len(lines[end]) + 1
            end += 1
        last = end
        while last > start and not lines[last - 1].strip():
            last -= 1
        if not chunks or last > chunks[-1].end_line:  # else only blank lines were new
            chunks.append(LineChunk(len(chunks), start + 1, last,
                                    "\n".join(lines[start:last])))
        if end >= n:
            break
        nxt, back = end, 0
        while (nxt - 1 > start and back + len(lines[nxt - 1]) + 1 <= overlap_chars
               and back + len(lines[nxt - 1]) + len(lines[end]) + 2 <= max_chars):
            nxt -= 1
            back += len(lines[nxt]) + 1
        start, must_reach = nxt, end + 1
    return chunks
