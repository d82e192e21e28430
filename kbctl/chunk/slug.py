"""GitHub-compatible heading anchors, and the slug rules of generators whose ids pages
may link to (VitePress', mystmd's), which extraction and the generator profiles share.

A citation ``url#anchor`` only works if the anchor is the one the site renders, so this
follows GitHub's slugger exactly: lowercase; drop every character in the Unicode
categories it drops (punctuation except ``-`` and connector punctuation such as ``_``,
symbols and emoji, controls, format characters, other numbers, separators except the
ASCII space); turn each space into one ``-`` without collapsing. Letters, marks, decimal
and letter numbers of every script survive.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from kbctl.chunk.headings import inline_text

_DROPPED_CATEGORIES = frozenset({
    "No",
    "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
    "Sm", "Sc", "Sk", "So",
    "Cc", "Cf", "Co", "Cn",
    "Zs", "Zl", "Zp",
})
# Alphabetic characters that sit in a dropped category (circled and squared Latin
# letters are "So"); GitHub keeps them.
_ALPHABETIC_SYMBOLS = (
    (0x24B6, 0x24E9),
    (0x1F130, 0x1F149),
    (0x1F150, 0x1F169),
    (0x1F170, 0x1F189),
)


@lru_cache(maxsize=4096)
def _kept(ch: str) -> bool:
    if ch in "- ":
        return True
    if unicodedata.category(ch) not in _DROPPED_CATEGORIES:
        return True
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _ALPHABETIC_SYMBOLS)


def slug_plain(text: str) -> str:
    """Slug of text that is already plain (no markdown markup)."""
    return "".join(ch for ch in text.lower() if _kept(ch)).replace(" ", "-")


def slugify(text: str) -> str:
    """GitHub anchor for a heading written in markdown (inline markup is stripped first)."""
    return slug_plain(inline_text(text)[1])


class Slugger:
    """Per-document anchors: a repeated slug ``x`` becomes ``x-1``, ``x-2``, … as on GitHub.

    The loop mirrors GitHub: a suffixed candidate that is itself taken (say a heading
    literally named ``x-1``) bumps the counter again, so anchors stay unique.
    """

    def __init__(self) -> None:
        self._occurrences: dict[str, int] = {}

    def slug(self, text: str) -> str:
        """Unique anchor for a heading written in markdown."""
        return self.dedupe(slugify(text))

    def dedupe(self, base: str) -> str:
        """Unique anchor for an already computed slug."""
        candidate = base
        while candidate in self._occurrences:
            self._occurrences[base] += 1
            candidate = f"{base}-{self._occurrences[base]}"
        self._occurrences[candidate] = 0
        return candidate

    def reserve(self, anchor: str) -> None:
        """Mark an explicit id as taken without counting it as an occurrence of any text.

        A later heading whose slug equals it gets a suffix, so the document never carries
        two identical anchors; the explicit id itself is never altered.
        """
        self._occurrences.setdefault(anchor, 0)


# @mdit-vue's slugify (VitePress, VuePress 2)
_SPECIAL = re.compile(r"[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:\"'“”‘’<>,.?/]+")
_CONTROL = re.compile(r"[\u0000-\u001f]")
_COMBINING = re.compile(r"[\u0300-\u036f]")


def mdit_vue_slugify(text: str) -> str:
    """``@mdit-vue/shared``'s slugify, the heading ids of VitePress and VuePress 2."""
    text = unicodedata.normalize("NFKD", text)
    text = _COMBINING.sub("", text)
    text = _CONTROL.sub("", text)
    text = _SPECIAL.sub("-", text)
    text = re.sub(r"-{2,}", "-", text)
    text = re.sub(r"^-+|-+$", "", text)
    text = re.sub(r"^(\d)", r"_\1", text)
    return text.lower()


# mystmd's html ids
_QUOTES = re.compile(r"['‘’\"“”]+")


def myst_html_id(text: str) -> str:
    """mystmd's html id of a heading or label whose text is ``text`` ('' for none)."""
    identifier = _QUOTES.sub("", " ".join(text.split())).strip().lower()
    html_id = re.sub(r"[^a-z0-9-]", "-", identifier)
    if html_id[:1].isdigit() or html_id[:1] == "-":
        html_id = "id-" + html_id
    return re.sub(r"-{2,}", "-", html_id).strip("-")
