"""Quarto projects: which files are pages, Pandoc's heading ids, and the page text a
reader of the rendered site sees (cells, callouts, tabsets, shortcodes, includes)."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from kbctl.chunk.anchors import with_heading_ids
from kbctl.extract.goldmark_attributes import (
    pandoc_inline_attributes_removed,
    split_pandoc_attributes,
)
from kbctl.extract.quarto import quarto_to_markdown
from kbctl.generators import page_path, resolve_site
from kbctl.generators.quarto import GENERATOR, pandoc_slug
from tests.sitebuild import (
    BASE_URL,
    build_quarto,
    check,
    citations,
    failures,
    page_bodies,
    sections,
    tool,
    write_tree,
)

HEADINGS = sections(
    "## Install the tool",
    "## Ünïcödé & “quotes” — dashes",
    "## `code` in *the* heading",
    "## C++ / Rust: 2 languages!",
    "## Options {#sec-options}",
    "## Options",
    "### Foo_1",
    "### Foo",
    "### Foo",
    "## 123 numbers first",
    "## 3.14",
    "## Appendix {-}",
    "## Using `fmt()`{.python} here {.unnumbered}",
    "## The _tests_ Directory",
    "## And More... with data---tell it -- now",
    "#### Choose your tool<br/>and get started{.fw-light}",
    "## {auto-animate=true}",
    "## The `--verbose` flag",
)

PAGE_WITH_CELLS = """\
---
title: "Cells and callouts"
---

Intro {{< var product.name >}} with {{< kbd Ctrl-C >}}.

```{python}
#| echo: true
#| label: setup
# a comment, not a heading
import demo
```

```{python}
#| echo: false
hidden_code = 1
```

```{r, include=FALSE}
secret <- 1
```

::: {.callout-tip}
## Speed it up

Use the cache.
:::

::: {.callout-warning title="Mind the gap"}
Careful.
:::

::: {.panel-tabset}
## pip

```bash
pip install demo
```

## conda

Use conda.
:::

::: {.content-hidden when-format="html"}
Only in the PDF.
:::

{{< include _part.qmd >}}

## After the tabs

