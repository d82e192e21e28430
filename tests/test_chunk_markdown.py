"""chunk_markdown: unit tests, property tests and a real-corpus run.

"Content" of a document, for the coverage property, is every line except its top-level
headings (the ATX markers, the title, the setext underline and the ``{#id}``
attribute): heading titles reach chunks through breadcrumbs instead, and only for
sections that have a body. The checks below parse with markdown-it independently of the
chunker's own token walk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from kbctl.chunk import (
    CHARS_PER_TOKEN,
    Chunk,
    Slugger,
    chunk_markdown,
    chunk_text,
    estimate_tokens,
    slugify,
)
from kbctl.chunk.headings import split_explicit_id

from .allocations import AllocationPeak

RUST_BOOK = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "rust-book" / "src"

# --- independent checks ------------------------------------------------------------------

_MD = MarkdownIt("commonmark").enable("table")
_OPENER = re.compile(r" {0,3}(`{3,}|~{3,})")
_CLOSER = re.compile(r"[ >]*(`{3,}|~{3,})[ \t]*")
SEP = " › "


@dataclass(frozen=True)
class Fence:
    opening: str
    content: list[str]
    source: str  # the fence as written, trailing whitespace removed


def expected_prefix(path: tuple[str, ...], max_tokens: int) -> str:
    """Breadcrumb rule: the full path, cut with an ellipsis only when longer than about
    half the budget."""
    if not path:
        return ""
    crumb = SEP.join(path)
    cap = (max_tokens * CHARS_PER_TOKEN - 2) // 2
    if len(crumb) > cap:
        crumb = crumb[: cap - 1] + "…"
    return crumb + "\n\n"


def body(chunk: Chunk) -> str:
    return chunk.text.partition("\n\n")[2] if chunk.heading_path else chunk.text


def non_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


def is_subsequence(needle: str, haystack: str) -> bool:
    it = iter(haystack)
    return all(ch in it for ch in needle)


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").split("\n")


def content_without_headings(text: str) -> str:
    """The lines a page shows outside its headings: those of markdown-it's blocks (lines
    outside every block, link reference definitions, show nothing)."""
    lines = _lines(text)
    shown: set[int] = set()
    for tok in _MD.parse("\n".join(lines)):
        if tok.level == 0 and tok.map and tok.nesting >= 0 and tok.type != "heading_open":
            shown.update(range(*tok.map))
    return "\n".join(line for i, line in enumerate(lines) if i in shown)


def _is_closer(line: str, marker: str) -> bool:
    m = _CLOSER.fullmatch(line)
    return bool(m) and m.group(1)[0] == marker[0] and len(m.group(1)) >= len(marker)


def top_level_fences(text: str) -> list[Fence]:
    lines = _lines(text)
    fences = []
    for tok in _MD.parse("\n".join(lines)):
        if tok.type != "fence" or tok.level != 0:
            continue
        first, end = tok.map
        closed = end - 1 > first and _is_closer(lines[end - 1], tok.markup)
        content = lines[first + 1:end - 1 if closed else end]
        while content and not content[-1].strip():
            content.pop()
        source = "\n".join(lines[first:end]).rstrip()
        fences.append(Fence(opening=lines[first], content=content, source=source))
    return fences


def check_budget(chunks: list[Chunk], max_tokens: int) -> None:
    """Every chunk fits, except a fence piece that cannot be cut any further."""
    budget = max_tokens * CHARS_PER_TOKEN
    for chunk in chunks:
        assert chunk.text.strip()
        assert chunk.token_count == estimate_tokens(chunk.text)
        if len(chunk.text) <= budget:
            continue
        lines = body(chunk).split("\n")
        opener = _OPENER.match(lines[0])
        assert opener, f"over budget and not a fence piece: {chunk.text[:80]!r}"
        assert _is_closer(lines[-1], opener.group(1)), chunk.text[-80:]
        # blank lines are never split off on their own: they carry nothing to retrieve
        content = [line for line in lines[1:-1] if line.strip()]
        assert len(content) <= 1, "an over-budget fence piece holds a single line"


def check_breadcrumbs(chunks: list[Chunk], max_tokens: int) -> None:
    for chunk in chunks:
        prefix = expected_prefix(chunk.heading_path, max_tokens)
        # a page of headings only is chunked as its headings
        assert chunk.text.startswith(prefix) or chunk.text == prefix.rstrip()
        # no heading, no anchor; a heading whose text slugs to nothing (``#`` alone) has
        # none of its own: its chunks cite the enclosing section (or the page)
        if not chunk.heading_path:
            assert chunk.anchor is None
        elif any(re.search(r"[A-Za-z0-9]", title) for title in chunk.heading_path):
            assert chunk.anchor is not None


def check_content_kept(text: str, chunks: list[Chunk]) -> None:
    kept = non_space("".join(body(c) for c in chunks))
    assert is_subsequence(non_space(content_without_headings(text)), kept)


def check_fences(text: str, chunks: list[Chunk], max_tokens: int) -> None:
    """Each top-level fence sits whole in one chunk, or, when it cannot fit with its
    breadcrumb, is carried by consecutive chunks that are each a complete fence with the
    original opening line, whose content lines add up to the original's."""
    budget = max_tokens * CHARS_PER_TOKEN
    pos = 0
    for fence in top_level_fences(text):
        whole = next((i for i in range(pos, len(chunks)) if fence.source in chunks[i].text),
                     None)
        if whole is not None:
            pos = whole
            continue
        run = _piece_run(fence, chunks, pos)
        assert run is not None, f"fence split or lost: {fence.source[:80]!r}"
        start, end = run
        prefix = expected_prefix(chunks[start].heading_path, max_tokens)
        assert len(prefix) + len(fence.source) > budget, "a fence that fits was split"
        pos = end


