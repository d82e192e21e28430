"""Web source adapters (url, sitemap, crawl, llms) against real local servers.

Everything runs through the real guarded client; local servers need the private-network
opt-in, and the tests that check the guard itself use an injected transport and resolver
so that a "public" host can redirect to a private one.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from kbctl.errors import (
    BlockedURL,
    DatabaseError,
    ExtractError,
    FetchError,
    InputError,
    SourceError,
)
from kbctl.extract import HTML_READER
from kbctl.net.policy import NetPolicy
from kbctl.sources.base import READER, Expansion, Loaded, SourceSpec
from kbctl.sources.fetchpage import LASTMOD_TRUST, unchanged_since
from kbctl.sources.registry import adapter_for as adapter
from kbctl.sources.registry import source_spec
from tests.http_server import LocalServer, Request, Response, html, ok, redirect

LOCAL = NetPolicy(allow_private_network=True, max_retries=0)
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def page(title: str, *, links: tuple[str, ...] = (), anchor: str = "intro") -> str:
    hrefs = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (f"<!doctype html><html><head><title>{title} — Site</title></head><body>"
            f"<nav><ul>{hrefs}</ul></nav><main><h1 id='top'>{title}</h1>"
            f"<p>{title} body text.</p><h2 id='{anchor}'>Section of {title}</h2>"
            f"<p>More about {title}.</p></main></body></html>")


def urlset(*locs: str, lastmod: str | None = None) -> Response:
    mod = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    items = "".join(f"<url><loc>{loc}</loc>{mod}</url>" for loc in locs)
    return ok(f"<urlset {NS}>{items}</urlset>", "application/xml")


def run(spec: SourceSpec, previous: Callable[[str], dict[str, Any] | None] = lambda r: None,
        **context: Any) -> tuple[Expansion, list[Loaded]]:
    context.setdefault("policy", LOCAL)
    source = adapter(spec, **context)
    expansion = source.expand(spec)
    return expansion, list(source.load(expansion.leaves, previous))


def by_ref(loaded: list[Loaded]) -> dict[str, Loaded]:
    return {item.leaf.ref: item for item in loaded}


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with LocalServer() as server:
        yield server


# --- url ---------------------------------------------------------------------------------


def test_url_loads_one_page_with_its_validators(site: LocalServer) -> None:
    site.routes["/guide/install.html"] = html(page("Install"), headers={
        "ETag": '"v1"', "Last-Modified": "Wed, 01 May 2024 10:00:00 GMT"})
    spec = source_spec("url", site.url("/guide/install.html#top"))
    expansion, [loaded] = run(spec)
    assert expansion.complete and [leaf.ref for leaf in expansion.leaves] == [
        site.url("/guide/install.html")]
    doc = loaded.document
    assert doc is not None and loaded.error is None
    assert (doc.ref, doc.url, doc.kind, doc.title) == (
        site.url("/guide/install.html"), site.url("/guide/install.html"), "url", "Install")
    assert "## Section of Install {#intro}" in doc.body
    assert loaded.meta["etag"] == '"v1"'
    assert loaded.meta["last_modified"] == "Wed, 01 May 2024 10:00:00 GMT"
    assert loaded.meta["fetched_at"].endswith("+00:00") and len(loaded.meta["body_sha256"]) == 64


def test_a_redirected_page_is_stored_under_its_final_url(site: LocalServer) -> None:
    site.routes.update({"/old": redirect("/new#section"), "/new": html(page("New"))})
    _, [loaded] = run(source_spec("url", site.url("/old")))
    assert loaded.leaf.ref == site.url("/new")
    assert loaded.document is not None and loaded.document.url == site.url("/new")


@pytest.mark.parametrize("target", ["docs/", "example.com/page", "ftp://x.test/a"])
def test_a_target_that_is_not_an_http_url_is_bad_input(target: str) -> None:
    with pytest.raises(InputError, match=r"must be an http\(s\) URL") as caught:
        source_spec("url", target)
    assert "ingest files" in (caught.value.hint or "")


@pytest.mark.parametrize(("options", "message"), [
    ({"max_pagez": 3}, "'max_pagez' is not an option of a crawl source"),
    ({"max_pages": 0}, "'max_pages' must be an integer of at least 1"),
    ({"max_depth": "2"}, "'max_depth' must be an integer"),
    ({"ignore_robots": "yes"}, "'ignore_robots' must be true or false"),
    ({"timeout": -1}, "'timeout' must be a number greater than 0"),
    ({"allow_domains": [1]}, "'allow_domains' must be a list of host names"),
])
def test_bad_options_are_bad_input(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        source_spec("crawl", "https://x.test/", options)


# --- conditional fetching ----------------------------------------------------------------


def conditional(body: str, etag: str) -> Callable[[Request], Response]:
    def handler(request: Request) -> Response:
        if request.headers.get("if-none-match") == etag:
            return Response(304, b"", {"ETag": etag})
        return html(body, headers={"ETag": etag})

    return handler


def test_a_second_load_sends_validators_and_a_304_is_not_modified(site: LocalServer) -> None:
    site.routes["/a"] = conditional(page("A"), '"a1"')
    spec = source_spec("url", site.url("/a"))
    _, [first] = run(spec)
    assert first.document is not None
    _, [second] = run(spec, previous=lambda ref: dict(first.meta))
    assert second.not_modified and second.document is None
    assert site.requests[-1].headers["if-none-match"] == '"a1"'
    assert second.meta["etag"] == '"a1"' and "fetched_at" in second.meta
    # --full sets the validators aside (a server may lie with them); the body's hash
    # still spares an unchanged page its extraction
    _, [full] = run(spec, previous=lambda ref: dict(first.meta), full=True)
    assert full.not_modified
    assert "if-none-match" not in site.requests[-1].headers


def test_an_unchanged_body_skips_extraction_when_the_server_has_no_validators(
        site: LocalServer) -> None:
    site.routes["/a"] = html(page("A"))
    spec = source_spec("url", site.url("/a"))
    _, [first] = run(spec)
    _, [again] = run(spec, previous=lambda ref: dict(first.meta))
    assert again.not_modified and again.meta["body_sha256"] == first.meta["body_sha256"]
    site.routes["/a"] = html(page("A changed"))
    _, [changed] = run(spec, previous=lambda ref: dict(first.meta))
    assert changed.document is not None and changed.document.title == "A changed"
    # the same bytes read another way are another document
    _, [text] = run(source_spec("url", site.url("/a"), {"docs_mode": False}),
                    previous=lambda ref: dict(changed.meta))
    assert text.document is not None and text.document.format == "text"


def test_sitemap_lastmod_not_newer_than_the_last_fetch_skips_the_request(
        site: LocalServer) -> None:
    now = datetime.now(timezone.utc)
    fetched = now - timedelta(days=1)  # within LASTMOD_TRUST
    site.routes.update({"/a": html(page("A")), "/b": html(page("B"))})
    # /a unchanged since before the last fetch (a bare date is the end of that day); /b
    # changed an hour after it, written in another time zone
    before, after = (fetched - timedelta(days=2)).date().isoformat(), (
        fetched + timedelta(hours=1)).astimezone(timezone(timedelta(hours=2))).isoformat()
    site.routes["/sitemap.xml"] = ok(
        f"<urlset {NS}><url><loc>{site.url('/a')}</loc><lastmod>{before}</lastmod></url>"
        f"<url><loc>{site.url('/b')}</loc><lastmod>{after}</lastmod></url>"
        "</urlset>", "application/xml")
    spec = source_spec("sitemap", site.url("/sitemap.xml"))
    read = {READER: HTML_READER}  # stored by this version's reader
    stored = {site.url("/a"): {"fetched_at": fetched.isoformat()} | read,
              site.url("/b"): {"fetched_at": fetched.isoformat()} | read}
    _, loaded = run(spec, previous=stored.get)
    results = by_ref(loaded)
    assert results[site.url("/a")].not_modified
    assert results[site.url("/a")].meta == {"lastmod": before}
    assert site.hits("/a") == 0
    assert results[site.url("/b")].document is not None
    _, loaded = run(spec, previous=stored.get, full=True)
    assert by_ref(loaded)[site.url("/a")].document is not None and site.hits("/a") == 1
    older = {site.url("/a"): {"fetched_at": fetched.isoformat()}}  # an older reader
    _, loaded = run(spec, previous=older.get)
    assert by_ref(loaded)[site.url("/a")].document is not None and site.hits("/a") == 2


def test_a_lastmod_is_trusted_for_a_week_or_two_after_the_last_fetch() -> None:
    """A sitemap whose lastmod nobody bumps would hide a changed page for good: past
    LASTMOD_TRUST (stretched per URL by up to as much again) the page is asked for."""
    fetched = datetime(2026, 3, 1, tzinfo=timezone.utc)
    prev = {"fetched_at": fetched.isoformat()}
    urls = [f"https://docs.example.com/p{i}" for i in range(200)]
    for url in urls:
        assert unchanged_since("2026-02-01", prev, url, now=fetched + LASTMOD_TRUST * 0.99)
        assert not unchanged_since("2026-02-01", prev, url, now=fetched + LASTMOD_TRUST * 2)
        assert not unchanged_since("2026-03-05", prev, url, now=fetched + timedelta(days=1))
        # a fetch stamped ahead of the clock (wrong at the time) earns no trust
        assert not unchanged_since("2026-02-01", prev, url, now=fetched - timedelta(days=300))
    due = [sum(not unchanged_since("2026-02-01", prev, url, now=fetched + LASTMOD_TRUST
                                   * (1 + part / 4)) for url in urls) for part in range(4)]
    assert due[0] < 20 and 30 < due[1] < 70 and 80 < due[2] < 120 and 130 < due[3] < 170


@pytest.mark.parametrize("kind", ["sitemap", "crawl"])
def test_a_failing_lookup_of_stored_meta_ends_the_load(site: LocalServer, kind: str) -> None:
    site.routes.update({"/a": html(page("A")), "/sitemap.xml": urlset(site.url("/a"))})

    def previous(ref: str) -> dict[str, Any] | None:
        raise DatabaseError("the database went away")

    target = site.url("/sitemap.xml" if kind == "sitemap" else "/a")
    with pytest.raises(DatabaseError, match="went away"):
        run(source_spec(kind, target, {"llms_txt": False}), previous=previous)


# --- sitemap -----------------------------------------------------------------------------


def test_sitemap_pages_load_concurrently_within_the_per_host_limit(site: LocalServer) -> None:
    locs = [site.url(f"/p{i}") for i in range(12)]
    for i in range(12):
        site.routes[f"/p{i}"] = html(page(f"P{i}"), delay=0.2)
    site.routes["/sitemap.xml"] = urlset(*locs)
    expansion, loaded = run(source_spec("sitemap", site.url("/sitemap.xml")))
    assert expansion.complete and sorted(by_ref(loaded)) == sorted(locs)
    assert all(item.document is not None for item in loaded)
    assert 1 < site.max_in_flight_by_host["127.0.0.1"] <= 4


def test_outcomes_are_yielded_as_they_complete(site: LocalServer) -> None:
    release = threading.Event()

    def slow(request: Request) -> Response:
        release.wait(10)
        return html(page("Slow"))

    site.routes.update({"/slow": slow, "/fast": html(page("Fast")),
                        "/sitemap.xml": urlset(site.url("/slow"), site.url("/fast"))})
    spec = source_spec("sitemap", site.url("/sitemap.xml"))
    source = adapter(spec, policy=LOCAL)
    it = source.load(source.expand(spec).leaves, lambda ref: None)
    first = next(it)  # arrives while /slow is still held by the server
    assert first.leaf.ref == site.url("/fast")
    release.set()
    assert [item.leaf.ref for item in it] == [site.url("/slow")]


def test_urls_that_redirect_to_one_page_are_loaded_once(site: LocalServer) -> None:
    site.routes.update({"/a": html(page("A")), "/a-old": redirect("/a"),
                        "/sitemap.xml": urlset(site.url("/a"), site.url("/a-old"))})
    _, loaded = run(source_spec("sitemap", site.url("/sitemap.xml")))
    assert [item.leaf.ref for item in loaded] == [site.url("/a")]


def test_a_broken_child_sitemap_is_an_error_and_the_listing_is_incomplete(
        site: LocalServer) -> None:
    site.routes.update({
        "/index.xml": ok(f"<sitemapindex {NS}><sitemap><loc>{site.url('/s1.xml')}</loc>"
                         f"</sitemap><sitemap><loc>{site.url('/s2.xml')}</loc></sitemap>"
                         "</sitemapindex>", "application/xml"),
        "/s1.xml": urlset(site.url("/a")),
        "/s2.xml": ok("<urlset><url>", "application/xml"),
        "/a": html(page("A")),
    })
    expansion, loaded = run(source_spec("sitemap", site.url("/index.xml")))
    assert not expansion.complete
    results = by_ref(loaded)
    assert results[site.url("/a")].document is not None
    error = results[site.url("/s2.xml")].error
    assert isinstance(error, ExtractError) and "not a well-formed" in error.message


@pytest.mark.parametrize(("body", "message"), [
    ("<urlset><url><loc>", "not a well-formed XML sitemap"),
    (f"<urlset {NS}></urlset>", "the sitemap lists no pages"),
    ('<!DOCTYPE u [<!ENTITY a "b">]><urlset><url><loc>&a;</loc></url></urlset>',
     "declares XML entities"),
])
def test_a_sitemap_that_fails_as_a_whole_raises_one_error(site: LocalServer, body: str,
                                                          message: str) -> None:
    site.routes["/sitemap.xml"] = ok(body, "application/xml")
    spec = source_spec("sitemap", site.url("/sitemap.xml"))
    with pytest.raises(SourceError, match=message):
        adapter(spec, policy=LOCAL).expand(spec)


def test_a_preview_sitemap_naming_the_published_site_says_so(site: LocalServer) -> None:
    # `mkdocs build` writes site_url into the sitemap a local preview serves
    published = ["https://docs.example.org/", "https://docs.example.org/guide/"]
    site.routes["/sitemap.xml"] = urlset(*published)
    spec = source_spec("sitemap", site.url("/sitemap.xml"))
    expansion = adapter(spec, policy=LOCAL).expand(spec)
    assert [leaf.ref for leaf in expansion.leaves] == published
    assert expansion.notes == [
        f"{site.url('/sitemap.xml')}: every page it lists is on https://docs.example.org, not "
        f"where the sitemap was served; those are the pages fetched (to ingest the site "
        f"served here, crawl it: kbctl ingest crawl {site.url('/')})"]
    site.routes["/sitemap.xml"] = urlset(site.url("/a"), "https://www.docs.example.org/b")
    assert not adapter(spec, policy=LOCAL).expand(spec).notes  # some are here


def test_a_site_origin_discovers_its_sitemaps(site: LocalServer) -> None:
    site.routes.update({"/robots.txt": ok("Sitemap: /maps/docs.xml.gz\n"),
                        "/maps/docs.xml.gz": ok(gzip.compress(
                            urlset(site.url("/a")).body), "application/gzip"),  # type: ignore
                        "/a": html(page("A"))})
    expansion, loaded = run(source_spec("sitemap", site.url("/")))
    assert [item.leaf.ref for item in loaded] == [site.url("/a")]
    del site.routes["/robots.txt"]
    spec = source_spec("sitemap", site.url("/"))
    with pytest.raises(SourceError, match="no usable sitemap") as info:
        adapter(spec, policy=LOCAL).expand(spec)
    assert site.url("/sitemap.xml") in info.value.message


def test_the_url_cap_keeps_the_listing_partial(site: LocalServer) -> None:
    site.routes["/sitemap.xml"] = urlset(*(site.url(f"/p{i}") for i in range(5)))
    spec = source_spec("sitemap", site.url("/sitemap.xml"), {"max_urls": 2})
    expansion = adapter(spec, policy=LOCAL).expand(spec)
    assert [leaf.ref for leaf in expansion.leaves] == [site.url("/p0"), site.url("/p1")]
    assert not expansion.complete and "only the first" in expansion.notes[0]


# --- llms.txt ------------------------------------------------------------------------------

LLMS = "# Site\n\n> Curated.\n\n## Docs\n\n- [A](/a.md): first\n\n## Optional\n\n- [B](/b.md)\n"


def test_llms_source_loads_linked_markdown(site: LocalServer) -> None:
    site.routes.update({"/llms.txt": ok(LLMS), "/a.md": ok("# A\n\n## Part {#p}\n\nText a.\n"),
                        "/b.md": ok("# B\n\nText b.\n", "text/markdown")})
    expansion, loaded = run(source_spec("llms", site.url("/")))
    docs = {item.leaf.ref: item.document for item in loaded}
    assert sorted(docs) == [site.url("/a.md"), site.url("/b.md")]
    a = docs[site.url("/a.md")]
    assert a is not None and a.format == "markdown" and a.title == "A" and a.kind == "llms"
    spec = source_spec("llms", site.url("/llms.txt"), {"skip_optional": True})
    expansion, loaded = run(spec)
    assert [item.leaf.ref for item in loaded] == [site.url("/a.md")]
    assert "1 pages of the Optional section skipped" in expansion.notes[0]


@pytest.mark.parametrize("kind", ["sitemap", "crawl"])
def test_sitemap_and_crawl_prefer_a_curated_llms_txt(site: LocalServer, kind: str) -> None:
    site.routes.update({"/llms.txt": ok(LLMS), "/a.md": ok("# A\n\nText.\n"),
                        "/b.md": ok("# B\n\nText.\n"), "/index.html": html(page("Home")),
                        "/sitemap.xml": urlset(site.url("/index.html"))})
    target = site.url("/sitemap.xml" if kind == "sitemap" else "/index.html")
    expansion, loaded = run(source_spec(kind, target))
    assert sorted(item.leaf.ref for item in loaded) == [site.url("/a.md"), site.url("/b.md")]
    assert any("lists 2 curated pages" in note and "--no-llms-txt" in note
               for note in expansion.notes)
    assert all(item.document is not None and item.document.kind == kind for item in loaded)
    expansion, loaded = run(source_spec(kind, target, {"llms_txt": False}))
    assert [item.leaf.ref for item in loaded] == [site.url("/index.html")]
    assert expansion.notes == []


@pytest.mark.parametrize(("kind", "cap", "flag"), [
    ("llms", {"max_urls": 2}, "--max-urls"), ("sitemap", {"max_urls": 2}, "--max-urls"),
    ("crawl", {"max_pages": 2}, "--max-pages")])
def test_a_curated_list_keeps_to_the_sources_page_limit(site: LocalServer, kind: str,
                                                       cap: dict[str, int], flag: str) -> None:
    """An llms.txt of 300 pages took all 300 for a crawl of --max-pages 3."""
    listed = "".join(f"- [P{i}](/p{i}.md)\n" for i in range(300))
    site.routes.update({"/llms.txt": ok(f"# Site\n\n## Docs\n\n{listed}"),
                        "/index.html": html(page("Home")),
                        "/sitemap.xml": urlset(site.url("/index.html"))})
    target = site.url({"llms": "/llms.txt", "sitemap": "/sitemap.xml"}.get(kind, "/index.html"))
    spec = source_spec(kind, target, cap)
    expansion = adapter(spec, policy=LOCAL).expand(spec)
    assert [leaf.ref for leaf in expansion.leaves] == [site.url("/p0.md"), site.url("/p1.md")]
    assert not expansion.complete  # a resync must not delete the pages past the cap
    assert any(f"lists 300 pages; only the first 2 are ingested (see {flag})" in note
               for note in expansion.notes), expansion.notes


# --- crawl -------------------------------------------------------------------------------


def crawl_site(site: LocalServer) -> None:
    other = site.url("/elsewhere", host="localhost")
    site.routes.update({
        "/": html(page("Home", links=("/a", "/b#frag", "/b", "/logo.png", "/a?x=1",
                                      other, "mailto:x@y.test", "/private/secret"))),
        "/a": html(page("A", links=("/a/deep", "/"))),
        "/b": html(page("B", links=("/b/deep",))),
        "/a/deep": html(page("A deep", links=("/a/deeper",))),
        "/b/deep": html(page("B deep")),
        "/a/deeper": html(page("A deeper")),
        "/private/secret": html(page("Secret")),
        "/robots.txt": ok("User-agent: *\nDisallow: /private/\n"),
        "/logo.png": ok(b"\x89PNG", "image/png"),
    })


def test_crawl_is_breadth_first_within_depth_site_and_robots(site: LocalServer) -> None:
    crawl_site(site)
    discovered: list[int] = []
    expansion, loaded = run(source_spec("crawl", site.url("/"), {"max_depth": 2}),
                            on_discovered=discovered.append)
    refs = [item.leaf.ref for item in loaded]
    assert sorted(refs) == sorted(site.url(p) for p in (
        "/", "/a", "/b", "/a?x=1", "/a/deep", "/b/deep"))  # a query makes another page
    assert all(item.document is not None for item in loaded)
    assert site.hits("/private/secret") == 0 and site.hits("/logo.png") == 0
    assert site.hits("/a/deeper") == 0  # depth 3
    assert sum(discovered) == 5
    assert expansion.complete
    assert all(item.document.kind == "crawl" for item in loaded if item.document)


def test_crawl_page_cap_and_ignore_robots(site: LocalServer) -> None:
    crawl_site(site)
    _, loaded = run(source_spec("crawl", site.url("/"), {"max_pages": 3}))
    assert sorted(item.leaf.ref for item in loaded) == sorted(
        site.url(p) for p in ("/", "/a", "/b"))
    _, loaded = run(source_spec("crawl", site.url("/"), {"max_depth": 1,
                                                        "ignore_robots": True}))
    assert site.url("/private/secret") in by_ref(loaded)


def test_crawl_follows_allowed_domains(site: LocalServer) -> None:
    crawl_site(site)
    site.routes["/elsewhere"] = html(page("Elsewhere"))
    _, loaded = run(source_spec("crawl", site.url("/"), {"max_depth": 1}))
    assert site.url("/elsewhere", host="localhost") not in by_ref(loaded)
    _, loaded = run(source_spec("crawl", site.url("/"), {"max_depth": 1,
                                                        "allow_domains": ["localhost"]}))
    assert site.url("/elsewhere", host="localhost") in by_ref(loaded)


def test_a_crawl_moves_with_its_start_page_but_not_with_links_off_the_site(
        site: LocalServer) -> None:
    elsewhere = f"http://2130706433:{site.port}"  # 127.0.0.1 by another name: another site
    site.routes.update({
        "/": redirect(site.url("/home")),
        "/home": html(page("Home", links=("/a", "/out"))),
        "/a": html(page("A")),
        "/out": redirect(f"{elsewhere}/ext"),
        "/ext": html(page("Ext", links=("/ext2",))),
        "/ext2": html(page("Ext2")),
    })
    expansion, loaded = run(source_spec("crawl", site.url("/", host="localhost")))
    assert sorted(by_ref(loaded)) == [site.url("/a"), site.url("/home")]
    assert site.hits("/ext") == 1 and site.hits("/ext2") == 0
    assert expansion.complete


def test_a_start_page_robots_disallows_is_an_error(site: LocalServer) -> None:
    site.routes.update({"/robots.txt": ok("User-agent: kbctl\nDisallow: /\n"),
                        "/": html(page("Home"))})
    expansion, [loaded] = run(source_spec("crawl", site.url("/")))
    assert isinstance(loaded.error, SourceError)
    assert "robots.txt" in loaded.error.message and "--ignore-robots" in (loaded.error.hint or "")
    assert site.hits("/") == 0 and not expansion.complete


def test_a_server_error_mid_crawl_makes_it_incomplete_but_a_404_does_not(
        site: LocalServer) -> None:
    site.routes.update({"/": html(page("Home", links=("/gone",))), "/robots.txt": ok("")})
    expansion, loaded = run(source_spec("crawl", site.url("/")))
    error = by_ref(loaded)[site.url("/gone")].error
    assert isinstance(error, FetchError) and error.status == 404
    assert expansion.complete
    site.routes["/gone"] = Response(500, b"down")
    expansion, loaded = run(source_spec("crawl", site.url("/")))
    assert by_ref(loaded)[site.url("/gone")].error is not None
    assert not expansion.complete


def test_a_wide_site_keeps_only_the_links_the_next_layer_can_read(
        site: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every page linking to many new ones: all were kept (and remembered as seen), and a
    crawl of such a site grew by gigabytes. The layer read is the same, and a crawl that
    set links aside it might have read deletes nothing."""
    from kbctl.sources import crawl

    monkeypatch.setattr(crawl, "MIN_FRONTIER", 1)
    monkeypatch.setattr(crawl, "FRONTIER_SLACK", 2)
    site.routes["/robots.txt"] = ok("")
    site.routes["/"] = html(page("Home", links=tuple(f"/p{i}" for i in range(40))))
    for i in range(40):
        site.routes[f"/p{i}"] = html(page(f"P{i}", links=tuple(f"/p{i}/{j}" for j in range(40))))
    expansion, loaded = run(source_spec("crawl", site.url("/"), {"max_pages": 4}))
    assert sorted(item.leaf.ref for item in loaded) == sorted(
        site.url(p) for p in ("/", "/p0", "/p1", "/p2"))  # the first links, as before
    assert expansion.complete  # the links kept filled the budget
    blocked = "".join(f"Disallow: /p{i}\n" for i in range(6))
    site.routes["/robots.txt"] = ok(f"User-agent: *\n{blocked}")
    expansion, loaded = run(source_spec("crawl", site.url("/"), {"max_pages": 4}))
    assert [item.leaf.ref for item in loaded] == [site.url("/")]  # 6 kept, all refused
    assert not expansion.complete  # the 34 set aside might have been read: keep pages


