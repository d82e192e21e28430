"""Sphinx's include and literalinclude, in reStructuredText and MyST, within bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbctl.extract.myst import myst_to_markdown
from kbctl.extract.rst import rst_to_markdown
from kbctl.extract.sphinx_includes import SphinxIncludes
from kbctl.store.knowledge import KnowledgeStore
from tests.includes_check import BEFORE, assert_read_again_when_changed
from tests.sitebuild import write_tree

CODE = "import os\n\n# start\ndef run():\n    return 1\n# end\n"


def project(tmp_path: Path) -> Path:
    (tmp_path / "secret.rst").write_text("SECRET\n")
    return write_tree(tmp_path / "docs", {
        "conf.py": "project = 'x'\n",
        "parts/a.rst": "Part A\n------\n\nText of A.\n\n.. include:: b.rst\n",
        "parts/b.rst": "Text of B (beside A).\n",
        "parts/self.rst": "Self.\n\n.. include:: self.rst\n",
        "parts/a.md": "## Part A\n\nMarkdown A.\n\n```{include} b.md\n```\n",
        "parts/b.md": "Markdown B.\n",
        "code/demo.py": CODE,
    })


def rst(root: Path, text: str, reads: list[Path] | None = None) -> str:
    includes = SphinxIncludes(source_dir=root, project=root, reads=[] if reads is None
                              else reads)
    return rst_to_markdown(text, source=str(root / "page.rst"), includes=includes).markdown


def test_rst_includes_nest_from_each_file_and_literalinclude_shows_code(tmp_path: Path
                                                                        ) -> None:
    root = project(tmp_path)
    reads: list[Path] = []
    md = rst(root, "Page\n====\n\n.. include:: parts/a.rst\n\n.. literalinclude:: "
                   "/code/demo.py\n   :start-after: # start\n   :end-before: # end\n", reads)
    assert "## Part A {#part-a}" in md and "Text of A." in md
    assert "Text of B (beside A)." in md  # found beside a.rst, not the page
    assert "```python\ndef run():\n    return 1\n```" in md
    assert reads == [root / "parts" / "a.rst", root / "parts" / "b.rst",
                     root / "code" / "demo.py"]


def test_the_parts_an_include_takes(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert "Text of A." not in rst(root, ".. include:: parts/a.rst\n   :end-line: 2\n")
    literal = rst(root, ".. include:: code/demo.py\n   :code: python\n   :start-line: 3\n")
    assert "```python\ndef run():" in literal and "import os" not in literal
    lines = rst(root, ".. literalinclude:: code/demo.py\n   :lines: 1, 4-\n")
    assert "import os\ndef run():\n    return 1\n# end" in lines
    assert not rst(root, ".. literalinclude:: code/demo.py\n   :start-at: nowhere\n").strip()


@pytest.mark.timeout(60)
def test_what_cannot_be_read_shows_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    for target in ("../secret.rst", "missing.rst", "<isonum.txt>"):
        assert "SECRET" not in rst(root, f"Before.\n\n.. include:: {target}\n\nAfter.\n")
    assert rst(root, ".. include:: parts/self.rst\n").count("Self.") == 1  # not inside itself
    # without a project's includes (a page from the web), nothing is read
    plain = rst_to_markdown(".. include:: parts/b.rst\n", source=str(root / "page.rst"))
    assert plain.markdown.strip() == ""


def test_myst_includes(tmp_path: Path) -> None:
    root = project(tmp_path)
    includes = SphinxIncludes(source_dir=root, project=root, reads=[])
    md = myst_to_markdown("# Page\n\n```{include} parts/a.md\n```\n\n```{literalinclude} "
                          "code/demo.py\n---\nlines: 4-5\nlanguage: py\n---\n```\n",
                          path=root / "page.md", includes=includes)
    assert "## Part A\n\nMarkdown A.\n\nMarkdown B." in md
    assert "```py\ndef run():\n    return 1\n```" in md
    assert myst_to_markdown("```{include} parts/a.md\n```\n") == ""  # no includes given


def test_a_page_is_read_again_when_an_included_file_changes(store: KnowledgeStore,
                                                            tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", {
        "conf.py": "project = 'x'\nexclude_patterns = ['parts']\n",
        "index.rst": "Guide\n=====\n\n.. include:: parts/step.rst\n",
        "parts/step.rst": BEFORE,
    })
    assert_read_again_when_changed(store, root, root / "parts" / "step.rst")


@pytest.mark.timeout(120)
def test_included_text_adds_at_most_the_line_budget_of_a_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbctl.chunk.headings import MAX_BLOCK_LINES

    handed: list[int] = []  # the lines each include hands docutils to parse
    taken = SphinxIncludes.text

    def counted(self: SphinxIncludes, *args: Any) -> tuple[Path, str] | None:
        found = taken(self, *args)
        handed.append(found[1].count("\n") if found else 0)
        return found

    monkeypatch.setattr(SphinxIncludes, "text", counted)
    root = project(tmp_path)
    (root / "short.rst").write_text("a\n\n" * (MAX_BLOCK_LINES // 6))  # a third of it
    md = rst(root, "Page\n====\n\n" + ".. include:: short.rst\n\n" * 5)
    assert md.split("\n").count("a") == 2 * (MAX_BLOCK_LINES // 6)  # two of the five
    # all five parsed would be half a million lines
    assert len(handed) == 5 and sum(handed) == 4 * (MAX_BLOCK_LINES // 6) <= MAX_BLOCK_LINES
