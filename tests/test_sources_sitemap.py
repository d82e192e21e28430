"""Sitemap parsing (safe XML), index recursion with its guards, gzip and discovery."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from kbctl.errors import ExtractError
from kbctl.net.client import GuardedClient
from kbctl.net.policy import NetPolicy
from kbctl.sources.sitemap import (
    SITEMAP_BATCH,
    SitemapListing,
    discover,
    parse_sitemap,
    read_sitemaps,
)
from tests.http_server import LocalServer, ok

from .allocations import AllocationPeak

LOCAL = NetPolicy(allow_private_network=True, max_retries=0)
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str, lastmod: str | None = None) -> str:
    mod = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    items = "".join(f"<url><loc>{loc}</loc>{mod}</url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{items}</urlset>'


def index(*locs: str) -> str:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0"?><sitemapindex {NS}>{items}</sitemapindex>'


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://x.test/&lol9;</loc></url></urlset>"""


def test_urlset_entries_with_lastmod_in_order() -> None:
    parsed = parse_sitemap(urlset("https://X.test/a#top", "/b", "mailto:x@y.test",
                                  lastmod="2024-05-01").encode(), "https://x.test/sitemap.xml")
    assert parsed.kind == "urlset"
    assert [(e.loc, e.lastmod) for e in parsed.entries] == [
        ("https://x.test/a", "2024-05-01"), ("https://x.test/b", "2024-05-01")]
    assert parsed.invalid == 1


def test_sitemapindex_without_namespace_prefix_issues() -> None:
    data = b"<sitemapindex><sitemap><loc> https://x.test/s1.xml </loc></sitemap></sitemapindex>"
    parsed = parse_sitemap(data, "https://x.test/index.xml")
    assert parsed.kind == "sitemapindex"
    assert [e.loc for e in parsed.entries] == ["https://x.test/s1.xml"]


def test_billion_laughs_is_refused_without_expanding() -> None:
    with AllocationPeak() as peak, pytest.raises(ExtractError, match="declares XML entities"):
        parse_sitemap(BILLION_LAUGHS, "https://x.test/sitemap.xml")
    assert peak.bytes < 5_000_000


def test_a_single_harmless_entity_declaration_is_refused_too() -> None:
    data = (b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY host "x.test">]>'
            b"<urlset><url><loc>https://&host;/a</loc></url></urlset>")
    with pytest.raises(ExtractError, match="entities"):
        parse_sitemap(data, "https://x.test/sitemap.xml")


@pytest.mark.parametrize(("data", "message"), [
    (b"<urlset><url><loc>https://x.test/a</loc></url>", "not a well-formed XML sitemap"),
    (b"<html><body>Not found</body></html>", "not a sitemap (the root element is <html>"),
    (b"", "not a well-formed XML sitemap"),
    (gzip.compress(b"<urlset/>", mtime=0), "still gzip-compressed"),
])
def test_bad_documents_name_the_sitemap_and_the_problem(data: bytes, message: str) -> None:
    with pytest.raises(ExtractError, match="https://x.test/sitemap.xml") as info:
        parse_sitemap(data, "https://x.test/sitemap.xml")
    assert message in info.value.message


def _read(server: LocalServer, roots: list[str], **kw: int) -> SitemapListing:
    async def run() -> SitemapListing:
        async with GuardedClient(LOCAL) as client:
            return await read_sitemaps(client, roots, **kw)

    return asyncio.run(run())


def test_index_recursion_gzip_and_shared_children_read_once() -> None:
    with LocalServer() as server:
        u = server.url
        server.routes.update({
            "/index.xml": ok(index(u("/a.xml"), u("/nested.xml"), u("/b.xml.gz")),
                             "application/xml"),
            "/nested.xml": ok(index(u("/a.xml")), "text/xml"),
            "/a.xml": ok(urlset(u("/p1"), u("/p2"), lastmod="2024-01-02"), "application/xml"),
            "/b.xml.gz": ok(gzip.compress(urlset(u("/p2"), u("/p3")).encode()),
                            "application/x-gzip"),
        })
        listing = _read(server, [u("/index.xml")])
        assert listing.failures == []
        assert listing.pages == {u("/p1"): "2024-01-02", u("/p2"): "2024-01-02",
                                 u("/p3"): None}
        assert server.hits("/a.xml") == 1