Done.
"""


NOTEBOOK = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {
    "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Notebook page\n\n## Load the data"},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "loaded 3 rows\n"}],
         "source": "#| echo: false\nrows = load()"},
        {"cell_type": "code", "metadata": {}, "execution_count": 2, "outputs": [],
         "source": "#| include: false\nsecret_setup()"},
        {"cell_type": "markdown", "metadata": {}, "source": "## Load the data\n\nAgain."}]})


def _quarto_site(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "site", {
        "guide/notebook.ipynb": NOTEBOOK,
        "_quarto.yml": "project:\n  type: website\nwebsite:\n  title: Demo\n",
        "_variables.yml": "product:\n  name: DemoDB\n",
        "index.qmd": "---\ntitle: Home\n---\n\n" + HEADINGS,
        "guide/cells.qmd": PAGE_WITH_CELLS,
        "guide/_part.qmd": "---\ntitle: part\n---\n\n## Included section\n\nFrom a part.\n",
        "guide/notes.md": "# Notes\n\n## A markdown page\n\nIt renders too.\n",
        "_drafts/wip.qmd": "## Not rendered\n\nUnderscore folder.\n",
        "README.md": "## Readme\n\nNot rendered.\n",
        "venv/lib/page.md": "## Vendored\n\nNot rendered.\n",
    })


@pytest.mark.skipif(tool("quarto") is None and tool("pandoc") is None,
                    reason="neither Quarto nor Pandoc is installed")
def test_quarto_citations_open_the_ids_pandoc_renders(tmp_path: Path) -> None:
    site = _quarto_site(tmp_path)
    built = build_quarto(site)
    pairs, detected, failed = citations(site)
    assert not failed
    assert detected == "quarto"
    result = check(built, pairs)
    assert result.checked >= 15
    assert result.resolved_share == 1.0, "\n".join(failures(result))
    anchors = {anchor for _, anchor in pairs}
    assert {"sec-options", "options", "foo-1", "numbers-first", "section", "section-1",
            "appendix", "using-fmt-here", "included-section", "after-the-tabs",
            "and-more-with-datatell-it-now", "choose-your-tool-and-get-started",
            "the---verbose-flag", "load-the-data", "load-the-data-1"} <= anchors
    assert not {a for a in anchors if a and ("speed" in a or a in ("pip", "conda"))}


def test_quarto_pages_and_what_is_not_one(tmp_path: Path) -> None:
    site = _quarto_site(tmp_path)
    bodies = page_bodies(site)
    assert set(bodies) == {f"{BASE_URL}index.html", f"{BASE_URL}guide/cells.html",
                           f"{BASE_URL}guide/notes.html", f"{BASE_URL}guide/notebook.html"}
    notebook = bodies[f"{BASE_URL}guide/notebook.html"]
    assert "loaded 3 rows" in notebook
    assert "rows = load()" not in notebook and "secret_setup" not in notebook
    cells = bodies[f"{BASE_URL}guide/cells.html"]
    assert "Intro DemoDB with Ctrl-C." in cells
    assert "```python\n# a comment, not a heading\nimport demo\n```" in cells
    assert "#|" not in cells and "hidden_code" not in cells and "secret" not in cells
    assert "**Tip: Speed it up**" in cells and "**Warning: Mind the gap**" in cells
    assert "**pip**" in cells and "Use conda." in cells
    assert "Only in the PDF" not in cells and ":::" not in cells
    assert "From a part." in cells and "title: part" not in cells


def test_pandoc_slugs() -> None:
    assert pandoc_slug("Install the tool") == "install-the-tool"
    assert pandoc_slug("C++ / Rust: 2 languages!") == "c-rust-2-languages"
    assert pandoc_slug("123 numbers first") == "numbers-first"
    assert pandoc_slug("3.14") == ""  # nothing from the first letter: "section"
    assert pandoc_slug("Ünïcödé & “quotes” — dashes") == "ünïcödé-quotes-dashes"
    assert pandoc_slug("v1.2_beta release") == "v1.2_beta-release"
    ids = GENERATOR.heading_ids(resolve_site(Path("."), "quarto"))
    assert [ids(t) for t in ("A", "A", "3.14", "!")] == ["a", "a-1", "section", "section-1"]


@pytest.mark.timeout(60)
def test_pandoc_attribute_lists() -> None:
    assert split_pandoc_attributes("Intro {#sec-intro}") == ("Intro", "sec-intro")
    assert split_pandoc_attributes("Intro {-}") == ("Intro", None)
    assert split_pandoc_attributes("Intro {.unnumbered #x key='a b'}") == ("Intro", "x")
    assert split_pandoc_attributes("Intro {#x} more") is None
    assert split_pandoc_attributes("Sets {a, b}") is None
    assert pandoc_inline_attributes_removed("Use `f()`{.python} and [x](y){#k} {.no}") == (
        "Use `f()` and [x](y) {.no}")
    split_pandoc_attributes("T {" + "#a " * 200_000 + "-")
    split_pandoc_attributes("T {" + "a=a" * 200_000)
    pandoc_inline_attributes_removed("`{" * 200_000)


def test_render_list_and_book_chapters(tmp_path: Path) -> None:
    site = write_tree(tmp_path / "web", {
        "_quarto.yml": "project:\n  type: website\n  render:\n    - index.qmd\n"
                       "    - 'guide/*.qmd'\n    - '!guide/old.qmd'\n",
        "index.qmd": "x", "other.qmd": "x", "guide/a.qmd": "x", "guide/old.qmd": "x",
        "deep/guide/b.qmd": "x", "deep/index.qmd": "x"})
    found = resolve_site(site)
    published = {rel: page_path(found, (site / rel).resolve(), {}) for rel in (
        "index.qmd", "other.qmd", "guide/a.qmd", "guide/old.qmd", "deep/guide/b.qmd",
        "deep/index.qmd")}
    assert published == {"index.qmd": "index.html", "other.qmd": None,
                         "guide/a.qmd": "guide/a.html", "guide/old.qmd": None,
                         "deep/guide/b.qmd": "deep/guide/b.html", "deep/index.qmd": None}

    book = write_tree(tmp_path / "book", {
        "_quarto.yml": "project:\n  type: book\nbook:\n  chapters:\n    - index.qmd\n"
                       "    - part: Basics\n      chapters: [basics.qmd, nb.ipynb]\n"
                       "  appendices:\n    - extra.md\n",
        "index.qmd": "x", "basics.qmd": "x", "nb.ipynb": "{}", "extra.md": "x",
        "notes.qmd": "x"})
    found = resolve_site(book)
    assert found.generator == "quarto"
    assert [page_path(found, (book / n).resolve(), {}) for n in (
        "index.qmd", "basics.qmd", "nb.ipynb", "extra.md", "notes.qmd")] == [
        "index.html", "basics.html", "nb.html", "extra.html", None]


def test_drafts_and_the_output_folder(tmp_path: Path) -> None:
    site = write_tree(tmp_path / "web", {
        "_quarto.yml": "project:\n  type: website\n  output-dir: docs\n"
                       "website:\n  drafts: [later.qmd]\n",
        "index.qmd": "---\ntitle: Home\n---\n\n## Welcome\n\nHi.\n",
        "wip.qmd": "---\ndraft: true\n---\n\n## Draft\n\nNot yet.\n",
        "later.qmd": "## Later\n\nNot yet.\n",
        "docs/index.md": "## Built copy\n\nRendered output.\n"})
    assert set(page_bodies(site)) == {f"{BASE_URL}index.html"}
    (site / "_quarto.yml").write_text("project:\n  type: website\n"
                                      "website:\n  draft-mode: visible\n")
    assert set(page_bodies(site)) == {f"{BASE_URL}{p}.html" for p in (
        "index", "wip", "later", "docs/index")}


def _notebook(*cells: dict) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"metadata": {}, **({"outputs": []} if c["cell_type"] == "code" else {}), **c}
        for c in cells]})


def test_nbdev_notebooks_are_named_and_titled_as_nbdev_does(tmp_path: Path) -> None:
    site = write_tree(tmp_path / "nbs", {
        "_quarto.yml": "project:\n  type: website\nmetadata-files: [nbdev.yml]\n",
        "nbdev.yml": "website:\n  title: demo\n",
        "01a_Basics.ipynb": _notebook(
            {"cell_type": "code", "source": "#| default_exp basics"},
            {"cell_type": "markdown", "source": "# Basic helpers\n> Small things\n\n"
                                                "- order: 2"},
            {"cell_type": "code", "source": "#| hide\nfrom nbdev import show_doc"},
            {"cell_type": "markdown", "source": "## ifnone\n\nPick the first."},
            {"cell_type": "code", "source": "#| export\ndef ifnone(a, b): ..."}),
        "index.ipynb": _notebook(
            {"cell_type": "raw", "source": "---\ntitle: Home\noutput-file: start.html\n---"},
            {"cell_type": "markdown", "source": "## Install\n\npip install demo"})})
    pairs = citations(site)[0]
    assert sorted(pairs) == [(f"{BASE_URL}basics.html", "ifnone"),
                             (f"{BASE_URL}start.html", "install")]
    bodies = page_bodies(site)
    basics = bodies[f"{BASE_URL}basics.html"]
    assert "Basic helpers" not in basics and "Small things" not in basics
    assert "show_doc" not in basics and "#|" not in basics
    assert "def ifnone(a, b): ..." in basics


def test_page_rules() -> None:
    site = GENERATOR.default_site(Path("/nowhere"))
    def page(rel: str) -> str | None:
        return GENERATOR.page(site, PurePosixPath(rel), {})
    assert page("a/b.qmd") == "a/b.html" and page("x.Rmd") == "x.html"
    assert page("nb.ipynb") == "nb.html" and page("a/index.qmd") == "a/index.html"
    assert None is page("_inc.qmd") is page("a/_x/b.qmd") is page(".h/b.qmd")
    assert None is page("README.md") is page("AGENTS.md") is page("x.llms.md")
    assert page("readme.md") == "readme.html"  # Quarto's ignore glob is case-sensitive
    assert None is page("renv/a.qmd") is page("env/a.md") is page("style.css")
    assert GENERATOR.page(site, PurePosixPath("a/b.qmd"), {"output-file": "c"}) == "a/c.html"


@pytest.mark.timeout(60)
def test_include_rules_and_hostile_pages(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "p", {
        "_quarto.yml": "project:\n  type: website\n",
        "a.qmd": "{{< include a.qmd >}}\n\n{{< include /parts/b.qmd >}}\n"
                 "{{< include ../../outside.qmd >}}\n{{< include .secret.qmd >}}\n",
        "parts/b.qmd": "B text {{< include c.qmd >}}\n\n{{< include c.qmd >}}\n",
        "parts/c.qmd": "C text\n",
        ".secret.qmd": "token\n"})
    (tmp_path / "outside.qmd").write_text("outside\n")
    reads: list[Path] = []
    text = quarto_to_markdown((project / "a.qmd").read_text(), page=project / "a.qmd",
                              project=project, reads=reads)
    assert "B text" in text and "C text" in text
    assert "outside" not in text and "token" not in text and "{{<" not in text.split("B")[0]
    assert {p.name for p in reads} == {"b.qmd", "c.qmd"}

    for hostile in (":::" + " :" * 300_000, "::: {.callout-note}\n" * 100_000,
                    "{{<" + " " * 500_000, "# " + " " * 500_000 + "x",
                    "```{python}\n" + "#| echo: false\n" * 100_000,
                    ":::: {.panel-tabset}\n" + "## t\n" * 100_000):
        quarto_to_markdown(hostile)


def test_meta_and_var_come_from_the_page_its_folders_and_the_project(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "p", {
        "_quarto.yml": "project:\n  type: website\nlang: en\n",
        "_variables.yml": "version: '2.1'\n",
        "tools/_metadata.yml": "tool:\n  name: Outer\n  kind: editor\n",
        "tools/vscode/_metadata.yml": "tool:\n  name: VS Code\n",
        "tools/vscode/index.qmd": "x"})
    site = resolve_site(project)
    reads: list[Path] = []
    page = project / "tools/vscode/index.qmd"
    text = quarto_to_markdown(
        "In {{< meta tool.name >}} ({{< meta tool.kind >}}, {{< meta lang >}}, "
        "{{< meta title >}}) version {{< var version >}}{{< var missing >}}.\n",
        page=page, project=project, reads=reads, front_matter={"title": "Editors"},
        project_metadata=site.settings["metadata"])
    assert text == "In VS Code (editor, en, Editors) version 2.1.\n"
    assert {p.relative_to(project).as_posix() for p in reads} == {
        "_variables.yml", "tools/_metadata.yml", "tools/vscode/_metadata.yml"}


def test_escaped_shortcodes_and_heading_ids() -> None:
    text = quarto_to_markdown("Write {{{< var x >}}} to show a variable.\n",
                              variables={"x": "1"})
    assert text == "Write {{< var x >}} to show a variable.\n"
    # Quarto reads a heading's shortcode as an empty span: the id is made without it
    assert quarto_to_markdown("## {{< var x >}} Editors\n", variables={"x": "VS Code"}) == (
        "##  Editors\n")
    ids = GENERATOR.heading_ids(GENERATOR.default_site(Path(".")))
    marked = with_heading_ids("## Results {#sec-results .unnumbered}\n\n## Results\n", ids)
    assert marked == "## Results {#sec-results}\n\n## Results {#results}\n"