# --- what the guard and the limits refuse -------------------------------------------------

PUBLIC = "93.184.216.34"


def public_site(routes: dict[str, httpx.Response]) -> dict[str, Any]:
    """Context for a 'public' host answered by a mock transport (no opt-in)."""

    def handler(request: httpx.Request) -> httpx.Response:
        return routes.get(request.url.path, httpx.Response(404))

    return {"transport": httpx.MockTransport(handler),
            "resolver": lambda host: [PUBLIC], "policy": NetPolicy(max_retries=0)}


@pytest.mark.parametrize(("location", "rule"), [
    ("http://127.0.0.1/admin", "loopback (127.0.0.0/8)"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata endpoint"),
    ("http://[::ffff:10.0.0.1]/", "private (10.0.0.0/8)"),
])
def test_a_redirect_to_a_private_address_is_blocked_and_says_why(location: str,
                                                                 rule: str) -> None:
    context = public_site({"/start": httpx.Response(302, headers={"Location": location})})
    _, [loaded] = run(source_spec("url", "http://docs.example.test/start"), **context)
    assert isinstance(loaded.error, BlockedURL)
    assert rule in loaded.error.message and "redirected from" in loaded.error.message


def test_metadata_stays_blocked_with_the_private_network_opt_in(site: LocalServer) -> None:
    site.routes["/a"] = redirect("http://169.254.169.254/latest/")
    _, [loaded] = run(source_spec("url", site.url("/a")))
    assert isinstance(loaded.error, BlockedURL)
    assert "cloud metadata endpoint" in loaded.error.message


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "[::1]"])
def test_a_blocked_numeric_host_is_refused_without_a_request(host: str) -> None:
    # the target itself is refused while expanding, before any request (or record)
    with pytest.raises(BlockedURL, match="loopback"):
        run(source_spec("url", f"http://{host}/"), policy=NetPolicy())