def test_an_index_that_lists_itself_is_a_loop_error() -> None:
    with LocalServer() as server:
        u = server.url
        server.routes.update({
            "/index.xml": ok(index(u("/index.xml"), u("/a.xml")), "application/xml"),
            "/a.xml": ok(index(u("/index.xml")), "application/xml"),
        })
        listing = _read(server, [u("/index.xml")])
        assert listing.pages == {}
        messages = [e.message for _, e in listing.failures]
        assert len(messages) == 2 and all("sitemap loop" in m for m in messages)
        assert server.hits("/index.xml") == 1


def test_the_url_cap_truncates_the_listing() -> None:
    with LocalServer() as server:
        u = server.url
        server.routes["/s.xml"] = ok(urlset(*(u(f"/p{i}") for i in range(10))),
                                     "application/xml")
        listing = _read(server, [u("/s.xml")], max_urls=4)
        assert list(listing.pages) == [u(f"/p{i}") for i in range(4)]
        assert listing.truncated


def test_a_urlset_is_read_only_as_far_as_the_pages_wanted() -> None:
    data = urlset(*(f"https://x.test/p{i}" for i in range(2000))).encode()
    parsed = parse_sitemap(data, "https://x.test/s.xml", most=5)
    assert [e.loc for e in parsed.entries] == [f"https://x.test/p{i}" for i in range(5)]
    assert parsed.cut
    whole = parse_sitemap(data, "https://x.test/s.xml", most=2000)
    assert len(whole.entries) == 2000 and not whole.cut


def test_an_index_is_read_no_further_than_the_url_cap_needs() -> None:
    """40 children of 2,000 URLs each and a cap of 5: the first batch of children is read,
    never the rest (a whole level was read first: 1.5 GB and minutes for large ones)."""
    with LocalServer() as server:
        u = server.url
        children = [f"/s{i}.xml" for i in range(40)]
        server.routes["/index.xml"] = ok(index(*(u(c) for c in children)), "application/xml")
        for c in children:
            server.routes[c] = ok(urlset(*(u(f"{c}/p{i}") for i in range(2000))),
                                  "application/xml")
        listing = _read(server, [u("/index.xml")], max_urls=5)
        assert len(listing.pages) == 5 and listing.truncated
        assert sum(server.hits(c) for c in children) == SITEMAP_BATCH
        assert listing.files == 1 + SITEMAP_BATCH


def test_failures_are_per_sitemap() -> None:
    with LocalServer() as server:
        u = server.url
        server.routes.update({
            "/index.xml": ok(index(u("/good.xml"), u("/missing.xml"), u("/bad.xml")),
                             "application/xml"),
            "/good.xml": ok(urlset(u("/p1")), "application/xml"),
            "/bad.xml": ok(b"<urlset><url>", "application/xml"),
        })
        listing = _read(server, [u("/index.xml")])
        assert list(listing.pages) == [u("/p1")]
        failed = {where: error.message for where, error in listing.failures}
        assert "HTTP 404" in failed[u("/missing.xml")]
        assert "not a well-formed" in failed[u("/bad.xml")]


def _discover(server: LocalServer) -> list[str]:
    async def run() -> list[str]:
        async with GuardedClient(LOCAL) as client:
            return await discover(client, server.url("/").rstrip("/"))

    return asyncio.run(run())


def test_discovery_prefers_robots_sitemap_lines_then_sitemap_xml() -> None:
    with LocalServer() as server:
        server.routes["/robots.txt"] = ok(
            "User-agent: *\nDisallow:\nSitemap: /maps/one.xml\nSitemap: "
            f"{server.url('/maps/two.xml')}\n")
        assert _discover(server) == [server.url("/maps/one.xml"), server.url("/maps/two.xml")]
    with LocalServer() as server:
        assert _discover(server) == [server.url("/sitemap.xml")]