def _piece_run(fence: Fence, chunks: list[Chunk], pos: int) -> tuple[int, int] | None:
    marker = _OPENER.match(fence.opening).group(1)
    for start in range(pos, len(chunks)):
        collected: list[str] = []
        i = start
        while i < len(chunks) and len(collected) < len(fence.content):
            lines = body(chunks[i]).split("\n")
            if lines[0] != fence.opening or not _is_closer(lines[-1], marker) \
                    or len(lines) < 3:
                break
            collected.extend(lines[1:-1])
            i += 1
        if i > start and collected == fence.content:
            return start, i
    return None


def check_all(text: str, chunks: list[Chunk], max_tokens: int) -> None:
    check_budget(chunks, max_tokens)
    check_breadcrumbs(chunks, max_tokens)
    check_content_kept(text, chunks)
    check_fences(text, chunks, max_tokens)


# --- unit tests --------------------------------------------------------------------------


def _para(tag: str, n: int) -> str:
    return " ".join(f"{tag} sentence {i} carries a little meaning." for i in range(n))


def test_breadcrumbs_paths_and_anchors() -> None:
    doc = ("# Guide\n\nIntro body.\n\n## Install\n\nInstall body.\n\n"
           "### On Linux\n\nLinux body.\n\n## Use it\n\nUse body.\n")
    chunks = chunk_markdown(doc)
    assert [(c.anchor, c.heading_path) for c in chunks] == [
        ("guide", ("Guide",)),
        ("install", ("Guide", "Install")),
        ("on-linux", ("Guide", "Install", "On Linux")),
        ("use-it", ("Guide", "Use it")),
    ]
    assert chunks[2].text == "Guide › Install › On Linux\n\nLinux body."
    assert all(c.token_count == estimate_tokens(c.text) for c in chunks)


def test_without_slugs_only_written_ids_anchor_and_the_rest_cite_their_section() -> None:
    doc = ("# Guide\n\nIntro body.\n\n## Install {#setup}\n\nInstall body.\n\n"
           "### On Linux\n\nLinux body.\n\n#### Debian {#deb}\n\nDebian body.\n\n"
           "## Use it\n\nUse body.\n")
    chunks = chunk_markdown(doc, slug_headings=False)
    assert [(c.anchor, c.heading_path[-1]) for c in chunks] == [
        (None, "Guide"), ("setup", "Install"), ("setup", "On Linux"), ("deb", "Debian"),
        (None, "Use it")]


