"""The one rule every include dialect reads files under: the project's own, never hidden."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kbctl.extract.includes import MAX_INCLUDED_CHARS, IncludedFiles
from kbctl.extract.mdbook_links import expand_links
from kbctl.extract.snippets import expand_snippets
from tests.sitebuild import write_tree


def test_the_project_or_its_repository_and_never_a_hidden_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Path, "home", lambda: tmp_path / "home")
    repo = write_tree(tmp_path / "home" / "repo", {
        ".git/config": "[http]\n\textraheader = AUTHORIZATION: basic SECRET\n",
        ".env": "TOKEN=SECRET\n",
        "README.md": "The readme.\n",
        "docs/index.md": "Docs.\n",
        "site/docs/notes.md": "Notes.\n",
    })
    (tmp_path / "home" / ".git").mkdir()  # a home folder kept in git (dotfiles)
    (tmp_path / "home" / "private.md").write_text("SECRET\n")
    (repo / "docs" / "link.md").symlink_to(repo / ".env")

    at_top = IncludedFiles(repo, [])
    assert at_top.read(repo / "README.md") == "The readme.\n"
    assert at_top.read(repo / ".git" / "config") is None
    assert at_top.read(repo / "docs" / "link.md") is None  # a link to a hidden file
    assert at_top.read(repo / ".." / "private.md") is None

    docs = IncludedFiles(repo / "site" / "docs", [])  # takes in ../../README.md
    assert docs.read(repo / "site" / "docs" / ".." / ".." / "README.md") == "The readme.\n"
    assert docs.read(repo / ".env") is None
    assert docs.read(tmp_path / "home" / "private.md") is None

    # not in a repository of its own: the home's repository is not the project's
    unpacked = write_tree(tmp_path / "home" / "Downloads" / "proj", {"docs/a.md": "A.\n",
                                                                     "README.md": "R.\n"})
    alone = IncludedFiles(unpacked / "docs", [])
    assert alone.read(unpacked / "docs" / "a.md") == "A.\n"
    assert alone.read(unpacked / "README.md") is None
    assert alone.read(tmp_path / "home" / "private.md") is None


def test_a_big_file_named_again_and_again_is_read_within_the_budget(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "book", {"src/big.rs": "let x = 1;\n" * 80_000})  # 880 KB
    started = time.perf_counter()
    links = expand_links("{{#include big.rs:1}}\n" * 100_000, page=root / "src" / "ch.md",
                         project=root)
    assert links.count("let x = 1;") == MAX_INCLUDED_CHARS // 880_000  # then as written
    snippets = expand_snippets('--8<-- "src/big.rs:1:1"\n' * 100_000, project=root)
    assert snippets.count("let x = 1;") == MAX_INCLUDED_CHARS // 880_000
    assert time.perf_counter() - started < 5  # split for each line: ~4 ms each, 7 minutes


def test_a_file_named_inside_itself_however_written_is_not_taken_in_again(
        tmp_path: Path) -> None:
    from kbctl.extract.jekyll_includes import liquid_with_includes
    from kbctl.extract.mdx_imports import expand_partials
    from kbctl.extract.mkdocs_includes import expand_include_markdown
    from kbctl.extract.vitepress_includes import expand_includes

    root = write_tree(tmp_path / "p", {
        "x/keep": "",
        "a.md": "A <!--@include: ./x/../a.md-->\n",
        "j.md": "J {% include_relative x/../j.md %}\n",
        "m.mdx": "import M from './x/../m.mdx';\n\n<M />\n",
        "k.md": "K {% include-markdown 'x/../k.md' %}\n",
    })
    page = root / "page.md"
    assert expand_includes("<!--@include: ./a.md-->", page=page, source_root=root,
                           project=root).count("A ") == 1
    assert liquid_with_includes("{% include_relative j.md %}", page=page, includes_dir=root,
                                project=root).count("J ") == 1
    assert expand_partials("import M from './m.mdx';\n<M />", page=page,
                           project=root).count("<M />") == 1  # left as written inside
    assert expand_include_markdown("{% include-markdown 'k.md' %}", page=page,
                                   project=root).count("K ") == 1
