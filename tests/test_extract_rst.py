"""reStructuredText → markdown: structure, Sphinx ids, and Sphinx-only markup read as
text rather than errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import html as lxml_html

from kbctl.chunk import chunk_markdown
from kbctl.errors import ExtractError
from kbctl.extract.rst import rst_to_markdown
from kbctl.extract.sphinx_titles import SphinxTitles
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec
from tests.sitebuild import (
    build_sphinx,
    check,
    citations,
    failures,
    loaded_pages,
    page_bodies,
    tool,
    write_tree,
)

DOC = """\
.. _top-label:

Main title
==========

Intro with :func:`os.path.join`, :meth:`~pathlib.Path.read_text`, :class:`dict`,
:ref:`the guide <guide-label>`, :term:`bytecode`, :pep:`8` and :kbd:`Ctrl-C`.

.. note:: Notes are kept as text.

.. warning::

   So are warnings.

Section one
-----------

.. code-block:: python

   print("hello")

A literal block::

   $ run --fast

* first
* second

  nested paragraph

1. one
2. two

=====  =====
Name   Value
=====  =====
a      1
b      2
=====  =====

term
   Its definition.

.. versionadded:: 3.2
   The *fast* flag.

.. deprecated:: 3.9

.. toctree::
   :maxdepth: 2

   hidden/page

.. index:: single: hidden

Section one
-----------

The same title again.

.. _guide-label:

Guide
-----

.. module:: demo

.. function:: run(config, *, fast=False)
              run_all()

   Runs it.

.. class:: Engine(name)

   .. method:: start()

      Starts.

.. unknown-directive:: with an argument
   :unknown-option: x

   And its content.
