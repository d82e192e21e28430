"""The text a landing page's front matter puts on the page: VitePress' ``layout: home``
shows its ``hero`` (``name``, ``text``, ``tagline``) and ``features`` (``title``,
``details``), Starlight shows a ``hero``'s ``tagline`` under the title. Such a page often
has no body at all, so without this a site's home page, which says what the project is,
would hold no text. The text comes before the body as paragraphs and a list, no headings:
the theme gives these no ids to cite. Buttons and images are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .markdown_escape import literal_line_starts

# A theme shows a few cards; a front matter listing thousands is no page to copy whole.
MAX_FEATURES = 100
MAX_FIELD_CHARS = 2000


def vitepress_home(front_matter: Mapping[str, Any]) -> str:
    """The hero and features of a ``layout: home`` page, or ""."""
    if front_matter.get("layout") != "home":
        return ""
    hero = front_matter.get("hero")
    lines = [_field(hero, key) for key in ("name", "text", "tagline")] if isinstance(
        hero, Mapping) else []
    features = front_matter.get("features")
    if isinstance(features, Sequence) and not isinstance(features, str):
        for feature in features[:MAX_FEATURES]:
            if isinstance(feature, Mapping):
                title, details = _field(feature, "title"), _field(feature, "details")
                if title or details:
                    lines.append("- " + ": ".join(x for x in (title, details) if x))
    return _paragraphs(lines)


def starlight_hero(front_matter: Mapping[str, Any]) -> str:
    """A ``hero``'s tagline (its title is the page's), or ""."""
    hero = front_matter.get("hero")
    return _paragraphs([_field(hero, "tagline")]) if isinstance(hero, Mapping) else ""


def _field(values: Mapping[str, Any], key: str) -> str:
    value = values.get(key)
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return ""
    return " ".join(str(value).split())[:MAX_FIELD_CHARS]


def _paragraphs(lines: list[str]) -> str:
    """Text lines as paragraphs (list items as one list), each line read as text."""
    out: list[str] = []
    for line in filter(None, lines):
        item = line.startswith("- ")
        text = ("- " + literal_line_starts(line[2:])) if item else literal_line_starts(line)
        out.append(text + ("\n" if item else "\n\n"))
    return "".join(out).rstrip("\n") + "\n\n" if out else ""
