"""VuePress sites: pages, and the ids each major version gives headings."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from kbctl.extract.inline_html import html_to_text
from kbctl.generators import resolve_site
from kbctl.generators.vuepress import GENERATOR, vuepress1_slugify
from tests.sitebuild import (
    BASE_URL,
    build_vuepress,
    check,
    citations,
    failures,
    page_bodies,
    sections,
    tool,
    write_tree,
)

PAGE = "# Home\n\nIntro.\n\n" + sections(
    "## Install the tool", "## Ünïcödé & “quotes” — dashes", "## C++ / Rust: 2 languages!",
    "## Options {#custom-options}", "## Options", "## Options", "## 123 numbers first",
    "## createApp(\\[options]): Promise\\<App>", "## Emoji :tada:", "### Foo_1",
) + "\n::: tip A tip\nInside the tip.\n:::\n"


def _site(tmp_path: Path, config: str = "module.exports = { title: 'Demo' }\n") -> Path:
    return write_tree(tmp_path / "site", {
        "docs/.vuepress/config.js": config,
        "docs/README.md": PAGE,
        "docs/guide/README.md": "# Guide\n\n## Part\n\nText.\n",
        "docs/guide/install.md": "# Install\n\n## Setup\n\nText.\n",
        "docs/guide/moved.md": "---\npermalink: /elsewhere/\n---\n\n# Moved\n\n## Here\n\nText.\n",
        "docs/node_modules/x.md": "# No\n\n## No\n\nNot a page.\n",
    })


@pytest.mark.skipif(tool("vuepress") is None, reason="VuePress is not installed")
def test_citations_open_the_ids_vuepress_1_builds(tmp_path: Path) -> None:
    site = _site(tmp_path)
    built = build_vuepress(site)
    pairs, detected, failed = citations(site / "docs")
    assert detected == "vuepress" and not failed
    result = check(built, pairs)
    assert result.checked >= 14
    assert result.resolved_share == 1.0, "\n".join(failures(result))


def test_pages_and_version_1_ids(tmp_path: Path) -> None:
    site = _site(tmp_path)
    assert set(page_bodies(site / "docs")) == {
        BASE_URL, f"{BASE_URL}guide/", f"{BASE_URL}guide/install.html",
        f"{BASE_URL}elsewhere/"}
    anchors = [a for _, a in citations(site / "docs")[0] if a]
    assert anchors[:12] == [
        "home", "install-the-tool", "unicode-quotes-dashes", "c-rust-2-languages",
        "options-custom-options", "options", "options-2", "_123-numbers-first",
        "createapp-options-promise-app", "emoji", "foo-1", "part"]
    assert vuepress1_slugify("a–b—c") == "a-b-c"


def test_version_2_ids(tmp_path: Path) -> None:
    site = _site(tmp_path, "import { defineUserConfig } from 'vuepress'\n"
                           "export default defineUserConfig({ title: 'Demo' })\n")
    assert resolve_site(site / "docs").settings["version"] == 2
    anchors = [a for _, a in citations(site / "docs")[0] if a]
    assert {"options-custom-options", "options", "options-1", "emoji"} <= set(anchors)
    assert GENERATOR.page(resolve_site(site / "docs"), PurePosixPath("a/index.md"), {}) == "a/"


def test_an_escaped_angle_bracket_is_text() -> None:
    assert html_to_text("Promise\\<App> and <b>bold</b>\n") == "Promise\\<App> and bold\n"
    assert html_to_text("\\\\<b>x</b>\n") == "\\\\x\n"
