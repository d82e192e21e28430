"""A fetched page becomes a ``Document``: routed by content type, then by URL extension.

HTML goes through the docs-aware extractor (headings keep the page's real ids, so a
chunk's anchor resolves on the live page); markdown responses go to the heading-aware
chunker as they are; plain text stays text. Without docs mode everything takes the
plain-text path.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from kbctl.net.policy import FetchResult

from ..encoding import header_text
from ..errors import ExtractError, KbctlError
from ..extract.dialects import page_markdown
from ..extract.html_select import ContentSelectors
from ..extract.markdown import parse_markdown_document
from ..frontmatter import filterable
from .base import Document
from .weburl import is_markdown_url

HTML_TYPES = ("text/html", "application/xhtml+xml")
MARKDOWN_TYPES = ("text/markdown", "text/x-markdown")
#: What a page fetch accepts; anything else is refused by the client, naming the type.
PAGE_CONTENT_TYPES = (*HTML_TYPES, *MARKDOWN_TYPES, "text/plain")


def route(result: FetchResult, *, prefer_markdown: bool = False) -> str:
    """``html``, ``markdown`` or ``text`` for a response."""
    media = result.content_type
    if media in HTML_TYPES:
        return "html"
    if media in MARKDOWN_TYPES or is_markdown_url(result.url):
        return "markdown"
    if media == "text/plain":
        return "markdown" if prefer_markdown else "text"
    head = result.content[:512].lstrip().lower()
    return "html" if head.startswith((b"<!doctype html", b"<html")) else "text"


def to_document(result: FetchResult, *, ref: str, kind: str, docs_mode: bool = True,
                prefer_markdown: bool = False,
                selectors: ContentSelectors | None = None) -> Document:
    """Extract the document a response carries. Raises ``ExtractError`` naming the URL."""
    fmt = route(result, prefer_markdown=prefer_markdown)
    try:
        if fmt == "html":
            return _html(result, ref, kind, docs_mode, selectors or ContentSelectors())
        text = result.text()
        if fmt == "markdown" and docs_mode:
            md = parse_markdown_document(text)
            fields = filterable(md.front_matter)
            mdx = urlsplit(ref).path.lower().endswith(".mdx")
            body = page_markdown(md.body, fmt="mdx" if mdx else "markdown")
            return Document(ref=ref, url=ref, kind=kind, title=md.title or _url_title(ref),
                            body=body, format="markdown", filterable=fields)
        if not text.strip():
            raise ExtractError("the document is empty")
        return Document(ref=ref, url=ref, kind=kind, title=_url_title(ref), body=text,
                        format="text")
    except KbctlError as exc:
        message = exc.message if exc.message.startswith(result.url) else (
            f"{result.url}: {exc.message}")
        raise ExtractError(message, hint=exc.hint) from exc
    except RecursionError as exc:
        raise ExtractError(f"{result.url}: the page is nested too deeply to convert") from exc


def _html(result: FetchResult, ref: str, kind: str, docs_mode: bool,
          selectors: ContentSelectors) -> Document:
    from ..extract.html import extract_html, main_content  # lxml: only when HTML shows up

    source: str | bytes = result.content
    if result.charset:  # the header's charset wins over the page's <meta>, as in browsers
        source = header_text(result.content, result.charset) or result.content
    page = extract_html(source, url=ref, content_selector=selectors.content,
                        exclude_selectors=selectors.exclude)
    title = page.title or _url_title(ref)
    if docs_mode:
        return Document(ref=ref, url=ref, kind=kind, title=title, body=page.markdown,
                        format="markdown", slug_headings=False)
    text = main_content(source, markdown=False) or page.markdown
    return Document(ref=ref, url=ref, kind=kind, title=title, body=text, format="text")


def _url_title(url: str) -> str:
    parts = urlsplit(url)
    last = parts.path.rstrip("/").rsplit("/", 1)[-1]
    return last or parts.hostname or url
