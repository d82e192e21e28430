"""Citations against real builds: each small site is built by its real generator, its
sources ingested with the detected profile, and every citation must open an existing
page and an id on it. A generator that is not installed skips its test."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from lxml import html as lxml_html

from tests.sitebuild import (
    BASE_URL,
    astro_version,
    build_docusaurus,
    build_hugo,
    build_jekyll,
    build_mdbook,
    build_mkdocs,
    build_sphinx,
    build_starlight,
    build_vitepress,
    build_zensical,
    check,
    citations,
    failures,
    loaded_pages,
    page_bodies,
    sections,
    tool,
    write_tree,
)

_HEADINGS = [
    "# Install the tool", "## Install the tool", "## Ünïcödé & “quotes” — dashes",
    "## `code` in *the* heading", "## C++ / Rust: 2 languages!",
    "## Options {#custom-options}", "## Options", "### Foo_1", "### Foo", "### Foo",
    "## 123 numbers first", "## The _tests_ Directory", "#### [A link](x.md) here",
    "Setext heading\n--------------",
]
HEADINGS_MD = sections(*_HEADINGS, text="Text under it.")
# The body of each page a generator's build leaves out (a draft, a future date, excluded)
UNPUBLISHED = "## Unpublished page\n\nLeft out of the build.\n"


def _assert_left_out(site_dir: Path, target: Path, generator: str | None = None) -> None:
    """The build has no page with the unpublished section, and no citation names one."""
    built = [p for p in site_dir.rglob("*.html") if "Unpublished page" in p.read_text("utf-8")]
    assert not built, "the generator published a page the test means to be left out"
    pairs = citations(target, generator=generator)[0]
    assert not [url for url, anchor in pairs if anchor == "unpublished-page"]


def _assert_all_resolve(site_dir: Path, target: Path, expected_generator: str,
                        generator: str | None = None, minimum: int = 10,
                        lang: str | None = None, version: str | None = None) -> None:
    pairs, detected, failed = citations(target, generator=generator, lang=lang,
                                        version=version)
    assert not failed
    assert detected == expected_generator
    result = check(site_dir, pairs)
    assert result.checked >= minimum
    assert result.resolved_share == 1.0, "\n".join(failures(result))


SPHINX_SITE = {
    "conf.py": "project = 'Demo'\nextensions = []\nhtml_theme = 'basic'\n",
    "index.rst": """\
Demo documentation
==================

.. toctree::

   guide/install
   api

Welcome. See :ref:`install-label` and :func:`demo.run`.
""",
    "guide/install.rst": """\
.. _install-label:

Installing Demo
===============

Text with a :term:`glossary` word and ``literal``.

.. code-block:: bash

   pip install demo

Options
-------

.. note:: A note.

.. versionadded:: 1.2
   The ``--fast`` flag.

Options
-------

The same title again gets a numbered id.

Ünïcödé ☃ title
---------------

* one
* two

=====  =====
A      B
=====  =====
1      2
=====  =====
""",
    # release notes: top-level sections of one page, each with the same subsections, all
    # with numbered ids (id1, id2, …) that no slug can guess
    "notes.rst": """\
1.2.0
=====

News
----

A.

1.1.0
=====

News
----

B.
""",
    "api.rst": """\
API
===

.. module:: demo

.. function:: run(config, *, fast=False)

   Run the demo.

.. class:: Engine(name)

   An engine.

   .. method:: start()

      Start it.

   .. attribute:: name

      Its name.

.. data:: VERSION

   The version.
