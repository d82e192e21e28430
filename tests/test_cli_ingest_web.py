"""`kbctl ingest url|sitemap|crawl|llms` through the real Typer app, a real database and
real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import functools
import gzip
import os
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg
import pytest
from lxml import etree

from tests.conftest import Cli, rows
from tests.http_server import LocalServer, Request, Response, html, ok, redirect

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
DOCS_SITE = Path.home() / ".cache" / "kbctl-docs-site" / "html"
PRIVATE = "--allow-private-network"


def page(title: str, ids: tuple[str, ...] = ("intro", "usage"), *, extra: str = "",
         links: tuple[str, ...] = ()) -> str:
    sections = "".join(f"<section id='{i}'><h2>{title} {i}</h2><p>{title} says {i} "
                       f"things.</p></section>" for i in ids)
    nav = "".join(f"<a href='{href}'>{href}</a>" for href in links)
    return (f"<!doctype html><html><head><title>{title} | Widget</title></head><body>"
            f"<nav>{nav}</nav><main><h1 id='top-{title.lower()}'>{title}</h1>{sections}"
            f"{extra}</main></body></html>")


def urlset(*locs: str) -> Response:
    items = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return ok(f'<?xml version="1.0"?><urlset {NS}>{items}</urlset>', "application/xml")


def etagged(body: str, etag: str) -> Callable[[Request], Response]:
    def handler(request: Request) -> Response:
        if request.headers.get("if-none-match") == etag:
            return Response(304, b"", {"ETag": etag})
        return html(body, headers={"ETag": etag})

    return handler


def snapshot(db: str) -> list[tuple[Any, ...]]:
    return rows(db, """SELECT s.ref, s.content_hash, s.chunk_count, c.ordinal, c.text
                       FROM sources s JOIN chunks c ON c.source_ref = s.ref
                       ORDER BY s.ref, c.ordinal""")


def page_ids(markup: str | bytes) -> set[str]:
    root = etree.fromstring(markup, etree.HTMLParser())
    return {str(i) for i in root.xpath("//@id")}


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with LocalServer() as server:
        server.routes.update({
            "/guide/install.html": etagged(page("Install"), '"i1"'),
            "/guide/config.html": etagged(page("Config", ("options", "files")), '"c1"'),
        })
        server.routes["/sitemap.xml"] = urlset(server.url("/guide/install.html"),
                                               server.url("/guide/config.html"))
        yield server


def test_sitemap_ingest_writes_pages_whose_anchors_are_real_ids(cli: Cli,
                                                               site: LocalServer) -> None:
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    assert (report["added"], report["failed"]) == (2, 0)
    sources = rows(cli.db_url, "SELECT ref, kind, title, meta FROM sources ORDER BY ref")
    assert [(r, k, t) for r, k, t, _ in sources] == [
        (site.url("/guide/config.html"), "sitemap", "Config"),
        (site.url("/guide/install.html"), "sitemap", "Install")]
    assert all(m["etag"] and m["fetched_at"] for *_, m in sources)
    chunks = rows(cli.db_url, "SELECT source_ref, meta FROM chunks")
    assert report["chunksWritten"] == len(chunks) > 0
    for ref, meta in chunks:
        assert meta["url"] == ref
        path = ref.split(str(site.port), 1)[1]
        handler = site.routes[path]
        body = handler(Request("GET", path, "", {}, b"")).body  # type: ignore[operator]
        assert meta["anchor"] in page_ids(body)
    assert {m["anchor"] for _, m in chunks} >= {"options", "files", "intro", "usage"}

    again = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    assert (again["notModified"], again["chunksWritten"], again["failed"]) == (2, 0, 0)
    assert site.requests[-1].headers.get("if-none-match") in ('"i1"', '"c1"')


def test_headings_the_page_gave_no_id_cite_their_section_not_a_made_up_slug(
        cli: Cli, site: LocalServer) -> None:
    words = "<p>" + "Plenty of ordinary words in a paragraph of this page. " * 12 + "</p>"
    body = (f"<html><head><title>Plain</title></head><body><main>"
            f"<section id='setup'><h2>Setup</h2>{words}<h3>Details</h3>{words}</section>"
            f"<h2>Loose end</h2>{words}</main></body></html>")
    generic = (f"<html><head><title>Blog</title></head><body><div class='post'>"
               f"<div id='first'><h2>First steps</h2>{words}</div><h2>Aside</h2>{words}"
               f"</div></body></html>")
    site.routes["/plain.html"] = html(body)
    site.routes["/blog.html"] = html(generic)
    for path in ("/plain.html", "/blog.html"):
        cli.json("ingest", "url", site.url(path), PRIVATE)
    anchors = {(ref.rsplit("/", 1)[1], m["anchor"]) for ref, m in rows(
        cli.db_url, "SELECT source_ref, meta FROM chunks")}
    # "Details" lives in the setup section; "Loose end" and "Aside" have no id to cite
    assert anchors == {("plain.html", "setup"), ("plain.html", None),
                       ("blog.html", "first"), ("blog.html", None)}


def test_a_page_stored_by_an_older_reader_is_read_again_despite_its_etag(
        cli: Cli, site: LocalServer) -> None:
    url = site.url("/guide/config.html")
    cli.json("ingest", "url", url, PRIVATE)
    with psycopg.connect(cli.db_url, autocommit=True) as conn:  # as the last version left it
        conn.execute("""UPDATE sources SET content_hash = 'older', meta = meta - 'reader'
                                || '{"body_sha256": "older"}'""")
        conn.execute("""UPDATE chunks SET meta = jsonb_set(meta, '{anchor}', '"made-up"')""")
    report = cli.json("ingest", "url", url, PRIVATE)
    assert report["updated"] == 1
    assert site.requests[-1].headers.get("if-none-match") is None
    anchors = {m["anchor"] for (m,) in rows(cli.db_url, "SELECT meta FROM chunks")}
    assert anchors == {"options", "files"}
    again = cli.json("ingest", "url", url, PRIVATE)
    assert again["notModified"] == 1
    assert site.requests[-1].headers.get("if-none-match") == '"c1"'


def test_a_redirect_page_is_dropped_for_its_target_in_a_listing_and_a_crawl(
        cli: Cli, site: LocalServer) -> None:
    stub = ("<html><head><meta http-equiv='refresh' content='0;URL=guide/config.html'>"
            "</head><body><p>Redirecting to <a href='guide/config.html'>the page</a>"
            "</p></body></html>")
    site.routes["/old.html"] = html(stub)
    site.routes["/listed.xml"] = urlset(site.url("/old.html"), site.url("/guide/config.html"))
    report = cli.json("ingest", "sitemap", site.url("/listed.xml"), PRIVATE, "--no-llms-txt")
    assert report["dropped"] == {"redirect": 1}
    assert report["notes"] == [f"{site.url('/old.html')}: a redirect to "
                               f"{site.url('/guide/config.html')}, stored there"]
    crawl = cli.json("ingest", "crawl", site.url("/old.html"), PRIVATE, "--no-llms-txt",
                     "-n", "crawled")
    assert crawl["added"] == 1
    assert rows(cli.db_url, "SELECT ref FROM sources WHERE namespace = 'crawled'") == [
        (site.url("/guide/config.html"),)]
    assert "Redirecting" not in " ".join(t for (t,) in rows(cli.db_url,
                                                             "SELECT text FROM chunks"))


def test_the_same_server_is_refused_without_the_opt_in(cli: Cli, site: LocalServer) -> None:
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), code=1)
    assert report["failed"] == 1 and report["added"] == 0
    [error] = report["errors"]
    assert "loopback (127.0.0.0/8)" in error["error"]
    assert "--allow-private-network" in error["hint"] and error["type"] == "BlockedURL"
    assert site.requests == []
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(0,)]


def test_a_blocked_numeric_host_is_one_failed_source(cli: Cli, site: LocalServer) -> None:
    report = cli.json("ingest", "url", f"http://2130706433:{site.port}/guide/install.html",
                      code=1)
    assert "2130706433" in report["errors"][0]["error"]
    assert "loopback" in report["errors"][0]["error"]
    assert site.requests == []


def test_a_non_utf8_page_with_a_charset_header_succeeds(cli: Cli, site: LocalServer) -> None:
    body = page("Café").replace("things", "crème brûlée").encode("iso-8859-1")
    site.routes["/cafe"] = ok(body, "text/html; charset=ISO-8859-1")
    report = cli.json("ingest", "url", site.url("/cafe"), PRIVATE)
    assert report["added"] == 1
    texts = " ".join(t for (t,) in rows(cli.db_url, "SELECT text FROM chunks"))
    assert "crème brûlée" in texts
    assert rows(cli.db_url, "SELECT title FROM sources") == [("Café",)]


def test_markdown_and_plain_text_urls(cli: Cli, site: LocalServer) -> None:
    site.routes["/notes.md"] = ok("# Notes\n\n## Deploy {#deploy}\n\nShip it.\n")
    site.routes["/notes.txt"] = ok("Plain notes.\n")
    cli.json("ingest", "url", site.url("/notes.md"), PRIVATE)
    cli.json("ingest", "url", site.url("/notes.txt"), PRIVATE, "--no-docs-mode",
             "--timeout", "5", "--max-page-bytes", "100000")
    metas = dict(rows(cli.db_url, "SELECT source_ref, meta FROM chunks ORDER BY ordinal"))
    assert metas[site.url("/notes.md")]["anchor"] == "deploy"
    assert metas[site.url("/notes.txt")]["anchor"] is None
    options = rows(cli.db_url, "SELECT options FROM source_defs WHERE kind = 'url' "
                               "ORDER BY target")
    # only what differs from the defaults; the private-network opt-in is remembered
    assert options == [({"allow_private_network": True},),
                       ({"docs_mode": False, "timeout": 5.0, "max_page_bytes": 100000,
                         "allow_private_network": True},)]


# --- bad input: one failed source, the KB as it was, the run goes on -----------------------

BILLION_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">'
              for i in range(1, 10)).replace("&lol0;", "&lol;")
    + f"]><urlset {NS}><url><loc>http://x.test/&lol9;</loc></url></urlset>")


def _whole(body: str) -> Callable[[LocalServer], None]:
    def mutate(server: LocalServer) -> None:
        server.routes["/sitemap.xml"] = ok(body, "application/xml")

    return mutate


def _self_index(server: LocalServer) -> None:
    server.routes["/sitemap.xml"] = ok(
        f"<sitemapindex {NS}><sitemap><loc>{server.url('/sitemap.xml')}</loc></sitemap>"
        "</sitemapindex>", "application/xml")


def _config(response: Response | Callable[[Request], Response]) -> Callable[[LocalServer], None]:
    def mutate(server: LocalServer) -> None:
        server.routes["/guide/config.html"] = response

    return mutate


def _list_blocked(server: LocalServer) -> None:
    server.routes["/sitemap.xml"] = urlset(server.url("/guide/install.html"),
                                           server.url("/guide/config.html"),
                                           "http://0xa9fea9fe/latest/meta-data/")


BAD_INPUTS: dict[str, tuple[Callable[[LocalServer], None], str, str]] = {
    # case: (what changes on the site, options of the sitemap source, expected message)
    "malformed-xml": (_whole("<urlset><url><loc>"), "", "not a well-formed XML sitemap"),
    "billion-laughs": (_whole(BILLION_LAUGHS), "", "declares XML entities"),
    "index-lists-itself": (_self_index, "", "sitemap loop"),
    "page-over-size-cap": (_config(html(page("Config") + "x" * 30_000)),
                           "max_page_bytes: 20000", "larger than 20000 bytes"),
    "gzip-bomb": (_config(ok(gzip.compress(b"<p>" + b"A" * 12_000_000), "text/html",
                             headers={"Content-Encoding": "gzip"})), "",
                  "after decompression"),
    "binary-as-html": (_config(ok(b"\x89PNG\r\n\x1a\n" + os.urandom(4000), "text/html")),
                       "", "PNG image"),
    "http-404": (_config(Response(404, b"")), "", "HTTP 404"),
    "http-500": (_config(Response(500, b"")), "", "HTTP 500"),
    # the page never comes in time; the others come well within it, however busy the machine
    "timeout": (_config(html(page("Config"), delay=600)), "timeout: 3", "timed out"),
    "redirect-to-metadata": (_config(redirect("http://169.254.169.254/latest/")), "",
                             "cloud metadata endpoint"),
    "redirect-loop": (_config(redirect("/guide/config.html")), "", "redirect loop"),
    "blocked-numeric-host": (_list_blocked, "", "0xa9fea9fe"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_failed_source_and_the_kb_stays_as_it_was(
        cli: Cli, site: LocalServer, workdir: Path, case: str) -> None:
    mutate, option, message = BAD_INPUTS[case]
    site.routes["/other.html"] = html(page("Other"))
    options = f"    {option}\n" if option else ""
    (workdir / "kbctl.yaml").write_text(
        "allow_private_network: true\nsources:\n"
        f"  - kind: sitemap\n    target: {site.url('/sitemap.xml')}\n{options}"
        f"  - kind: url\n    target: {site.url('/other.html')}\n", encoding="utf-8")
    cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    before = snapshot(cli.db_url)
    mutate(site)
    report = cli.json("ingest", code=1)
    assert report["failed"] == 1, report["errors"]
    assert message in report["errors"][0]["error"]
    assert report["deleted"] == 0
    assert rows(cli.db_url, "SELECT title FROM sources WHERE ref = %s",
                site.url("/other.html")) == [("Other",)]  # the run went on
    after = [r for r in snapshot(cli.db_url) if r[0] != site.url("/other.html")]
    assert after == before


def test_a_docsify_shell_says_what_it_is_and_where_its_pages_are(cli: Cli,
                                                                  site: LocalServer) -> None:
    """A Docsify site's every URL serves one empty shell; the failure names the site kind
    and the way in, in the report and in the table a person reads."""
    site.routes["/"] = html("<html><body><div id='app'></div><script>window.$docsify = "
                            "{ name: 'widget' }</script><script src='//cdn/docsify@4'>"
                            "</script></body></html>")
    site.routes["/README.md"] = ok("# Widget\n\nThe widget spins.\n", "text/markdown")
    report = cli.json("ingest", "url", site.url("/"), PRIVATE, code=1)
    [failure] = report["errors"]
    assert failure["error"].endswith(": a Docsify page, whose content is markdown that the "
                                     "browser fetches and renders")
    assert "kbctl ingest files DOCS_FOLDER --base-url URL" in failure["hint"]
    shown = cli("ingest", "url", site.url("/"), PRIVATE)
    words = " ".join(w for w in shown.stderr.split() if w != "│")  # the table wraps cells
    assert shown.exit_code == 1 and "`kbctl ingest files DOCS_FOLDER --base-url" in words
    assert cli.json("ingest", "url", site.url("/README.md"), PRIVATE)["added"] == 1
    plain = cli.json("ingest", "url", site.url("/guide/install.html"), PRIVATE)
    assert plain["errors"] == []


# --- listings change: orphans go only when the listing is whole ----------------------------


def test_a_page_dropped_from_the_sitemap_is_deleted(cli: Cli, site: LocalServer) -> None:
    cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    site.routes["/sitemap.xml"] = urlset(site.url("/guide/install.html"))
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    assert report["deleted"] == 1
    assert rows(cli.db_url, "SELECT ref FROM sources") == [(site.url("/guide/install.html"),)]


def test_a_sitemap_ingest_reads_no_page_robots_txt_disallows(cli: Cli,
                                                             site: LocalServer) -> None:
    site.routes["/robots.txt"] = ok("User-agent: *\nDisallow: /guide/config.html\n")
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    assert rows(cli.db_url, "SELECT ref FROM sources") == [(site.url("/guide/install.html"),)]
    assert site.hits("/guide/config.html") == 0
    assert report["dropped"] == {"robots.txt": 1}
    assert any("1 listed page not read: robots.txt disallows it "
               f"({site.url('/guide/config.html')}); pass --ignore-robots" in n
               for n in report["notes"]), report["notes"]

    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE,
                      "--ignore-robots")
    assert report["added"] == 1 and site.hits("/guide/config.html") == 1
    # the site disallows everything it lists: the stored pages are kept, and it is said
    site.routes["/robots.txt"] = ok("User-agent: kbctl\nDisallow: /\n")
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, code=1)
    assert "robots.txt disallows every page it lists; its 2 stored pages are kept" in str(
        report["errors"]), report
    assert len(rows(cli.db_url, "SELECT ref FROM sources")) == 2


def test_crawl_ingests_the_site_and_prunes_only_after_a_whole_crawl(cli: Cli,
                                                                   site: LocalServer) -> None:
    site.routes.update({
        "/": html(page("Home", links=("/guide/install.html", "/guide/config.html",
                                      "/logo.png", "#top"))),
        "/robots.txt": ok("User-agent: *\nDisallow: /guide/config.html\n"),
    })
    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--max-depth", "1")
    refs = {r for (r,) in rows(cli.db_url, "SELECT ref FROM sources")}
    assert refs == {site.url("/"), site.url("/guide/install.html")}
    assert report["added"] == 2 and site.hits("/guide/config.html") == 0

    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--max-depth", "1",
                      "--ignore-robots")
    assert report["added"] == 1  # config, now that robots.txt is ignored
    site.routes["/"] = html(page("Home", links=("/guide/install.html", "/broken")))
    site.routes["/broken"] = Response(503, b"")
    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--max-depth", "1",
                      "--ignore-robots", code=1)
    assert report["deleted"] == 0  # a server error may hide pages: nothing is pruned
    site.routes["/"] = html(page("Home", links=("/guide/install.html",)))
    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--max-depth", "1",
                      "--ignore-robots")
    assert report["deleted"] == 1
    assert site.url("/guide/config.html") not in {
        r for (r,) in rows(cli.db_url, "SELECT ref FROM sources")}


def test_a_broken_link_of_the_site_is_a_note_and_a_named_url_that_is_gone_fails(
        cli: Cli, site: LocalServer) -> None:
    """A link a crawl finds that answers 404 is the site's broken link, not a failure of
    the run: ingest exited 1 on every run while resync said it in a note."""
    site.routes["/"] = html(page("Home", links=("/guide/install.html", "/gone.html")))
    site.routes["/gone.html"] = Response(404, b"")
    for _ in range(2):
        report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--max-depth", "1")
        assert (report["failed"], report["errors"]) == (0, [])
        assert any("1 page it names gone (HTTP 404/410), none stored: "
                   + site.url("/gone.html") in note for note in report["notes"])
    named = cli.json("ingest", "url", site.url("/gone.html"), PRIVATE, code=1)
    assert named["failed"] == 1 and "HTTP 404" in named["errors"][0]["error"]


def test_a_crawl_that_spends_its_page_budget_says_how_many_pages_it_left(
        cli: Cli, site: LocalServer) -> None:
    site.routes["/"] = html(page("Home", links=tuple(f"/p{i}.html" for i in range(5))))
    for i in range(5):
        site.routes[f"/p{i}.html"] = html(page(f"Page {i}", links=("/deep.html",)))
    site.routes["/deep.html"] = html(page("Deep"))
    short = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--max-pages", "3")
    assert short["added"] == 3
    assert (f"crawl {site.url('/')}: stopped at --max-pages 3; 4 more pages it found were "
            "not read (raise --max-pages to read them)") in short["notes"]
    whole = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "-n", "whole")
    assert whole["added"] == 7 and not any("--max-pages" in n for n in whole["notes"])


def test_llms_txt_is_preferred_and_says_so(cli: Cli, site: LocalServer) -> None:
    site.routes.update({
        "/llms.txt": ok("# Widget\n\n> Widgets.\n\n## Docs\n\n- [Install](/install.md)\n\n"
                        "## Optional\n\n- [History](/history.md)\n"),
        "/install.md": ok("# Install\n\n## Steps {#steps}\n\nRun it.\n"),
        "/history.md": ok("# History\n\nOld.\n", "text/markdown"),
    })
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    assert any("llms.txt lists 2 curated pages" in note for note in report["notes"])
    assert {r for (r,) in rows(cli.db_url, "SELECT ref FROM sources")} == {
        site.url("/install.md"), site.url("/history.md")}
    result = cli("ingest", "llms", site.url("/"), PRIVATE, "--skip-optional", "-n", "llms")
    assert result.exit_code == 0, result.output
    assert rows(cli.db_url, "SELECT ref, kind FROM sources WHERE namespace = 'llms'") == [
        (site.url("/install.md"), "llms")]
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE, "--no-llms-txt",
                      "-n", "plain")
    assert report["notes"] == [] and report["added"] == 2


def test_an_llms_txt_of_other_sites_pages_does_not_replace_this_one(cli: Cli,
                                                                   site: LocalServer) -> None:
    # a copy of a site served elsewhere: its llms.txt lists the production host's pages
    site.routes["/llms.txt"] = ok("# Widget\n\n## Docs\n\n"
                                  "- [Install](https://docs.widget.invalid/install.md)\n")
    report = cli.json("ingest", "sitemap", site.url("/sitemap.xml"), PRIVATE)
    assert report["notes"][0] == (f"{site.url('/llms.txt')} lists no page of this site "
                                  "(only of other sites): reading the sitemap instead")
    assert (report["added"], report["failed"]) == (2, 0)
    report = cli.json("ingest", "crawl", site.url("/guide/install.html"), PRIVATE,
                      "--max-depth", "0", "-n", "crawl")
    assert "crawling the site instead" in report["notes"][0] and report["added"] == 1
    # a list mixing both: this site's pages only
    site.routes["/llms.txt"] = ok("# Widget\n\n## Docs\n\n"
                                  "- [Install](https://docs.widget.invalid/install.md)\n"
                                  "- [Config](/guide/config.html)\n")
    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "-n", "mixed")
    assert report["added"] == 1 and report["failed"] == 0
    assert f"{site.url('/llms.txt')}: 1 listed pages on other sites skipped" in report["notes"]


def test_a_crawl_leaves_out_linked_files_that_are_not_pages(cli: Cli,
                                                            site: LocalServer) -> None:
    site.routes.update({
        "/": html(page("Home", links=("/guide/install.html", "/download/tool", "/api/data"))),
        "/download/tool": ok(b"\x7fELF\x02", "application/octet-stream"),
        "/api/data": ok('{"a": 1}', "application/json"),
    })
    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--max-depth", "1",
                      "--no-llms-txt")
    assert (report["added"], report["failed"]) == (2, 0)  # a nightly crawl stays green
    assert report["dropped"] == {"not a page": 2}
    assert any("/download/tool: content type application/octet-stream" in note
               for note in report["notes"])
    # the page asked for is not a page: that is a failure
    report = cli.json("ingest", "crawl", site.url("/api/data"), PRIVATE, "--no-llms-txt",
                      "-n", "start", code=1)
    assert report["failed"] == 1 and "application/json" in report["errors"][0]["error"]


def test_a_crawl_keeps_to_one_version_and_language(cli: Cli, site: LocalServer) -> None:
    menu = ("/docs/intro", "/docs/setup", "/docs/2.x/intro", "/docs/2.x/setup",
            "/fr/docs/intro")
    for path in menu:
        site.routes[path] = html(page(path.strip("/").replace("/", " "), links=menu))
    site.routes["/"] = html(page("Home", links=menu))
    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--no-llms-txt")
    assert report["dropped"] == {"other versions": 2, "other languages": 1}
    assert {r for (r,) in rows(cli.db_url, "SELECT ref FROM sources")} == {
        site.url("/"), site.url("/docs/intro"), site.url("/docs/setup")}
    report = cli.json("ingest", "crawl", site.url("/docs/2.x/intro"), PRIVATE, "--no-llms-txt",
                      "-n", "older")
    assert {r for (r,) in rows(cli.db_url, "SELECT ref FROM sources WHERE namespace = "
                                           "'older'")} == {
        site.url("/docs/2.x/intro"), site.url("/docs/2.x/setup")}
    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--no-llms-txt",
                      "--version", "all", "--lang", "all", "-n", "every")
    assert report["added"] == 6 and not report.get("dropped")


def test_a_crawl_keeps_to_the_version_its_start_redirects_to(cli: Cli,
                                                            site: LocalServer) -> None:
    menu = ("/en/stable/intro.html", "/en/latest/intro.html")
    for path in menu:
        site.routes[path] = html(page(path.strip("/").replace("/", " "), links=menu))
    site.routes["/"] = redirect("/en/stable/intro.html")
    report = cli.json("ingest", "crawl", site.url("/"), PRIVATE, "--no-llms-txt")
    assert report["dropped"] == {"other versions": 1}
    assert {r for (r,) in rows(cli.db_url, "SELECT ref FROM sources")} == {
        site.url("/en/stable/intro.html")}


def test_bad_options_and_targets_are_usage_errors(cli: Cli) -> None:
    result = cli("ingest", "url", "docs/guide.md", "--json")
    assert result.exit_code == 2 and "ingest files" in result.stderr
    result = cli("ingest", "crawl", "https://x.test/", "--max-pages", "0")
    assert result.exit_code == 2


# --- the real 530-page Sphinx site --------------------------------------------------------


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def docs_site() -> Iterator[tuple[str, list[Path]]]:
    if not DOCS_SITE.is_dir():
        pytest.skip(f"{DOCS_SITE} is absent (`docs-site prepare` creates it)")
    pages = sorted(p for p in DOCS_SITE.rglob("*.html")
                   if not p.relative_to(DOCS_SITE).as_posix().startswith(("_static/",
                                                                          "_sources/")))
    if len(pages) < 100:
        pytest.skip("the docs site looks incomplete")
    chosen = pages[:: len(pages) // 20][:20]
    handler = functools.partial(_Quiet, directory=str(DOCS_SITE))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield base, chosen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_subset_of_the_real_docs_site_keeps_every_anchor(
        cli: Cli, workdir: Path, docs_site: tuple[str, list[Path]]) -> None:
    base, pages = docs_site
    urls = {f"{base}/{p.relative_to(DOCS_SITE).as_posix()}": p for p in pages}
    sitemap = workdir / "sitemap.xml.gz"
    items = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    sitemap.write_bytes(gzip.compress(f"<urlset {NS}>{items}</urlset>".encode()))
    with LocalServer({"/sitemap.xml.gz": ok(sitemap.read_bytes(), "application/gzip")}) as maps:
        report = cli.json("ingest", "sitemap", maps.url("/sitemap.xml.gz"), PRIVATE,
                          "--no-llms-txt")
    assert (report["added"], report["failed"]) == (len(urls), 0), report["errors"]
    chunks = rows(cli.db_url, "SELECT source_ref, meta FROM chunks")
    ids = {url: page_ids(path.read_bytes()) for url, path in urls.items()}
    anchored = [(ref, meta["anchor"]) for ref, meta in chunks if meta["anchor"]]
    assert len(anchored) > len(urls)
    missing = [(ref, anchor) for ref, anchor in anchored if anchor not in ids[ref]]
    assert missing == []


def test_llms_markdown_copies_are_cited_at_the_pages_they_were_made_from(
        cli: Cli, site: LocalServer) -> None:
    # llms.txt links a page's markdown copy (its URL with ".md" appended); the live page is
    # what a citation should open, at the ids the page really has (here not GitHub's).
    site.routes.update({
        "/llms.txt": ok("# Widget\n\n## Docs\n\n- [Install](/guide/install.md)\n"
                        "- [Notes](/notes.md)\n"),
        "/guide/install.md": ok("# Install\n\n## Getting started\n\nRun the installer.\n"),
        "/guide/install": etagged(
            "<html><head><title>Install</title></head><body><main><h1 id='install'>"
            "Install</h1><h2 id='_getting-started'>Getting started</h2><p>Run the "
            "installer.</p></main></body></html>", '"i1"'),
        "/notes.md": ok("# Notes\n\n## Deploy\n\nShip it.\n"),  # no page: the copy is read
    })
    report = cli.json("ingest", "llms", site.url("/llms.txt"), PRIVATE)
    assert report["added"] == 2 and report["failed"] == 0
    assert rows(cli.db_url, "SELECT ref, url FROM sources ORDER BY ref") == [
        (site.url("/guide/install.md"), site.url("/guide/install")),
        (site.url("/notes.md"), site.url("/notes.md"))]
    anchors = {a for (a,) in rows(cli.db_url, "SELECT meta->>'anchor' FROM chunks")}
    assert "_getting-started" in anchors and "deploy" in anchors
    hits = site.hits("/guide/install.md")
    again = cli.json("ingest", "llms", site.url("/llms.txt"), PRIVATE)
    assert again["notModified"] == 2  # the page answered 304; the copy hashed the same
    assert site.hits("/guide/install.md") == hits


def test_a_site_serving_only_markdown_copies_stops_being_asked_for_pages(
        cli: Cli, site: LocalServer) -> None:
    names = [f"p{i}" for i in range(60)]
    site.routes["/llms.txt"] = ok("# S\n\n## Docs\n\n" + "".join(
        f"- [{n}](/{n}.md)\n" for n in names))
    site.routes.update({f"/{n}.md": ok(f"# {n}\n\nText of {n}.\n") for n in names})
    report = cli.json("ingest", "llms", site.url("/llms.txt"), PRIVATE)
    assert report["added"] == 60
    asked = sum(site.hits(f"/{n}") for n in names)
    assert asked <= 40  # the pages in flight when the misses came in, then copies alone
