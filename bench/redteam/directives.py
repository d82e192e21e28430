"""Directives that would lose a page: a ``Link: rel=canonical`` (or ``<link>``) naming a
URL that answers 404, or one that redirects where the guard refuses to go, in every web
kind. Held when the page is kept under its own URL and the run says why."""

from __future__ import annotations

import json
from pathlib import Path

from redteam._kit import Site, kbctl, page, serving

CLASS = "canonical directives"
PRIVATE = "--allow-private-network"
KEPT = "gives no page; kept here"


def _site(site: Site) -> list[str]:
    """Pages naming missing or refused canonical URLs, linked from / and listed in a
    sitemap and an llms.txt; returns the paths that must be kept."""
    doc = ("<html><head><title>{t}</title>{h}</head><body><main><h1>{t}</h1><p>The {t} "
           "page tells how to frobnicate widgets.</p>{links}</main></body></html>")
    r = site.routes
    r["/a.html"] = page(doc.format(t="Alpha", h="", links=""),
                        {"Link": '</gone.html>; rel="canonical"'})
    r["/b.html"] = page(doc.format(t="Bravo", h="<link rel='canonical' href='/moved.html'>",
                                   links=""))
    r["/moved.html"] = lambda _h: (302, {"Location": "http://169.254.169.254/latest/"}, b"")
    r["/c.html"] = page(doc.format(t="Charlie", h="<link rel='canonical' href='/listed.html'>",
                                   links=""))
    kept = ["/a.html", "/b.html", "/c.html"]
    listed = [*kept, "/listed.html"]
    links = "".join(f"<a href='{p}'>{p}</a> " for p in listed)
    r["/"] = page(doc.format(t="Home", h="", links=links))
    locs = "".join(f"<url><loc>{site.url(p)}</loc></url>" for p in listed)
    sitemap = ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
               f'sitemap/0.9">{locs}</urlset>').encode()
    r["/sitemap.xml"] = lambda _h: (200, {"Content-Type": "application/xml"}, sitemap)
    llms = ("# Site\n\n## Docs\n\n" + "".join(f"- [{p}]({site.url(p)})\n" for p in listed))
    r["/llms.txt"] = lambda _h: (200, {"Content-Type": "text/plain"}, llms.encode())
    r["/robots.txt"] = lambda _h: (200, {"Content-Type": "text/plain"}, b"User-agent: *\n")
    return kept


def _kind(kind: str, port: int) -> tuple[str, str, object]:
    def run(workdir: Path) -> tuple[bool, str]:
        with serving(port) as site:
            kept = _site(site)
            target = {"crawl": site.url("/"), "sitemap": site.url("/sitemap.xml"),
                      "llms": site.url("/llms.txt")}[kind]
            extra = ["--no-llms-txt"] if kind != "llms" else []
            ran = kbctl(workdir, "ingest", kind, target, *extra, PRIVATE, "--json")
        if ran.code is None or "Traceback" in ran.output:
            return False, f"exit {ran.code}"
        report = json.loads(ran.stdout)
        stored = set(report.get("changes", {}).get("added", []))
        missing = [p for p in kept if site.url(p) not in stored]
        notes = "\n".join(report.get("notes", []))
        noted = sum(KEPT in line for line in notes.splitlines())
        metadata = [h for h in site.hits if "169.254" in h.path]
        held = not missing and noted >= len(kept) and not metadata
        return held, (f"exit {ran.code}; kept {len(kept) - len(missing)} of {len(kept)}, "
                      f"{noted} notes; missing {missing}")
    return CLASS, f"{kind}: canonical 404, refused redirect, listed 404", run


def _url(path: str, port: int) -> tuple[str, str, object]:
    def run(workdir: Path) -> tuple[bool, str]:
        with serving(port) as site:
            _site(site)
            ran = kbctl(workdir, "ingest", "url", site.url(path), PRIVATE, "--json")
        if ran.code != 0 or "Traceback" in ran.output:
            return False, f"exit {ran.code}"
        report = json.loads(ran.stdout)
        added = report.get("changes", {}).get("added", [])
        held = added == [site.url(path)] and KEPT in "\n".join(report.get("notes", []))
        return held, f"exit {ran.code}; added {added}"
    return CLASS, f"url {path}: its canonical gives no page", run


def copy_past_depth(workdir: Path) -> tuple[bool, str]:
    """A crawl of depth 0 whose start page is a copy: the canonical page is stored."""
    with serving(18326) as site:
        site.routes["/"] = page("<html><head><link rel='canonical' href='/home.html'></head>"
                                "<body><main><h1>Home</h1><p>Start.</p></main></body></html>")
        site.routes["/home.html"] = page("<html><body><main><h1>Home</h1><p>The real home "
                                         "page.</p></main></body></html>")
        ran = kbctl(workdir, "ingest", "crawl", site.url("/"), "--max-depth", "0",
                    "--no-llms-txt", PRIVATE, "--json")
    if ran.code is None or "Traceback" in ran.output:
        return False, f"exit {ran.code}"
    added = json.loads(ran.stdout).get("changes", {}).get("added", [])
    return added == [site.url("/home.html")], f"exit {ran.code}; added {added}"


ATTACKS = [
    _kind("crawl", 18320),
    _kind("sitemap", 18321),
    _kind("llms", 18322),
    _url("/a.html", 18323),
    _url("/b.html", 18324),
    (CLASS, "crawl at depth 0 from a copy", copy_past_depth),
]
