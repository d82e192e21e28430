"""What a page tells indexers about itself: its canonical URL and whether to index it.

Two places carry it: the response headers (``Link: <…>; rel="canonical"``,
``X-Robots-Tag: noindex``) and the page's ``<head>`` (``<link rel="canonical">``,
``<meta name="robots" content="noindex">``). Only the head is parsed, not the page, so
reading the directives costs a fraction of extracting the page and a noindex page or a
copy of another page is dropped before extraction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from ..net import FetchResult
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


@dataclass(frozen=True)
class PageDirectives:
    canonical: str | None = None  # normalised, absolute; None when absent or unusable
    noindex: str | None = None  # where the noindex came from, for the note


def read_directives(result: FetchResult) -> PageDirectives:
    """The directives of one response (headers first, then the HTML head)."""
    canonical = _header_canonical(result)
    noindex = _header_noindex(result.headers.get("x-robots-tag", ""))
    if result.content_type in _HTML_TYPES:
        head_canonical, head_noindex = _head(result)
        canonical = canonical or head_canonical
        noindex = noindex or head_noindex
    return PageDirectives(canonical, noindex)


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


def _head(result: FetchResult) -> tuple[str | None, str | None]:
    data = result.content[:HEAD_LIMIT]
    end = _HEAD_END.search(data)
    if end is not None:
        data = data[:end.start()]
    if not data.strip():
        return None, None
    try:
        root = etree.fromstring(data, etree.HTMLParser(no_network=True, remove_comments=True))
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None, None
    if root is None:
        return None, None
    canonical = noindex = None
    for link in _HEAD_LINKS(root):
        if "canonical" in (link.get("rel") or "").lower().split():
            canonical = normalize_url(link.get("href") or "", result.url)
            break
    for meta in _HEAD_METAS(root):
        if (meta.get("name") or "").strip().lower() not in _ROBOT_NAMES:
            continue
        rules = {r.strip().lower() for r in (meta.get("content") or "").split(",")}
        if rules & {"noindex", "none"}:
            noindex = '<meta name="robots"> tag'
            break
    return canonical, noindex
