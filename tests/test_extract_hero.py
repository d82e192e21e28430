"""A landing page's hero and features, from its front matter, read as the page's text."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.chunk import chunk_markdown
from kbctl.extract.hero import starlight_hero, vitepress_home
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec
from tests.sitebuild import write_tree

HOME = {"layout": "home",
        "hero": {"name": "Gizmo", "text": "Stores for apps", "tagline": "# Typed, and small",
                 "actions": [{"text": "Get Started", "link": "/intro"}]},
        "features": [{"title": "Fast", "details": "Starts in 1 ms."}, {"title": "Tiny"},
                     "not a card", {"details": 5}]}


def test_a_vitepress_home_page_reads_as_its_hero_and_cards() -> None:
    text = vitepress_home(HOME)
    assert text == ("Gizmo\n\nStores for apps\n\n\\# Typed, and small\n\n"
                    "- Fast: Starts in 1 ms.\n- Tiny\n- 5\n\n")
    assert [c.anchor for c in chunk_markdown(text + "## Later\n\nBody.\n")] == [None, "later"]
    assert vitepress_home({**HOME, "layout": "doc"}) == ""  # only the home layout shows it
    assert vitepress_home({"layout": "home", "hero": "x", "features": "y"}) == ""


def test_a_starlight_hero_gives_its_tagline() -> None:
    assert starlight_hero({"hero": {"title": "Gizmo", "tagline": "Stores\nfor apps"}}) == (
        "Stores for apps\n\n")
    assert starlight_hero({"hero": {"tagline": True}}) == starlight_hero({}) == ""


@pytest.mark.timeout(60)
def test_a_hostile_front_matter_gives_a_bounded_text() -> None:
    text = vitepress_home({"layout": "home", "hero": {"name": "x " * 1_000_000},
                           "features": [{"title": "t"}] * 1_000_000})
    assert len(text) < 10_000


def _bodies(root: Path) -> dict[str, str]:
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(root), {
        "base_url": "https://docs.example.com/"}))
    return {loaded.document.url: loaded.document.body
            for loaded in source.load(expansion.leaves, lambda ref: None) if loaded.document}


def test_home_pages_without_a_body_are_read_from_their_front_matter(tmp_path: Path) -> None:
    vitepress = write_tree(tmp_path / "vp", {
        ".vitepress/config.mts": "export default { title: 'Gizmo' }\n",
        "index.md": "---\nlayout: home\nhero:\n  name: Gizmo\n  tagline: Stores for apps\n"
                    "features:\n  - title: Fast\n    details: Starts quickly.\n---\n",
        "guide.md": "---\nhero:\n  tagline: not on a doc page\n---\n# Guide\n\nText.\n",
    })
    bodies = _bodies(vitepress)
    assert "Stores for apps" in bodies["https://docs.example.com/"]
    assert "Fast: Starts quickly." in bodies["https://docs.example.com/"]
    assert "not on a doc page" not in bodies["https://docs.example.com/guide.html"]
    starlight = write_tree(tmp_path / "sl", {
        "astro.config.mjs": "import starlight from '@astrojs/starlight';\n"
                            "export default { integrations: [starlight({ title: 'G' })] };\n",
        "src/content/docs/index.mdx": "---\ntitle: Gizmo\ntemplate: splash\nhero:\n"
                                      "  tagline: Stores for apps\n---\n",
    })
    assert "Stores for apps" in _bodies(starlight / "src" / "content" / "docs")[
        "https://docs.example.com/"]
