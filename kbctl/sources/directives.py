"""What a page tells indexers about itself: its canonical URL and whether to index it.

Two places carry it: the response headers (``Link: <…>; rel="canonical"``,
``X-Robots-Tag: noindex``) and the page's ``<head>`` (``<link rel="canonical">``,
``<meta name="robots" content="noindex">``). A page that only sends the browser on at once
(``<meta http-equiv="refresh" content="0; url=…">``: the stubs generators leave where a
page moved) names its target the way a canonical link does, and is dropped for it. Only
the head is parsed, not the page, so reading the directives costs a fraction of extracting
the page and a noindex page or a copy of another page is dropped before extraction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from kbctl.net.policy import FetchResult

from .weburl import normalize_url

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_HEAD_END = re.compile(rb"</head\s*>|<body[\s>]", re.IGNORECASE)
#: How much of a page is searched for the end of its head.
HEAD_LIMIT = 256 * 1024
# Each part has one way to match (the target holds no ``<`` or ``>``; a parameter starts at its
# ``;``), so a hostile header costs linear time.
_LINK = re.compile(r"<([^<>]*)>((?:\s*;[^;,]*)*)")
_REL = re.compile(r"""\brel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""", re.IGNORECASE)
_ROBOT_NAMES = ("robots", "kbctl")
_HEAD_LINKS = etree.XPath("//link[@rel][@href]")
_HEAD_METAS = etree.XPath("//meta[@name][@content]")
_HEAD_REFRESH = etree.XPath("//meta[@http-equiv][@content]")
#: A refresh this many seconds or sooner is a redirect; a later one leaves time to read.
REFRESH_SECONDS = 1.0


@dataclass(frozen=True)
class PageDirectives:
    canonical: str | None = None  # normalised, absolute; None when absent or unusable
    noindex: str | None = None  # where the noindex came from, for the note
    redirect: bool = False  # the canonical URL is where an immediate refresh sends you


def read_directives(result: FetchResult) -> PageDirectives:
    """The directives of one response (headers first, then the HTML head)."""
    canonical = _header_canonical(result)
    noindex = _header_noindex(result.headers.get("x-robots-tag", ""))
    redirect = False
    if result.content_type in _HTML_TYPES:
        head_canonical, head_noindex, refresh = _head(result.content, result.url)
        canonical = canonical or head_canonical
        noindex = noindex or head_noindex
        target = normalize_url(refresh, result.url) if refresh else None
        if canonical is None and target is not None:
            canonical, redirect = target, True
    return PageDirectives(canonical, noindex, redirect)


def _header_canonical(result: FetchResult) -> str | None:
    header = result.headers.get("link", "")
    if "canonical" not in header.lower():
        return None
    for match in _LINK.finditer(header):
        for rel in _REL.finditer(match.group(2)):
            values = (rel.group(1) or rel.group(2) or "").lower().split()
            if "canonical" in values:
                return normalize_url(match.group(1).strip(), result.url)
    return None


def _header_noindex(value: str) -> str | None:
    # "noindex", "googlebot: noindex, nofollow", "none": rules for one named bot that is
    # not us are ignored
    for part in value.split(","):
        agent, _, rule = part.rpartition(":")
        if agent.strip() and agent.strip().lower() not in _ROBOT_NAMES and " " not in agent:
            continue
        if rule.strip().lower() in ("noindex", "none"):
            return "X-Robots-Tag header"
    return None


@dataclass(frozen=True)
class FileDirectives:
    """What a page file's own ``<head>`` says (a file has no headers, and its canonical
    URL names the live site rather than the file)."""

    noindex: str | None = None  # where the noindex came from, for the note
    refresh: str | None = None  # where an immediate refresh sends the browser, as written


def file_directives(content: bytes) -> FileDirectives:
    """The directives of an HTML file: a refresh stub is left where another page moved."""
    _canonical, noindex, refresh = _head(content, "")
    return FileDirectives(noindex, refresh)


def _head(content: bytes, url: str) -> tuple[str | None, str | None, str | None]:
    """(canonical URL, where a noindex came from, target of an immediate refresh as
    written)."""
    data = content[:HEAD_LIMIT]
    end = _HEAD_END.search(data)
    if end is not None:
        data = data[:end.start()]
    if not data.strip():
        return None, None, None
    try:
        root = etree.fromstring(data, etree.HTMLParser(no_network=True, remove_comments=True))
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None, None, None
    if root is None:
        return None, None, None
    canonical = noindex = refresh = None
    for link in _HEAD_LINKS(root):
        if "canonical" in (link.get("rel") or "").lower().split():
            canonical = normalize_url(link.get("href") or "", url)
            break
    for meta in _HEAD_METAS(root):
        if (meta.get("name") or "").strip().lower() not in _ROBOT_NAMES:
            continue
        rules = {r.strip().lower() for r in (meta.get("content") or "").split(",")}
        if rules & {"noindex", "none"}:
            noindex = '<meta name="robots"> tag'
            break
    for meta in _HEAD_REFRESH(root):
        if (meta.get("http-equiv") or "").strip().lower() == "refresh":
            refresh = _refresh_target(meta.get("content") or "")
            break
    return canonical, noindex, refresh


def _refresh_target(content: str) -> str | None:
    """The URL of a refresh that fires within ``REFRESH_SECONDS`` (``0; url='x'``)."""
    cut = min((i for i in (content.find(";"), content.find(",")) if i >= 0),
              default=len(content))  # the delay ends at the first separator; a URL may hold more
    try:
        delay = float(content[:cut].strip() or "inf")
    except ValueError:
        return None
    if not 0 <= delay <= REFRESH_SECONDS:  # also refuses nan
        return None
    rest = content[cut + 1:].strip()
    if rest[:4].lower() == "url=":
        rest = rest[4:].strip()
    return rest.strip("'\"").strip() or None
