"""VitePress' inclusions expanded from the project's own files, within bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.extract.vitepress_includes import expand_includes
from kbctl.store.knowledge import KnowledgeStore
from tests.includes_check import BEFORE, assert_read_again_when_changed
from tests.sitebuild import write_tree

PART = ("---\ntitle: Part\n---\n<!-- #region usage -->\n## Usage\n<!-- #endregion usage -->\n\n"
        "## Base ##\n\nBase content.\n\n```md\n## Not a heading\n```\n\n### Sub\n\nMore.\n\n"
        "## Another\n\nOut.\n")
CODE = ("export function demo() {\n  // #region inner\n  const x = 1\n  // #region nested\n"
        "  use(x)\n  // #endregion nested\n  // #endregion inner\n}\n")


def project(tmp_path: Path) -> Path:
    (tmp_path / "secret.md").write_text("SECRET\n")
    return write_tree(tmp_path / "site", {"docs/parts/part.md": PART,
                                          "docs/snippets/demo.ts": CODE,
                                          "docs/loop.md": "loop <!--@include: ./loop.md--> end\n"})


def expand(root: Path, text: str, reads: list[Path] | None = None) -> str:
    return expand_includes(text, page=root / "docs" / "guide.md", source_root=root / "docs",
                           project=root, reads=reads)


def test_markdown_parts_lines_regions_and_heading_sections(tmp_path: Path) -> None:
    root = project(tmp_path)
    reads: list[Path] = []
    whole = expand(root, "<!--@include: ./parts/part.md-->", reads)
    assert whole.startswith("<!-- #region usage -->") and "title: Part" not in whole
    assert expand(root, "<!-- @include: @/parts/part.md{5,5} -->") == "## Usage"
    assert expand(root, "<!--@include: ./parts/part.md#usage-->") == "## Usage"
    section = expand(root, "<!--@include: ./parts/part.md#base-->")
    assert section == "\nBase content.\n\n```md\n## Not a heading\n```\n\n### Sub\n\nMore.\n"
    assert expand(root, "<!--@include: ./parts/part.md{90,}-->") == ""  # out of range
    assert reads == [root / "docs" / "parts" / "part.md"]


def test_code_files_become_code_blocks(tmp_path: Path) -> None:
    root = project(tmp_path)
    whole = expand(root, "<<< @/snippets/demo.ts{2}")
    assert whole == "```ts\n" + CODE + "```"
    region = expand(root, "<<< ./snippets/demo.ts#inner{1,2 js:line-numbers} [Demo]")
    assert region == "```js\nconst x = 1\nuse(x)\n```"  # dedented, markers gone
    fenced = "```md\n<<< @/snippets/demo.ts\n```"
    assert expand(root, fenced) == fenced  # in code, shown as written


def test_what_cannot_be_read_shows_nothing_and_cycles_stay_as_written(tmp_path: Path
                                                                      ) -> None:
    root = project(tmp_path)
    assert expand(root, "a <!--@include: ../../secret.md--> b") == "a  b"
    assert expand(root, "a <!--@include: ./missing.md--> b") == "a  b"
    assert expand(root, "<<< ../../secret.md") == ""
    assert expand(root, "<!--@include: ./loop.md-->") == (
        "loop <!--@include: ./loop.md--> end\n")
    assert expand(root, "<!-- not @include: x.md --> <!--@include:\n./loop.md-->") == (
        "<!-- not @include: x.md --> <!--@include:\n./loop.md-->")


@pytest.mark.timeout(60)
def test_hostile_pages_cost_linear_time(tmp_path: Path) -> None:
    root = project(tmp_path)
    for text in ("<!--@include: x" * 200_000, "<!--" * 200_000 + "-->",
                 "<!--@include: a#b#b" + "#b" * 200_000 + " x -->",
                 "<<< a.js [" + "[" * 200_000 + "]", "## " + " #" * 200_000):
        expand(root, text)
    # regions opened by the ten thousand, then closed by names never opened
    (root / "docs" / "regions.ts").write_text(
        "// #region a\n" * 20_000 + "// #endregion zz\n" * 20_000)
    assert expand(root, "<<< ./regions.ts#a") == ""


def test_a_page_is_read_again_when_a_part_changes(store: KnowledgeStore, tmp_path: Path
                                                  ) -> None:
    root = write_tree(tmp_path / "site", {
        ".vitepress/config.mts": "export default { srcDir: 'docs', srcExclude: ['parts/**'] }\n",
        "docs/guide.md": "# Guide\n\n<!--@include: @/parts/p.md-->\n",
        "docs/parts/p.md": BEFORE,
    })
    assert_read_again_when_changed(store, root, root / "docs" / "parts" / "p.md")
