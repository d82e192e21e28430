"""MkDocs' snippets expanded from the project's own files, as pymdownx.snippets expands
them, within bounds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbctl.extract.includes import MAX_INCLUDED_CHARS
from kbctl.extract.snippets import expand_snippets
from kbctl.pipeline.ingest import ingest
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore
from tests.sitebuild import write_tree

APP = ("import os\n# --8<-- [start:main]\ndef main():\n    pass\n# --8<-- [end:main]\n"
       "print(1)\n")

PAGE = """\
# Home

--8<-- "README.md"

```python
--8<-- "src/app.py:main"
```

```python
--8<-- "src/app.py:1:1,6"
```

;--8<-- "README.md"
text --8<-- [start:x] gone
;--8<-- [start:x] kept

- item
    --8<-- "notes/loop.md"

--8<--
README.md

;skipped.md
missing.md
--8<--
--8<-- "../outside.md"
--8<-- "src/app.py:-2"
"""


def project(tmp_path: Path) -> Path:
    (tmp_path / "outside.md").write_text("SECRET\n")
    return write_tree(tmp_path / "proj", {
        "README.md": "# Demo\n\nThe readme.\n",
        "src/app.py": APP,
        "notes/loop.md": 'loop:\n--8<-- "notes/loop.md"\nend\n',
        "includes/abbr.md": "*[HTML]: Hyper Text Markup Language\n",
    })


def test_files_sections_line_ranges_blocks_and_escapes(tmp_path: Path) -> None:
    root = project(tmp_path)
    reads: list[Path] = []
    md = expand_snippets(PAGE, project=root, reads=reads)
    assert md.count("# Demo\n\nThe readme.") == 2  # inline, and in the block
    assert "```python\ndef main():\n    pass\n```" in md
    assert "```python\nimport os\nprint(1)\n\n```" in md
    assert '\n--8<-- "README.md"\n' in md  # escaped: shown as written, less one ";"
    assert "gone" not in md and "\n--8<-- [start:x] kept\n" in md
    assert "- item\n    loop:\n    end\n" in md  # indented as its line; no recursion
    assert "SECRET" not in md and "skipped" not in md and "missing" not in md
    assert md.endswith("\nprint(1)\n\n")  # "-2": the last two lines (one is blank)
    assert reads == [root / "README.md", root / "src" / "app.py", root / "notes" / "loop.md"]


@pytest.mark.parametrize("auto_append", [(), ("includes/abbr.md",)])
def test_the_same_text_as_pymdownx_snippets(tmp_path: Path, auto_append: tuple[str, ...]
                                            ) -> None:
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("pymdownx.snippets")
    root = project(tmp_path)
    md = markdown.Markdown(extensions=["pymdownx.snippets"], extension_configs={
        "pymdownx.snippets": {"base_path": [str(root)], "auto_append": list(auto_append)}})
    theirs = "\n".join(md.preprocessors["snippet"].run(PAGE.split("\n")))
    assert expand_snippets(PAGE, project=root, auto_append=auto_append) == theirs


def test_base_paths_are_searched_in_turn_and_kept_to(tmp_path: Path) -> None:
    root = project(tmp_path)
    page = '--8<-- "app.py"\n--8<-- "../README.md"\n'
    shown = "import os\ndef main():\n    pass\nprint(1)\n\n"  # section markers never show
    assert expand_snippets(page, project=root, base_path=("docs", "src")) == shown
    opened = expand_snippets(page, project=root, base_path=("src",), restrict_base_path=False)
    assert "The readme." in opened
    assert expand_snippets("no notation", project=root) == "no notation"


def test_a_base_path_entry_that_is_a_file_is_that_snippet(tmp_path: Path) -> None:
    """``base_path: [docs/.snippets, LICENSE.md]``: a page of ``--8<-- "LICENSE.md"`` is
    that file (pymdownx resolves a file entry by its name); it came out empty."""
    root = project(tmp_path)
    page = '--8<-- "README.md"\n'
    ours = expand_snippets(page, project=root, base_path=("src", "README.md"))
    assert "The readme." in ours
    assert expand_snippets('--8<-- "other.md"\n', project=root,
                           base_path=("README.md",)) == ""  # another name: not that file
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("pymdownx.snippets")
    md = markdown.Markdown(extensions=["pymdownx.snippets"], extension_configs={
        "pymdownx.snippets": {"base_path": [str(root / "src"), str(root / "README.md")]}})
    assert "\n".join(md.preprocessors["snippet"].run(page.split("\n"))) == ours


@pytest.mark.timeout(60)
def test_hostile_pages_stay_bounded(tmp_path: Path) -> None:
    root = project(tmp_path)
    big = "x" * 600_000 + "\n"
    (root / "big.md").write_text(big + '--8<-- "big.md"\n--8<-- "big2.md"\n')
    (root / "big2.md").write_text(big + '--8<-- "big.md"\n--8<-- "big2.md"\n')
    grown = expand_snippets('--8<-- "big.md"\n' * 20, project=root)
    assert len(grown) <= MAX_INCLUDED_CHARS + len(big) + 100
    dashes = "-" * 200_000 + "8<- [start:x" + "\n"
    assert expand_snippets(dashes * 5, project=root) == dashes * 5  # a backtracking scan: minutes
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe.md")
        assert expand_snippets('--8<-- "pipe.md"\n', project=root) == ""


def test_an_mkdocs_page_reads_its_snippets_and_is_read_again_when_one_changes(
        store: KnowledgeStore, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "site", {
        "mkdocs.yml": "site_name: s\nmarkdown_extensions:\n  - abbr\n  - pymdownx.snippets:\n"
                      "      auto_append:\n        - includes/abbr.md\n",
        "includes/abbr.md": "*[CLI]: Command-line interface\n",
        "README.md": "# Demo\n\nUse the gizmo CLI.\n",
        "docs/index.md": '--8<-- "README.md"\n',
    })
    spec = source_spec("files", str(root), {"base_url": "https://docs.example.com/"})
    assert ingest(store, [spec], namespace="s").added == 1
    [hit] = store.search.rank("s", "gizmo", k=1)
    assert "Use the gizmo CLI." in hit.text and "8<" not in hit.text
    assert "Command-line interface" not in hit.text
    assert ingest(store, [spec], namespace="s").not_modified == 1
    readme = root / "README.md"
    readme.write_text("# Demo\n\nUse the gadget CLI.\n")
    os.utime(readme, ns=(1, 1))
    assert ingest(store, [spec], namespace="s").updated == 1
    [hit] = store.search.rank("s", "gadget", k=1)
    assert "Use the gadget CLI." in hit.text