def test_text_before_first_heading_has_no_breadcrumb() -> None:
    chunks = chunk_markdown("Preamble line.\n\n# Title\n\nBody.\n")
    assert chunks[0].text == "Preamble line."
    assert chunks[0].anchor is None
    assert chunks[0].heading_path == ()
    assert chunks[1].heading_path == ("Title",)


def test_a_heading_without_text_names_nothing_in_the_breadcrumb() -> None:
    # an empty ``#`` over a logo, as a project's index page may open
    chunks = chunk_markdown("#\n\nLogo.\n\n## Use it\n\nText here.\n")
    assert [c.heading_path for c in chunks] == [(), ("Use it",)]
    assert chunks[1].text == "Use it\n\nText here."


def test_heading_markup_stripped_from_titles() -> None:
    doc = "## The `#[derive]` *attribute* [link](https://example.com) ##\n\nBody.\n"
    [chunk] = chunk_markdown(doc)
    assert chunk.heading_path == ("The #[derive] attribute link",)
    assert chunk.anchor == "the-derive-attribute-link"


def test_explicit_id_is_the_anchor_and_leaves_the_title() -> None:
    doc = ("## functools.partial {#functools.partial}\n\nBody one.\n\n"
           "## Module os.path {#module-os.path:join_x}\n\nBody two.\n")
    chunks = chunk_markdown(doc)
    assert [c.anchor for c in chunks] == ["functools.partial", "module-os.path:join_x"]
    assert [c.heading_path for c in chunks] == [("functools.partial",), ("Module os.path",)]
    assert chunks[0].text.startswith("functools.partial\n\n")
    assert "{#" not in chunks[0].text + chunks[1].text


def test_explicit_id_on_setext_heading() -> None:
    [chunk] = chunk_markdown("Title here {#real-id}\n==========\n\nBody.\n")
    assert (chunk.anchor, chunk.heading_path) == ("real-id", ("Title here",))


def test_brace_syntax_that_is_not_an_id() -> None:
    doc = "## Uses {{#include x}}\n\nBody.\n\n## Escaped \\{#nope}\n\nBody.\n"
    chunks = chunk_markdown(doc)
    assert chunks[0].anchor == slugify("Uses {{#include x}}")
    assert chunks[0].heading_path == ("Uses {{#include x}}",)
    assert chunks[1].heading_path == ("Escaped {#nope}",)
    assert chunks[1].anchor == "escaped-nope"


def test_explicit_ids_and_slug_dedupe() -> None:
    doc = ("## Setup {#setup}\n\na\n\n## Setup\n\nb\n\n"  # explicit id reserved: suffix
           "## Usage {#custom}\n\nc\n\n## Usage\n\nd\n\n"  # its text is not counted
           "## Usage\n\ne\n")
    anchors = [c.anchor for c in chunk_markdown(doc)]
    assert anchors == ["setup", "setup-1", "custom", "usage", "usage-1"]


def test_duplicate_headings_are_numbered() -> None:
    doc = "# Notes\n\na\n\n# Notes\n\nb\n\n# Notes-1\n\nc\n"
    assert [c.anchor for c in chunk_markdown(doc)] == ["notes", "notes-1", "notes-1-1"]


def test_setext_headings() -> None:
    doc = "Top Title\n=========\n\nTop body.\n\nSub Part\n--------\n\nSub body.\n"
    chunks = chunk_markdown(doc)
    assert [(c.anchor, c.heading_path) for c in chunks] == [
        ("top-title", ("Top Title",)), ("sub-part", ("Top Title", "Sub Part"))]
    assert chunks[1].text == "Top Title › Sub Part\n\nSub body."


def test_heading_without_body_emits_no_chunk() -> None:
    doc = "# A\n## B\n### C\nOnly body.\n## D\n"
    [chunk] = chunk_markdown(doc)
    assert chunk.heading_path == ("A", "B", "C")
    assert chunk.text == "A › B › C\n\nOnly body."


