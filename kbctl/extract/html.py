"""Docs-aware HTML → markdown: the page's content container, its real anchors, its code.

Docs generators put the content in a known container; converting that container ourselves
keeps what retrieval and citations need (heading ids, API entry ids, fenced code with its
language) and is an order of magnitude faster than a general main-content extractor. Pages
without a recognisable container are handed to trafilatura, which is built for those.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

from lxml import etree

from kbctl.chunk.anchors import IdRules
from kbctl.encoding import lenient_text, to_utf8
from kbctl.errors import ExtractError
from kbctl.extract.docsify_marks import is_shell
from kbctl.extract.html_container import drop_breadcrumb_trail, find_container
from kbctl.extract.html_markdown import (
    heading_key,
    page_heading_ids,
    plain_text,
    render_markdown,
)
from kbctl.extract.html_select import remove_matches, select_content

__all__ = ["ExtractedPage", "extract_html", "main_content", "trim_site_suffix"]

# Separators between a page title and its site name, most specific first.
_TITLE_SEPARATORS = (" — ", " – ", " | ", " - ", " · ", " :: ", " » ")
_WS = re.compile(r"\s+")
# A document with neither tag is a fragment of a page (a template fills in the rest).
_PAGE_TAG = re.compile(rb"<(?:html|body|head)[\s>/]", re.IGNORECASE)
_OG_TITLE = etree.XPath("//meta[@property='og:title']/@content | //meta[@name='og:title']/@content")


@dataclass(frozen=True)
class ExtractedPage:
    """What a page says, as markdown, and how it was obtained."""

    title: str | None
    markdown: str
    used_fallback: bool  # True when trafilatura's main-content extraction was used


# libxml2's element nesting limit without its XML_PARSE_HUGE option.
MAX_HTML_DEPTH = 255


def _parse(data: bytes) -> etree._Element:
    # lxml's HTML parser with plain elements: lxml.html's element-class lookup runs Python
    # code for every node touched and costs about a fifth of the whole conversion.
    parser = etree.HTMLParser(
        encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True,
        collect_ids=False,
    )
    try:
        root = etree.fromstring(data, parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise ExtractError(f"HTML could not be parsed: {exc}") from exc
    if root is None:
        raise ExtractError("HTML could not be parsed: the document is empty")
    limit = next((e.message for e in parser.error_log if e.type_name == "ERR_RESOURCE_LIMIT"),
                 None)
    if limit is not None:  # libxml2 stops reading there: the rest of the page is missing
        what = (f"nested more than {MAX_HTML_DEPTH} elements deep" if "depth" in limit
                else "holds a run of text over the parser's 10 MB limit")
        raise ExtractError(f"HTML {what}: the parser stops there and the rest of the page "
                           f"would be lost")
    return root


def _clean(text: str) -> str:
    return _WS.sub(" ", text.replace("\u200b", "")).strip()


def trim_site_suffix(title: str) -> str:
    """'Page — Site documentation' -> 'Page': cut after the last separator, if any."""
    cut = max(title.rfind(sep) for sep in _TITLE_SEPARATORS)
    if cut > 0:
        head = title[:cut].strip()
        if head:
            return head
    return title


def _title(root: etree._Element, container: etree._Element | None) -> str | None:
    head = root.find("head")
    node = head.find("title") if head is not None else None
    if node is None:
        node = root.find(".//title")
    if node is not None:
        text = _clean("".join(node.itertext()))
        if text:
            return trim_site_suffix(text)
    for content in _OG_TITLE(root):
        text = _clean(str(content))
        if text:
            return text
    for scope in (container, root):
        if scope is None:
            continue
        h1 = next(scope.iter("h1"), None)
        if h1 is not None:
            text = _clean(plain_text(h1)).rstrip("¶#§ ").strip()
            if text:
                return text
    return None


def _base_url(root: etree._Element, url: str | None) -> str | None:
    base = root.find("head/base[@href]")
    if base is not None:
        href = (base.get("href") or "").strip()
        if url:
            return urljoin(url, href)
        if href.startswith(("http://", "https://")):
            return href
    return url


def main_content(html: str | bytes, *, url: str | None = None, markdown: bool = True) -> str:
    """Main-content extraction for generic pages (trafilatura, called from here only):
    markdown for the docs path, plain text (``markdown=False``) for the text path."""
    import trafilatura  # heavy import; only generic pages need it

    text = trafilatura.extract(
        html if isinstance(html, str) else lenient_text(html),
        url=url,
        output_format="markdown" if markdown else "txt",
        include_formatting=markdown,
        include_links=markdown,
        include_tables=True,
        include_images=False,
        include_comments=False,
        with_metadata=False,
    )
    return (text or "").strip()


class _PageIds(IdRules):
    """Heading ids for markdown another converter made of the page: the id the page gives
    the heading of that text, taken in page order (two "Example" headings keep theirs)."""

    honours_explicit = False

    def __init__(self, root: etree._Element) -> None:
        self._ids = page_heading_ids(root)
        self._taken: dict[str, int] = {}  # per text, how many of its ids are given out

    def __bool__(self) -> bool:
        return any(i is not None for ids in self._ids.values() for i in ids)

    def __call__(self, text: str, explicit: str | None = None) -> str | None:
        key = heading_key(text)
        ids = self._ids.get(key, [])
        n = self._taken[key] = self._taken.get(key, 0) + 1
        return ids[n - 1] if n <= len(ids) else None


def _with_page_ids(markdown: str, root: etree._Element) -> str:
    """Fallback markdown with ``{#id}`` on each heading the page gives an id."""
    from kbctl.chunk.anchors import with_heading_ids

    ids = _PageIds(root)
    if not ids:
        return markdown  # nothing to give back: skip parsing the markdown
    return with_heading_ids(markdown, ids)


def _render(node: etree._Element, root: etree._Element, base: str | None) -> str:
    try:
        return render_markdown(node, root, base).strip()
    except RecursionError:
        return ""


def extract_html(html: str | bytes, *, url: str | None = None,
                 content_selector: str | None = None,
                 exclude_selectors: Sequence[str] = ()) -> ExtractedPage:
    """Convert one HTML page to markdown with real anchors; raise ExtractError if no text.

    ``content_selector`` (CSS) names the content element and wins over container
    detection when it matches; ``exclude_selectors`` name parts to leave out of it.
    """
    data = to_utf8(html)
    if not data.strip():
        raise ExtractError("the document is empty")
    root = _parse(data)
    base = _base_url(root, url)
    container = select_content(root, content_selector) if content_selector else None
    if container is None:
        container, _generator = find_container(root)
        if container is not None:
            drop_breadcrumb_trail(container)
    if container is None and _PAGE_TAG.search(data) is None:
        container = root.find("body")  # a bare fragment (Go's doc/*.html) is all content
    title = _title(root, container)
    if exclude_selectors:
        remove_matches(container if container is not None else root, exclude_selectors)
        if container is None:  # the generic fallback reads the page without those parts
            data = etree.tostring(root, encoding="utf-8", method="html")
    if container is not None:
        markdown = _render(container, root, base)
        if markdown:
            return ExtractedPage(title=title, markdown=markdown + "\n", used_fallback=False)
    markdown = main_content(data, url=url)
    if markdown:
        markdown = _with_page_ids(markdown, root)
        return ExtractedPage(title=title, markdown=markdown + "\n", used_fallback=True)
    if container is None:
        body = root.find("body")
        markdown = _render(body if body is not None else root, root, base)
        if markdown:
            return ExtractedPage(title=title, markdown=markdown + "\n", used_fallback=False)
    where = f" at {url}" if url else ""
    if is_shell(root):  # every page one shell that renders markdown in the browser
        raise ExtractError(
            f"no text content found in the HTML{where}: a Docsify page, whose content is "
            "markdown that the browser fetches and renders",
            hint="ingest the site's markdown with `kbctl ingest files DOCS_FOLDER --base-url "
                 "URL` (it cites Docsify's routes), or its files by URL (…/README.md)")
    raise ExtractError(
        f"no text content found in the HTML{where}",
        hint="the page may be rendered by JavaScript or be empty",
    )
