"""MyST projects (mystmd, Jupyter Book 2): page slugs, heading ids, titles and labels, as
``myst build`` makes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.chunk.slug import myst_html_id
from kbctl.extract.myst import myst_to_markdown
from kbctl.extract.mystmd import mystmd_headings
from kbctl.generators import resolve_site
from kbctl.generators.mystmd import create_slug
from tests.sitebuild import (
    BASE_URL,
    build_mystmd,
    check_mystmd,
    citations,
    failures,
    page_bodies,
    sections,
    tool,
    write_tree,
)

MYST_YML = "version: 1\nproject:\n  title: Demo\nsite:\n  title: Demo\n"

PAGE = "---\ntitle: Home page\n---\n\n# Not the title\n\nOpening text.\n\n" + sections(
    "## Install the tool", "## C++ / Rust: 2 languages!",
) + "\n(my-label)=\n\n" + sections(
    "## Labelled heading", "## Options", "## Options", "## It's “quoted” & 'single'",
    "## 123 numbers first", "## Ünïcödé ☃", "## Custom {#not-an-id}", "## `{note}` vs. `{tip}`",
) + """
:::{note}
# Note title

Inside the note.

(inner)=
## A section inside

Text.
:::

````{code}
```{note}
# Not a heading
```
````

```{myst}
### Example heading
```

""" + sections("## $x^2$ math")


def _project(tmp_path: Path, config: str = MYST_YML) -> Path:
    return write_tree(tmp_path / "book", {
        "myst.yml": config,
        "index.md": PAGE,
        "a/intro.md": "# Intro A\n\n## Setup\n\nText.\n",
        "b/intro.md": "# Intro B\n\n## Setup\n\nText.\n",
        "2_Zed Page.md": "# Zed\n\n## Zed\n\nText.\n",
        "_partial.md": "# Partial\n\n## Shown\n\nmystmd publishes it.\n",
        "node_modules/x.md": "# No\n\n## No\n\nNot read.\n",
        "other/myst.yml": MYST_YML,
        "other/page.md": "# Another project\n\n## No\n\nNot this one's.\n",
    })


@pytest.mark.skipif(tool("myst") is None, reason="mystmd is not installed")
@pytest.mark.parametrize("folders", [False, True])
def test_citations_open_the_pages_and_ids_mystmd_builds(tmp_path: Path, folders: bool) -> None:
    config = MYST_YML + ("  options:\n    folders: true\n" if folders else "")
    project = _project(tmp_path, config)
    built = build_mystmd(project)
    site = resolve_site(project)
    assert site.generator == "mystmd"
    pages = site.settings["pages"]
    assert set(pages) == set(built)
    for rel, (slug, _) in built.items():
        expected = "" if rel == "index.md" else slug.removesuffix(".index").replace(".", "/")
        assert pages[rel] == expected, rel
    pairs, detected, failed = citations(project)
    assert detected == "mystmd" and not failed
    result = check_mystmd(built, pairs)
    assert result.resolved_share == 1.0, "\n".join(failures(result))
    anchored = [(url, anchor) for url, anchor in pairs if anchor]
    assert len(anchored) >= 15
    anchors = {a for _, a in anchored}
    assert {"not-the-title", "my-label", "options-1", "its-quoted-single",
            "id-123-numbers-first", "custom-not-an-id", "id-note-vs-tip", "inner",
            "x-2-math"} <= anchors
    assert not anchors & {"note-title", "not-a-heading", "example-heading", "home-page"}


def test_slugs_and_page_order(tmp_path: Path) -> None:
    assert create_slug("01_first_Page") == "first-page"
    assert create_slug("2024-report") == "2024-report"  # a year is no numbering
    assert create_slug("123") == "123"  # never empty
    assert create_slug("Q&A") == "q-and-a"
    assert create_slug("x" * 80) == "x" * 50
    site = resolve_site(_project(tmp_path))
    assert site.settings["pages"] == {
        "index.md": "", "2_Zed Page.md": "zed-page", "_partial.md": "partial",
        "a/intro.md": "intro", "b/intro.md": "intro-1"}


def test_toc_folders_and_exclude(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "toc", {
        "myst.yml": "version: 1\nproject:\n  exclude: ['drafts/**']\n  toc:\n"
                    "    - file: start.md\n    - title: Guide\n      children:\n"
                    "        - file: guide/setup\n        - pattern: 'guide/ch*.md'\n"
                    "    - file: index.md\n"
                    "site:\n  options:\n    folders: true\n",
        "start.md": "x", "index.md": "x", "guide/setup.md": "x", "guide/ch10.md": "x",
        "guide/ch2.md": "x", "unlisted.md": "x", "drafts/ch1.md": "x"})
    assert resolve_site(project).settings["pages"] == {
        "start.md": "", "guide/setup.md": "guide/setup", "guide/ch2.md": "guide/ch2",
        "guide/ch10.md": "guide/ch10", "index.md": "index-1"}


def test_a_jupyter_book_1_toc_is_still_read(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "jb", {
        "myst.yml": "version: 1\nproject:\n  title: L\n",
        "_toc.yml": "format: jb-book\nroot: intro\nparts:\n  - caption: P\n    chapters:\n"
                    "      - file: ch/b\n        sections:\n          - file: ch/a\n"
                    "      - glob: ch/*\n",
        "intro.md": "x", "ch/a.md": "x", "ch/b.md": "x", "extra.md": "x"})
    assert resolve_site(project).settings["pages"] == {
        "intro.md": "", "ch/b.md": "b", "ch/a.md": "a"}


@pytest.mark.timeout(60)
def test_headings_as_mystmd_reads_them() -> None:
    assert myst_html_id("It's “quoted” & 'single'") == "its-quoted-single"
    assert myst_html_id("Ünïcödé ☃") == "id-n-c-d"
    assert myst_html_id("  ") == ""
    text = mystmd_headings("# Title\n\n(lab)=\n\n## Named\n\n## Own {#x}\n")
    assert text == "\n\n## Named {#lab}\n\n## Own \\{#x}\n"
    # a front matter title that differs keeps the H1 a section
    assert mystmd_headings("# Other\n", title="Home") == "# Other\n"
    assert mystmd_headings("% a comment\n# Home\ntext", title="Home") == "% a comment\ntext"
    mystmd_headings("````{note}\n" * 50_000 + "(a)=\n" * 50_000 + "## x {#y}\n" * 50_000)


def test_myst_roles_in_code_and_titled_admonitions() -> None:
    assert myst_to_markdown("Use `{note}` and {func}`os.path.join`.\n") == (
        "Use `{note}` and `os.path.join()`.\n")
    assert myst_to_markdown("```{tip}\n# A title\n\nBody.\n```\n").startswith(
        "**Tip: A title**")
    # a code block's own fences never close the block around it
    text = myst_to_markdown("````{code} md\n```{note}\nx\n```\n````\n")
    assert text.startswith("````md\n```{note}") and text.rstrip().endswith("````")


def test_pages_of_a_project_and_their_text(tmp_path: Path) -> None:
    project = _project(tmp_path)
    bodies = page_bodies(project)
    assert set(bodies) == {BASE_URL, f"{BASE_URL}zed-page", f"{BASE_URL}partial",
                           f"{BASE_URL}intro", f"{BASE_URL}intro-1"}
    home = bodies[BASE_URL]
    assert "Home page" not in home.split("\n")[0] and "Opening text." in home
    assert "**Note: Note title**" in home and "### Example heading" in home