@pytest.mark.parametrize("fence", ["```", "~~~", "````", "~~~~~"])
def test_hash_lines_inside_fences_are_not_headings(fence: str) -> None:
    code = f"{fence}bash\n# install it\nmake\n## not a heading either\n{fence}"
    doc = f"# Build\n\nRun this:\n\n{code}\n\nDone.\n"
    [chunk] = chunk_markdown(doc)
    assert chunk.heading_path == ("Build",)
    assert code in chunk.text


def test_fence_containing_shorter_fences() -> None:
    code = "````markdown\n```python\nprint(1)\n```\n~~~\n````"
    [chunk] = chunk_markdown(f"# Doc\n\n{code}\n")
    assert chunk.text == f"Doc\n\n{code}"


def test_fence_is_never_split_when_it_fits() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(25)) + "\n```"
    doc = f"# Code\n\n{_para('Lead', 6)}\n\n{code}\n\n{_para('Tail', 6)}\n"
    max_tokens = (len("Code\n\n") + len(code)) // CHARS_PER_TOKEN + 2
    chunks = chunk_markdown(doc, max_tokens=max_tokens, overlap_tokens=10)
    assert sum(code in c.text for c in chunks) >= 1
    for chunk in chunks:
        assert chunk.text.count("```") in (0, 2)
        assert len(chunk.text) <= max_tokens * CHARS_PER_TOKEN


@pytest.mark.parametrize(("opening", "closing"), [("```python", "```"),
                                                  ("~~~~ rust ignore", "~~~~")])
def test_oversized_fence_is_reopened_with_its_info_string(opening: str, closing: str) -> None:
    lines = [f"value_{i} = compute({i})" for i in range(120)]
    code = "\n".join([opening, *lines, closing])
    doc = f"# API\n\n## Calls\n\nBefore the code.\n\n{code}\n\nAfter the code.\n"
    chunks = chunk_markdown(doc, max_tokens=64, overlap_tokens=16)
    pieces = [c for c in chunks if opening in c.text]
    assert len(pieces) > 2
    seen: list[str] = []
    for piece in pieces:
        assert piece.text.startswith(f"API › Calls\n\n{opening}\n")
        assert piece.text.endswith(f"\n{closing}")
        assert len(piece.text) <= 64 * CHARS_PER_TOKEN
        assert "Before" not in piece.text and "After" not in piece.text
        seen.extend(piece.text.split("\n")[3:-1])
    assert seen == lines
    assert chunks[0].text.endswith("Before the code.")
    assert chunks[-1].text == "API › Calls\n\nAfter the code."


def test_unclosed_oversized_fence_pieces_are_closed() -> None:
    lines = [f"line {i} of an unterminated listing" for i in range(60)]
    doc = "# Log\n\n```text\n" + "\n".join(lines) + "\n"
    chunks = chunk_markdown(doc, max_tokens=50, overlap_tokens=0)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("Log\n\n```text\n") and chunk.text.endswith("\n```")
    assert [ln for c in chunks for ln in c.text.split("\n")[3:-1]] == lines


def test_fence_line_longer_than_budget_gets_a_lone_piece() -> None:
    long_line = "x" * 300
    doc = f"# Data\n\n```\nshort\n{long_line}\nshort again\n```\n"
    chunks = chunk_markdown(doc, max_tokens=20, overlap_tokens=0)
    over = [c for c in chunks if len(c.text) > 80]
    assert [c.text for c in over] == [f"Data\n\n```\n{long_line}\n```"]
    check_all(doc, chunks, 20)


def test_a_label_line_stays_with_the_block_it_labels() -> None:
    # a tab's name or an admonition's title at a chunk's end would label nothing there
    md = ("# Install\n\n" + "Intro words here. " * 24 + "\n\n**Warning**\n\n"
          + "Careful text follows here. " * 8 + "\n")
    chunks = chunk_markdown(md, max_tokens=120, overlap_tokens=0)
    assert not any(c.text.endswith("**Warning**") for c in chunks)
    assert any("**Warning**\n\nCareful text" in c.text for c in chunks)