"""


def test_sections_carry_docutils_ids_and_labels() -> None:
    doc = rst_to_markdown(DOC)
    assert doc.title == "Main title"
    chunks = chunk_markdown(doc.markdown, max_tokens=2000)
    anchors = [c.anchor for c in chunks]
    assert anchors[0] == "main-title"
    assert "section-one" in anchors
    assert "## Guide {#guide}" in doc.markdown  # the title id comes first, then the label
    # the second "Section one" gets a numbered docutils id, which depends on everything
    # Sphinx numbers before it: cite the enclosing section instead
    assert "id1" not in anchors and anchors.count("main-title") >= 2


def test_code_lists_tables_admonitions_and_roles_become_markdown() -> None:
    md = rst_to_markdown(DOC).markdown
    assert '```python\nprint("hello")\n```' in md
    assert "```\n$ run --fast\n```" in md
    assert "- first\n- second\n\n  nested paragraph" in md
    assert "1. one\n2. two" in md
    assert "| Name | Value |\n| --- | --- |\n| a | 1 |" in md
    assert "**Note:** Notes are kept as text." in md
    assert "**Warning:** So are warnings." in md
    assert "**term**\nIts definition." in md
    assert "`os.path.join()`" in md and "`read_text()`" in md and "`dict`" in md
    assert "the guide" in md and "bytecode" in md and "PEP 8" in md and "`Ctrl-C`" in md
    assert "**Added in version 3.2:** The *fast* flag." in md
    assert "**Deprecated since version 3.9:**" in md
    assert "hidden/page" not in md and "single: hidden" not in md
    assert "with an argument" in md and "And its content." in md
    assert ":func:" not in md and "System Message" not in md


@pytest.mark.parametrize(("expression", "shown"), [
    ("html", True), ("latex", False), ("not latex", True), ("html and not epub", True),
    ("latex or (builder_html and format_html)", True), ("epub or text", False),
    ("not (html or latex)", False), ("(((", True), ("html latex", True), ("", True),
    ("and", True), ("not " * 100 + "html", True),
])
def test_only_shows_what_an_html_build_shows(expression: str, shown: bool) -> None:
    text = f"Page\n====\n\n.. only:: {expression}\n\n   Conditional text.\n\nAfter.\n"
    markdown = rst_to_markdown(text).markdown
    assert ("Conditional text." in markdown) is shown
    assert "After." in markdown and "latex" not in markdown.replace("Conditional", "")


def test_tabs_and_code_captions_read_as_the_page_shows_them() -> None:
    text = ("Page\n====\n\n.. code-block:: jinja\n   :caption: page.txt\n\n"
            "   {% block body %}\n\n.. tab-set::\n\n   .. tab-item:: Linux\n\n"
            "      apt install x\n\n.. tabs::\n\n   .. code-tab:: py Python\n\n"
            "      print(1)\n\n.. tab:: macOS\n\n   brew install x\n")
    markdown = rst_to_markdown(text).markdown
    assert '```jinja title="page.txt"\n{% block body %}\n```' in markdown
    assert "**Linux**\n\napt install x" in markdown
    assert "**Python**\n\n```py\nprint(1)\n```" in markdown
    assert "**macOS**\n\nbrew install x" in markdown


def test_a_terms_classifier_follows_a_colon() -> None:
    markdown = rst_to_markdown("Page\n====\n\nchecks : set\n    The checks to run.\n").markdown
    assert "**checks : set**\nThe checks to run." in markdown


def test_a_python_reference_shows_no_leading_dot() -> None:
    markdown = rst_to_markdown("Page\n====\n\nUse :func:`.lazyload`, :py:class:`.Engine` "
                               "and :meth:`~.Query.all`.\n").markdown
    assert "Use `lazyload()`, `Engine` and `all()`." in markdown


def test_a_pages_leading_field_list_is_its_metadata_not_text() -> None:
    text = (".. a comment\n\n:orphan:\n:tocdepth: 2\n\nPage\n====\n\n"
            ":param x: shown, a field list in the text\n")
    markdown = rst_to_markdown(text).markdown
    assert "orphan" not in markdown and "tocdepth" not in markdown
    assert "shown, a field list in the text" in markdown


def test_a_changelogs_imported_entries_are_not_shown() -> None:
    # sphinx-changelog's changelog_imports pulls in entries to link to, and shows none
    text = ("Changelog\n=========\n\n.. changelog_imports::\n\n"
            "    .. include:: changelog_14.rst\n        :start-line: 5\n\n"
            "    :tags: bug, engine\n\n    An imported entry.\n\nThis release.\n")
    markdown = rst_to_markdown(text).markdown
    assert "imported entry" not in markdown and "tags" not in markdown
    assert "This release." in markdown


def test_api_descriptions_keep_sphinx_ids() -> None:
    md = rst_to_markdown(DOC).markdown
    assert "`demo.run(config, *, fast=False)` {#demo.run}" in md
    assert "`demo.run_all()`" in md
    assert "{#demo.Engine}" in md and "{#demo.Engine.start}" in md
    anchors = [c.anchor for c in chunk_markdown(md)]
    assert "demo.Engine.start" in anchors


def test_no_file_is_read_through_include(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    md = rst_to_markdown(f"Title\n=====\n\n.. include:: {secret}\n\n.. literalinclude:: "
                         f"{secret}\n\n.. raw:: html\n\n   <script>x</script>\n").markdown
    assert "TOP SECRET" not in md and "<script>" not in md


def test_rst_files_are_ingested_with_sphinx_urls(tmp_path: Path) -> None:
    (tmp_path / "conf.py").write_text("project = 'x'\n")
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "install.rst").write_text(DOC)
    (tmp_path / "_sources").mkdir()
    (tmp_path / "_sources" / "copy.rst.txt").write_text(DOC)
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(tmp_path),
                                         {"base_url": "https://d.example/"}))
    assert [leaf.url for leaf in expansion.leaves] == ["https://d.example/guide/install.html"]
    [loaded] = list(source.load(expansion.leaves, lambda ref: None))
    assert loaded.document is not None and loaded.document.title == "Main title"
    assert loaded.document.meta["generator"] == "sphinx"


def test_the_projects_default_role_reads_text_without_a_role(tmp_path: Path) -> None:
    write_tree(tmp_path, {"conf.py": "project = 'x'\ndefault_role = 'literal'\n",
                          "index.rst": "Home\n====\n\nSee `pytest_fixture_setup`.\n"})
    [page] = loaded_pages(tmp_path)
    assert page.document is not None
    assert "See `pytest_fixture_setup`." in page.document.body


def test_the_projects_extlinks_show_their_captions(tmp_path: Path) -> None:
    write_tree(tmp_path, {"conf.py": "project = 'x'\nextlinks = {\n    'issue': "
                                     "('https://github.com/o/r/issues/%s', '#%s'),\n"
                                     "    'pypi': ('https://pypi.org/project/%s', None),\n}\n",
                          "index.rst": "Home\n====\n\nFixed :issue:`1427` and :issue:`the "
                                       "crash <12>`; see :pypi:`attrs`.\n"})
    [page] = loaded_pages(tmp_path)
    assert page.document is not None
    assert ("Fixed #1427 and the crash; see https://pypi.org/project/attrs."
            in page.document.body)


CROSSREF_SITE = {
    "conf.py": "import os, sys\nsys.path.append(os.path.abspath('_ext'))\n"
               "project = 'x'\nextensions = ['projectdocs']\n",
    "_ext/projectdocs.py": "def setup(app):\n    app.add_crossref_type(\n"
                           "        directivename='setting',\n        rolename='setting',\n"
                           "    )\n    app.add_crossref_type('templatetag', 'ttag')\n"
                           "    return {'parallel_read_safe': True}\n",
    "index.rst": "Reference\n=========\n\n.. method:: Model.save(*, using=None)\n"
                 ".. method:: Model.asave(*, using=None)\n\n   Saves the row.\n\n"
                 ".. setting:: CACHE_TTL\n\n``CACHE_TTL``\n-------------\n\n"
                 "Default: ``300``. See :setting:`CACHE_PREFIX`.\n\n"
                 ".. setting:: CACHE_PREFIX\n\n``CACHE_PREFIX``\n----------------\n\n"
                 "Default: ``''``.\n\n.. templatetag:: now\n\n``now``\n-------\n\n"
                 "The date.\n",
}


def test_crossref_directives_of_the_projects_extensions_show_nothing(tmp_path: Path) -> None:
    # Django's, Celery's and Scrapy's ``.. setting:: NAME`` only mark the heading after it
    project = write_tree(tmp_path / "proj", CROSSREF_SITE)
    [page] = loaded_pages(project)
    assert page.document is not None
    body = page.document.body
    for name in ("CACHE_TTL", "CACHE_PREFIX", "now"):
        assert body.count(f"`{name}`") == 1, name  # its heading alone
    assert "Default: `300`. See CACHE_PREFIX.\n\n## `CACHE_PREFIX`" in body
    # back-to-back descriptions are one entry, cited at the first signature
    assert ("`Model.save(*, using=None)` {#Model.save}\n\n`Model.asave(*, using=None)`\n\n"
            "Saves the row.") in body
    if tool("sphinx-build") is not None:  # and every citation lands on Sphinx's own page
        pairs, _, failed = citations(project)
        result = check(build_sphinx(project), pairs)
        assert not failed and result.resolved_share == 1.0, list(failures(result))


def test_a_sphinx_section_named_like_a_version_is_a_section(tmp_path: Path) -> None:
    # a version of a Sphinx project is a build of its own, never a folder of its sources
    write_tree(tmp_path, {"conf.py": "project = 'x'\n", "index.rst": "Home\n====\n",
                          "guide.rst": "Guide\n=====\n",
                          "development/index.rst": "Development\n===========\n",
                          "development/builders.rst": "Builders\n========\n"})
    expansion = FilesSource().expand(source_spec("files", str(tmp_path),
                                                 {"base_url": "https://d.example/"}))
    assert len(expansion.leaves) == 4 and not expansion.dropped


def test_sphinx_source_copies_map_to_their_pages(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "os.rst.txt").write_text(DOC)
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(tmp_path), {
        "base_url": "https://d.example/3/", "generator": "sphinx"}))
    assert [leaf.url for leaf in expansion.leaves] == ["https://d.example/3/library/os.html"]


@pytest.mark.parametrize("text", ["", "no structure at all", "=====\n\n", ".. ::\n"])
def test_odd_input_never_raises(text: str) -> None:
    assert isinstance(rst_to_markdown(text).markdown, str)


def test_an_unparsable_file_fails_alone(tmp_path: Path) -> None:
    (tmp_path / "good.rst").write_text(DOC)
    (tmp_path / "deep.rst").write_text("".join(" " * i + "- x\n\n" for i in range(0, 600, 2)))
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(tmp_path), {}))
    outcomes = {loaded.leaf.ref.rsplit("/", 1)[-1]: loaded
                for loaded in source.load(expansion.leaves, lambda ref: None)}
    assert outcomes["good.rst"].document is not None
    deep = outcomes["deep.rst"]
    assert deep.document is None and "deep.rst" in deep.error.message
    assert "nested too deeply to read" in deep.error.message


def test_a_hostile_signature_is_read_in_linear_time() -> None:
    """Runs of space side by side in the signature pattern cost the cube of their length:
    800 spaces took most of a second; 9,000 (docutils reads lines up to 10,000 characters)
    would have taken about twenty minutes."""
    page = "Title\n=====\n\n.. function:: x" + " " * 9_000 + "}\n\n   Body.\n"
    assert "Body." in rst_to_markdown(page, source="hostile.rst").markdown


def test_text_that_looks_like_markdown_structure_stays_text() -> None:
    md = rst_to_markdown("Title\n=====\n\n\\# not a heading\n\n\\- not an item\n\n"
                         "1\\. not a list\n\n```\nnot a fence\n\nAfter.\n").markdown
    assert [c.anchor for c in chunk_markdown(md, max_tokens=2000)] == ["title"]
    text = chunk_markdown(md, max_tokens=2000)[0].text
    assert "not a heading" in text and "After." in text  # no fence swallowed the rest
    assert "\\``` not a fence" in md


def test_code_showing_directives_of_common_extensions_are_code() -> None:
    md = rst_to_markdown(".. code-tab:: rust\n\n    fn main() {}\n\n"
                         ".. doctest:: group-a\n\n    >>> 1 + 1\n    2\n").markdown
    assert "```rust\nfn main() {}\n```" in md
    assert "```python\n>>> 1 + 1\n2\n```" in md  # a doctest's argument is its group


def test_text_nested_past_the_limit_is_refused_before_docutils_reads_it(tmp_path: Path) -> None:
    # each level of indentation gets its own copy of the lines it holds in docutils
    deep = "Title\n=====\n\n" + "".join(" " * i + "para\n\n" for i in range(400))
    with pytest.raises(ExtractError, match=r"nested too deeply to read: .* on average "
                                           r"\(at most 12 are read\)"):
        rst_to_markdown(deep)
    nested = "Title\n=====\n\n- a\n\n  - b\n\n    - c\n\n      .. note::\n\n         Deep.\n"
    assert "Deep." in rst_to_markdown(nested).markdown  # real nesting is read


XREF_SITE = {
    "conf.py": "project = 'x'\nexclude_patterns = ['_build']\n",
    "index.rst": "Home\n====\n\nRead :doc:`guide/install`, :doc:`/guide/install` and "
                 ":ref:`the steps <steps>`; then :ref:`setup-step` and :ref:`Deep  Label`,"
                 " and :doc:`other`.\n\n.. toctree::\n\n   guide/install\n   other\n",
    "guide/install.rst": ".. _top:\n\n=================================\n:mod:`pkg` --- "
                         "Installing *it*\n=================================\n\n"
                         "See :doc:`../other` and :doc:`/index`.\n\n.. _steps:\n"
                         ".. _setup-step:\n\nThe ``setup`` step\n------------------\n\nText."
                         "\n\n.. _deep label:\n\nDeep\n~~~~\n\nText.\n\n.. _figure:\n\n"
                         ".. figure:: x.png\n\n   A figure.\n",
    "other.rst": "Other page\n==========\n\nSee :ref:`figure`, :ref:`top`, :ref:`tbl` and "
                 ":ref:`code`.\n\n.. _tbl:\n\n.. table:: The *table*\n\n   ===  ===\n"
                 "   a    b\n   ===  ===\n\n.. _code:\n\n.. code-block:: python\n"
                 "   :caption: Example code\n\n   print(1)\n",
}


@pytest.mark.skipif(tool("sphinx-build") is None, reason="Sphinx is not installed")
def test_doc_and_ref_without_a_title_show_the_one_sphinx_shows(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "proj", XREF_SITE)
    built = build_sphinx(project)
    bodies = {url.removeprefix("https://d.example/"): body
              for url, body in page_bodies(project, base_url="https://d.example/").items()}
    checked = 0
    for page, body in bodies.items():
        root = lxml_html.parse(str(built / page)).getroot()
        for link in root.cssselect("div[role=main] a.reference.internal"):
            shown = link.text_content().strip()
            assert shown in body, (page, shown)  # the link's text, as Sphinx shows it
            checked += 1
    assert checked >= 11
    assert "Read pkg — Installing it, pkg — Installing it and the steps; then The setup " \
           "step and Deep, and Other page." in bodies["index.html"]


@pytest.mark.timeout(60)
def test_a_hostile_project_is_scanned_for_titles_in_linear_time(tmp_path: Path) -> None:
    # megabyte lines of role-like text where a title or caption could be: a pattern that
    # backtracked over them would take hours
    write_tree(tmp_path, {
        "a.rst": ":a" * 300_000 + "\n" + "=" * 600_000 + "\n",
        "b.rst": ".. _x:\n\n.. figure:: a.png\n\n   " + ":a" * 400_000 + "\n",
        "c.rst": ("=" * 10 + "\n" + ":a" * 300_000 + "\n" + "=" * 10 + "\n"),
        "d.rst": (".. _" + "a " * 50_000 + "\n") * 8,
        "index.rst": "Home\n====\n\n.. _x2:\n\nSection\n-------\n"})
    titles = SphinxTitles(tmp_path)
    assert titles.doc("index", "a") == "Home" and titles.ref("X2") == "Section"
    assert titles.doc("a", "index") is None  # a line that long is no title