@pytest.mark.parametrize(("routes", "options", "message"), [
    ({"/a": redirect("/b"), "/b": redirect("/a")}, {}, "redirect loop"),
    ({"/a": html("x" * 5000)}, {"max_page_bytes": 1000}, "larger than 1000 bytes"),
    ({"/a": ok(gzip.compress(b"<p>" + b"a" * 3_000_000), "text/html",
               headers={"Content-Encoding": "gzip"})}, {"max_page_bytes": 1_000_000},
     "larger than 1000000 bytes (after decompression)"),
    ({"/a": html(page("Slow"), delay=5)}, {"timeout": 1.5}, "timed out"),
    ({"/a": ok(b"PK\x03\x04" + bytes(range(256)) * 4, "text/html")}, {}, "ZIP archive"),
    ({"/a": ok(b"%PDF-1.4", "application/pdf")}, {}, "content type application/pdf"),
    ({"/a": Response(500, b"boom")}, {}, "HTTP 500"),
    ({"/a": Response(410, b"")}, {}, "HTTP 410"),
])
def test_bad_pages_are_per_page_errors(site: LocalServer, routes: dict[str, Response],
                                       options: dict[str, Any], message: str) -> None:
    site.routes.update(routes)
    site.routes["/ok"] = html(page("OK"))
    site.routes["/sitemap.xml"] = urlset(site.url("/a"), site.url("/ok"))
    expansion, loaded = run(source_spec("sitemap", site.url("/sitemap.xml"), options))
    results = by_ref(loaded)
    assert expansion.complete
    assert results[site.url("/ok")].document is not None  # the run goes on
    error = results[site.url("/a")].error
    assert error is not None and message in error.message
