"""Jupyter notebooks read as the page a docs generator makes of them, and cited with the
ids MyST-NB, nbsphinx or Jupyter Book give their sections."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbctl.errors import ExtractError
from kbctl.extract.notebook import MAX_OUTPUT_CHARS, notebook_to_markdown
from kbctl.generators import resolve_site
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec
from tests.sitebuild import citations, write_tree


def notebook(*cells: dict[str, Any], language: str = "python") -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": list(cells),
                       "metadata": {"kernelspec": {"language": language}}})


def md(text: str, **metadata: Any) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": metadata, "source": text.splitlines(True)}


def code(text: str, *outputs: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"cell_type": "code", "metadata": metadata, "source": text, "outputs": list(outputs)}


def result(**data: Any) -> dict[str, Any]:
    return {"output_type": "execute_result", "data": data, "metadata": {}}


def test_cells_read_as_markdown_code_and_the_text_they_printed() -> None:
    text = notebook_to_markdown(notebook(
        md("# Title\n\nIntro."),
        code("print(1)", {"output_type": "stream", "name": "stdout",
                          "text": ["\x1b[31m1\x1b[0m\n"]}),
        code("df", result(**{"text/html": "<table/>", "text/plain": "  a\n0 1"})),
        code("x", result(**{"text/plain": ["42"]}), {"output_type": "error", "ename": "E",
                                                   "traceback": ["boom"]}),
        code("md()", {"output_type": "display_data", "data": {"text/markdown": "**bold**"}}),
        code("gone()", tags=["remove-cell"]), code("inside()", tags=["remove_input"]),
        code("shown()", result(**{"text/plain": "out"}), tags=["remove-output"]),
        code("hidden()", nbsphinx="hidden"),
        {"cell_type": "raw", "source": "raw text"}, "not a cell"))
    assert text.split("\n\n") == [
        "# Title", "Intro.", "```python\nprint(1)\n```", "```\n1\n```", "```python\ndf\n```",
        "```python\nx\n```", "```\n42\n```", "```python\nmd()\n```", "**bold**",
        "```python\nshown()\n```\n"]


def test_the_kernel_language_names_the_code_and_old_notebooks_read_too() -> None:
    assert "```julia\n" in notebook_to_markdown(notebook(code("1 + 1"), language="julia"))
    v3 = {"nbformat": 3, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 2, "source": "Old\nstyle"},
        {"cell_type": "code", "input": ["a = 1"], "outputs": [
            {"output_type": "pyout", "text": ["1"]}]}]}]}
    assert notebook_to_markdown(json.dumps(v3)) == (
        "## Old style\n\n```python\na = 1\n```\n\n```\n1\n```\n")


@pytest.mark.parametrize("text", ["{", "[]", '{"cells": 5}', "[" * 100_000])
def test_what_is_no_notebook_is_refused_with_a_reason(text: str) -> None:
    with pytest.raises(ExtractError, match="not a notebook"):
        notebook_to_markdown(text)


@pytest.mark.timeout(60)
def test_a_long_output_is_cut() -> None:
    text = notebook_to_markdown(notebook(*[code("x", {"output_type": "stream",
                                                      "text": "y" * 1_000_000})] * 3))
    assert len(text) < 4 * MAX_OUTPUT_CHARS


def _project(root: Path, conf: str) -> Path:
    return write_tree(root, {
        "conf.py": f"project = 'nb'\nextensions = [{conf}]\n",
        "index.md": "# Home\n\nWelcome.\n",
        "tutorial.ipynb": notebook(md("# First steps\n\nLoad.\n\n## Plot the results\n\nText."),
                                   code("1"), md("## Plot the results\n\nAgain.\n\n"
                                                 "### What's next?\n\nMore.")),
        ".ipynb_checkpoints/tutorial-checkpoint.ipynb": notebook(md("# Old copy")),
    })


def _anchors(root: Path) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for url, anchor in citations(root, base_url="https://nb.example.com/")[0]:
        out.setdefault(url.removeprefix("https://nb.example.com/"), []).append(anchor)
    return out


def test_sphinx_reads_notebooks_where_an_extension_does(tmp_path: Path) -> None:
    anchors = _anchors(_project(tmp_path / "mystnb", "'myst_nb'"))
    assert anchors["tutorial.html"] == ["first-steps", "plot-the-results", "id1",
                                        "what-s-next"]
    # nbsphinx keeps a title's case and punctuation, with '-' for spaces
    anchors = _anchors(_project(tmp_path / "nbsphinx", "'nbsphinx', 'myst_parser'"))
    assert anchors["tutorial.html"] == ["First-steps", "Plot-the-results", "id1",
                                        "What's-next?"]
    assert set(_anchors(_project(tmp_path / "none", "'myst_parser'"))) == {"index.html"}


def test_a_jupyter_book_is_sphinx_with_its_own_config(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "book", {
        "_config.yml": "title: Book\nparse:\n  myst_enable_extensions: [smartquotes, "
                       "substitution]\n  myst_substitutions:\n    tool: gizmo\n"
                       "exclude_patterns: [drafts/*]\n",
        "_toc.yml": "format: jb-book\nroot: intro\nchapters:\n- file: guide.md\n",
        "intro.md": "# Welcome\n\n## Why it's {{ tool }}\n\nText.\n",
        "guide.ipynb": notebook(md("# Guide\n\nRead.\n\n## Install\n\nRun it.")),
        "drafts/d.md": "# Draft\n\nSoon.\n",
        "loose.md": "# Loose\n\nNot in the table of contents.\n",
    })
    site = resolve_site(root)
    assert site.generator == "jupyter-book"
    anchors = _anchors(root)
    assert anchors["intro.html"] == ["why-its-gizmo"]  # smartquotes, a substitution
    assert anchors["guide.html"] == ["guide", "install"]
    assert "drafts/d.html" not in anchors and "loose.html" in anchors
    (root / "_config.yml").write_text("title: Book\nonly_build_toc_files: true\n")
    assert set(_anchors(root)) == {"intro.html", "guide.html"}
    write_tree(root, {"_toc.yml": "format: jb-book\nroot: intro\nchapters:\n- file: guide.md\n"
                                  "- glob: part*/*\n",
                      "parts/a.md": "# A\n\nText.\n", "other/b.md": "# B\n\nText.\n"})
    assert set(_anchors(root)) == {"intro.html", "guide.html", "parts/a.html"}
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(root), {}))
    assert expansion.info["generator"] == "jupyter-book"


def test_a_sphinx_project_whose_sources_end_in_txt_reads_them_as_rst(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "dj", {
        "conf.py": "project = 'dj'\nsource_suffix = '.txt'\n",
        "topics/models.txt": "======\nModels\n======\n\nA model.\n\nQuick example\n"
                             "=============\n\nText.\n",
        "notes.rst": "Notes\n=====\n\nNot a source here.\n"})
    assert _anchors(root) == {"topics/models.html": ["models", "quick-example"]}
