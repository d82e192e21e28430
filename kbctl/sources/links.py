"""The links a crawl can follow from an HTML page."""

from __future__ import annotations

from lxml import etree

from .weburl import normalize_url

_LINKS = etree.XPath("//a[@href]/@href | //area[@href]/@href")
_BASE = etree.XPath("//base/@href")
_META_ROBOTS = etree.XPath("//meta[translate(@name, 'ROBTS', 'robts')='robots']/@content")


# A page's links kept, at most (a docs site's full index has a few hundred pages; a page
# linking to 100,000 others is a trap that grew a crawl without bound).
MAX_LINKS_PER_PAGE = 10_000


def find_links(html: bytes, url: str) -> list[str]:
    """Normalised http(s) links of a page, in document order, without repeats, at most
    ``MAX_LINKS_PER_PAGE`` (one more means the page had more).

    ``<base href>`` is honoured; a ``<meta name="robots" content="nofollow">`` page has no
    links to follow.
    """
    parser = etree.HTMLParser(no_network=True, remove_comments=True, remove_pis=True)
    root = etree.fromstring(html, parser)
    if root is None:
        return []
    directives = {d.strip().lower() for c in _META_ROBOTS(root) for d in str(c).split(",")}
    if directives & {"nofollow", "none"}:
        return []
    base = url
    bases = _BASE(root)
    if bases:
        base = normalize_url(str(bases[0]), url) or url
    out: dict[str, None] = {}
    for href in _LINKS(root):
        link = normalize_url(str(href), base)
        if link is not None:
            out.setdefault(link, None)
            if len(out) > MAX_LINKS_PER_PAGE:
                break
    return list(out)
