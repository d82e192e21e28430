from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbctl.chunk import Slugger, slugify
from kbctl.chunk.slug import slug_plain


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Installing Rust", "installing-rust"),
        ("What's new in 2.0?", "whats-new-in-20"),
        ("C++ & C#", "c--c"),
        ("a - b", "a---b"),
        ("a  b", "a--b"),
        ("snake_case_name", "snake_case_name"),
        ("Version 1.2.3", "version-123"),
        ("2019–2020", "20192020"),  # en dash is punctuation, not `-`
        ("x²", "x"),  # superscript two is "other number"
        ("Ⅻ rules", "ⅻ-rules"),  # letter numbers are kept
        ("Ⓐ circled", "ⓐ-circled"),  # alphabetic symbols are kept
        ("a\u00a0b", "ab"),  # no-break space is not the ASCII space
    ],
)
def test_punctuation_and_spaces(heading: str, expected: str) -> None:
    assert slugify(heading) == expected


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Привет Мир", "привет-мир"),
        ("Ελληνικά Κείμενο", "ελληνικά-κείμενο"),
        ("日本語の見出し", "日本語の見出し"),
        ("快速 开始", "快速-开始"),
        ("Ünïcödé Çafé", "ünïcödé-çafé"),
        ("हिन्दी शीर्षक", "हिन्दी-शीर्षक"),  # combining vowel signs survive
        ("e\u0301te", "e\u0301te"),  # decomposed accent survives
    ],
)
def test_letters_of_every_script(heading: str, expected: str) -> None:
    assert slugify(heading) == expected


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("🚀 Launch", "-launch"),
        ("Deploy 🚀🔥 fast", "deploy--fast"),
        ("Done ✅", "done-"),
    ],
)
def test_emoji_dropped_but_their_spaces_kept(heading: str, expected: str) -> None:
    assert slugify(heading) == expected


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("`Vec<T>` methods", "vect-methods"),
        ("The `#[derive]` attribute", "the-derive-attribute"),
        ("[Guide](https://example.com/g) intro", "guide-intro"),
        ("**Bold** and _it_", "bold-and-it"),
        ("<code>foo</code> bar", "foo-bar"),
        ("Tom &amp; Jerry", "tom--jerry"),
        (r"\*literal\*", "literal"),
        ("![logo](logo.png) Title", "-title"),  # images have no text content
    ],
)
def test_inline_markup_is_stripped_first(heading: str, expected: str) -> None:
    assert slugify(heading) == expected


def test_duplicates_get_numbered_suffixes() -> None:
    s = Slugger()
    assert [s.slug("Example") for _ in range(3)] == ["example", "example-1", "example-2"]


def test_suffixed_heading_already_present() -> None:
    s = Slugger()
    assert [s.slug(t) for t in ["x", "x-1", "x"]] == ["x", "x-1", "x-2"]
    s = Slugger()
    assert [s.slug(t) for t in ["x-1", "x", "x"]] == ["x-1", "x", "x-2"]
    s = Slugger()
    assert [s.slug(t) for t in ["x", "x", "x-1"]] == ["x", "x-1", "x-1-1"]


def test_duplicates_compare_slugs_not_text() -> None:
    s = Slugger()
    assert [s.slug(t) for t in ["Hello, World", "hello world", "`hello` world!"]] == [
        "hello-world", "hello-world-1", "hello-world-2"]


def test_reserved_id_is_avoided_without_being_counted() -> None:
    s = Slugger()
    s.reserve("setup")
    assert s.slug("Setup") == "setup-1"
    assert s.slug("Other") == "other"


def test_sluggers_are_independent() -> None:
    a, b = Slugger(), Slugger()
    assert a.slug("Intro") == "intro"
    assert b.slug("Intro") == "intro"


@given(st.text())
def test_slug_has_no_whitespace_and_is_stable(text: str) -> None:
    slug = slug_plain(text)
    assert not any(ch.isspace() for ch in slug)
    assert slug_plain(slug) == slug


@given(st.lists(st.text(alphabet="ab -_1", max_size=6), max_size=30))
def test_slugger_anchors_are_unique(headings: list[str]) -> None:
    s = Slugger()
    anchors = [s.slug(h) for h in headings]
    assert len(set(anchors)) == len(anchors)
