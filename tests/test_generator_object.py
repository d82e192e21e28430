"""A generator is one object registered by one line; a file format is one reader that a
files source and a fetched page share."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.generators import _DETECTION_ORDER, GENERATORS
from kbctl.generators.base import Generator
from kbctl.net.policy import FetchResult
from kbctl.sources import readers
from kbctl.sources.base import Document, SourceSpec
from kbctl.sources.files import FilesOptions, FilesSource
from kbctl.sources.page import to_document
from kbctl.sources.readers import READERS, FetchedPage, FilePage, reader_for
from tests import generator_example
from tests.sitebuild import write_tree


def _documents(root: Path, **options: str) -> dict[str, Document]:
    # the options made directly: the flag's choices were read from GENERATORS at import,
    # before the test registered its generator
    source = FilesSource()
    expansion = source.expand(SourceSpec("files", str(root), FilesOptions(**options)))
    return {loaded.document.url: loaded.document
            for loaded in source.load(expansion.leaves, lambda ref: None) if loaded.document}


def test_every_profile_is_a_generator_and_detection_keeps_its_order() -> None:
    assert all(isinstance(generator, Generator) for generator in GENERATORS.values())
    assert all(GENERATORS[name].name == name for name in GENERATORS)
    # the most specific markers first; sphinx-dirhtml and plain are chosen by name only
    assert _DETECTION_ORDER == (
        "mdbook", "mkdocs", "docusaurus", "vitepress", "vuepress", "starlight", "quarto",
        "mystmd", "docsify", "hugo", "sphinx", "jupyter-book", "jekyll")


def test_a_generator_registered_by_one_line_cites_its_pages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(GENERATORS, "example", generator_example.GENERATOR)
    root = write_tree(tmp_path / "site", {
        "example.toml": "",
        "pages/index.md": "---\ntagline: Widgets for everyone\n---\n# Home\n\nWelcome.\n",
        "pages/guide.md": "# Guide\n\n## Getting Started\n\n!!note read this first\n",
    })
    docs = _documents(root, base_url="https://widgets.test/", generator="example")
    assert set(docs) == {"https://widgets.test/", "https://widgets.test/guide/"}
    guide = docs["https://widgets.test/guide/"].body
    assert "## Getting Started {#getting_started}" in guide
    assert "> Note: read this first" in guide and "!!note" not in guide
    home = docs["https://widgets.test/"]
    assert home.body.startswith("Widgets for everyone") and home.title == "Home"


def test_a_file_and_a_fetched_page_are_read_by_the_same_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    class Shouting(readers.Reader):
        def file(self, page: FilePage, text: str) -> Document | None:
            seen.append(f"file {page.path.name}")
            return page.document(title="file", body=text.upper(), fmt="text")

        def fetched(self, page: FetchedPage) -> Document:
            seen.append(f"page {page.ref}")
            return Document(ref=page.ref, url=page.ref, kind=page.kind, title="page",
                            body=page.result.text().upper(), format="text")

    monkeypatch.setitem(READERS, ".txt", Shouting())
    root = write_tree(tmp_path / "notes", {"a.txt": "quiet words\n"})
    [doc] = _documents(root).values()
    assert doc.body == "QUIET WORDS\n"
    fetched = to_document(FetchResult(
        url="https://d.test/b.txt", status=200, content=b"more words", charset=None,
        content_type="text/plain", headers={}, etag=None, last_modified=None),
        ref="https://d.test/b.txt", kind="url")
    assert fetched.body == "MORE WORDS"
    assert seen == ["file a.txt", "page https://d.test/b.txt"]


@pytest.mark.parametrize(("name", "fmt"), [
    ("a.md", "markdown"), ("a.MDX", "mdx"), ("a.qmd", "markdown"), ("a.rst", "rst"),
    ("a.rst.txt", "rst"), ("a.txt", "text"), ("a.htm", "html"), ("a.ipynb", "notebook"),
])
def test_a_files_suffix_names_its_reader(name: str, fmt: str) -> None:
    reader = reader_for(Path(name))
    assert reader is not None and reader.format == fmt


def test_a_suffix_no_reader_reads_is_skipped() -> None:
    assert reader_for(Path("a.png")) is None and reader_for(Path("Makefile")) is None
