"""No silent loss from directives: a page whose canonical URL gives no page (404, or a
redirect the guard refuses) is kept under its own URL with a note, in every web kind,
against a real loopback server, through the real CLI and database."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.conftest import Cli, rows
from tests.http_server import LocalServer, html, ok, redirect

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
PRIVATE = "--allow-private-network"
KEPT = "gives no page; kept here"


def page(title: str, head: str = "", links: str = "") -> str:
    return (f"<!doctype html><html><head><title>{title}</title>{head}</head><body><main>"
            f"<h1>{title}</h1><p>The {title.lower()} page tells how to frobnicate "
            f"widgets. {links}</p></main></body></html>")


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with LocalServer() as server:
        r = server.routes
        # the canonical URL in a Link header answers 404
        r["/a.html"] = html(page("Alpha"), headers={"Link": '</gone.html>; rel="canonical"'})
        # the canonical URL redirects where the guard refuses to go (cloud metadata)
        r["/b.html"] = html(page("Bravo", "<link rel='canonical' href='/moved.html'>"))
        r["/moved.html"] = redirect("http://169.254.169.254/latest/meta-data/")
        # the canonical URL is listed (and linked) too, and answers 404
        r["/c.html"] = html(page("Charlie", "<link rel='canonical' href='/listed.html'>"))
        r["/listed.html"] = html("gone", status=404)
        # a working canonical: the copy is dropped and the canonical page stored
        r["/d-print.html"] = html(page("Delta print", "<link rel='canonical' href='/d.html'>"))
        r["/d.html"] = html(page("Delta"))
        paths = ["/a.html", "/b.html", "/c.html", "/listed.html", "/d-print.html"]
        links = "".join(f"<a href='{p}'>{p}</a> " for p in paths)
        r["/"] = html(page("Home", links=links))
        r["/sitemap.xml"] = ok(f'<?xml version="1.0"?><urlset {NS}>' + "".join(
            f"<url><loc>{server.url(p)}</loc></url>" for p in paths) + "</urlset>",
            "application/xml")
        r["/llms.txt"] = ok("# Site\n\n## Docs\n\n" + "".join(
            f"- [{p}]({server.url(p)})\n" for p in paths), "text/plain")
        r["/robots.txt"] = ok("User-agent: *\nAllow: /\n")
        yield server


def refs(cli: Cli, namespace: str) -> set[str]:
    return {ref for (ref,) in rows(cli.db_url,
                                   "SELECT ref FROM sources WHERE namespace = %s", namespace)}


KINDS = {
    "sitemap": lambda s: ["sitemap", s.url("/sitemap.xml"), "--no-llms-txt"],
    "crawl": lambda s: ["crawl", s.url("/"), "--no-llms-txt", "--max-depth", "1"],
    "llms": lambda s: ["llms", s.url("/llms.txt")],
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_page_whose_canonical_url_gives_no_page_is_kept_in_every_kind(
        cli: Cli, site: LocalServer, kind: str) -> None:
    result = cli("ingest", *KINDS[kind](site), PRIVATE, "-n", kind, "--json")
    # a listed page that answers 404 may fail its listing; nothing else does
    assert result.exit_code in (0, 1) and "Traceback" not in result.output, result.output
    report = json.loads(result.stdout)
    stored = refs(cli, kind)
    for path in ("/a.html", "/b.html", "/c.html", "/d.html"):
        assert site.url(path) in stored, (path, stored, report)
    assert site.url("/d-print.html") not in stored  # a working canonical still dedupes
    notes = "\n".join(report.get("notes", []))
    for path, canonical in (("/a.html", "/gone.html"), ("/b.html", "/moved.html"),
                            ("/c.html", "/listed.html")):
        assert f"{site.url(path)}: its canonical URL {site.url(canonical)} {KEPT}" in notes
    assert site.hits("/listed.html") == 1  # listed and named canonical: fetched once
    assert not any("169.254" in r.path for r in site.requests)


@pytest.mark.timeout(300)
def test_ingest_url_keeps_such_a_page_too(cli: Cli, site: LocalServer) -> None:
    for path in ("/a.html", "/b.html"):
        report = cli.json("ingest", "url", site.url(path), PRIVATE, "-n", "one")
        assert KEPT in "\n".join(report["notes"])
    assert refs(cli, "one") == {site.url("/a.html"), site.url("/b.html")}


@pytest.mark.timeout(300)
def test_a_crawl_past_its_depth_still_stores_the_canonical_page_of_a_dropped_copy(
        cli: Cli, site: LocalServer) -> None:
    # depth 0: the start page only, and it is a copy; its canonical page is stored
    site.routes["/"] = html(page("Home", "<link rel='canonical' href='/d.html'>"))
    report = cli.json("ingest", "crawl", site.url("/"), "--no-llms-txt", "--max-depth",
                      "0", PRIVATE, "-n", "shallow")
    assert refs(cli, "shallow") == {site.url("/d.html")}
    assert report["dropped"] == {"canonical": 1}
    assert site.hits("/d.html") == 1
