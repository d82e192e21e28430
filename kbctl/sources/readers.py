"""File formats: how the text of each becomes a ``Document``, one reader per format,
looked up by suffix in ``READERS``.

A ``files`` source reads a file with the reader of its suffix (or of the format its
generator names its sources in: Sphinx's ``source_suffix``); a fetched page with the
reader of the format its content type or URL says. A reader knows both: a file of a
docs project (cited at the address its generator publishes it at, each heading at the id
that generator renders) and a fetched page (cited at its own URL). A new format is one
``Reader`` and one line in ``READERS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..chunk.headings import over_block_budget
from ..errors import ExtractError
from ..extract.dialects import PageFile, page_markdown
from ..extract.html_select import ContentSelectors
from ..extract.markdown import parse_markdown_document
from ..extract.notebook import notebook_to_markdown
from ..extract.sphinx_includes import SphinxIncludes
from ..extract.sphinx_titles import SphinxTitles
from ..frontmatter import filterable, split_front_matter
from .base import Document

if TYPE_CHECKING:  # the generator profiles load only where a files source reads a page
    from ..generators.base import Site
    from ..net.policy import FetchResult

# The stored time (ISO 8601) after which a page's generator stops publishing it.
UNTIL = "until"
# The stored {path: [size, mtime_ns]} of the files a page includes (mdBook's {{#include}}):
# an unchanged page is read again when one of them changed.
INCLUDES = "includes"


@dataclass
class FilePage:
    """A file of a ``files`` source as its reader needs it: where it is, the site that
    publishes it, its path-based address, the stamp stored with it (a reader adds the
    files it included and when it expires), and how its address follows from its front
    matter (None: its generator does not publish it as a page)."""

    path: Path
    ref: str
    url: str
    site: Site
    published: Path
    stamp: dict[str, Any]
    publish: Callable[[Mapping[str, Any]], str | None]
    include_stamps: Callable[[list[Path]], Any]
    docname: str
    base_url: str | None = None
    titles: SphinxTitles | None = None

    def document(self, *, title: str, body: str, fmt: str = "markdown",
                 url: str | None = None, **extra: Any) -> Document:
        return Document(ref=self.ref, url=self.url if url is None else url, kind="files",
                        title=title, body=body, format=fmt, meta=dict(self.stamp), **extra)


@dataclass(frozen=True)
class FetchedPage:
    """A fetched page: its response, its address and kind, whether docs mode reads it
    (structure kept) and the operator's content selectors."""

    result: FetchResult
    ref: str
    kind: str
    docs_mode: bool = True
    selectors: ContentSelectors = ContentSelectors()

    def title(self) -> str:
        """The page's title when it names none: the last segment of its URL."""
        parts = urlsplit(self.ref)
        last = parts.path.rstrip("/").rsplit("/", 1)[-1]
        return last or parts.hostname or self.ref


def _in_file(path: Path, exc: ExtractError) -> ExtractError:
    return ExtractError(f"{path}: {exc.message}", hint=exc.hint)


class Reader:
    """One file format. The default reads text as it is."""

    format = "text"

    def file(self, page: FilePage, text: str) -> Document | None:
        """The document a file of this format makes; None when its generator does not
        publish it as a page (known only once it is read)."""
        return page.document(title=page.path.stem, body=text, fmt="text")

    def fetched(self, page: FetchedPage) -> Document:
        """The document a fetched page of this format makes."""
        text = page.result.text()
        if not text.strip():
            raise ExtractError("the document is empty")
        return Document(ref=page.ref, url=page.ref, kind=page.kind, title=page.title(),
                        body=text, format="text")


class Markdown(Reader):
    """Markdown in its generator's dialect, each heading given the id its generator
    renders."""

    format = "markdown"

    def file(self, page: FilePage, text: str, *, notebook: bool = False) -> Document | None:
        from ..chunk.anchors import with_heading_ids
        from ..generators import expiry, heading_ids, page_title
        from ..generators import page_markdown as generator_markdown
        from ..generators.base import NO_FRONT_MATTER

        site = page.site
        try:
            md = parse_markdown_document(text)
        except ExtractError as exc:
            raise _in_file(page.path, exc) from exc
        fields = filterable(md.front_matter)
        read = PageFile(page.path, site.project, site.settings, front_matter=md.front_matter)
        body = generator_markdown(site, md.body, fmt=self.format, page=read)
        if read.reads:
            page.stamp[INCLUDES] = page.include_stamps(read.reads)
        description = md.front_matter.get("description")
        if not body.strip() and isinstance(description, str):
            body = description  # a page of front matter alone (a section's): its summary
        # the title a page gets from its first H1 counts as front matter's (Material's blog
        # plugin slugs a post's URL from it)
        titled = md.front_matter if "title" in md.front_matter or not md.title else {
            **md.front_matter, "title": md.title}
        url = page.publish(titled if md.has_front_matter else NO_FRONT_MATTER)
        if url is None:
            return None
        until = expiry(site, md.front_matter) if page.base_url else None
        if until is not None:
            page.stamp[UNTIL] = until.isoformat()
        body = with_heading_ids(body, heading_ids(site, notebook=notebook))
        # each heading with an id on the page now carries it as {#id}; one the generator
        # renders without (Docusaurus' h1, a placeholder of HTML comments) is cited by its
        # enclosing section or the page
        title = page_title(site, page.published, md.title) or page.path.stem
        return page.document(title=title, body=body, url=url, filterable=fields,
                             slug_headings=False)

    def fetched(self, page: FetchedPage) -> Document:
        if not page.docs_mode:
            return super().fetched(page)
        md = parse_markdown_document(page.result.text())
        fields = filterable(md.front_matter)
        body = page_markdown(md.body, fmt=self.format)
        return Document(ref=page.ref, url=page.ref, kind=page.kind,
                        title=md.title or page.title(), body=body, format="markdown",
                        filterable=fields)


