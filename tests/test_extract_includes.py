"""The one rule every include dialect reads files under: the project's own, never hidden."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbctl.extract import mdbook_links, snippets
from kbctl.extract.includes import MAX_INCLUDED_CHARS, IncludedFiles, outside_project
from kbctl.extract.mdbook_links import expand_links
from kbctl.extract.snippets import expand_snippets
from tests.sitebuild import loaded_pages, write_tree


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


def test_what_a_page_named_outside_its_project_is_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Path, "home", lambda: tmp_path / "home")
    # a release tarball (or a git archive) of a Sphinx project: docs/ takes in the
    # changelog above it, which is the project's only inside a repository
    project = write_tree(tmp_path / "home" / "flask", {
        "CHANGES.rst": "Version 3.0\n-----------\n\nReleased.\n",
        "docs/conf.py": "project = 'x'\n",
        "docs/changes.rst": "Changes\n=======\n\n.. include:: ../CHANGES.rst\n"
                            ".. include:: ../missing.rst\n",
        "docs/index.rst": "Home\n====\n\nText.\n"})

    def read() -> dict[str, tuple[str, str]]:
        return {Path(loaded.leaf.ref).stem: (loaded.document.body, loaded.note)
                for loaded in loaded_pages(project / "docs", base_url=None) if loaded.document}

    pages = read()
    assert "Released." not in pages["changes"][0]
    assert pages["changes"][1] == (
        f"{project / 'docs' / 'changes.rst'}: left out what it includes from outside the "
        f"project ({project / 'CHANGES.rst'}): a project's files are those of its git "
        f"repository, or of its own folder outside one (a tarball, a git archive); ingest "
        f"from a git checkout to take them in; {project / 'docs' / 'changes.rst'}: left "
        f"out 1 include(s) that could not be resolved: line 5 ../missing.rst (no such "
        f"file)")  # a missing file is named as such, not as one outside
    assert pages["index"][1] == ""
    (project / ".git").mkdir()  # the repository: the changelog is the project's
    pages = read()
    assert "Released." in pages["changes"][0]
    assert pages["changes"][1] == (
        f"{project / 'docs' / 'changes.rst'}: left out 1 include(s) that could not be "
        f"resolved: line 5 ../missing.rst (no such file)")
    with outside_project() as outside:  # at most a hundred named
        files = IncludedFiles(project / "docs", [])
        for i in range(150):
            (tmp_path / f"f{i}.md").write_text("x")
            assert files.read(tmp_path / f"f{i}.md") is None
    assert len(outside) == 100


@pytest.mark.timeout(60)
def test_a_big_file_named_again_and_again_is_read_within_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cut: list[int] = []  # the characters of each file's text cut into lines

    part, find = mdbook_links._part, snippets._Snippets._find

    def counted_part(text: str, selector: str) -> str:
        cut.append(len(text))
        return part(text, selector)

    def counted_find(self: Any, name: str) -> tuple[Path, str] | None:
        found = find(self, name)
        cut.extend([len(found[1])] if found else [])
        return found

    monkeypatch.setattr(mdbook_links, "_part", counted_part)
    monkeypatch.setattr(snippets._Snippets, "_find", counted_find)
    root = write_tree(tmp_path / "book", {"src/big.rs": "let x = 1;\n" * 80_000})  # 880 KB
    links = expand_links("{{#include big.rs:1}}\n" * 100_000, page=root / "src" / "ch.md",
                         project=root)
    assert links.count("let x = 1;") == MAX_INCLUDED_CHARS // 880_000  # then as written
    assert len(cut) == MAX_INCLUDED_CHARS // 880_000
    cut.clear()
    expanded = expand_snippets('--8<-- "src/big.rs:1:1"\n' * 100_000, project=root)
    assert expanded.count("let x = 1;") == MAX_INCLUDED_CHARS // 880_000
    # the file is cut into lines while the page's budget holds it, not for each of the
    # 100,000 names (88 GB of text cut into lines: 7 minutes)
    assert 0 < sum(cut) <= MAX_INCLUDED_CHARS


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