def test_overlap_stays_inside_a_section() -> None:
    doc = f"# One\n\n{_para('Alpha', 30)}\n\n# Two\n\n{_para('Bravo', 30)}\n"
    chunks = chunk_markdown(doc, max_tokens=60, overlap_tokens=20)
    one = [c for c in chunks if c.heading_path == ("One",)]
    two = [c for c in chunks if c.heading_path == ("Two",)]
    assert len(one) > 1 and len(two) > 1
    assert not any("Alpha" in c.text for c in two)
    assert not any("Bravo" in c.text for c in one)
    # Within a section consecutive chunks do share text.
    for prev, cur in zip(two, two[1:], strict=False):
        first_sentence = cur.text.split("\n\n", 1)[1].split(".")[0]
        assert first_sentence in prev.text


def test_no_overlap_after_an_oversized_fence() -> None:
    code = "```\n" + "\n".join(f"row {i}" for i in range(80)) + "\n```"
    doc = f"# S\n\n{code}\n\n{_para('After', 3)}\n"
    chunks = chunk_markdown(doc, max_tokens=40, overlap_tokens=20)
    assert chunks[-1].text.startswith("S\n\nAfter sentence 0")


@pytest.mark.parametrize("doc", [
    "Just one paragraph.",
    f"{_para('Plain', 40)}\n\n{_para('More', 25)}",
    "- item one\n- item two\n\n1. first\n2. second\n",
    "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n> quoted text\n",
    "    indented code is not a fence\n\ntext after",
    "<div>\nhtml block\n</div>\n\n" + _para("Html", 20),
])
@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), [(512, 64), (30, 8), (12, 0)])
def test_no_headings_no_fences_equals_chunk_text(doc: str, max_tokens: int,
                                                 overlap_tokens: int) -> None:
    assert chunk_markdown(doc, max_tokens=max_tokens, overlap_tokens=overlap_tokens) == \
        chunk_text(doc, max_tokens=max_tokens, overlap_tokens=overlap_tokens)


def test_blank_document() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown("\n  \n") == []
    [only] = chunk_markdown("# Only a heading\n")  # a section's index page: its heading
    assert (only.text, only.anchor) == ("Only a heading", "only-a-heading")


def test_fences_without_headings_use_the_block_chunker() -> None:
    doc = "Intro.\n\n```sh\n# comment\n```\n"
    [chunk] = chunk_markdown(doc)
    assert (chunk.anchor, chunk.heading_path) == (None, ())
    assert chunk.text == doc.strip()


def test_table_kept_whole_when_it_fits() -> None:
    table = "| name | value |\n| --- | --- |\n" + "\n".join(
        f"| key{i} | {i} |" for i in range(8))
    doc = f"# T\n\n{_para('Lead', 8)}\n\n{table}\n"
    max_tokens = (len(table) + 10) // CHARS_PER_TOKEN + 1
    chunks = chunk_markdown(doc, max_tokens=max_tokens, overlap_tokens=0)
    assert any(table in c.text for c in chunks)


def test_huge_table_splits_at_row_boundaries() -> None:
    rows = [f"| key{i} | value number {i} |" for i in range(100)]
    table = "| name | value |\n| --- | --- |\n" + "\n".join(rows)
    chunks = chunk_markdown(f"# T\n\n{table}\n", max_tokens=60, overlap_tokens=0)
    assert len(chunks) > 2
    for chunk in chunks:
        for line in chunk.text.split("\n\n", 1)[1].split("\n"):
            assert line.startswith("|") and line.endswith("|")
    check_all(f"# T\n\n{table}\n", chunks, 60)


def test_fence_nested_in_a_large_list_stays_together() -> None:
    nested = "  ```sh\n  cargo build\n  cargo test\n  ```"
    items = [f"- step {i} does a thing worth describing" for i in range(30)]
    items[14] += "\n\n" + nested  # a fence inside the fifteenth item
    doc = "# Steps\n\n" + "\n".join(items) + "\n"
    chunks = chunk_markdown(doc, max_tokens=40, overlap_tokens=10)
    assert len(chunks) > 3  # the list is far larger than one chunk
    assert any(nested in c.text for c in chunks)
    assert all(c.text.count("```") in (0, 2) for c in chunks)


