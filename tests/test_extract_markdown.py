from __future__ import annotations

import dataclasses

import pytest

from kbctl.errors import ExtractError, SourceError
from kbctl.extract.markdown import MarkdownDocument, parse_markdown_document
from kbctl.frontmatter import split_front_matter


def test_front_matter_removed_and_parsed() -> None:
    doc = parse_markdown_document(
        "---\ntitle: Getting started\ntags: [setup, cli]\nweight: 3\n---\n# Heading\n\nBody.\n")
    assert doc.front_matter == {"title": "Getting started", "tags": ["setup", "cli"],
                                "weight": 3}
    assert doc.title == "Getting started"
    assert doc.body == "# Heading\n\nBody.\n"


def test_title_falls_back_to_first_h1() -> None:
    doc = parse_markdown_document("Intro.\n\n## Not this\n\n# The `kbctl` *guide*\n\n# Later\n")
    assert doc.title == "The kbctl guide"
    assert doc.front_matter == {}


def test_setext_h1_and_explicit_id() -> None:
    assert parse_markdown_document("Para.\n\nBig Title\n=========\n").title == "Big Title"
    assert parse_markdown_document("# functools {#module-functools}\n").title == "functools"


def test_front_matter_without_title_uses_h1() -> None:
    doc = parse_markdown_document("---\ndescription: x\n---\n\n# From Heading\n")
    assert doc.title == "From Heading"
    assert doc.front_matter == {"description": "x"}


def test_no_title_anywhere() -> None:
    doc = parse_markdown_document("Just text.\n\n```md\n# inside a fence\n```\n")
    assert doc.title is None
    assert doc.body == "Just text.\n\n```md\n# inside a fence\n```\n"


def test_blank_title_in_front_matter_is_ignored() -> None:
    assert parse_markdown_document("---\ntitle: '  '\n---\n# Real\n").title == "Real"


def test_non_mapping_front_matter_is_dropped() -> None:
    doc = parse_markdown_document("---\n- just\n- a list\n---\nBody\n")
    assert doc.front_matter == {}
    assert doc.body == "Body\n"


def test_empty_front_matter_and_dots_terminator() -> None:
    assert parse_markdown_document("---\n---\nBody\n").body == "Body\n"
    doc = parse_markdown_document("---\ntitle: T\n...\nBody\n")
    assert (doc.title, doc.body) == ("T", "Body\n")


def test_front_matter_only_at_the_very_top() -> None:
    text = "Intro\n\n---\ntitle: nope\n---\n"
    doc = parse_markdown_document(text)
    assert doc.front_matter == {}
    assert doc.body == text


def test_unterminated_block_is_not_front_matter() -> None:
    text = "---\n\nA thematic break opened this page.\n"
    doc = parse_markdown_document(text)
    assert doc.body == text
    assert doc.front_matter == {}


def test_crlf_and_bom() -> None:
    doc = parse_markdown_document("\ufeff---\r\ntitle: Win\r\n---\r\nBody\r\n")
    assert doc.title == "Win"
    assert doc.body == "Body\r\n"


def test_malformed_front_matter_names_the_problem() -> None:
    with pytest.raises(ExtractError) as info:
        parse_markdown_document("---\ntitle: ok\ntags: [a, b\nnext: 1\n---\nBody\n")
    err = info.value
    assert isinstance(err, SourceError)
    assert "front matter" in err.message
    assert "line 4" in err.message  # the line of the document where YAML gave up
    assert err.exit_code == 1


def test_hostile_front_matter_is_an_input_error() -> None:
    """A nesting past the stack crashed the whole run (RecursionError), and an alias bomb
    was taken as it came; both are now errors of their file, as in suites and configs."""
    deep = "---\nx: " + "[" * 50_000 + "]" * 50_000 + "\n---\n# T\n"
    with pytest.raises(ExtractError, match="nested too deeply"):
        parse_markdown_document(deep)
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    with pytest.raises(ExtractError, match=r"front matter at line 7: .*alias bomb"):
        parse_markdown_document("---\n" + "\n".join(lines) + "\n---\n# T\n")


def test_split_front_matter_reads_no_body() -> None:
    assert split_front_matter("---\npermalink: /x/\n---\n<p>Hi</p>") == (
        {"permalink": "/x/"}, "<p>Hi</p>", True)
    assert split_front_matter("<p>---</p>") == ({}, "<p>---</p>", False)
    assert split_front_matter("---\n---\n") == ({}, "", True)


def test_document_is_frozen() -> None:
    doc = parse_markdown_document("# T\n")
    assert isinstance(doc, MarkdownDocument)
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.title = "changed"  # type: ignore[misc]


# Lines that make or unmake a top-level H1, or hide one: fences, code, quotes, lists, HTML
# blocks, tables (a "# a | b" line is a table's header when a delimiter row follows).
_TRICKY_LINES = (
    "# Title", "#", "# ", "#\tTabbed", "   # Indented", "    # code", "\t# code", "Para text",
    "", "===", "  ===  ", "Setext", "---", "```", "```md", "~~~", "> # quoted", "> quote",
    "- # in a list", "- item", "  # continued", "<div>", "</div>", "<!--", "-->", "# a | b",
    "--|--", "| x | y |", "[ref]: /url", "# `code` *em*", "# <!-- c -->", "1. one", "<pre>",
    "</pre>", "# Other",
)


def _title_of_a_whole_parse(text: str) -> str | None:
    from kbctl.chunk.headings import block_tokens, heading_texts, normalize_source

    tokens = block_tokens(normalize_source(text))
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h1" and tok.level == 0:
            title = heading_texts(tokens[i + 1].content)[0]
            if title:
                return title
    return None


def test_the_title_is_the_one_a_whole_parse_finds() -> None:
    """The title is looked up in a prefix of the page first; on thousands of pages made of
    lines that make, unmake or hide an H1 it is always the one a parse of the whole page
    finds."""
    import random

    rng = random.Random(7)
    pages = ["# a | b\n--|--\n# Real\n", "```\n# comment\n```\n# Real\n", "Title\n===\n",
             "#\n# Second\n", "#\n# a | b\n--|--\n", "# \n# a | b\n--|--\n# c\n",
             "> quote\n# Out\n", "<div>\n# in html\n\n# After\n"]
    pages += ["\n".join(rng.choice(_TRICKY_LINES) for _ in range(rng.randint(1, 12)))
              + rng.choice(("", "\n")) for _ in range(4000)]
    titled = 0
    for page in pages:
        if page.startswith("---"):
            page = "\n" + page  # not front matter
        expected = _title_of_a_whole_parse(page)
        assert parse_markdown_document(page).title == expected, page
        titled += expected is not None
    assert 1000 < titled < len(pages) - 1000  # both kinds of page were tried
