"""Web sources shaped by the operator and by the site, end to end: a local site that
publishes a sitemap with a blog, two versions and a translation of every page, canonical
links, noindex pages, a copy of a page under a second URL and a page with an unknown
layout; ingested through the real CLI into a real database, then resynced."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.conftest import Cli, rows
from tests.http_server import LocalServer, html, ok, redirect

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
PRIVATE = "--allow-private-network"
PAGES = ("index", "guide")
VERSIONS = ("stable", "latest")
LANGS = ("en", "fr")


def doc_page(title: str, body: str, head: str = "") -> str:
    return (f"<!doctype html><html><head><title>{title} | Widget</title>{head}</head><body>"
            f"<nav><a href='/'>home</a></nav><main><h1 id='top'>{title}</h1>"
            f"<section id='about'><h2>About</h2><p>{body}</p></section></main></body></html>")


def versioned(lang: str, version: str, page: str) -> str:
    return doc_page(f"{page.title()} {lang} {version}",
                    f"The {page} page of Widget {version} in {lang}: frobnicate{version} "
                    f"the {lang}widget carefully.")


CUSTOM = """<!doctype html><html><head><title>Custom</title></head><body>
<div class="shell"><div class="menu"><a href="/">Menu entry</a> Sidebar chatter</div>
<div class="xyz-content"><h1 id="custom">Custom layout</h1>
<p>The zanzibar setting controls the widget's quietness.</p>
<div class="feedback-widget">Was this page helpful? Tell us.</div></div>
<div class="promo">Buy the enterprise edition today.</div></div></body></html>"""


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with LocalServer() as server:
        routes = server.routes
        listed = []
        for lang in LANGS:
            for version in VERSIONS:
                for page in PAGES:
                    path = f"/{lang}/{version}/{page}.html"
                    routes[path] = html(versioned(lang, version, page))
                    listed.append(path)
        base = "/en/stable"
        copy_of_index = versioned("en", "stable", "index")
        extra = {
            # names a listed page canonical: a copy, stored once (there)
            f"{base}/guide-print.html": html(doc_page("Guide print", "Printable guide.",
                                             f"<link rel='canonical' href='{base}/guide.html'>")),
            # names an unlisted page canonical: that page is fetched and stored instead
            f"{base}/moved.html": html(doc_page("Moved", "Old home of the mover page.",
                                       f"<link rel='canonical' href='{base}/new-home.html'>")),
            # a canonical on another origin is not followed: the page stands for itself
            f"{base}/mirror.html": html(doc_page(
                "Mirror", "The mirrored quokka reference.",
                "<link rel='canonical' href='https://elsewhere.example/mirror.html'>")),
            # a stub left where a page moved: its target is fetched and stored instead
            f"{base}/old-name.html": html(
                "<html><head><meta http-equiv='refresh' content='0; url=relocated.html'>"
                "<title>Redirecting</title></head><body><p>Redirecting to <a "
                "href='relocated.html'>relocated.html</a></p></body></html>"),
            # the same content as a listed page under a second URL
            f"{base}/index-copy.html": html(copy_of_index),
            f"{base}/custom.html": html(CUSTOM),
            "/blog/post-1.html": html(doc_page("Post 1", "Blog gossip one.",
                                      "<meta name='robots' content='noindex, follow'>")),
            "/blog/post-2.html": html(doc_page("Post 2", "Blog gossip two."),
                                      headers={"X-Robots-Tag": "noindex"}),
            "/blog/post-3.html": html(doc_page("Post 3", "Blog gossip three.")),
        }
        routes.update(extra)
        listed += list(extra)
        routes[f"{base}/new-home.html"] = html(doc_page(
            "New home", "The mover page now lives here with a zeppelin."))
        routes[f"{base}/relocated.html"] = html(doc_page(
            "Relocated", "The relocated walrus reference."))
        routes["/"] = redirect("/en/stable/index.html")
        items = "".join(f"<url><loc>{server.url(p)}</loc></url>" for p in listed)
        routes["/sitemap.xml"] = ok(f'<?xml version="1.0"?><urlset {NS}>{items}</urlset>',
                                    "application/xml")
        yield server


def stored(cli: Cli) -> dict[str, str]:
    return dict(rows(cli.db_url, "SELECT ref, title FROM sources"))


def recorded(cli: Cli) -> int:
    """Source definitions recorded (none when the schema was never even created)."""
    try:
        return int(rows(cli.db_url, "SELECT count(*) FROM source_defs")[0][0])
    except psycopg.errors.UndefinedTable:
        return 0


def texts(cli: Cli, ref: str) -> str:
    return "\n".join(t for (t,) in rows(
        cli.db_url, "SELECT text FROM chunks WHERE source_ref = %s ORDER BY ordinal", ref))


def test_sitemap_keeps_one_copy_of_each_page_on_its_canonical_url(cli: Cli,
                                                                  site: LocalServer) -> None:
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE,
                      "--no-llms-txt", "--content-selector", ".xyz-content",
                      "--exclude-selector", ".feedback-widget")
    refs = stored(cli)
    base = site.url("/en/stable/")
    copies = {base + "index.html", base + "index-copy.html"}
    assert set(refs) - copies == {base + p for p in (
        "guide.html", "new-home.html", "mirror.html", "custom.html", "relocated.html")} | {
        site.url("/blog/post-3.html")}
    assert len(set(refs) & copies) == 1  # the same text under two URLs: stored once
    assert report["dropped"] == {"other languages": 4, "other versions": 2, "noindex": 2,
                                 "canonical": 1, "duplicate": 1}
    assert report["failed"] == 0
    notes = "\n".join(report["notes"])
    assert "kept version 'stable'" in notes and "language 'en'" in notes
    assert "root redirects to" in notes
    assert f"{base}guide-print.html: a copy of {base}guide.html" in notes
    assert "walrus" in texts(cli, base + "relocated.html")  # in place of its redirect page
    assert "same content as" in notes and "index-copy.html" in notes
    assert "marked noindex" in notes
    # the moved page is cited on its canonical URL, with the canonical page's text
    assert "zeppelin" in texts(cli, base + "new-home.html")
    assert site.hits("/en/stable/new-home.html") == 1
    # the selectors found the content of the page with no known layout, minus the widget
    custom = texts(cli, base + "custom.html")
    assert "zanzibar" in custom
    assert "Was this page helpful" not in custom and "enterprise" not in custom
    assert "Sidebar chatter" not in custom
    hits = cli.json("query", "zeppelin mover page")["results"]
    assert hits[0]["url"] == base + "new-home.html"


def test_rules_and_choices_are_recorded_and_resync_keeps_them(cli: Cli,
                                                             site: LocalServer) -> None:
    first = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, "--no-llms-txt",
                     "--exclude", "/blog/*", "--exclude", "re:-(print|copy)\\.html$",
                     "--version", "latest", "--lang", "fr")
    expected = {site.url(f"/fr/latest/{p}.html") for p in PAGES}
    assert set(stored(cli)) == expected
    assert first["dropped"]["exclude /blog/*"] == 3
    assert first["dropped"]["exclude re:-(print|copy)\\.html$"] == 2
    assert "chosen with a flag" in "\n".join(first["notes"])
    # the rules' own summary names what they dropped, once; no note claims "more" of them
    # (7 pages of other languages: more than the few a note names one by one)
    assert not any(n.startswith("… and") for n in first["notes"])
    assert site.hits("/blog/post-3.html") == 0  # rules apply before any fetch
    assert site.hits("/en/stable/guide-print.html") == 0
    [(options,)] = rows(cli.db_url, "SELECT options FROM source_defs")
    assert options["exclude"] == ["/blog/*", "re:-(print|copy)\\.html$"]
    assert (options["version"], options["lang"]) == ("latest", "fr")

    plan = cli("resync", "--plan", "--json", PRIVATE)
    assert plan.exit_code == 0, plan.output
    again = cli.json("resync", PRIVATE)
    assert again["totals"]["added"] == 0 and again["totals"]["deleted"] == 0
    assert set(stored(cli)) == expected
    assert site.hits("/blog/post-3.html") == 0


def test_ignore_noindex_keeps_marked_pages(cli: Cli, site: LocalServer) -> None:
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE,
                      "--no-llms-txt", "--include", "/blog/*", "--ignore-noindex")
    assert set(stored(cli)) == {site.url(f"/blog/post-{i}.html") for i in (1, 2, 3)}
    assert "noindex" not in report["dropped"]
    assert report["dropped"]["include (matched none)"] > 0


def test_pages_that_become_noindex_leave_the_kb(cli: Cli, site: LocalServer) -> None:
    cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, "--no-llms-txt",
             "--include", "/blog/*", "--ignore-noindex")
    assert len(stored(cli)) == 3
    cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, "--no-llms-txt",
             "--include", "/blog/*")
    assert set(stored(cli)) == {site.url("/blog/post-3.html")}


@pytest.mark.parametrize(("flag", "value", "named"), [
    ("--exclude", "blog/*", "'blog/*'"),
    ("--include", "re:([a-z", "'re:([a-z'"),
    ("--content-selector", "div[[", "'div[['"),
    ("--exclude-selector", "..x", "'..x'"),
])
def test_bad_rules_and_selectors_are_bad_input_and_record_nothing(
        cli: Cli, site: LocalServer, flag: str, value: str, named: str) -> None:
    result = cli("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, flag, value)
    assert result.exit_code == 2, result.output
    assert named in result.output
    assert site.hits("/sitemap.xml") == 0
    assert recorded(cli) == 0


def test_an_unknown_version_fails_the_source(cli: Cli, site: LocalServer) -> None:
    result = cli("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, "--no-llms-txt",
                 "--version", "v9")
    assert result.exit_code == 1, result.output
    assert "'v9' is not among" in result.output


def test_crawl_does_not_follow_excluded_links(cli: Cli) -> None:
    with LocalServer() as server:
        server.routes.update({
            "/": html(doc_page("Home", "Start here.") .replace(
                "<nav>", "<nav><a href='/docs/a.html'>a</a><a href='/blog/b.html'>b</a>")),
            "/docs/a.html": html(doc_page("A", "Alpha docs.")),
            "/blog/b.html": html(doc_page("B", "Beta blog.")),
        })
        report = cli.json("ingest", "crawl", server.url("/"), PRIVATE, "--no-llms-txt",
                          "--ignore-robots", "--exclude", "/blog/*")
        assert server.hits("/blog/b.html") == 0
    assert report["dropped"] == {"exclude /blog/*": 1}
    assert set(stored(cli)) == {server.url("/"), server.url("/docs/a.html")}


def test_the_same_text_under_another_url_is_stored_once_across_runs(cli: Cli,
                                                                    site: LocalServer) -> None:
    first = site.url("/en/stable/index.html")
    second = site.url("/en/stable/index-copy.html")
    cli.json("ingest", "url", first, PRIVATE)
    report = cli.json("ingest", "url", second, PRIVATE)
    assert report["dropped"] == {"duplicate": 1}
    assert f"{second}: same content as {first}" in "\n".join(report["notes"])
    assert set(stored(cli)) == {first}
    # when the first page changes, the second one's text is no longer stored: it is kept
    site.routes["/en/stable/index.html"] = html(doc_page("Index", "A rewritten index."))
    cli.json("ingest", "url", first, PRIVATE)
    cli.json("ingest", "url", second, PRIVATE)
    assert set(stored(cli)) == {first, second}


def test_changing_the_selectors_reads_stored_pages_again(cli: Cli, site: LocalServer) -> None:
    custom = site.url("/en/stable/custom.html")
    site.routes["/en/stable/custom.html"] = html(CUSTOM, headers={"ETag": '"c1"'})
    cli.json("ingest", "url", custom, PRIVATE, "--content-selector", ".xyz-content")
    assert "Was this page helpful" in texts(cli, custom)
    report = cli.json("ingest", "url", custom, PRIVATE, "--content-selector", ".xyz-content",
                      "--exclude-selector", ".feedback-widget")
    assert report["updated"] == 1
    assert "Was this page helpful" not in texts(cli, custom)
    again = cli.json("ingest", "url", custom, PRIVATE, "--content-selector", ".xyz-content",
                     "--exclude-selector", ".feedback-widget")
    assert again["notModified"] + again["unchanged"] == 1


def _canonical_pair(server: LocalServer, path: str) -> None:
    """Two pages (``path`` with ``{}`` as a and b) that name each other canonical, and
    link to each other."""
    for me, other in (("a", "b"), ("b", "a")):
        there = path.format(other)
        server.routes[path.format(me)] = html(doc_page(
            f"Loop {me}", f"The loop page {me}, see <a href='{there}'>{other}</a>.",
            f"<link rel='canonical' href='{there}'>"))


def test_two_pages_that_name_each_other_canonical_keep_one(cli: Cli) -> None:
    with LocalServer() as server:
        _canonical_pair(server, "/loop-{}.html")
        server.routes["/sitemap.xml"] = ok(
            f'<?xml version="1.0"?><urlset {NS}><url><loc>{server.url("/loop-a.html")}'
            f'</loc></url><url><loc>{server.url("/loop-b.html")}</loc></url></urlset>',
            "application/xml")
        report = cli.json("ingest", "sitemap", server.url("/sitemap.xml"), PRIVATE,
                          "--no-llms-txt")
    assert report["dropped"] == {"canonical": 1}
    assert len(stored(cli)) == 1


def test_a_page_whose_canonical_url_redirects_to_it_is_kept(cli: Cli) -> None:
    # Docusaurus writes docs/api/index.html naming docs/api canonical; a static host
    # redirects docs/api to docs/api/: the page is its own canonical, not a copy
    with LocalServer() as server:
        server.routes["/docs/api"] = redirect("/docs/api/", 301)
        server.routes["/docs/api/"] = html(doc_page(
            "API", "The API page of the folder-served site.",
            f"<link rel='canonical' href='{server.url('/docs/api')}'>"))
        server.routes["/sitemap.xml"] = ok(
            f'<?xml version="1.0"?><urlset {NS}><url><loc>{server.url("/docs/api")}'
            f'</loc></url></urlset>', "application/xml")
        report = cli.json("ingest", "sitemap", server.url("/sitemap.xml"), PRIVATE,
                          "--no-llms-txt")
        assert report["added"] == 1 and not report["dropped"]
        crawled = cli.json("ingest", "crawl", server.url("/docs/api"), PRIVATE,
                           "--no-llms-txt", "--max-depth", "0", "-n", "crawled")
        assert crawled["added"] == 1
    assert dict(rows(cli.db_url, "SELECT namespace, ref FROM sources")) == {
        "default": server.url("/docs/api/"), "crawled": server.url("/docs/api/")}


# --- what a site's failures must not delete ---------------------------------------------


def _pages(server: LocalServer, names: list[str], link_from: str | None = None) -> None:
    for name in names:
        server.routes[f"/docs/{name}.html"] = html(doc_page(
            name.title(), f"The {name} page of the flaky site explains {name}ing."))
    server.routes["/"] = html(doc_page("Home", "The home page of the flaky site."))
    if link_from is not None:
        links = "".join(f"<a href='/docs/{n}.html'>{n}</a>" for n in names)
        server.routes[link_from] = html(doc_page("Start", f"Everything: {links}"))


def test_a_crawl_whose_start_page_lost_its_text_deletes_nothing(cli: Cli) -> None:
    names = [f"p{i}" for i in range(6)]
    with LocalServer() as server:
        _pages(server, names, link_from="/docs/")
        # other pages in the namespace: the mass-delete guard would not stop a crawl's loss
        others = [f"other{i}" for i in range(40)]
        _pages(server, others)
        server.routes["/sitemap.xml"] = ok(f'<?xml version="1.0"?><urlset {NS}>' + "".join(
            f"<url><loc>{server.url(f'/docs/{n}.html')}</loc></url>" for n in others)
            + "</urlset>", "application/xml")
        cli.json("ingest", "sitemap", server.url("/sitemap.xml"), "--no-llms-txt", PRIVATE)
        args = ("--no-llms-txt", "--ignore-robots", PRIVATE)
        first = cli.json("ingest", "crawl", server.url("/docs/"), *args)
        assert first["added"] == 8  # with the home page every page links to
        # the start page now renders an empty shell: no text, no links
        server.routes["/docs/"] = html("<!doctype html><html><body><main></main></body></html>")
        for resync in (("resync",), ("resync", "--full")):
            again = cli(*resync, "--json")
            report = __import__("json").loads(again.stdout)
            assert again.exit_code == 1 and report["totals"]["deleted"] == 0, report
        assert len(stored(cli)) == 48
        # so does a start page that is gone: the site moved, or the address is wrong
        server.routes["/docs/"] = html("gone", status=404)
        assert cli("resync").exit_code == 1 and len(stored(cli)) == 48


def test_a_canonical_url_that_gives_no_page_keeps_the_page_that_named_it(cli: Cli) -> None:
    with LocalServer() as server:
        _pages(server, ["alpha", "beta"])
        server.routes["/sitemap.xml"] = ok(
            f'<?xml version="1.0"?><urlset {NS}>' + "".join(
                f"<url><loc>{server.url(f'/docs/{n}.html')}</loc></url>"
                for n in ("alpha", "beta")) + "</urlset>", "application/xml")
        cli.json("ingest", "sitemap", server.url("/sitemap.xml"), PRIVATE, "--no-llms-txt")
        # beta now names a canonical URL that answers 404
        server.routes["/docs/beta.html"] = html(doc_page(
            "Beta", "The beta page, revised.", "<link rel='canonical' href='/missing/beta'>"))
        report = cli.json("resync", "--full")
        assert report["totals"]["deleted"] == 0
        assert "revised" in texts(cli, server.url("/docs/beta.html"))
        assert "gives no page; kept here" in "\n".join(report["namespaces"][0]["notes"])
        # a page gone from the site is deleted, and the report names it
        server.routes["/docs/alpha.html"] = html("gone", status=410)
        gone = cli.json("resync", "--force")  # 1 of 2 pages: past the mass-delete guard
        assert gone["totals"]["deleted"] == 1
        assert (f"1 page gone (HTTP 404/410): {server.url('/docs/alpha.html')}"
                in "\n".join(gone["namespaces"][0]["notes"]))
        server.routes["/docs/alpha.html"] = html(doc_page("Alpha", "Back again."))
        # a crawl's start page names a missing canonical URL: the crawl deletes nothing
        server.routes["/docs/"] = html(doc_page("Start", "<a href='/docs/alpha.html'>a</a>"))
        crawl = ("--no-llms-txt", "--ignore-robots", PRIVATE, "-n", "crawl")
        assert cli.json("ingest", "crawl", server.url("/docs/"), *crawl)["added"] == 3
        server.routes["/docs/"] = html(doc_page(
            "Start", "<a href='/docs/alpha.html'>a</a>",
            "<link rel='canonical' href='/missing/start'>"))
        again = cli.json("resync", "-n", "crawl")  # the canonical URL's 404: kept, noted
        assert again["totals"]["deleted"] == 0
        assert (f"{server.url('/docs/')}: its canonical URL {server.url('/missing/start')} "
                "gives no page; kept here" in "\n".join(again["namespaces"][0]["notes"]))
        assert server.url("/docs/") in dict(rows(
            cli.db_url, "SELECT ref, 1 FROM sources WHERE namespace = 'crawl'"))


def test_a_crawl_of_two_pages_naming_each_other_canonical_keeps_one(cli: Cli) -> None:
    with LocalServer() as server:
        _canonical_pair(server, "/canon/{}")
        server.routes["/"] = html(doc_page("Home", "The home page every page links to."))
        report = cli.json("ingest", "crawl", server.url("/canon/a"), "--no-llms-txt",
                          "--ignore-robots", PRIVATE)
    assert report["added"] == 2 and report["dropped"] == {"canonical": 1}  # and the home


def test_a_crawl_trap_of_session_ids_does_not_grow_the_knowledge_base(cli: Cli) -> None:
    visits = iter(range(10**6))

    def day(n: int) -> object:
        def handler(request: object) -> object:  # every visit hands out a new session id
            sid = next(visits)
            links = "".join(f"<a href='/cal/day/{d}?sid={sid}'>day {d}</a>"
                            for d in (n - 1, n + 1) if 0 <= d < 5)
            return html(doc_page(f"Day {n}", f"Events of day {n}. {links}"))
        return handler

    with LocalServer() as server:
        server.routes["/"] = html(doc_page("Home", "The calendar's home page."))
        for n in range(5):
            server.routes[f"/cal/day/{n}"] = day(n)
        first = cli.json("ingest", "crawl", server.url("/cal/day/0"), "--no-llms-txt",
                         "--ignore-robots", PRIVATE)
        assert first["added"] == 5  # days 0-3 (max depth 3) and the home page
        for _ in range(2):
            again = cli.json("resync")
            assert again["totals"]["added"] == 0 and again["totals"]["deleted"] == 0
    assert len(stored(cli)) == 5


def test_an_llms_txt_that_cannot_be_read_is_said(cli: Cli) -> None:
    with LocalServer() as server:
        _pages(server, ["alpha"])
        server.routes["/llms.txt"] = html("overloaded", status=503)
        server.routes["/sitemap.xml"] = ok(
            f'<?xml version="1.0"?><urlset {NS}><url><loc>'
            f"{server.url('/docs/alpha.html')}</loc></url></urlset>", "application/xml")
        report = cli.json("ingest", "sitemap", server.url("/sitemap.xml"), PRIVATE)
    assert report["added"] == 1
    assert any(n.startswith("the site's llms.txt was not read (") and "503" in n
               and n.endswith(": reading the sitemap instead") for n in report["notes"])