def test_reference_definitions_show_nothing_as_on_the_page() -> None:
    doc = ("# Links\n\nSee [the docs][docs].\n\n[docs]: https://example.com/docs\n"
           '  [api]: /api "The API"\n\n## Only links\n\n[x]: /x\n\n## Odd\n\n[y]:\n  /y\n')
    chunks = chunk_markdown(doc)
    assert [c.text for c in chunks] == [
        "Links\n\nSee [the docs][docs].",
        "Links › Odd\n\n[y]:\n  /y"]  # a definition over two lines is kept: nothing lost


def test_windows_line_endings() -> None:
    doc = "# A\r\n\r\nBody a.\r\n\r\n## B\r\n\r\nBody b.\r\n"
    chunks = chunk_markdown(doc)
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("A",), "A\n\nBody a."), (("A", "B"), "A › B\n\nBody b.")]


def test_long_breadcrumb_is_cut_to_leave_room_for_the_body() -> None:
    doc = "# " + "Very long title " * 10 + "\n\n## Another long heading title\n\n" + \
        _para("Body", 4) + "\n"
    chunks = chunk_markdown(doc, max_tokens=16, overlap_tokens=0)
    for chunk in chunks:
        assert len(chunk.text) <= 64
        assert chunk.text.split("\n\n")[0].endswith("…")
    check_all(doc, chunks, 16)


_ID_DEFINITION = re.compile(r"(?<![\\{])\{[ \t]*#([^\s}]+)[ \t]*\}[ \t]*\Z")


@settings(max_examples=500)
@given(st.text(alphabet=list("{}# \t\\ab.:_-\n"), max_size=30))
def test_explicit_id_scan_follows_its_definition(content: str) -> None:
    """The attribute is defined by the regex above: a trailing `{#id}`, not escaped and not
    inside `{{...}}`, the id being non-space characters other than `}`."""
    m = _ID_DEFINITION.search(content)
    expected = (content[: m.start()].rstrip(), m.group(1)) if m else (content, None)
    assert split_explicit_id(content) == expected


# --- property tests ----------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_words = st.text(alphabet=_LETTERS, min_size=1, max_size=9)


@dataclass
class _Doc:
    text: str
    # (heading path, anchor) of every section that has a body, in order
    sections: list[tuple[tuple[str, ...], str | None]]


@st.composite
def _documents(draw: st.DrawFn) -> _Doc:
    blocks: list[str] = []
    stack: list[tuple[int, str]] = []
    slugger = Slugger()
    current: tuple[tuple[str, ...], str | None] = ((), None)
    with_body: list[tuple[tuple[str, ...], str | None]] = []
    section = 0

    def tagged(n_min: int, n_max: int) -> str:
        # Body words carry their section number, so a chunk can be traced to its section.
        words = draw(st.lists(_words, min_size=n_min, max_size=n_max))
        return " ".join(f"{w}q{section}" for w in words)

    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["atx", "setext", "para", "para", "fence", "list",
                                     "table"]))
        if kind in ("atx", "setext"):
            section += 1
            level = draw(st.integers(1, 6 if kind == "atx" else 2))
            words = draw(st.lists(_words, min_size=1, max_size=5))
            code = draw(st.booleans())
            raw = " ".join([*words[:-1], f"`{words[-1]}`" if code else words[-1]])
            title = " ".join(words)
            explicit = f"id:{section}.{words[0]}" if draw(st.booleans()) else None
            line = raw + (f" {{#{explicit}}}" if explicit else "")
            if kind == "atx":
                blocks.append("#" * level + " " + line)
            else:
                blocks.append(line + "\n" + ("=" if level == 1 else "-") * draw(
                    st.integers(1, 8)))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            if explicit:
                slugger.reserve(explicit)
                anchor = explicit
            else:
                anchor = slugger.slug(raw)
            current = (tuple(t for _, t in stack), anchor)
            continue
        if kind == "para":
            sentences = [tagged(1, 12) + "." for _ in range(draw(st.integers(1, 8)))]
            joiner = draw(st.sampled_from([" ", "\n"]))
            blocks.append(joiner.join(s[0].upper() + s[1:] for s in sentences))
        elif kind == "fence":
            char = draw(st.sampled_from("`~"))
            marker = char * draw(st.integers(3, 5))
            info = draw(st.sampled_from(["", "python", "rust ignore", "sh"]))
            other = "~~~" if char == "`" else "```"
            lines = draw(st.lists(
                st.one_of(st.text(alphabet=_LETTERS + " #=-*>|.", max_size=40),
                          st.sampled_from(["# not a heading", "=====", "---", other,
                                           char * (len(marker) - 1), ""])),
                max_size=40))
            blocks.append("\n".join([marker + info, *lines, marker]))
        elif kind == "list":
            items = draw(st.integers(1, 8))
            blocks.append("\n".join(f"- {tagged(1, 10)}" for _ in range(items)))
        else:
            rows = [f"| {tagged(1, 3)} | {tagged(1, 3)} |"
                    for _ in range(draw(st.integers(1, 10)))]
            blocks.append("\n".join(["| h | v |", "| --- | --- |", *rows]))
        if not with_body or with_body[-1] != current:
            with_body.append(current)
    return _Doc(text="\n\n".join(blocks) + "\n", sections=with_body)


