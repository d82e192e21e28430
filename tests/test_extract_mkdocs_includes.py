"""MkDocs' include-markdown plugin expanded from the project's own files, within bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.extract.mkdocs_includes import expand_include_markdown
from kbctl.store.knowledge import KnowledgeStore
from tests.includes_check import BEFORE, assert_read_again_when_changed
from tests.sitebuild import write_tree


def project(tmp_path: Path) -> Path:
    (tmp_path / "secret.md").write_text("SECRET\n")
    return write_tree(tmp_path / "proj", {
        "docs/parts/a.md": "# A\n\nStart\n\tHERE\nkept {% include-markdown 'b.md' %}\nEND\n"
                           "```\n# code\n```\n",
        "docs/parts/b.md": "from b",
        "docs/parts/loop.md": "loop {% include-markdown 'loop.md' %}",
    })


def expand(root: Path, text: str, reads: list[Path] | None = None) -> str:
    return expand_include_markdown(text, page=root / "docs" / "page.md", project=root,
                                   reads=reads)


def test_parts_between_markers_nested_and_moved_down(tmp_path: Path) -> None:
    root = project(tmp_path)
    reads: list[Path] = []
    md = expand(root, '{% include-markdown "parts/a.md" start="Start\\n\\tHERE" '
                      "end='END' %}", reads)
    assert md == "\nkept from b\n"  # b.md beside a.md, not the page
    whole = expand(root, "{%- include-markdown 'parts/a.md' heading-offset=2 -%}")
    assert whole.startswith("### A\n") and "```\n# code\n```" in whole
    assert expand(root, '{% include "parts/b.md" %}') == "from b"
    listed = expand(root, "- item\n\n    {% include-markdown 'parts/a.md' end='# code' %}")
    assert listed.startswith("- item\n\n    # A\n    \n    Start\n")  # in the item
    assert reads == [root / "docs" / "parts" / "a.md", root / "docs" / "parts" / "b.md"]


@pytest.mark.timeout(60)
def test_what_cannot_be_read_shows_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert expand(root, "a {% include '../../secret.md' %} b") == "a  b"
    assert expand(root, "a {% include-markdown 'parts/a.md' start='nowhere' %} b") == "a  b"
    assert expand(root, "{% include-markdown 'parts/loop.md' %}") == "loop "
    expand(root, "{% include-markdown '" * 100_000 + "{% include 'x" * 100_000)
    expand(root, " {% include 'parts/b.md' %}" * 100_000)  # one line, many tags


def test_a_page_is_read_again_when_an_include_changes(store: KnowledgeStore,
                                                      tmp_path: Path) -> None:
    root = write_tree(tmp_path / "site", {
        "mkdocs.yml": "site_name: s\nplugins:\n  - include-markdown\n",
        "docs/index.md": "# Guide\n\n{% include-markdown '../parts/step.md' %}\n",
        "parts/step.md": BEFORE,
    })
    assert_read_again_when_changed(store, root, root / "parts" / "step.md")