""",
}


@pytest.mark.skipif(tool("sphinx-build") is None, reason="Sphinx is not installed")
@pytest.mark.parametrize("builder", ["html", "dirhtml"])
def test_sphinx_citations_resolve(tmp_path: Path, builder: str) -> None:
    project = write_tree(tmp_path / "docs", SPHINX_SITE)
    site = build_sphinx(project, builder)
    generator = "sphinx" if builder == "html" else "sphinx-dirhtml"
    _assert_all_resolve(site, project, generator,
                        generator=None if builder == "html" else "sphinx-dirhtml")


SPHINX_INCLUDES = {
    ".git/HEAD": "ref: refs/heads/main\n",  # docs/ sits right under a repository's top
    "README.rst": "Project readme\n==============\n\nThe readme text.\n\nReadme section\n"
                  "--------------\n\nMore of it.\n",
    "src/demo.py": "import os\n\n\ndef run():\n    return os.getcwd()\n",
    "docs/conf.py": "project = 'Demo'\nexclude_patterns = ['_build', '_parts']\n",
    "docs/index.rst": "Demo\n====\n\n.. toctree::\n\n   usage\n\n.. include:: ../README.rst\n",
    "docs/usage.rst": "Usage\n=====\n\n.. include:: /_parts/steps.rst\n\nCode\n----\n\n"
                      ".. literalinclude:: ../src/demo.py\n   :lines: 4-5\n\n"
                      "After\n-----\n\nText after.\n\n.. include:: ../README.rst\n"
                      "   :start-after: readme text.\n   :end-before: More\n",
    "docs/_parts/steps.rst": "Steps\n-----\n\nRun the steps.\n",
}


@pytest.mark.skipif(tool("sphinx-build") is None, reason="Sphinx is not installed")
def test_sphinx_includes_read_as_the_page_shows_them(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", SPHINX_INCLUDES)
    site = build_sphinx(repo / "docs")
    _assert_all_resolve(site, repo / "docs", "sphinx", minimum=5)
    cited = {(url.rsplit("/", 1)[-1], anchor) for url, anchor in citations(repo / "docs")[0]}
    assert {("usage.html", "steps"), ("usage.html", "code"), ("index.html", "readme-section"),
            ("index.html", "project-readme")} <= cited
    bodies = page_bodies(repo / "docs")
    usage = next(body for url, body in bodies.items() if url.endswith("usage.html"))
    assert "Run the steps." in usage and "def run():\n    return os.getcwd()" in usage
    assert "import os" not in usage and "The readme text." not in usage

MYST_SITE = {
    "conf.py": "project = 'Demo'\nextensions = ['myst_parser']\n"
               "myst_enable_extensions = ['colon_fence']\n"
               "exclude_patterns = ['_build', '_parts', 'drafts/*', '**/old-*']\n",
    "index.md": "# Home\n\n```{toctree}\n:maxdepth: 2\n\nguide/install\nguide/page\n"
                "guide/directives\nguide/included\n```\n\n## Welcome\n\nT.\n",
    "guide/directives.md": "(directives-page)=\n# Directives\n\n% a comment\n\n"
                           "```{note}\nA note about {py:func}`os.path.join`.\n```\n\n"
                           "## Code\n\n```{code-block} python\n:caption: Example\n\n"
                           "# a comment, not a heading\nimport os\n```\n\n"
                           ":::{versionadded} 1.2\nThe {ref}`options <directives-page>`.\n:::\n"
                           "\n## After\n\nText.\n",
    "guide/install.md": HEADINGS_MD,
    "guide/page.rst": "An RST page\n===========\n\nSection\n-------\n\nText.\n",
    "guide/included.md": "# Included\n\n```{include} ../_parts/steps.md\n:start-after: <!-- s -->"
                         "\n```\n\n## Listing\n\n```{literalinclude} /_parts/demo.py\n"
                         ":lines: 2\n```\n",
    "_parts/steps.md": "Hidden above.\n<!-- s -->\n## Shared steps\n\nRun them.\n",
    "_parts/demo.py": "import os\nprint(os.getcwd())\n",
    "drafts/wip.md": "# WIP\n\n" + UNPUBLISHED,
    "guide/old-thing.md": "# Old\n\n" + UNPUBLISHED,
}


@pytest.mark.skipif(tool("sphinx-build") is None or importlib.util.find_spec("myst_parser")
                    is None, reason="Sphinx or MyST is not installed")
def test_sphinx_markdown_with_myst(tmp_path: Path) -> None:
    """MyST reads a trailing {#id} as heading text, and exclude_patterns are not built."""
    project = write_tree(tmp_path / "docs", MYST_SITE)
    site = build_sphinx(project)
    _assert_all_resolve(site, project, "sphinx")
    _assert_left_out(site, project)
    assert ("https://docs.example.com/guide/install.html", "options-custom-options") in (
        citations(project)[0])
    assert {a for url, a in citations(project)[0] if url.endswith("/directives.html")} == {
        "directives", "code", "after"}
    assert {a for url, a in citations(project)[0] if url.endswith("/included.html")} == {
        "shared-steps", "listing"}
    included = next(b for u, b in page_bodies(project).items() if u.endswith("included.html"))
    assert "Run them." in included and "Hidden above." not in included
    assert "```python\nprint(os.getcwd())\n```" in included and "import os" not in included


@pytest.mark.skipif(tool("sphinx-build") is None, reason="Sphinx is not installed")
def test_sphinx_api_directives_are_cited_by_their_own_ids(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "docs", SPHINX_SITE)
    pairs, _, _ = citations(project)
    anchors = {anchor for url, anchor in pairs if url.endswith("/api.html")}
    assert {"demo.run", "demo.Engine", "demo.Engine.start", "demo.Engine.name",
            "demo.VERSION"} <= anchors


MKDOCS_SITE = {
    "mkdocs.yml": "site_name: Demo\nmarkdown_extensions:\n  - toc:\n      permalink: true\n"
                  "  - attr_list\n",
    "docs/index.md": "# Home\n\nWelcome.\n\n## Getting started\n",
    "docs/guide/install.md": HEADINGS_MD,
    "docs/guide/index.md": "# Guide\n\nThe guide.\n",
    "docs/about.md": "About\n=====\n\nSetext.\n\nMore\n----\n\nText.\n",
    # what mkdocs build leaves out, or publishes elsewhere
    "docs/README.md": "# Readme\n\n## Beside the index\n\nLeft out.\n",
    "docs/sub/README.md": "# Sub\n\n## The index of sub\n\nText.\n",
    "docs/sub/readme.md": "# Lower\n\n## Only README counts\n\nText.\n",
    "docs/drafts/wip.md": "# WIP\n\n## Not yet\n\nText.\n",
    "docs/notes.tmp.md": "# Tmp\n\n## Scratch\n\nText.\n",
    "docs/later.md": "# Later\n\n## A draft\n\nText.\n",
    "docs/templates/t.md": "# T\n\n## Template\n\nText.\n",
}
MKDOCS_LEFT_OUT = "exclude_docs: |\n  drafts/\n  *.tmp.md\ndraft_docs: |\n  later.md\n"


_MKDOCS_BUILDERS = [pytest.param(build_mkdocs, marks=pytest.mark.skipif(
    tool("mkdocs") is None, reason="MkDocs is not installed"), id="mkdocs"),
    pytest.param(build_zensical, marks=pytest.mark.skipif(  # MkDocs' successor
        tool("zensical") is None, reason="Zensical is not installed"), id="zensical")]


@pytest.mark.parametrize("build", _MKDOCS_BUILDERS)
@pytest.mark.parametrize("directory_urls", [True, False])
def test_mkdocs_citations_resolve(tmp_path: Path, directory_urls: bool, build) -> None:
    files = dict(MKDOCS_SITE)
    files["mkdocs.yml"] += MKDOCS_LEFT_OUT
    if not directory_urls:
        files["mkdocs.yml"] += "use_directory_urls: false\n"
    project = write_tree(tmp_path / "proj", files)
    site = build(project)
    _assert_all_resolve(site, project / "docs", "mkdocs")
    _assert_all_resolve(site, project, "mkdocs")  # the project root: docs_dir is found
    cited = {(url.removeprefix("https://docs.example.com/"), anchor)
             for url, anchor in citations(project / "docs")[0]}
    sub = "sub/" if directory_urls else "sub/index.html"
    assert (sub, "the-index-of-sub") in cited
    assert ("sub/readme/" if directory_urls else "sub/readme.html",
            "only-readme-counts") in cited
    assert not {a for _, a in cited} & {"beside-the-index", "not-yet", "scratch", "a-draft",
                                        "template"}


TITLES_SITE = {
    "mkdocs.yml": "site_name: Demo\nnav:\n  - index.md\n  - The Guide: guide.md\n"
                  "  - Section:\n    - Deep Name: ./sub/deep.md\n    - sub/no_heading.md\n"
                  "  - Elsewhere: https://example.com/\n",
    "docs/index.md": "Welcome, with no heading.\n",
    "docs/guide.md": "# Guide heading\n\nText.\n",  # the nav's title wins
    "docs/sub/deep.md": "---\ntitle: Front matter\n---\n\nText.\n",
    "docs/sub/no_heading.md": "Text.\n",  # from the file name, capitalised
    "docs/event-hooks_API.md": "Text.\n",  # not in the nav; kept as written
    "docs/front.md": "---\ntitle: Written title\n---\n\n# Heading\n\nText.\n",
}


@pytest.mark.skipif(tool("mkdocs") is None, reason="MkDocs is not installed")
def test_mkdocs_page_titles_are_the_ones_mkdocs_shows(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "proj", TITLES_SITE)
    site = build_mkdocs(project)
    titles = {loaded.document.url.removeprefix(BASE_URL): loaded.document.title
              for loaded in loaded_pages(project / "docs") if loaded.document}
    assert titles[""] == "Home"
    assert titles["guide/"] == "The Guide"
    assert titles["sub/no_heading/"] == "No heading"
    for page, title in titles.items():
        if page:  # MkDocs' theme shows a page's title, then the site's, in <title>
            shown = lxml_html.parse(str(site / page / "index.html")).findtext(".//title")
            assert shown == f"{title} - Demo", page


BLOCKS_SITE = {
    "mkdocs.yml": "site_name: Demo\nmarkdown_extensions:\n  - toc\n  - admonition\n"
                  "  - pymdownx.details\n  - pymdownx.superfences\n  - pymdownx.tabbed\n",
    "docs/setup.md": "# Setup\n\n!!! note \"Before you start\"\n    You need **Python**.\n\n"
                     "=== \"pip\"\n\n    ## Install with pip\n\n    ```\n    pip install demo\n"
                     "    ```\n\n=== \"uv\"\n\n    Run uv.\n\n??? tip\n    ## Hidden heading\n\n"
                     "    A tip.\n\n## After\n\nText.\n",
}


@pytest.mark.skipif(tool("mkdocs") is None, reason="MkDocs is not installed")
def test_mkdocs_headings_inside_admonitions_and_tabs_are_cited(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "proj", BLOCKS_SITE)
    site = build_mkdocs(project)
    _assert_all_resolve(site, project / "docs", "mkdocs", minimum=4)
    cited = {anchor for _, anchor in citations(project / "docs")[0]}
    assert {"install-with-pip", "hidden-heading", "after"} <= cited


FENCED_BLOCKS_SITE = {
    "mkdocs.yml": "site_name: Demo\nmarkdown_extensions:\n  - toc\n  - pymdownx.superfences\n"
                  "  - pymdownx.blocks.admonition\n  - pymdownx.blocks.details\n"
                  "  - pymdownx.blocks.tab\n  - attr_list\n  - pymdownx.emoji:\n"
                  "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
                  "      emoji_generator: !!python/name:material.extensions.emoji.to_svg\n",
    "docs/setup.md": "# Setup\n\n/// note | Before you start\n    type: warning\n\n"
                     "## Inside a note\n\nYou need **Python**.\n///\n\n//// tab | pip\n\n"
                     "## Install with pip\n\n/// details | More\nHidden.\n///\n\n////\n\n"
                     "## After { #later .wide data-toc-label=\"Later\" }\n\nText.\n\n"
                     "## :material-check: Done { .big }\n\n[Start](x.md){ .md-button } "
                     ":octicons-tag-24: now.\n",
    "docs/x.md": "# X\n",
}


@pytest.mark.skipif(tool("mkdocs") is None, reason="MkDocs is not installed")
def test_mkdocs_fenced_blocks_icons_and_attribute_lists_read_as_the_page_shows_them(
        tmp_path: Path) -> None:
    project = write_tree(tmp_path / "proj", FENCED_BLOCKS_SITE)
    site = build_mkdocs(project)
    _assert_all_resolve(site, project / "docs", "mkdocs", minimum=4)
    assert {"inside-a-note", "install-with-pip", "later", "done"} <= {
        anchor for _, anchor in citations(project / "docs")[0]}
    text = "\n".join(page_bodies(project / "docs").values())
    assert "**Note: Before you start**" in text and "**More**" in text
    assert "///" not in text and "type: warning" not in text
    assert "[Start](x.md)  now." in text and "## Done {#done}" in text
    assert "{" not in re.sub(r"\{#[\w-]+\}", "", text)  # only the ids of headings

INCLUDE_MARKDOWN_SITE = {
    ".git/HEAD": "ref: refs/heads/main\n",
    "README.md": "# Widget\n\nNot shown.\n<!--intro-->\n## Why widgets\n\nThey turn.\n"
                 "<!--/intro-->\nNot shown either.\n",
    "mkdocs.yml": "site_name: Demo\nplugins:\n  - include-markdown\n",
    "docs/index.md": "# Home\n\n{%\n  include-markdown \"../README.md\"\n  "
                     "start=\"<!--intro-->\"\n  end=\"<!--/intro-->\"\n  heading-offset=1\n%}\n\n"
                     "## Config\n\n```yaml\n{% include \"../mkdocs.yml\" %}\n```\n",
}


@pytest.mark.skipif(tool("mkdocs") is None or importlib.util.find_spec(
    "mkdocs_include_markdown_plugin") is None, reason="MkDocs or include-markdown missing")
def test_mkdocs_include_markdown_plugin(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "proj", INCLUDE_MARKDOWN_SITE)
    site = build_mkdocs(project)
    _assert_all_resolve(site, project / "docs", "mkdocs", minimum=2)
    assert {"why-widgets", "config"} <= {a for _, a in citations(project / "docs")[0]}
    [body] = page_bodies(project / "docs").values()
    assert "### Why widgets" in body and "They turn." in body and "Not shown" not in body
    assert "plugins:\n  - include-markdown" in body and "{%" not in body

MATERIAL_BLOG_SITE = {
    "mkdocs.yml": "site_name: Demo\ntheme:\n  name: material\nplugins:\n  - blog\n"
                  "markdown_extensions:\n  - toc:\n      permalink: true\n  - attr_list\n"
                  "  - pymdownx.emoji\n",
    "docs/index.md": "# Home\n\n## Welcome :smile: here\n\nText.\n\n"
                     "## Release 1.2 { id=\"v1.2\" }\n\nText.\n\n"
                     "## Changes to files { data-search-exclude }\n\nText.\n",
    "docs/blog/index.md": "# Blog\n",
    "docs/blog/posts/first.md": "---\ndate: 2024-03-05\ncategories:\n  - Release Notes\n---\n\n"
                                "# Hello, blog world!\n\nIntro.\n\n## A section\n\nText.\n",
    "docs/blog/posts/named.md": "---\ndate:\n  created: 2023-12-31\nslug: custom-slug\n---\n\n"
                                "# Named\n\n## Inside\n\nText.\n",
    "docs/blog/posts/draft.md": "---\ndate: 2024-01-01\ndraft: true\n---\n\n# Draft\n\n"
                                + UNPUBLISHED,
}


@pytest.mark.skipif(importlib.util.find_spec("material") is None,
                    reason="Material for MkDocs is not installed")
@pytest.mark.parametrize("build", _MKDOCS_BUILDERS)
def test_mkdocs_material_blog_and_attribute_lists(tmp_path: Path, build) -> None:
    project = write_tree(tmp_path / "proj", MATERIAL_BLOG_SITE)
    site = build(project)
    _assert_all_resolve(site, project / "docs", "mkdocs", minimum=6)
    _assert_left_out(site, project / "docs")
    cited = {(url.removeprefix("https://docs.example.com/"), anchor)
             for url, anchor in citations(project / "docs")[0]}
    assert ("blog/2024/03/05/hello-blog-world/", "a-section") in cited
    assert ("blog/2023/12/31/custom-slug/", "inside") in cited
    assert {("", "welcome-here"), ("", "v1.2"), ("", "changes-to-files")} <= cited


@pytest.mark.skipif(tool("mkdocs") is None, reason="MkDocs is not installed")
def test_mkdocs_unicode_slugify_setting(tmp_path: Path) -> None:
    files = dict(MKDOCS_SITE)
    files["mkdocs.yml"] = ("site_name: Demo\nmarkdown_extensions:\n  - toc:\n      slugify: "
                           "!!python/name:markdown.extensions.toc.slugify_unicode\n")
    project = write_tree(tmp_path / "proj", files)
    site = build_mkdocs(project)
    _assert_all_resolve(site, project / "docs", "mkdocs")
    pairs, _, _ = citations(project / "docs")
    assert any(anchor and "ü" in anchor for _, anchor in pairs)


@pytest.mark.skipif(tool("mkdocs") is None or importlib.util.find_spec(
    "mkdocs_static_i18n") is None, reason="MkDocs or mkdocs-static-i18n is not installed")
@pytest.mark.parametrize("structure", ["suffix", "folder"])
def test_mkdocs_i18n_plugin_languages(tmp_path: Path, structure: str) -> None:
    config = ("site_name: Demo\nplugins:\n  - i18n:\n      docs_structure: " + structure +
              "\n      languages:\n        - {locale: en, default: true, name: English}\n"
              "        - {locale: fr, name: Français}\n        - {locale: de, name: Deutsch,"
              " build: false}\n")

    def named(rel: str, language: str) -> str:
        if structure == "folder":
            return f"docs/{language}/{rel}"
        stem, _, ext = rel.rpartition(".")
        return f"docs/{stem}.{language}.{ext}" if language != "en" else f"docs/{rel}"

    files = {"mkdocs.yml": config}
    for language in ("en", "fr", "de"):
        files[named("index.md", language)] = f"# Home {language}\n\n## Welcome\n\nText.\n"
        files[named("guide/install.md", language)] = HEADINGS_MD
    project = write_tree(tmp_path / "proj", files)
    site = build_mkdocs(project)
    _assert_all_resolve(site, project / "docs", "mkdocs", lang="all")
    base = "https://docs.example.com/"
    urls = {url for url, _ in citations(project / "docs", lang="all")[0]}
    assert urls == {base, base + "guide/install/", base + "fr/", base + "fr/guide/install/"}
    assert {url for url, _ in citations(project / "docs")[0]} == {base, base + "guide/install/"}


MDBOOK_SITE = {
    "book.toml": "[book]\ntitle = 'Demo'\nsrc = 'src'\n",
    "src/SUMMARY.md": "# Summary\n\n[Intro](README.md)\n\n- [Install](install.md)\n"
                      "  - [Deep](sub/deep.md)\n",
    "src/README.md": "# Intro\n\nHello.\n",
    "src/install.md": HEADINGS_MD,
    "src/sub/deep.md": "# Deep\n\n## Ça va? Oui!\n\nOne.\n\n## Ça va? Oui!\n\nTwo.\n",
    "src/draft.md": "# Not in the summary\n",
}
MDBOOK_INCLUDES = {
    "src/SUMMARY.md": "# Summary\n\n[Intro](README.md)\n\n- [Install](install.md)\n"
                      "  - [Deep](sub/deep.md)\n- [Listings](listings.md)\n",
    "src/listings.md": "# Listings\n\n{{#include parts/part.md}}\n\n```rust\n"
                       "{{#rustdoc_include ../code/main.rs:here}}\n```\n\n## After\n\nText.\n"
                       "\n{{#playground ../code/hidden.rs editable}}\n\n## Runnable\n\nT.\n",
    # a hidden line (``# ``) of a runnable listing: code, not a heading
    "code/hidden.rs": "fn main() {\n#     println!(\"hidden\");\n}\n",
    "src/parts/part.md": "## Included section\n\nFrom another file.\n",
    "code/main.rs": "fn main() {\n    // ANCHOR: here\n    let answer = 42;\n"
                    "    // ANCHOR_END: here\n}\n",
}


@pytest.mark.skipif(tool("mdbook") is None, reason="mdBook is not installed")
def test_mdbook_citations_resolve(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "book", {**MDBOOK_SITE, **MDBOOK_INCLUDES})
    site = build_mdbook(project)
    _assert_all_resolve(site, project / "src", "mdbook")
    pairs, _, _ = citations(project / "src")
    assert not any("draft" in url for url, _ in pairs)  # not in SUMMARY.md: not published
    assert any(url.endswith("/index.html") for url, _ in pairs)  # README.md
    # a heading from an included file is the chapter's, cited by the id mdBook gives it
    assert {a for url, a in pairs if url.endswith("/listings.html")} >= {
        "included-section", "after", "runnable"}


HUGO_SITE = {
    "hugo.toml": "baseURL = 'https://docs.example.com/'\ntitle = 'Demo'\n"
                 "disableKinds = ['taxonomy', 'term', 'RSS', 'sitemap']\n",
    "content/_index.md": "---\ntitle: Home\n---\n\n## Welcome\n\nSome text.\n",
    "content/posts/_index.md": "---\ntitle: Posts\n---\n\n## All posts\n\nSome text.\n",
    "content/posts/First-Post.md": "---\ntitle: First\n---\n\n" + HEADINGS_MD,
    "content/posts/second.md": "---\ntitle: Second\nslug: renamed\n---\n\n## Body\n\nText.\n",
    "content/docs/install.md": "---\ntitle: Install\nurl: /custom/install/\n---\n\n"
                               "## Steps\n\nText.\n",
    "content/docs/bundle/index.md": "---\ntitle: Bundle\n---\n\n## In the bundle\n\nText.\n",
    "content/posts/unfinished.md": "---\ntitle: Draft\ndraft: true\n---\n\n" + UNPUBLISHED,
    "content/posts/later.md": "---\ntitle: Later\ndate: 2999-01-01\n---\n\n" + UNPUBLISHED,
    "content/posts/gone.md": "---\ntitle: Gone\nexpiryDate: 2001-01-01\n---\n\n" + UNPUBLISHED,
    "content/posts/never.md": "---\ntitle: N\nbuild:\n  render: never\n---\n\n" + UNPUBLISHED,
    "content/headless/index.md": "---\ntitle: H\nheadless: true\n---\n\n" + UNPUBLISHED,
    "content/shared/_index.md": "---\ntitle: Shared\ncascade:\n  build:\n    render: never\n"
                                "    list: never\n---\n\n" + UNPUBLISHED,
    "content/shared/snippet.md": "---\ntitle: Snippet\n---\n\n" + UNPUBLISHED,
    "content/shared/kept.md": "---\ntitle: Kept\nbuild:\n  render: always\n---\n\n## Kept\n\nT.\n",
    "content/posts/dashes.md": "---\ntitle: D\n---\n\n## Example -- dashes --- and more\n\nT.\n",
    "content/posts/attributes.md": "---\ntitle: A\n---\n\n" + "".join(
        f"## {h}\n\nText.\n\n" for h in (
            'Step {class="no-step-marker"}', "Named {#named .c}", 'By attr {id="by-attr"}',
            "Not attrs {#a b}", "Spaced { #spaced }", 'Nested {data=[1, "s", {k=v}] .c}',
            "Templating {{#include}}", "Escaped \\{#e}")),
}


@pytest.mark.skipif(tool("hugo") is None, reason="Hugo is not installed")
def test_hugo_citations_resolve(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "site", HUGO_SITE)
    site = build_hugo(project)
    _assert_all_resolve(site, project / "content", "hugo")
    pairs, _, _ = citations(project / "content")
    urls = {url for url, _ in pairs}
    assert "https://docs.example.com/posts/renamed/" in urls
    assert "https://docs.example.com/custom/install/" in urls
    assert "https://docs.example.com/posts/first-post/" in urls
    _assert_left_out(site, project / "content")
    assert ("https://docs.example.com/shared/kept/", "kept") in pairs
    assert ("https://docs.example.com/posts/dashes/", "example--dashes--and-more") in pairs
    attributes = {a for url, a in pairs if url.endswith("/posts/attributes/")}
    assert attributes == {"step", "named", "by-attr", "not-attrs-a-b", "spaced", "nested",
                          "templating-include", "escaped-e"}


@pytest.mark.skipif(tool("hugo") is None, reason="Hugo is not installed")
def test_hugo_content_mounted_from_a_language_folder(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "site", {
        "hugo.toml": HUGO_SITE["hugo.toml"] + "[module]\n  [[module.mounts]]\n"
                     "    source = 'content/en'\n    target = 'content'\n",
        "content/en/_index.md": "---\ntitle: Home\n---\n\n## Welcome\n\nText.\n",
        "content/en/guide/install.md": "---\ntitle: Install\n---\n\n" + HEADINGS_MD,
    })
    site = build_hugo(project)
    _assert_all_resolve(site, project / "content" / "en", "hugo")
    urls = {url for url, _ in citations(project / "content" / "en")[0]}
    assert urls == {"https://docs.example.com/", "https://docs.example.com/guide/install/"}


@pytest.mark.skipif(tool("hugo") is None, reason="Hugo is not installed")
def test_hugo_languages_and_a_config_folder(tmp_path: Path) -> None:
    base = "https://docs.example.com/"
    # Docsy's layout: a content folder per language, settings split over config/
    folders = write_tree(tmp_path / "folders", {
        "config/_default/hugo.toml": HUGO_SITE["hugo.toml"],
        "config/_default/languages.toml": "[en]\ncontentDir = 'content/en'\nweight = 1\n"
                                          "[fr]\ncontentDir = 'content/fr'\nweight = 2\n",
        "config/_default/markup.toml": "[goldmark.parser]\nautoHeadingIDType = 'github-ascii'\n",
        "config/production/hugo.toml": "uglyURLs = true\n",
        "content/en/_index.md": "---\ntitle: Home\n---\n\n## Welcome\n\nText.\n",
        "content/en/docs/install.md": "---\ntitle: Install\n---\n\n" + HEADINGS_MD,
        "content/fr/_index.md": "---\ntitle: Accueil\n---\n\n## Bienvenue\n\nTexte.\n",
        "content/fr/docs/install.md": "---\ntitle: Installer\n---\n\n" + HEADINGS_MD,
    })
    site = build_hugo(folders)
    _assert_all_resolve(site, folders / "content", "hugo", lang="all")
    urls = {url for url, _ in citations(folders / "content", lang="all")[0]}
    assert urls == {base, base + "docs/install.html", base + "fr/", base + "fr/docs/install.html"}
    # one copy of each page by default (the unprefixed default language), as web sources keep
    assert {url for url, _ in citations(folders / "content")[0]} == {
        base, base + "docs/install.html"}
    assert {url for url, _ in citations(folders / "content", lang="fr")[0]} == {
        base + "fr/", base + "fr/docs/install.html"}
    # translations named by suffix, the default language under /en/ too
    names = write_tree(tmp_path / "names", {
        "hugo.toml": HUGO_SITE["hugo.toml"] + "defaultContentLanguageInSubdir = true\n"
                     "[languages.en]\nweight = 1\n[languages.fr]\nweight = 2\n",
        "content/about.md": "---\ntitle: About\n---\n\n" + HEADINGS_MD,
        "content/about.fr.md": "---\ntitle: À propos\n---\n\n" + HEADINGS_MD,
        "content/docs/_index.fr.md": "---\ntitle: Docs\n---\n\n## Liste\n\nTexte.\n",
        "content/docs/guide.v2.md": "---\ntitle: Guide\n---\n\n## Guide\n\nText.\n",
    })
    site = build_hugo(names)
    _assert_all_resolve(site, names / "content", "hugo", lang="all")
    urls = {url for url, _ in citations(names / "content", lang="all")[0]}
    assert urls == {base + "en/about/", base + "fr/about/", base + "fr/docs/",
                    base + "en/docs/guide.v2/"}


@pytest.mark.skipif(tool("hugo") is None, reason="Hugo is not installed")
def test_hugo_permalinks(tmp_path: Path) -> None:
    def page(front_matter: str) -> str:
        return f"---\n{front_matter}\n---\n\n## Body\n\nText.\n"

    project = write_tree(tmp_path / "site", {
        "hugo.yaml": "baseURL: https://docs.example.com/\n"
                     "disableKinds: [taxonomy, term, RSS, sitemap]\n"
                     "permalinks:\n"
                     "  blog: /:section/:year/:month/:day/:slugorcontentbasename\n"
                     "  posts: /p/:year/:title\n"
                     "  docs/api: /API/:sections/:filename\n"
                     "  notes: /n/:sections[1:]/:contentbasename/\n"
                     "  section:\n    docs: /manual/:sections\n",
        "content/blog/_index.md": page("title: Blog"),
        "content/blog/news/_index.md": page("title: News"),
        "content/blog/news/first-post/index.md": page(
            "title: First\ndate: 2018-10-06T08:00:00+10:00"),  # its own day, not UTC's
        "content/blog/news/slugged.md": page("title: S\nslug: My Slug\ndate: 2020-02-03"),
        "content/posts/Hello.md": page("title: Héllo Wörld! & Co\ndate: 2021-05-06"),
        "content/posts/undated.md": page("title: No date"),
        "content/docs/_index.md": page("title: Docs"),
        "content/docs/api/_index.md": page("title: API"),
        "content/docs/api/func.md": page("title: Func"),
        "content/docs/api/deep/x.md": page("title: X"),  # deep/ has no _index: no section
        "content/docs/guide/y.md": page("title: Y"),
        "content/notes/a/_index.md": page("title: A"),
        "content/notes/a/b/c.md": page("title: C"),
    })
    site = build_hugo(project)
    _assert_all_resolve(site, project / "content", "hugo")
    base = "https://docs.example.com/"
    urls = {url.removeprefix(base) for url, _ in citations(project / "content")[0]}
    assert urls == {"blog/", "blog/news/", "blog/2018/10/06/first-post/",
                    "blog/2020/02/03/my-slug/", "p/2021/héllo-wörld-co/", "p/1/no-date/",
                    "manual/docs/", "manual/docs/api/", "api/docs/api/func/",
                    "api/docs/api/x/", "docs/guide/y/", "notes/a/", "n/a/c/"}


@pytest.mark.skipif(tool("hugo") is None, reason="Hugo is not installed")
def test_hugo_definition_terms_number_the_headings_after_them(tmp_path: Path) -> None:
    """With ``autoDefinitionTermID`` a definition term takes its id from the headings'
    counter: a heading after a term of its text is ``-1`` on the page, and its section
    was cited at the term."""
    terms = ("## Alpha\n\nText.\n\n    Code\n    : no term\n\nAlpha term\n: the definition\n\n"
             "First *pair*\nSecond\n: both\n\nLoose\n\n: a loose one\n\n- Listed\n  : in a list\n\n"
             "## Alpha term\n\nT.\n\n## Second\n\nT.\n\n## Loose\n\nT.\n\n## Listed\n\nT.\n\n"
             "## Code\n\nT.\n\n## Alpha\n\nT.\n")
    project = write_tree(tmp_path / "site", {
        "hugo.toml": HUGO_SITE["hugo.toml"] + "[markup.goldmark.parser]\n"
                     "autoDefinitionTermID = true\n",
        "content/terms.md": "---\ntitle: Terms\n---\n\n" + terms,
    })
    site = build_hugo(project)
    built = (site / "terms" / "index.html").read_text()
    on_page = re.findall(r'<h2 id="([^"]+)"', built)
    assert on_page == ["alpha", "alpha-term-1", "second-1", "loose-1", "listed-1", "code",
                       "alpha-1"]
    cited = [a for url, a in citations(project / "content")[0] if url.endswith("/terms/")]
    assert [a for a in cited if a] == on_page
    _assert_all_resolve(site, project / "content", "hugo", minimum=7)


VITEPRESS_SITE = {
    ".vitepress/config.mts": "export default { cleanUrls: CLEAN, ignoreDeadLinks: true, "
                             "srcExclude: ['**/README.md', 'drafts/**'] }\n",
    "index.md": "# Home\n\nHi.\n\n## Getting started\n\nText.\n",
    "guide/install.md": HEADINGS_MD,
    "guide/index.md": "# Guide\n\nThe guide.\n",
    "guide/emoji.md": sections("# Emoji :tada:", "## Party :tada: time", "## :rocket: Launch",
                               "## Not:an:emoji"),
    "guide/README.md": "# Readme\n\n" + UNPUBLISHED,
    "drafts/wip.md": "# WIP\n\n" + UNPUBLISHED,
}


@pytest.mark.skipif(tool("vitepress") is None, reason="VitePress is not installed")
@pytest.mark.parametrize("clean", [True, False])
def test_vitepress_citations_resolve(tmp_path: Path, clean: bool) -> None:
    files = dict(VITEPRESS_SITE)
    files[".vitepress/config.mts"] = files[".vitepress/config.mts"].replace(
        "CLEAN", "true" if clean else "false")
    project = write_tree(tmp_path / "docs", files)
    site = build_vitepress(project)
    _assert_all_resolve(site, project, "vitepress")
    _assert_left_out(site, project)


@pytest.mark.skipif(tool("vitepress") is None, reason="VitePress is not installed")
def test_vitepress_rewrites_move_pages(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "docs", {
        ".vitepress/config.mts": "export default { cleanUrls: true, ignoreDeadLinks: true, "
                                 "rewrites: { 'en/:rest*': ':rest*', "
                                 "'packages/:pkg/src/(.*)': ':pkg/index.md' } }\n",
        "en/index.md": "# Home\n\n## Welcome\n\nText.\n",
        "en/guide/install.md": HEADINGS_MD,
        "zh/guide/install.md": "# 安装\n\n## 步骤\n\nText.\n",
        "packages/widget/src/intro.md": "# Widget\n\n## Using it\n\nText.\n",
    })
    site = build_vitepress(project)
    _assert_all_resolve(site, project, "vitepress")
    urls = {url.removeprefix("https://docs.example.com/")
            for url, _ in citations(project, lang="all")[0]}
    assert urls == {"", "guide/install", "zh/guide/install", "widget/"}
    # by default one language of each page: the unprefixed one
    assert "zh/guide/install" not in {url for url, _ in citations(project)[0]}


VITEPRESS_INCLUDES = {
    ".vitepress/config.mts": "export default { srcDir: 'src', ignoreDeadLinks: true, "
                             "srcExclude: ['parts/**'] }\n",
    "src/guide.md": "# Guide\n\n## Basics\n\n<!--@include: ./parts/basics.md-->\n\n"
                    "## Section\n\n<!--@include: @/parts/basics.md#my-base-section-->\n\n"
                    "## Code\n\n<<< @/snippets/demo.js#main{1 js}\n",
    "src/parts/basics.md": "---\ntitle: Part\n---\nGetting started.\n\n### Configuration\n\n"
                           "Use the file.\n\n## My Base Section\n\nBase content.\n\n"
                           "### My Sub Section\n\nSub content.\n\n## Another\n\nOut.\n",
    "src/snippets/demo.js": "// #region main\nconst answer = 42\n// #endregion main\nrest()\n",
}


@pytest.mark.skipif(tool("vitepress") is None, reason="VitePress is not installed")
def test_vitepress_inclusions_are_read_and_their_headings_cited(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "docs", VITEPRESS_INCLUDES)
    site = build_vitepress(project)
    _assert_all_resolve(site, project, "vitepress", minimum=8)
    assert {"configuration", "my-sub-section", "my-sub-section-1", "code"} <= {
        anchor for _, anchor in citations(project)[0]}
    [body] = page_bodies(project).values()
    assert body.count("Sub content.") == 2 and "Out." in body and "title: Part" not in body
    assert "```js\nconst answer = 42\n```" in body
    assert "@include" not in body and "<<<" not in body and "rest()" not in body

JEKYLL_SITE = {
    "index.md": "---\ntitle: Home\n---\n\n## Welcome\n\nSome text.\n",
    "guide/install.md": "---\ntitle: Install\n---\n\n" + HEADINGS_MD,
    "guide/index.md": "---\ntitle: Guide\n---\n\n## The guide\n\nText.\n",
    "about.markdown": "---\npermalink: /team/about-us/\n---\n\n## Who we are\n\nText.\n",
    "_posts/2024-01-02-hello-world.md": "---\ntitle: Hello\n---\n\n## First post\n\nHi.\n",
    "_drafts/unfinished.md": "---\ntitle: Draft\n---\n\n## Not yet\n\nText.\n",
    "_includes/note.md": "## Included\n\n{{ include.level }}: back up first.\n",
    "guide/_part.md": "## From beside\n\nRelative text.\n",
    "guide/liquid.md": "---\ntitle: Liquid\n---\n\n{% comment %}\n## Hidden\n{% endcomment %}\n\n"
                       "## Highlighted\n\n{% highlight ruby %}\nputs 'hi'\n{% endhighlight %}\n\n"
                       "{% if page.title %}Shown.{% endif %} {% raw %}{{ page.title }}{% endraw %}"
                       "\n\n## After the code\n\nText.\n\n"
                       "{% include note.md level=\"Warning\" %}\n\n"
                       "{% include_relative _part.md %}\n",
    "hidden.md": "---\ntitle: Hidden\npublished: false\n---\n\n" + UNPUBLISHED,
    "_posts/2999-01-02-later.md": "---\ntitle: Later\n---\n\n" + UNPUBLISHED,
    "scratch/wip.md": "---\ntitle: WIP\n---\n\n" + UNPUBLISHED,
    "notes.tmp.md": "---\ntitle: Tmp\n---\n\n" + UNPUBLISHED,
    "vendor/bundle/gem/README.md": "---\ntitle: Gem\n---\n\n" + UNPUBLISHED,
}
JEKYLL_EXCLUDE = "exclude: [scratch/, '*.tmp.md']\n"


@pytest.mark.skipif(tool("jekyll") is None, reason="Jekyll is not installed")
@pytest.mark.parametrize("config", ["title: Demo\n", "permalink: pretty\n",
                                    "kramdown:\n  input: kramdown\n"])
def test_jekyll_citations_resolve(tmp_path: Path, config: str) -> None:
    project = write_tree(tmp_path / "site", {**JEKYLL_SITE,
                                             "_config.yml": config + JEKYLL_EXCLUDE})
    site = build_jekyll(project)
    _assert_all_resolve(site, project, "jekyll")
    _assert_left_out(site, project)
    anchors = {a for url, a in citations(project)[0] if "liquid" in url}
    assert {"highlighted", "after-the-code"} <= anchors and "hidden" not in anchors
    assert {"included", "from-beside"} <= anchors  # from the files the page includes
    assert "Warning: back up first." in "".join(page_bodies(project).values())
    pretty = config.startswith("permalink: pretty")
    urls = {url for url, _ in citations(project)[0]}
    assert "https://docs.example.com/team/about-us/" in urls
    assert ("https://docs.example.com/2024/01/02/hello-world" + ("/" if pretty else ".html")
            in urls)
    assert not any("unfinished" in url or "note" in url for url in urls)
    assert "https://docs.example.com/2024/01/02/hello-world" + ("/" if pretty else ".html") in urls


JEKYLL_COLLECTIONS_SITE = {
    "_config.yml": "collections:\n  docs:\n    output: true\n    permalink: /:collection/:path/\n"
                   "  recipes:\n    output: true\n  notes: {}\n"
                   "  posts:\n    permalink: /news/:year/:month/:day/:title/\n"
                   "timezone: America/Los_Angeles\n",
    "_docs/installation.md": "---\ntitle: Install\n---\n\n" + HEADINGS_MD,
    "_docs/guide/advanced.md": "---\ntitle: Advanced\n---\n\n## Going further\n\nText.\n",
    "_docs/explicit.md": "---\npermalink: /docs/:name-x/\n---\n\n## Placeholders\n\nText.\n",
    "_recipes/pancake-mix.md": "---\ntitle: Pancakes\n---\n\n## Batter\n\nText.\n",
    "_notes/private.md": "---\ntitle: Private\n---\n\n" + UNPUBLISHED,
    "_posts/2024-01-02-Hello-World.md": "---\ntitle: Hello\n---\n\n## First post\n\nHi.\n",
    "blog/_posts/2024-05-06-inner.md": "---\ntitle: Inner\n---\n\n## In a category\n\nT.\n",
    "about.md": "---\npermalink: /:path/:basename:output_ext\n---\n\n## About us\n\nT.\n",
    # the site's day of a post's time; a kramdown block IAL; Liquid in a heading
    "_posts/2013-05-06-late.md": "---\ndate: 2013-05-06 02:12:52 +0200\n---\n\n## Late\n\nT.\n",
    "_docs/attributes.md": "---\ntitle: A\n---\n\n## Named by an IAL\n{: #by-ial .note}\n\n"
                           "Text.\n\n## Sorting {% if true %}{% endif %}\n\nText.\n",
    # an HTML page template, moved by its front matter
    "pages/home.html": "---\npermalink: /home/\n---\n<main><h2 id='welcome'>Welcome</h2>"
                       "<p>Text.</p></main>\n",
    "pages/redirect.html": "---\nredirect_to: /home/\n---\n",
}


@pytest.mark.skipif(tool("jekyll") is None, reason="Jekyll is not installed")
def test_jekyll_collections_and_permalink_templates(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "site", JEKYLL_COLLECTIONS_SITE)
    site = build_jekyll(project)
    _assert_all_resolve(site, project, "jekyll")
    _assert_left_out(site, project)
    urls = {url.removeprefix("https://docs.example.com/") for url, _ in citations(project)[0]}
    assert urls == {"docs/installation/", "docs/guide/advanced/", "docs/explicit-x/",
                    "recipes/pancake-mix.html", "news/2024/01/02/Hello-World/",
                    "news/2024/05/06/inner/", "about.html", "news/2013/05/05/late/",
                    "docs/attributes/", "home/"}
    anchors = {a for url, a in citations(project)[0] if url.endswith("/attributes/")}
    assert "by-ial" in anchors and not any("{" in (a or "") for a in anchors)


BARE_JEKYLL_SITE = {  # files without front matter, which Jekyll copies as they are
    "README.md": "# Project\n\n## Start here\n\nText.\n",
    "notes.md": "# Notes\n\n## A note\n\nText.\n",
    "LICENSE.md": "# License\n\n## Terms\n\nText.\n",
    "guide/README.md": "# Guide readme\n\n## Kept a file\n\nText.\n",
    "guide/index.md": "---\ntitle: Guide\n---\n\n## The guide\n\nText.\n",
    "page.md": "---\ntitle: Page\n---\n\n## With front matter\n\nText.\n",
    "static.html": "<html><body><main><h2 id='as-is'>As is</h2><p>Copied.</p></main>"
                   "</body></html>\n",
}


@pytest.mark.skipif(tool("jekyll") is None, reason="Jekyll is not installed")
@pytest.mark.parametrize("github_pages", [True, False])
def test_jekyll_files_without_front_matter(tmp_path: Path, github_pages: bool) -> None:
    """Plain Jekyll copies them; GitHub Pages' plugins (listed here, as the real build
    here has no GitHub) make pages of them and a README the index of its folder. A
    Gemfile without ``github-pages`` says the site is not built by GitHub Pages."""
    files = dict(BARE_JEKYLL_SITE)
    if github_pages:
        files["_config.yml"] = ("plugins: [jekyll-optional-front-matter, "
                                "jekyll-readme-index]\n")
    else:
        files |= {"_config.yml": "title: Demo\n", "Gemfile": "gem 'jekyll'\n"}
    project = write_tree(tmp_path / "site", files)
    try:
        site = build_jekyll(project)
    except RuntimeError as exc:
        if github_pages and "jekyll-optional-front-matter" in str(exc):
            pytest.skip("GitHub Pages' plugins are not installed")
        raise
    _assert_all_resolve(site, project, "jekyll", minimum=3)
    urls = {url.removeprefix("https://docs.example.com/") for url, _ in citations(project)[0]}
    assert urls == ({"", "notes.html", "guide/", "page.html", "static.html"} if github_pages
                    else {"guide/", "page.html", "static.html"})


DOCUSAURUS_SITE = {
    "docusaurus.config.js": "module.exports = { title: 'Demo', url: 'https://docs.example.com',"
                            " baseUrl: '/', onBrokenLinks: 'ignore', onBrokenMarkdownLinks: "
                            "'ignore', markdown: { format: 'detect' }, OPTIONS presets: "
                            "[['classic', { docs: { DOCS }, blog: false, theme: {} }]] };\n",
    "src/note.js": "export default function Note() { return null; }\n",
    "DIR/intro.md": "# Intro\n\nHello.\n\n## Getting started\n\nText.\n",
    "DIR/guide/01-install.md": HEADINGS_MD,
    "DIR/guide/index.md": "# Guide\n\nThe guide.\n\n## Overview\n\nText.\n",
    "DIR/other/renamed.md": "---\nslug: /custom/place\n---\n\n# Renamed\n\n## Inside\n\nT.\n",
    "DIR/other/with-id.md": "---\nid: given-id\n---\n\n# With id\n\n## Section\n\nText.\n",
    # named like its folder: the folder's index, whatever its id; a number prefix keeps it
    # from being one
    "DIR/tools/tools.md": "---\nid: tools-overview\n---\n\n# Tools\n\n## Toolbox\n\nT.\n",
    "DIR/setup/02-setup.md": "# Setup\n\n## Prepare\n\nText.\n",
    "DIR/mdx/page.mdx": "import Note from '@site/src/note';\n\n# MDX page\n\n<Note />\n\n"
                        "## Hello {#hello-custom}\n\nText.\n\n## Second\n\nMore.\n",
    "DIR/draft.md": "---\ndraft: true\n---\n\n# Draft\n\n" + UNPUBLISHED,
    "DIR/_steps.mdx": "## Shared step\n\nRun the shared step.\n",
    "DIR/guide/with-partial.mdx": "import Steps from '../_steps.mdx';\n\n# With partial\n\n"
                                  "<Steps />\n\n## After it\n\nText.\n",
}


# A versioned docs folder's sidebar: every page, as the docs folder's own default sidebar
AUTOGENERATED_SIDEBAR = '{"docs": [{"type": "autogenerated", "dirName": "."}]}'


def _anchored(project: Path, **options: str) -> set[tuple[str, str]]:
    """(path under the base URL, anchor) of each citation of a section."""
    return {(url.removeprefix(BASE_URL), anchor)
            for url, anchor in citations(project, **options)[0] if anchor}


@pytest.mark.skipif(tool("docusaurus") is None, reason="Docusaurus is not installed")
@pytest.mark.parametrize(("options", "docs", "folder", "route"), [
    ("", "", "docs", "docs/"),
    ("trailingSlash: true,", "", "docs", "docs/"),
    ("", "path: 'guides', routeBasePath: '/'", "guides", ""),
])
def test_docusaurus_citations_resolve(tmp_path: Path, options: str, docs: str, folder: str,
                                      route: str) -> None:
    files = {name.replace("DIR", folder): text.replace("OPTIONS", options).replace("DOCS", docs)
             for name, text in DOCUSAURUS_SITE.items()}
    project = write_tree(tmp_path / "site", files)
    site = build_docusaurus(project)
    _assert_all_resolve(site, project / folder, "docusaurus")
    _assert_left_out(site, project / folder)
    pairs = citations(project / folder)[0]
    slash = "/" if options else ""
    base = "https://docs.example.com/" + route
    assert (base + "custom/place" + slash, "inside") in pairs
    assert (base + "other/given-id" + slash, "section") in pairs
    assert (base + "tools" + slash, "toolbox") in pairs
    assert (base + "setup/setup" + slash, "prepare") in pairs
    assert (base + "guide/with-partial" + slash, "shared-step") in pairs  # from its partial
    assert (base + "guide/install" + slash, "install-the-tool-1") in pairs
    assert (base + "intro" + slash, None) in pairs  # the h1 has no id on the page


@pytest.mark.skipif(tool("docusaurus") is None, reason="Docusaurus is not installed")
@pytest.mark.parametrize("blog", ["", "routeBasePath: 'news', showReadingTime: true"])
def test_docusaurus_blog_posts(tmp_path: Path, blog: str) -> None:
    post = "---\ntitle: A post\n---\n\nIntro.\n\n<!-- truncate -->\n\n## SECTION\n\nText.\n"
    project = write_tree(tmp_path / "site", {
        "docusaurus.config.js": DOCUSAURUS_SITE["docusaurus.config.js"].replace(
            "OPTIONS", "").replace("DOCS", "").replace("blog: false", f"blog: {{ {blog} }}"),
        "docs/intro.md": "# Intro\n\n## Start here\n\nText.\n",
        "blog/authors.yml": "ann:\n  name: Ann\n",
        "blog/2024-05-01-hello.md": post.replace("SECTION", "Dated name"),
        "blog/2024-06-02-folder-post/index.md": post.replace("SECTION", "Dated folder"),
        "blog/2023/01/02/nested.md": post.replace("SECTION", "Dated path"),
        "blog/releases/2022-03-04-v1.mdx": post.replace("SECTION", "In a folder"),
        # undated names need a date of their own (else Docusaurus asks git for one)
        "blog/plain-name.md": post.replace("title: A post", "title: P\ndate: 2021-01-01")
                                  .replace("SECTION", "No date"),
        "blog/moved.md": post.replace("title: A post", "title: M\ndate: 2021-01-01\n"
                                      "slug: custom/slug").replace("SECTION", "Front matter slug"),
        "blog/_partial.md": UNPUBLISHED,
        "blog/draft.md": "---\ndraft: true\n---\n\n" + UNPUBLISHED,
    })
    site = build_docusaurus(project)
    _assert_all_resolve(site, project, "docusaurus", minimum=7)
    _assert_left_out(site, project)
    route = "news/" if blog else "blog/"
    assert {(route + "2024/05/01/hello", "dated-name"), (route + "2024/06/02/folder-post",
            "dated-folder"), (route + "2023/01/02/nested", "dated-path"),
            (route + "2022/03/04/releases/v1", "in-a-folder"),
            (route + "plain-name", "no-date"), (route + "custom/slug", "front-matter-slug"),
            ("docs/intro", "start-here")} <= _anchored(project)


@pytest.mark.skipif(tool("docusaurus") is None, reason="Docusaurus is not installed")
def test_docusaurus_versions_and_translations(tmp_path: Path) -> None:
    sidebar = AUTOGENERATED_SIDEBAR
    i18n = "i18n/fr/docusaurus-plugin-content-docs"
    project = write_tree(tmp_path / "site", {
        "docusaurus.config.js": DOCUSAURUS_SITE["docusaurus.config.js"].replace(
            "OPTIONS", "i18n: { defaultLocale: 'en', locales: ['en', 'fr'] },").replace(
            "DOCS", ""),
        "versions.json": '["1.0", "0.9"]',
        "versioned_sidebars/version-1.0-sidebars.json": sidebar,
        "versioned_sidebars/version-0.9-sidebars.json": sidebar,
        "docs/intro.md": "# Intro\n\n## Unreleased\n\nText.\n",
        "docs/new.md": "# New\n\n## Only in next\n\nText.\n",
        "versioned_docs/version-1.0/intro.md": "# Intro\n\n## Latest release\n\nText.\n",
        "versioned_docs/version-0.9/intro.md": "# Intro\n\n## Older release\n\nText.\n",
        "versioned_docs/version-0.8/intro.md": "# Intro\n\n## Dropped\n\nText.\n",
        f"{i18n}/current/intro.md": "# Intro\n\n## Pas encore\n\nTexte.\n",
        f"{i18n}/version-1.0/intro.md": "# Intro\n\n## Dernière version\n\nTexte.\n",
    })
    site = build_docusaurus(project)
    _assert_all_resolve(site, project, "docusaurus", lang="all", version="all", minimum=6)
    assert _anchored(project, lang="all", version="all") == {
        ("docs/next/intro", "unreleased"), ("docs/next/new", "only-in-next"),
        ("docs/intro", "latest-release"), ("docs/0.9/intro", "older-release"),
        ("fr/docs/next/intro", "pas-encore"), ("fr/docs/intro", "dernière-version")}
    # by default one copy of each page, as the site serves it at docs/: the latest release
    assert _anchored(project) == {("docs/intro", "latest-release")}
    # the docs folder alone is the unreleased version, at docs/next/
    assert _anchored(project / "docs") == {("docs/next/intro", "unreleased"),
                                           ("docs/next/new", "only-in-next")}


@pytest.mark.skipif(tool("docusaurus") is None, reason="Docusaurus is not installed")
def test_docusaurus_docs_plugin_instances(tmp_path: Path) -> None:
    config = DOCUSAURUS_SITE["docusaurus.config.js"].replace("OPTIONS", "").replace(
        "DOCS", "routeBasePath: 'guide'").replace(
        "] };", "], plugins: [['@docusaurus/plugin-content-docs', { id: 'community', "
        "path: 'community', // the people's docs {\n routeBasePath: 'people', "
        "sidebarPath: undefined }]] };")
    project = write_tree(tmp_path / "site", {
        "docusaurus.config.js": config,
        "docs/intro.md": "# Intro\n\n## Start here\n\nText.\n",
        "community/team/01-who.md": "# Who\n\n## The maintainers\n\nText.\n",
        "community/index.md": "# Community\n\n## Welcome all\n\nText.\n",
        "src/pages/about.md": "# About\n\n## Not docs\n\nText.\n",
    })
    site = build_docusaurus(project)
    _assert_all_resolve(site, project, "docusaurus", minimum=3)
    assert _anchored(project) == {("guide/intro", "start-here"),
                                  ("people/team/who", "the-maintainers"),
                                  ("people", "welcome-all"),
                                  ("about", "not-docs")}  # the pages plugin's


@pytest.mark.skipif(tool("docusaurus") is None, reason="Docusaurus is not installed")
def test_docusaurus_plugin_instance_versions_and_translations(tmp_path: Path) -> None:
    i18n = "i18n/fr/docusaurus-plugin-content-docs-community"
    project = write_tree(tmp_path / "site", {
        "docusaurus.config.js": DOCUSAURUS_SITE["docusaurus.config.js"].replace(
            "OPTIONS", "i18n: { defaultLocale: 'en', locales: ['en', 'fr'] },").replace(
            "DOCS", "routeBasePath: 'guide'").replace(
            "] };", "], plugins: [['@docusaurus/plugin-content-docs', { id: 'community', "
            "path: 'community', routeBasePath: 'people' }]] };"),
        "community_versions.json": '["1.0"]',
        "community_versioned_sidebars/version-1.0-sidebars.json": AUTOGENERATED_SIDEBAR,
        "docs/intro.md": "# Intro\n\n## Start here\n\nText.\n",
        "community/who.md": "# Who\n\n## Maintainers now\n\nText.\n",
        "community_versioned_docs/version-1.0/who.md": "# Who\n\n## Maintainers then\n\nT.\n",
        f"{i18n}/current/who.md": "# Qui\n\n## Mainteneurs actuels\n\nTexte.\n",
        f"{i18n}/version-1.0/who.md": "# Qui\n\n## Anciens mainteneurs\n\nTexte.\n",
    })
    site = build_docusaurus(project)
    _assert_all_resolve(site, project, "docusaurus", lang="all", version="all", minimum=5)
    assert _anchored(project, lang="all", version="all") == {
        ("guide/intro", "start-here"), ("people/next/who", "maintainers-now"),
        ("people/who", "maintainers-then"), ("fr/people/next/who", "mainteneurs-actuels"),
        ("fr/people/who", "anciens-mainteneurs")}


STARLIGHT_SITE = {
    # cacheDir: Astro keeps its content store there, by default inside node_modules
    "astro.config.mjs": "import { defineConfig } from 'astro/config';\n"
                        "import starlight from '@astrojs/starlight';\n"
                        "export default defineConfig({ cacheDir: './.astro-cache', OPTIONS "
                        "integrations: [starlight({ title: 'Demo' })] });\n",
    "src/content.config.ts": "import { defineCollection } from 'astro:content';\n"
                             "import { docsLoader } from '@astrojs/starlight/loaders';\n"
                             "import { docsSchema } from '@astrojs/starlight/schema';\n"
                             "export const collections = { docs: defineCollection("
                             "{ loader: docsLoader(), schema: docsSchema() }) };\n",
    "src/content/docs/index.md": "---\ntitle: Home\n---\n\nWelcome.\n\n## Start here\n\nT.\n",
    "src/content/docs/guide/Install Guide.md": "---\ntitle: Install\n---\n\n" + HEADINGS_MD
    + "## Foo -\n\nT.\n\n## Foo\n\nT.\n\n## Bar!\n\nT.\n\n## Bar-\n\nT.\n",
    "src/content/docs/guide/index.mdx": "---\ntitle: Guide\n---\n\nimport { Aside } from "
                                        "'@astrojs/starlight/components';\n\n## Guide intro"
                                        "\n\n<Aside>Careful.</Aside>\n\nText.\n",
    "src/partials/steps.mdx": "## Shared step\n\nRun the shared step.\n",
    "src/content/docs/guide/with-partial.mdx": "---\ntitle: With partial\n---\n\nimport Steps "
                                               "from '../../../partials/steps.mdx';\n\n"
                                               "<Steps />\n\n## After it\n\nText.\n",
    "src/content/docs/other.md": "---\ntitle: Other\nslug: custom/place\n---\n\n## Inside"
                                 "\n\nText.\n",
    "src/content/docs/draft.md": "---\ntitle: Draft\ndraft: true\n---\n\n" + UNPUBLISHED,
    "src/content/docs/_partial.md": "---\ntitle: Partial\n---\n\n" + UNPUBLISHED,
    "src/content/docs/404.md": "---\ntitle: Not found\n---\n\nNothing here.\n",
}


@pytest.mark.skipif(tool("astro") is None, reason="Astro (with Starlight) is not installed")
@pytest.mark.parametrize(("options", "page"), [
    ("", "guide/install-guide/"),
    ("trailingSlash: 'never',", "guide/install-guide"),
    ("build: { format: 'file' },", "guide/install-guide.html"),
])
def test_starlight_citations_resolve(tmp_path: Path, options: str, page: str) -> None:
    files = {name: text.replace("OPTIONS", options) for name, text in STARLIGHT_SITE.items()}
    project = write_tree(tmp_path / "site", files)
    site = build_starlight(project)  # with a package.json naming the installed Astro
    version = astro_version()
    _assert_all_resolve(site, project, "starlight")
    _assert_all_resolve(site, project / "src" / "content" / "docs", "starlight")
    _assert_left_out(site, project)
    pairs = citations(project)[0]
    base = "https://docs.example.com/"
    assert any(url.startswith(base + "guide/with-partial") and anchor == "shared-step"
               for url, anchor in pairs)  # from the partial it imports
    anchors = [anchor for url, anchor in pairs if url == base + page]
    if int(version.split(".")[0]) <= 5:  # one trailing dash is cut after the slug is unique
        assert "foo-" in anchors and anchors.count("bar") == 2
    else:  # kept, as GitHub keeps it
        assert "foo--" in anchors and "bar-" in anchors
    assert (base, "start-here") in pairs
    assert not [url for url, _ in pairs if "404" in url]  # the not-found page is no page