_budgets = st.integers(min_value=8, max_value=150)
_overlaps = st.integers(min_value=0, max_value=48)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_documents(), _budgets, _overlaps)
def test_properties_on_generated_documents(doc: _Doc, max_tokens: int,
                                           overlap_tokens: int) -> None:
    chunks = chunk_markdown(doc.text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    check_all(doc.text, chunks, max_tokens)
    # Sections appear in order, each with its exact path and anchor.
    runs: list[tuple[tuple[str, ...], str | None]] = []
    for chunk in chunks:
        key = (chunk.heading_path, chunk.anchor)
        if not runs or runs[-1] != key:
            runs.append(key)
    if doc.sections:
        assert runs == doc.sections
    else:  # headings only: each is a chunk of its own
        assert all(chunk.text == expected_prefix(chunk.heading_path, max_tokens).rstrip()
                   for chunk in chunks)
    # No text crosses a heading: every tagged word in a chunk belongs to its section.
    for chunk in chunks:
        tags = {int(t) for t in re.findall(r"[a-z]q(\d+)\b", body(chunk))}
        assert len(tags) <= 1
    # Fences inside any chunk are complete.
    for chunk in chunks:
        for fence in top_level_fences(body(chunk)):
            lines = fence.source.split("\n")
            marker = _OPENER.match(fence.opening).group(1)
            assert len(lines) >= 2 and _is_closer(lines[-1], marker), fence.source


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=list(_LETTERS[:4]) + list(" \n\n#`~=-*>|.{}:1") + ["\t", "é"],
               max_size=600), _budgets, _overlaps)
def test_properties_on_arbitrary_text(text: str, max_tokens: int,
                                      overlap_tokens: int) -> None:
    chunks = chunk_markdown(text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    check_all(text, chunks, max_tokens)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=list("abcxyz .,!?*_()[]\n\t1"), max_size=1500), _budgets, _overlaps)
def test_fallback_equals_chunk_text(text: str, max_tokens: int, overlap_tokens: int) -> None:
    # No `#`, backtick, tilde, `=` or `-`: no heading or fence can exist in this text.
    assert chunk_markdown(text, max_tokens=max_tokens, overlap_tokens=overlap_tokens) == \
        chunk_text(text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)


# --- real corpus -------------------------------------------------------------------------


@pytest.mark.skipif(not RUST_BOOK.is_dir(), reason="rust-book corpus not available")
@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), [(512, 64), (96, 24)])
def test_rust_book(max_tokens: int, overlap_tokens: int) -> None:
    files = sorted(RUST_BOOK.glob("*.md"))
    assert files
    total = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        chunks = chunk_markdown(text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)
        check_all(text, chunks, max_tokens)
        total += len(chunks)
    assert total > len(files)


