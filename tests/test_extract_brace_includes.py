"""Python-Markdown's brace includes (``mdx_include``, ``markdown_include``) and FastAPI's
``{* … *}`` listings, expanded from the project's own files, within bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.extract.brace_includes import (
    MARKDOWN_INCLUDE,
    BraceIncludes,
    expand_brace_includes,
    expand_include_variants,
)
from kbctl.generators import detect_site
from kbctl.store.knowledge import KnowledgeStore
from tests.includes_check import BEFORE, assert_read_again_when_changed
from tests.sitebuild import write_tree

MDX = BraceIncludes()


def project(tmp_path: Path) -> Path:
    (tmp_path / "secret.md").write_text("SECRET\n")
    return write_tree(tmp_path / "proj", {
        "mkdocs.yml": "site_name: s\n",
        "src/one.py": "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n",
        "parts/outer.md": "outer {!parts/inner.md!} end\n",
        "parts/inner.md": "inner\n",
        "parts/loop.md": "loop {!parts/loop.md!}",
        "parts/two.md": "first\nsecond\n",
        "parts/heading.md": "# Part\n\ntext\n",
    })


def mdx(root: Path, text: str, settings: BraceIncludes = MDX,
        reads: list[Path] | None = None) -> str:
    return expand_brace_includes(text, project=root, settings=settings, reads=reads)


def test_mdx_include_puts_files_in_the_line_and_expands_them_in_turn(tmp_path: Path) -> None:
    root = project(tmp_path)
    reads: list[Path] = []
    assert mdx(root, "a {! parts/outer.md !} b", reads=reads) == "a outer inner\n end\n b"
    assert reads == [root / "parts" / "outer.md", root / "parts" / "inner.md"]
    assert mdx(root, "{!-parts/outer.md!}") == "outer {!parts/inner.md!} end\n"
    off = BraceIncludes(recursive=False)
    assert mdx(root, "{!+parts/outer.md!}", off) == "outer {!parts/inner.md!} end\n"
    assert mdx(root, "{!+parts/outer.md!}", BraceIncludes(recursive=None)) == (
        "outer inner\n end\n")
    assert mdx(root, "```py\n    {!> src/one.py [ln:2-3,5] | utf-8 !}\n```") == (
        "```py\n    b = 2\n    c = 3\n    \n    \n    e = 5\n```")
    assert mdx(root, "{!src/one.py[ln:3-1]!}") == "c = 3\nb = 2\na = 1"
    assert mdx(root, "{!src/one.py[ln:4-]!}+{!src/one.py[ln:-4.2]!}").split("\n") == [
        "d = 4", "e = 5", "+", "e = 5", "d = 4"]  # a file's last line end is a line
    assert mdx(root, "x {!src/one.py[ln:1]!} y {!missing!} z") == "x a = 1\n y  z"
    assert mdx(root, "shown \\{!parts/inner.md!} as written") == (
        "shown {!parts/inner.md!} as written")
    assert mdx(root, "not a tag: {! a[b] !} {!|x!}") == "not a tag: {! a[b] !} {!|x!}"
    nested = BraceIncludes(relative_to_file=True)
    write_tree(root, {"parts/rel.md": "{!inner.md!}"})
    assert mdx(root, "{!parts/rel.md!}", nested) == "inner\n"


def test_markdown_include_strips_picks_lines_and_moves_headings(tmp_path: Path) -> None:
    root = project(tmp_path)
    settings = BraceIncludes(MARKDOWN_INCLUDE, heading_offset=1)
    assert mdx(root, "x {!parts/two.md!} y", settings) == "x first\nsecond y"
    assert mdx(root, "{!src/one.py!lines=1 3-4 9}", settings) == "a = 1\nc = 3\nd = 4\ne = 5"
    assert mdx(root, "{! parts/heading.md !}", settings) == "## Part\n\ntext"
    inherit = BraceIncludes(MARKDOWN_INCLUDE, inherit_heading_depth=True)
    assert mdx(root, "### Above\n\n{!parts/heading.md!}", inherit) == (
        "### Above\n\n#### Part\n\ntext")


def test_listings_show_the_named_variant_and_the_code_left_out(tmp_path: Path) -> None:
    root = project(tmp_path)
    reads: list[Path] = []
    page = "Intro\n{*\tsrc/one.py ln[2:3,5] hl[2]*}\nafter\n{* missing.py *}\n {* src/one.py *}"
    assert expand_include_variants(page, project=root, reads=reads).split("\n") == [
        "Intro", "```python", "# Code above omitted 👆", "", "b = 2", "c = 3", "",
        "# Code here omitted 👈", "", "e = 5", "```", "after", " {* src/one.py *}"]
    whole = expand_include_variants("{* src/one.py hl[1] *}", project=root)
    assert whole == "```python\na = 1\nb = 2\nc = 3\nd = 4\ne = 5\n```"
    assert reads == [root / "src" / "one.py"]


@pytest.mark.timeout(60)
def test_what_cannot_be_read_shows_nothing_and_hostile_lines_stay_linear(
        tmp_path: Path) -> None:
    root = project(tmp_path)
    assert mdx(root, "a {!../secret.md!} b") == "a  b"
    assert mdx(root, "a {!https://example.com/x.md!} b") == "a  b"
    assert mdx(root, "{!parts/loop.md!}") == "loop "
    assert expand_include_variants("{* ../secret.md *}", project=root) == ""
    mdx(root, "{!" * 1_000_000 + "!}")
    mdx(root, "{!parts/inner.md!}" * 50_000)  # one line, many tags (the budget ends them)
    mdx(root, "{!x!lines=" + "1 " * 1_000_000, BraceIncludes(MARKDOWN_INCLUDE))
    expand_include_variants("{* " + "x" * 1_000_000, project=root)
    expand_include_variants("{* src/one.py " + "a" * 1_000_000 + " *}", project=root)


def test_settings_come_from_the_mkdocs_config(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "site", {
        "mkdocs.yml": "site_name: s\nmarkdown_extensions:\n  toc:\n    permalink: true\n"
                      "  mdx_include:\n    base_path: docs\n  markdown_include_variants:\n",
        "docs/index.md": "# Home\n",
    })
    site = detect_site(root / "docs")
    assert site is not None and site.settings["include_variants"] is True
    assert site.settings["brace_includes"] == {
        "extension": "mdx_include", "base_path": "docs", "recursive": True,
        "relative_to_file": False}


def test_a_page_is_read_again_when_an_include_changes(store: KnowledgeStore,
                                                      tmp_path: Path) -> None:
    root = write_tree(tmp_path / "site", {
        "mkdocs.yml": "site_name: s\nmarkdown_extensions:\n  - mdx_include\n",
        "docs/index.md": "# Guide\n\n{!parts/step.md!}\n",
        "parts/step.md": BEFORE,
    })
    assert_read_again_when_changed(store, root, root / "parts" / "step.md")
