from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbctl.chunk import CHARS_PER_TOKEN, chunk_text, estimate_tokens


def _sentences(tag: str, n: int) -> list[str]:
    return [f"{tag} sentence number {i} says something." for i in range(n)]


def _is_subsequence(needle: str, haystack: str) -> bool:
    it = iter(haystack)
    return all(ch in it for ch in needle)


def _non_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \n"])
def test_blank_input_gives_no_chunks(text: str) -> None:
    assert chunk_text(text) == []


def test_short_text_is_one_plain_chunk() -> None:
    [chunk] = chunk_text("  Hello there.\n\nSecond paragraph.  \n")
    assert chunk.text == "Hello there.\n\nSecond paragraph."
    assert chunk.anchor is None
    assert chunk.heading_path == ()
    assert chunk.token_count == estimate_tokens(chunk.text)


def test_paragraph_boundaries_come_first() -> None:
    paras = [" ".join(_sentences(tag, 2)) for tag in ("Alpha", "Beta", "Gamma")]
    text = "\n\n".join(paras)
    # Room for two paragraphs (plus the blank line between them) but not three.
    max_tokens = (2 * len(paras[0]) + 2) // CHARS_PER_TOKEN + 1
    chunks = chunk_text(text, max_tokens=max_tokens, overlap_tokens=0)
    assert [c.text for c in chunks] == [paras[0] + "\n\n" + paras[1], paras[2]]


def test_long_paragraph_splits_at_sentences() -> None:
    sentences = _sentences("Delta", 12)
    text = " ".join(sentences)
    chunks = chunk_text(text, max_tokens=25, overlap_tokens=0)
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk.text) <= 25 * CHARS_PER_TOKEN
        assert chunk.text.endswith("something.")
        assert chunk.text.startswith("Delta sentence")
    assert " ".join(c.text for c in chunks) == text


def test_long_sentence_splits_at_words() -> None:
    words = [f"word{i:03d}" for i in range(200)]
    text = " ".join(words)  # one sentence, no punctuation
    chunks = chunk_text(text, max_tokens=10, overlap_tokens=0)
    assert all(len(c.text) <= 40 for c in chunks)
    assert [w for c in chunks for w in c.text.split(" ")] == words


def test_word_longer_than_budget_is_hard_cut() -> None:
    word = "".join(chr(ord("a") + i % 26) for i in range(1000))
    chunks = chunk_text(f"Short start.\n\n{word}", max_tokens=10, overlap_tokens=0)
    assert chunks[0].text == "Short start."
    assert all(len(c.text) == 40 for c in chunks[1:-1])
    assert "".join(c.text for c in chunks[1:]) == word


def test_overlap_starts_at_a_sentence_boundary_inside_the_previous_chunk() -> None:
    sentences = _sentences("Echo", 40)
    text = " ".join(sentences)
    max_tokens, overlap_tokens = 40, 12
    chunks = chunk_text(text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    assert len(chunks) > 2
    prev_end = None
    for chunk in chunks:
        start = text.index(chunk.text)  # sentences are distinct, so this is unique
        assert len(chunk.text) <= max_tokens * CHARS_PER_TOKEN
        if prev_end is not None:
            shared = prev_end - start
            assert 0 < shared <= overlap_tokens * CHARS_PER_TOKEN
            assert chunk.text.startswith("Echo sentence")
        prev_end = start + len(chunk.text)
    assert prev_end == len(text)


def test_overlap_falls_back_to_a_word_boundary() -> None:
    words = [f"w{i:04d}" for i in range(300)]
    text = " ".join(words)  # no sentence boundaries at all
    chunks = chunk_text(text, max_tokens=20, overlap_tokens=5)
    prev_end = None
    for chunk in chunks:
        start = text.index(chunk.text)
        assert start == 0 or text[start - 1] == " "  # begins with a whole word
        if prev_end is not None:
            assert 0 < prev_end - start <= 5 * CHARS_PER_TOKEN
        prev_end = start + len(chunk.text)


def test_an_overlap_never_starts_inside_a_word() -> None:
    # the window an overlap may come from holds the tail of one long link: no overlap
    link = "[the post](https://docs.example.com/" + "x" * 150 + "/)"
    text = "A sentence of words. " * 3 + link + " " + "Then more words here. " * 6
    chunks = chunk_text(text, max_tokens=50, overlap_tokens=20)
    assert len(chunks) > 1
    for chunk in chunks:
        start = text.index(chunk.text)
        assert start == 0 or text[start - 1] == " ", chunk.text[:40]


def test_zero_overlap_chunks_partition_the_text() -> None:
    text = "\n\n".join(" ".join(_sentences(f"P{i}", 5)) for i in range(8))
    chunks = chunk_text(text, max_tokens=30, overlap_tokens=0)
    assert _non_space("".join(c.text for c in chunks)) == _non_space(text)


def test_windows_line_endings() -> None:
    text = "First paragraph here.\r\n\r\nSecond paragraph here."
    chunks = chunk_text(text, max_tokens=6, overlap_tokens=0)
    assert [c.text for c in chunks] == ["First paragraph here.", "Second paragraph here."]


@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), [(0, 0), (-5, 0), (10, -1)])
def test_invalid_budgets_are_refused(max_tokens: int, overlap_tokens: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("some text", max_tokens=max_tokens, overlap_tokens=overlap_tokens)


@settings(deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("abc xyz.!?\n\t,;") + ["。", "é", "字"]),
            max_size=2000),
    st.integers(min_value=1, max_value=80),
    st.integers(min_value=0, max_value=100),
)
def test_properties(text: str, max_tokens: int, overlap_tokens: int) -> None:
    chunks = chunk_text(text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    if not text.strip():
        assert chunks == []
        return
    for chunk in chunks:
        assert chunk.text in text  # a slice of the input, nothing rewritten
        assert chunk.text == chunk.text.strip()
        assert len(chunk.text) <= max_tokens * CHARS_PER_TOKEN
        assert chunk.token_count == estimate_tokens(chunk.text) <= max_tokens
    joined = "".join(c.text for c in chunks)
    assert _is_subsequence(_non_space(text), _non_space(joined))
    if overlap_tokens == 0:
        assert _non_space(joined) == _non_space(text)