class Mdx(Markdown):
    """MDX, whatever the generator."""

    format = "mdx"


class Notebook(Reader):
    """A Jupyter notebook, read as its generator renders it (``notebook.READERS``)."""

    format = "notebook"

    def file(self, page: FilePage, text: str) -> Document | None:
        notebooks = page.site.settings.get("notebooks")
        try:
            text = notebook_to_markdown(text, reader=notebooks if notebooks in (
                "quarto", "nbdev") else "jupyter")
        except ExtractError as exc:
            raise _in_file(page.path, exc) from exc
        return MARKDOWN.file(page, text, notebook=True)


class Rst(Reader):
    """reStructuredText through docutils, with Sphinx's roles and includes; every id a
    section has is written out."""

    format = "rst"

    def file(self, page: FilePage, text: str) -> Document | None:
        if over_block_budget(text):
            # docutils' tree of a file of many short blocks would take ~1 KB a line; the
            # writer reads a text past the budget as plain text, and says so
            return page.document(title=page.path.stem, body=text)
        from ..extract.rst import rst_to_markdown
        from ..extract.rst_sphinx import ProjectRoles

        site = page.site
        reads: list[Path] = []
        includes = SphinxIncludes(source_dir=site.content, project=site.project, reads=reads)
        try:
            rst = rst_to_markdown(text, source=str(page.path), includes=includes,
                                  titles=page.titles, docname=page.docname,
                                  project=ProjectRoles(
                                      site.settings.get("default_role"),
                                      site.settings.get("extlinks") or {},
                                      frozenset(site.settings.get("target_directives") or ())))
        except ExtractError as exc:
            raise _in_file(page.path, exc) from exc
        if reads:
            page.stamp[INCLUDES] = page.include_stamps(reads)
        # one without an id is cited at the section around it, never at a slug Sphinx
        # does not give (its ids are "id23" there)
        return page.document(title=rst.title or page.path.stem, body=rst.markdown,
                             slug_headings=False)


class Html(Reader):
    """HTML through the docs-aware extractor: headings keep the page's real ids."""

    format = "html"

    def file(self, page: FilePage, text: str) -> Document | None:
        from ..extract.html import extract_html
        from ..generators import page_html

        try:  # a Jekyll or Hugo page template starts with front matter
            front_matter, text, templated = split_front_matter(text)
        except ExtractError as exc:
            raise _in_file(page.path, exc) from exc
        url = page.publish(front_matter) if templated else page.url
        if url is None:
            return None
        if not text.strip():  # front matter alone (a jekyll-redirect-from stub): no text
            return page.document(title=page.path.stem, body="", url=url, slug_headings=False)
        if templated:
            text = page_html(page.site, text)
        extracted = extract_html(text, url=url if "://" in url else None)
        return page.document(title=extracted.title or page.path.stem,
                             body=extracted.markdown, url=url, slug_headings=False)

    def fetched(self, page: FetchedPage) -> Document:
        from ..encoding import header_text
        from ..extract.html import extract_html, main_content  # lxml: only when HTML shows up

        result = page.result
        source: str | bytes = result.content
        if result.charset:  # the header's charset wins over the page's <meta>, as in browsers
            source = header_text(result.content, result.charset) or result.content
        extracted = extract_html(source, url=page.ref, content_selector=page.selectors.content,
                                 exclude_selectors=page.selectors.exclude)
        title = extracted.title or page.title()
        if page.docs_mode:
            return Document(ref=page.ref, url=page.ref, kind=page.kind, title=title,
                            body=extracted.markdown, format="markdown", slug_headings=False)
        text = main_content(source, markdown=False) or extracted.markdown
        return Document(ref=page.ref, url=page.ref, kind=page.kind, title=title, body=text,
                        format="text")


MARKDOWN = Markdown()
HTML = Html()
RST = Rst()
TEXT = Reader()

READERS: dict[str, Reader] = {
    ".md": MARKDOWN,
    ".mdx": Mdx(),
    ".markdown": MARKDOWN,
    ".rst": RST,
    ".html": HTML,
    ".htm": HTML,
    ".txt": TEXT,
    ".ipynb": Notebook(),
    ".qmd": MARKDOWN,
    ".rst.txt": RST,  # Sphinx's _sources copies
}
_BY_FORMAT = {reader.format: reader for reader in READERS.values()}


def reader_for(path: PurePosixPath | Path) -> Reader | None:
    """The reader of a file by its name; None for a file no reader reads."""
    name = path.name.lower()
    compound = next((s for s in READERS if s.count(".") > 1 and name.endswith(s)), None)
    return READERS.get(compound or path.suffix.lower())


def reader_named(fmt: str) -> Reader | None:
    """The reader of a format by its name (``markdown``, ``rst``…), as a generator's
    settings name the formats of its sources."""
    return _BY_FORMAT.get(fmt)
