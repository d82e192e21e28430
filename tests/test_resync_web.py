"""`kbctl resync` against real HTTP servers on 127.0.0.1: validators, vanished pages,
failing sitemaps and flaky servers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timezone

import psycopg
import pytest

from tests.conftest import Cli, rows
from tests.http_server import LocalServer, Response, html, ok
from tests.test_cli_ingest_web import PRIVATE, etagged, page, snapshot, urlset
from tests.test_store import _consistent

PAGES = ("a", "b", "c", "d", "e", "f")


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with LocalServer() as server:
        for name in PAGES:
            server.routes[f"/{name}.html"] = etagged(page(name.upper()), f'"{name}1"')
        server.routes["/sitemap.xml"] = urlset(*(server.url(f"/{n}.html") for n in PAGES))
        yield server


def _ingest(cli: Cli, site: LocalServer) -> None:
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, "--no-llms-txt")
    assert report["added"] == len(PAGES)


def test_unchanged_site_answers_304_and_writes_nothing(cli: Cli, site: LocalServer) -> None:
    _ingest(cli, site)
    before = snapshot(cli.db_url)
    report = cli.json("resync", PRIVATE)
    t = report["totals"]
    assert t["notModified"] == len(PAGES)
    assert (t["chunksWritten"], t["updated"], t["failed"], t["embedded"]) == (0, 0, 0, 0)
    assert all(r.headers.get("if-none-match") for r in site.requests[-len(PAGES):])
    assert snapshot(cli.db_url) == before


def test_changed_and_vanished_pages(cli: Cli, site: LocalServer) -> None:
    _ingest(cli, site)
    site.routes["/b.html"] = etagged(page("B", ("rewritten",)), '"b2"')
    site.routes["/c.html"] = Response(404, b"gone")
    site.routes["/d.html"] = Response(410, b"gone for good")
    report = cli.json("resync", PRIVATE, "--max-delete", "0.5")
    ns = report["namespaces"][0]
    assert [r.rsplit("/", 1)[-1] for r in ns["changes"]["updated"]] == ["b.html"]
    assert sorted(r.rsplit("/", 1)[-1] for r in ns["changes"]["deleted"]) == ["c.html",
                                                                              "d.html"]
    assert ns["failed"] == 0
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(len(PAGES) - 2,)]
    _consistent(cli.db_url)


def test_flaky_server_keeps_previous_chunks(cli: Cli, site: LocalServer) -> None:
    _ingest(cli, site)
    before = snapshot(cli.db_url)
    for name in ("a", "b"):
        site.routes[f"/{name}.html"] = Response(500, b"oops")
    report = cli.json("resync", PRIVATE, code=1)
    t = report["totals"]
    assert t["failed"] == 2 and t["deleted"] == 0
    assert {e["ref"].rsplit("/", 1)[-1] for e in report["namespaces"][0]["errors"]} == {
        "a.html", "b.html"}
    assert snapshot(cli.db_url) == before


@pytest.mark.parametrize("broken", [
    Response(500, b"down"),
    ok("<urlset><url><loc>unterminated", "application/xml"),
])
def test_a_failing_sitemap_deletes_nothing(cli: Cli, site: LocalServer,
                                           broken: Response) -> None:
    _ingest(cli, site)
    before = snapshot(cli.db_url)
    site.routes["/sitemap.xml"] = broken
    report = cli.json("resync", PRIVATE, code=1)
    assert report["totals"]["deleted"] == 0 and report["totals"]["failed"] == 1
    assert snapshot(cli.db_url) == before


def test_a_gutted_sitemap_trips_the_guard(cli: Cli, site: LocalServer) -> None:
    _ingest(cli, site)
    before = snapshot(cli.db_url)
    site.routes["/sitemap.xml"] = urlset(site.url("/a.html"))
    tripped = cli("resync", PRIVATE)
    assert tripped.exit_code == 1 and "mass-delete guard" in tripped.stderr
    assert snapshot(cli.db_url) == before
    said = cli.json("resync", PRIVATE, code=1)["namespaces"][0]["errors"]
    assert [e["type"] for e in said] == ["MassDeleteGuard"]  # its JSON said errors: []
    plan = cli.json("resync", PRIVATE, "--plan", "--force")
    assert len(plan["namespaces"][0]["changes"]["deleted"]) == len(PAGES) - 1
    assert snapshot(cli.db_url) == before
    forced = cli.json("resync", PRIVATE, "--force")
    assert forced["totals"]["deleted"] == len(PAGES) - 1
    _consistent(cli.db_url)


def test_lastmod_skips_requests_unless_full(cli: Cli, site: LocalServer) -> None:
    items = "".join(f"<url><loc>{site.url(f'/{n}.html')}</loc><lastmod>2001-01-01</lastmod>"
                    f"</url>" for n in PAGES)
    site.routes["/sitemap.xml"] = ok(
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</urlset>',
        "application/xml")
    _ingest(cli, site)
    hits = {n: site.hits(f"/{n}.html") for n in PAGES}
    assert cli.json("resync", PRIVATE)["totals"]["notModified"] == len(PAGES)
    assert {n: site.hits(f"/{n}.html") for n in PAGES} == hits  # no request at all
    full = cli.json("resync", PRIVATE, "--full")
    assert full["totals"]["notModified"] == len(PAGES)  # fetched whole, the same text
    assert all(site.hits(f"/{n}.html") == hits[n] + 1 for n in PAGES)


def test_full_sets_aside_validators_a_server_lies_with(cli: Cli, site: LocalServer) -> None:
    _ingest(cli, site)
    # new content under the old ETag: the server answers 304 to the stored one
    site.routes["/a.html"] = etagged(page("A, rewritten with zymurgy"), '"a1"')
    assert cli.json("resync", PRIVATE)["totals"]["updated"] == 0
    assert not rows(cli.db_url, "SELECT 1 FROM chunks WHERE text LIKE '%%zymurgy%%'")
    assert cli.json("resync", PRIVATE, "--full")["totals"]["updated"] == 1
    assert rows(cli.db_url, "SELECT 1 FROM chunks WHERE text LIKE '%%zymurgy%%'")


def test_plan_lists_changes_as_json_without_writing(cli: Cli, site: LocalServer) -> None:
    _ingest(cli, site)
    site.routes["/e.html"] = html(page("E", ("changed",)))
    before = snapshot(cli.db_url)
    plan = cli.json("resync", PRIVATE, "--plan")
    assert plan["plan"] is True
    assert [r.rsplit("/", 1)[-1] for r in plan["namespaces"][0]["changes"]["updated"]] == [
        "e.html"]
    assert snapshot(cli.db_url) == before


def test_an_emptied_sitemap_of_an_index_deletes_nothing(cli: Cli, site: LocalServer) -> None:
    first, rest = [site.url(f"/{n}.html") for n in PAGES[:2]], [
        site.url(f"/{n}.html") for n in PAGES[2:]]
    site.routes["/one.xml"], site.routes["/two.xml"] = urlset(*first), urlset(*rest)
    site.routes["/index.xml"] = ok(
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/'
        f'0.9"><sitemap><loc>{site.url("/one.xml")}</loc></sitemap><sitemap><loc>'
        f'{site.url("/two.xml")}</loc></sitemap></sitemapindex>', "application/xml")
    cli.json("ingest", "sitemap", site.url("/index.xml"), PRIVATE, "--no-llms-txt")
    before = snapshot(cli.db_url)
    site.routes["/one.xml"] = urlset()  # 2 of 6 pages: under the mass-delete guard
    report = cli.json("resync", PRIVATE)
    assert report["totals"]["deleted"] == 0 and snapshot(cli.db_url) == before
    assert any("one.xml: listed by a sitemap index, but list no page" in n
               for n in report["namespaces"][0]["notes"])
    site.routes["/one.xml"] = urlset(first[0])  # one page really gone: deleted
    assert cli.json("resync", PRIVATE)["totals"]["deleted"] == 1


def test_a_page_that_moved_is_stored_at_its_new_address(cli: Cli, site: LocalServer) -> None:
    """The sitemap still lists b.html, which now redirects to b-new.html (same body, same
    ETag). The old page's validators were sent on, the new URL answered 304, and the run
    deleted b.html and stored nothing at b-new.html."""
    _ingest(cli, site)
    site.routes["/b-new.html"] = etagged(page("B"), '"b1"')
    site.routes["/b.html"] = Response(301, b"", {"Location": site.url("/b-new.html")})
    report = cli.json("resync", PRIVATE, "--max-delete", "0.5")
    ns = report["namespaces"][0]
    assert ns["changes"]["added"] == [site.url("/b-new.html")]
    assert ns["changes"]["deleted"] == [site.url("/b.html")]
    moved = [r for r in site.requests if r.path == "/b-new.html"][-1]
    assert "if-none-match" not in moved.headers
    assert rows(cli.db_url, "SELECT count(*) FROM sources WHERE ref = %s",
                site.url("/b-new.html")) == [(1,)]
    again = cli.json("resync", PRIVATE)["totals"]
    assert (again["added"], again["deleted"], again["failed"]) == (0, 0, 0)
    _consistent(cli.db_url)


def test_a_listed_page_gone_before_is_no_failure_later(cli: Cli, site: LocalServer) -> None:
    """Deleted as gone (404) on one run, the page failed every later run while the
    sitemap still listed it: exit 1 for ever, with nothing changed on the site."""
    _ingest(cli, site)
    site.routes["/c.html"] = Response(404, b"gone")
    first = cli.json("resync", PRIVATE, "--max-delete", "0.5")
    assert first["totals"]["deleted"] == 1 and first["totals"]["failed"] == 0
    later = cli.json("resync", PRIVATE)
    assert (later["totals"]["failed"], later["totals"]["deleted"]) == (0, 0)
    assert any("1 page it names gone (HTTP 404/410), none stored: " + site.url("/c.html")
               in note for note in later["namespaces"][0]["notes"])


def _crawl_site(site: LocalServer, links: dict[str, tuple[str, ...]]) -> None:
    """Pages that reach each other only by their links, each with an ETag."""
    for name, targets in links.items():
        body = page(name.upper(), links=tuple(site.url(f"/{t}.html") for t in targets))
        site.routes[f"/{name}.html"] = etagged(body, f'"{name}-{len(targets)}"')


def test_a_crawl_resync_asks_whether_pages_changed_and_follows_their_stored_links(
        cli: Cli) -> None:
    """A 304 has no body to find links in, so a crawl's resync fetched every page whole:
    each page's links are now stored with it, and a resync that finds every page
    unchanged still reaches the pages only a link leads to."""
    with LocalServer() as site:
        _crawl_site(site, {"a": ("b", "c"), "b": ("d",), "c": (), "d": ("e",), "e": ()})
        added = cli.json("ingest", "crawl", site.url("/a.html"), PRIVATE, "--no-llms-txt")
        assert added["added"] == 5
        assert rows(cli.db_url, "SELECT meta->'links' FROM sources WHERE ref = %s",
                    site.url("/b.html")) == [(["/d.html"],)]
        start = len(site.requests)
        report = cli.json("resync", PRIVATE)["totals"]
        assert (report["notModified"], report["failed"], report["deleted"]) == (5, 0, 0)
        pages = [r for r in site.requests[start:] if r.path.endswith(".html")]
        assert sorted(r.path for r in pages) == [f"/{n}.html" for n in "abcde"]
        assert all(r.headers.get("if-none-match") for r in pages)

        # a changed page (a new link in its navigation) is read whole, the link followed
        _crawl_site(site, {"d": ("e", "f"), "f": ()})
        report = cli.json("resync", PRIVATE)["totals"]
        assert (report["added"], report["notModified"], report["failed"]) == (1, 4, 0)
        # a page that lost its link to e: e is no longer part of the site
        _crawl_site(site, {"d": ("f",)})
        report = cli.json("resync", PRIVATE, "--max-delete", "0.5")["totals"]
        assert (report["deleted"], report["notModified"]) == (1, 4)
        _consistent(cli.db_url)


def test_a_page_stored_without_its_links_is_fetched_whole_once(cli: Cli) -> None:
    """Pages a crawl stored before links were kept (or with too many to keep) are asked
    for whole, once: that fetch stores their links."""
    with LocalServer() as site:
        _crawl_site(site, {"a": ("b",), "b": ()})
        cli.json("ingest", "crawl", site.url("/a.html"), PRIVATE, "--no-llms-txt")
        with psycopg.connect(cli.db_url) as conn:
            conn.execute("UPDATE sources SET meta = meta - 'links'")
        start = len(site.requests)
        assert cli.json("resync", PRIVATE)["totals"]["notModified"] == 2
        first = [r for r in site.requests[start:] if r.path == "/a.html"]
        assert [r.headers.get("if-none-match") for r in first] == [None]
        start = len(site.requests)
        assert cli.json("resync", PRIVATE)["totals"]["notModified"] == 2
        again = [r for r in site.requests[start:] if r.path == "/a.html"]
        assert [r.headers.get("if-none-match") for r in again] == ['"a-1"']


def test_a_page_a_spent_crawl_budget_leaves_unread_is_not_deleted(cli: Cli) -> None:
    """New pages took the places of stored ones in a crawl held to --max-pages: those were
    found, still on the site, and deleted as gone."""
    with LocalServer() as site:
        _crawl_site(site, {"a": ("b", "c", "d"), "b": (), "c": (), "d": ()})
        added = cli.json("ingest", "crawl", site.url("/a.html"), PRIVATE, "--no-llms-txt",
                         "--max-pages", "3")
        assert added["added"] == 3  # a, b, c; d found and left unread
        _crawl_site(site, {"a": ("n", "b", "c", "d"), "n": ()})
        report = cli.json("resync", PRIVATE, "--max-delete", "0.9")
        totals = report["totals"]
        assert (totals["added"], totals["deleted"]) == (1, 0)
        stored = {r for (r,) in rows(cli.db_url, "SELECT ref FROM sources")}
        assert stored == {site.url(f"/{n}.html") for n in "abcn"}
        assert any("more pages it found were not read" in note
                   for note in report["namespaces"][0]["notes"])


def test_a_maintenance_page_at_every_address_deletes_nothing(cli: Cli, site: LocalServer) -> None:
    """One 'down for maintenance' page served (200) for every URL made each page a copy
    of the first, and the run deleted them as duplicates, exit 0."""
    _ingest(cli, site)
    # the pages' sitemap dates move past the last fetch: each is asked for, and answers
    # with the maintenance page; those dates then stay put
    time.sleep(1.1)  # sitemap dates and fetch times are kept to the second
    moved = datetime.now(timezone.utc).isoformat(timespec="seconds")
    items = "".join(f"<url><loc>{site.url(f'/{n}.html')}</loc><lastmod>{moved}</lastmod>"
                    f"</url>" for n in PAGES)
    site.routes["/sitemap.xml"] = ok(
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</urlset>',
        "application/xml")
    for name in PAGES:
        site.routes[f"/{name}.html"] = html(page("Down for maintenance", ("back-soon",)))
    report = cli.json("resync", PRIVATE, "--max-delete", "0.9")
    totals = report["totals"]
    assert totals["deleted"] == 0
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(len(PAGES),)]
    notes = "\n".join(report["namespaces"][0]["notes"])
    assert "its stored version is kept, and that page is read again next run" in notes
    # the site is back: the page whose text the others copied was stored with it, and its
    # sitemap date, older than that fetch, kept it from being asked for again for weeks
    for name in PAGES:
        site.routes[f"/{name}.html"] = etagged(page(name.upper()), f'"{name}1"')
    cli.json("resync", PRIVATE)
    assert not rows(cli.db_url, "SELECT 1 FROM chunks WHERE text LIKE '%%maintenance%%'")
    _consistent(cli.db_url)


def test_a_source_that_now_lists_nothing_keeps_its_pages(cli: Cli, site: LocalServer) -> None:
    """A small source of a big namespace lost every page, exit 0: its sitemap no longer
    listed anything its include rule matched, under the namespace's delete guard."""
    _ingest(cli, site)
    first = site.url("/a.html")
    site.routes["/small.xml"] = urlset(first)
    small = cli.json("ingest", "sitemap", site.url("/small.xml"), PRIVATE, "--no-llms-txt",
                     "--include", "/a.html", "-n", "docs-a")
    assert small["added"] == 1
    site.routes["/small.xml"] = urlset(*(site.url(f"/{n}.html") for n in PAGES[1:]))
    report = cli.json("resync", PRIVATE, "-n", "docs-a", code=1)
    (error,) = report["namespaces"][0]["errors"]
    assert "its URL rules leave none of the pages it lists; its 1 stored page is kept" in (
        str(error)), error
    assert rows(cli.db_url, "SELECT count(*) FROM sources WHERE namespace = 'docs-a'") == [(1,)]
    forced = cli.json("resync", PRIVATE, "-n", "docs-a", "--force")
    assert forced["totals"]["deleted"] == 1


def test_an_llms_txt_published_later_does_not_switch_a_recorded_sitemap(
        cli: Cli, site: LocalServer) -> None:
    """The site had no llms.txt at the first ingest; one published later (a handful of
    pages) made every resync read it instead of the sitemap, and the delete guard failed
    each run (adding its pages all the same)."""
    first = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    assert first["added"] == len(PAGES)
    (recorded,) = cli.json("status")["sourceDefinitions"]
    assert recorded["options"]["llms_txt"] is False  # the site had none: kept that way
    site.routes["/llms.txt"] = ok("# Widget\n\n## Docs\n\n- [A](/a.html)\n- [New](/new.html)\n",
                                  "text/plain")
    site.routes["/new.html"] = html(page("NEW"))
    report = cli.json("resync", PRIVATE)["totals"]
    assert (report["added"], report["deleted"], report["failed"]) == (0, 0, 0)
    assert site.hits("/new.html") == 0
    # an ingest asked for by name looks again, and says what changed
    again = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, code=0)
    assert any("llms.txt lists 2 curated pages" in note for note in again["notes"])