def test_a_huge_table_is_one_block_in_bounded_memory() -> None:
    """The block parser keeps a table's span, never a token per cell: a 4 MB table of a
    million cells made three million tokens (1.4 GB) before."""
    from kbctl.chunk.headings import block_tokens

    cols = 1000
    table = ("| " + " | ".join(f"c{i}" for i in range(cols)) + " |\n"
             + "|" + "---|" * cols + "\n" + ("| x " * cols + "|\n") * 100)
    text = f"# Big\n\nbefore\n\n{table}\nafter\n"
    with AllocationPeak() as peak:
        tokens = block_tokens(text)
    assert [(t.type, t.map) for t in tokens if t.type.startswith("table")] == [
        ("table_open", [4, 106]), ("table_close", None)]
    assert peak.bytes < 8 << 20  # 100,000 cells; their tokens alone took ~100 MB
    chunks = chunk_markdown(text)
    assert chunks[-1].text.endswith("after")


def test_tables_are_where_gfm_puts_them() -> None:
    """The block parser's table rule is GFM's, keeping only each table's span: on thousands
    of pages made of lines that open, continue, end or interrupt tables, every other token
    is GFM's, in place."""
    import random

    from markdown_it import MarkdownIt

    from kbctl.chunk.headings import block_tokens

    gfm = MarkdownIt("commonmark").enable("table").disable("inline")
    lines = ("a | b", "| a | b |", "|---|---|", "--|--", ":-:|-", "- | x", "-|", "| x",
             "|", ":", "text", "", "# h", "    | code |", "> | q |", "- item", "---",
             "| a |\t", "  |--|")
    rng = random.Random(11)
    pages = ["\n".join(rng.choice(lines) for _ in range(rng.randint(1, 10)))
             for _ in range(3000)]
    tables = 0
    for page in pages:
        ours = [(t.type, t.map, t.level) for t in block_tokens(page, {})]
        theirs, depth = [], 0
        for t in gfm.parse(page):  # a table's own tokens: its rows, cells and their text
            depth -= t.type == "table_close"
            if depth == 0:
                theirs.append((t.type, t.map, t.level))
            depth += t.type == "table_open"
        assert ours == theirs, page
        tables += any(kind == "table_open" for kind, _, _ in ours)
    assert 300 < tables < len(pages) - 300  # pages with and without tables were tried


def test_past_the_line_budget_markdown_is_plain_text_in_bounded_memory() -> None:
    from kbctl.chunk.headings import MAX_BLOCK_LINES, block_tokens

    text = "# Many blocks\n\n" + "- a\n" * MAX_BLOCK_LINES  # 5 tokens a line when parsed
    with AllocationPeak() as peak:
        chunks = chunk_markdown(text)
    assert block_tokens(text) == []
    assert [c.text for c in chunks] == [c.text for c in chunk_text(text)]
    assert peak.bytes < 16 << 20  # parsed, its 300,000 tokens took ~150 MB


def test_a_reference_link_in_a_heading_is_a_link_where_its_label_is_defined() -> None:
    """``## `pyo3-tracing-subscriber` ([documentation][docs])``: the label is no text of
    the heading, so no part of its id (mdBook, GitHub and the rest render the link); an
    undefined label leaves the brackets as text, as they do."""
    md = ("# Tracing\n\n## `tracing` ([documentation][docs])\n\ntext\n\n"
          "## Undefined ([x][nope])\n\nmore\n\n[docs]: https://example.com/docs\n")
    chunks = chunk_markdown(md)
    assert [(c.anchor, c.heading_path[-1]) for c in chunks] == [
        ("tracing-documentation", "tracing (documentation)"),
        ("undefined-xnope", "Undefined ([x][nope])")]


def test_a_page_of_headings_only_is_its_headings() -> None:
    """A section's index page (``# Zanzibar configuration`` and nothing else) was stored
    with no chunk: listed as added, never found."""
    only = chunk_markdown("# Guide\n\n## Install\n\n## Upgrade\n")
    assert [(c.text, c.anchor) for c in only] == [
        ("Guide", "guide"), ("Guide › Install", "install"), ("Guide › Upgrade", "upgrade")]
    assert [c.text for c in chunk_markdown("# A\n\ntext\n\n## B\n")] == ["A\n\ntext"]
