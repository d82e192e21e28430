"""The line chunker: whole lines, exact line ranges, bounded size, overlap, full coverage."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kbctl.chunk.model import CHARS_PER_TOKEN
from kbctl.memory.chunking import (
    chunk_lines,
    line_window,
    normalise_newlines,
    split_lines,
)

_line = st.one_of(
    st.just(""),
    st.just("   "),
    st.text(alphabet="abcdefgh xyz.,#-", min_size=1, max_size=120),
    st.text(alphabet="abc ", min_size=200, max_size=900),  # longer than small budgets
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_line, max_size=80), max_tokens=st.integers(8, 120),
       overlap=st.integers(0, 60), trailing=st.booleans())
def test_chunks_are_exact_line_windows(lines: list[str], max_tokens: int, overlap: int,
                                       trailing: bool) -> None:
    text = "\n".join(lines) + ("\n" if trailing and lines else "")
    all_lines = split_lines(text)
    chunks = chunk_lines(text, max_tokens, overlap)
    max_chars = max_tokens * CHARS_PER_TOKEN
    covered: set[int] = set()
    for i, c in enumerate(chunks):
        assert c.ordinal == i
        assert 1 <= c.start_line <= c.end_line <= len(all_lines)
        assert c.text == line_window(all_lines, c.start_line, c.end_line - c.start_line + 1)
        assert c.text.strip() and all_lines[c.start_line - 1].strip()
        assert all_lines[c.end_line - 1].strip()
        assert len(c.text) <= max_chars or c.start_line == c.end_line
        covered.update(range(c.start_line, c.end_line + 1))
        if i:
            prev = chunks[i - 1]
            assert prev.start_line < c.start_line and prev.end_line < c.end_line
            shared = "\n".join(all_lines[c.start_line - 1:prev.end_line])
            assert len(shared) <= max(overlap * CHARS_PER_TOKEN, 0)
    assert covered >= {n for n, line in enumerate(all_lines, start=1) if line.strip()}


def test_overlap_repeats_trailing_lines() -> None:
    text = "\n".join(f"line {n:03d} " + "x" * 40 for n in range(60))
    chunks = chunk_lines(text, max_tokens=100, overlap_tokens=30)
    assert len(chunks) > 2
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.start_line <= prev.end_line  # some lines repeat
        assert prev.text.endswith(line_window(split_lines(text), nxt.start_line,
                                              prev.end_line - nxt.start_line + 1))


def test_default_budget_is_about_400_tokens() -> None:
    text = "\n".join("word " * 15 for _ in range(200))
    chunks = chunk_lines(text)
    assert all(len(c.text) <= 400 * CHARS_PER_TOKEN for c in chunks)
    assert max(len(c.text) for c in chunks) > 300 * CHARS_PER_TOKEN


def test_newlines_are_normalised_and_a_final_newline_opens_no_line() -> None:
    assert normalise_newlines("a\r\nb\rc\n") == "a\nb\nc\n"
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("") == [] and chunk_lines("\n\n  \n") == []
