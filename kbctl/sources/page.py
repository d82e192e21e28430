"""A fetched page becomes a ``Document``: routed by content type, then by URL extension,
to the reader of its format (``readers.READERS``, the one a file of that format gets).

HTML goes through the docs-aware extractor (headings keep the page's real ids, so a
chunk's anchor resolves on the live page); markdown responses go to the heading-aware
chunker as they are; plain text stays text. Without docs mode everything takes the
plain-text path.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from kbctl.net.policy import FetchResult

from ..errors import ExtractError, KbctlError
from ..extract.html_select import ContentSelectors
from .base import Document
from .readers import READERS, FetchedPage
from .weburl import is_markdown_url

HTML_TYPES = ("text/html", "application/xhtml+xml")
MARKDOWN_TYPES = ("text/markdown", "text/x-markdown")
#: What a page fetch accepts; anything else is refused by the client, naming the type.
PAGE_CONTENT_TYPES = (*HTML_TYPES, *MARKDOWN_TYPES, "text/plain")
# The reader (``readers.READERS``) of each route
_ROUTED = {"html": ".html", "text": ".txt"}


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
    if fmt == "markdown":  # its URL says which markdown: .mdx is MDX
        suffix = ".mdx" if urlsplit(ref).path.lower().endswith(".mdx") else ".md"
    else:
        suffix = _ROUTED[fmt]
    page = FetchedPage(result, ref, kind, docs_mode, selectors or ContentSelectors())
    try:
        return READERS[suffix].fetched(page)
    except KbctlError as exc:
        message = exc.message if exc.message.startswith(result.url) else (
            f"{result.url}: {exc.message}")
        raise ExtractError(message, hint=exc.hint) from exc
    except RecursionError as exc:
        raise ExtractError(f"{result.url}: the page is nested too deeply to convert") from exc
