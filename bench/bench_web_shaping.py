"""Benchmark: `kbctl ingest sitemap` of a messy docs site, against the same site plain.

The real 530-page Python docs (``~/.cache/kbctl-docs-site/html``, prepared by
``../shared/scripts/docs-site prepare``) are served by a small server in this script in
three shapes, one sitemap each:

    plain     every docs page once, at the root
    marked    every docs page twice, under /3.11/ and /3.12/ (the root redirects to
              /3.11/), plus a /blog/ of 50 generated posts that the site marks: half carry
              <meta name="robots" content="noindex">, half name /blog/ canonical (itself
              noindex)
    unmarked  the same, but the blog carries no marks: ingested with --exclude '/blog/*'

Each shape is ingested into a fresh embedded database in lexical mode (no embedder), as
a child process:

    kbctl ingest sitemap URL --allow-private-network --json --embedder none [--exclude '/blog/*']

and the script prints, per run and as medians: wall time, pages fetched (requests the
server saw for pages), stored, and dropped per rule, and the ratio of each shaped ingest
to the plain one. Target: each docs page stored once, no blog page, and a shaped ingest
within 1.1x the plain one's time.

    .venv/bin/python bench/bench_web_shaping.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CACHE = Path.home() / ".cache" / "kbctl-docs-site" / "html"
BLOG_POSTS = 50
OLD, NEW = "3.11", "3.12"  # the root redirects to OLD: the site's stable docs
TARGET_RATIO = 1.1


def docs_pages(root: Path) -> list[str]:
    pages = []
    for base, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                rel = os.path.relpath(os.path.join(base, name), root).replace(os.sep, "/")
                if not rel.startswith(("_static/", "_sources/")):
                    pages.append(rel)
    return sorted(pages)


def blog_post(n: int, marked: bool) -> bytes:
    head = ""
    if marked:
        head = ("<meta name='robots' content='noindex, follow'>" if n % 2 else
                "<link rel='canonical' href='/blog/'>")
    words = " ".join(f"word{(n * 7 + i) % 97}" for i in range(120))
    return (f"<!doctype html><html><head><title>Release diary {n}</title>{head}</head>"
            f"<body><nav><a href='/blog/'>blog</a></nav><main><h1>Release diary {n}</h1>"
            f"<p>Entry {n} of the team's diary: {words}.</p></main></body></html>").encode()


@dataclass
class Site:
    """One shape of the site: path -> (content type, bytes or a file), and a request log."""

    pages: dict[str, tuple[str, bytes | Path]] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sitemap(self, origin: str, listed: list[str]) -> None:
        items = "".join(f"<url><loc>{origin}{p}</loc></url>" for p in listed)
        body = (f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
                f'sitemap/0.9">{items}</urlset>').encode()
        self.pages["/sitemap.xml"] = ("application/xml", body)


def make_handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            path = self.path.split("?", 1)[0]
            with site.lock:
                site.hits[path] += 1
            if path in site.redirects:
                self.send_response(302)
                self.send_header("Location", site.redirects[path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            found = site.pages.get(path)
            if found is None:
                body, ctype, status = b"not found", "text/plain", 404
            else:
                ctype, data = found
                body = data.read_bytes() if isinstance(data, Path) else data
                status = 200
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return Handler


def serve(site: Site) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(site))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def build(shape: str, origin: str, pages: list[str]) -> tuple[Site, int]:
    """The site of one shape; returns it and the number of docs pages it should store."""
    site = Site()
    html = "text/html; charset=utf-8"
    if shape == "plain":
        for page in pages:
            site.pages[f"/{page}"] = (html, CACHE / page)
        site.sitemap(origin, [f"/{p}" for p in pages])
        return site, len(pages)
    listed = []
    for prefix in (OLD, NEW):
        for page in pages:
            site.pages[f"/{prefix}/{page}"] = (html, CACHE / page)
            listed.append(f"/{prefix}/{page}")
    marked = shape == "marked"
    for n in range(1, BLOG_POSTS + 1):
        site.pages[f"/blog/post-{n}.html"] = (html, blog_post(n, marked))
        listed.append(f"/blog/post-{n}.html")
    index = "<meta name='robots' content='noindex'>" if marked else ""
    site.pages["/blog/"] = (html, f"<html><head>{index}</head><body><main><h1>Blog</h1>"
                                  f"<p>All the diary entries.</p></main></body></html>".encode())
    site.redirects["/"] = f"/{OLD}/index.html"
    site.sitemap(origin, listed)
    return site, len(pages)


@dataclass
class Run:
    shape: str
    wall: float
    fetched: int
    stored: int
    blog_stored: int
    dropped: dict[str, int]
    failed: int


def ingest(shape: str, sitemap: str, site: Site, flags: list[str]) -> Run:
    workdir = Path(tempfile.mkdtemp(prefix="kbctl-bench-shaping-"))
    workdir.chmod(0o755)
    site.hits.clear()
    cmd = [str(Path(sys.executable).parent / "kbctl"), "ingest", "sitemap", sitemap,
           "--allow-private-network", "--json", "--embedder", "none", "--no-llms-txt",
           "--data-dir", str(workdir / ".kbctl"), *flags]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBCTL_")}
    try:
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=workdir, capture_output=True, env=env)
        wall = time.perf_counter() - started
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        sys.stderr.write(done.stderr.decode())
        raise SystemExit(f"kbctl exited {done.returncode} without a JSON report") from None
    stored = report["changes"]["added"] + report["changes"]["updated"]
    fetched = sum(n for path, n in site.hits.items() if path.endswith(("/", ".html")))
    return Run(shape, wall, fetched, len(stored), sum("/blog/" in r for r in stored),
               report.get("dropped", {}), report["failed"])


def show(run: Run) -> None:
    dropped = ", ".join(f"{k} {v}" for k, v in run.dropped.items()) or "none"
    print(f"{run.shape:>9}: wall {run.wall:6.2f} s  fetched {run.fetched:4d}  stored "
          f"{run.stored:4d} (blog {run.blog_stored})  failed {run.failed}  "
          f"dropped: {dropped}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not CACHE.exists():
        print(f"skipped: the docs site is not prepared at {CACHE} "
              f"(../shared/scripts/docs-site prepare)")
        return
    pages = docs_pages(CACHE)
    shapes = {"plain": [], "marked": [], "unmarked": ["--exclude", "/blog/*"]}
    servers, sites, expected = {}, {}, {}
    for shape in shapes:
        site = Site()
        server, origin = serve(site)
        built, expected[shape] = build(shape, origin, pages)
        site.pages, site.redirects = built.pages, built.redirects
        servers[shape], sites[shape] = (server, origin), site
    print(f"{len(pages)} docs pages; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    runs: dict[str, list[Run]] = {shape: [] for shape in shapes}
    try:
        for i in range(args.runs):
            for shape, flags in shapes.items():  # interleaved: the machine's noise is shared
                run = ingest(shape, servers[shape][1] + "/sitemap.xml", sites[shape], flags)
                runs[shape].append(run)
                show(run)
            print(f"-- run {i + 1} done")
    finally:
        for server, _ in servers.values():
            server.shutdown()
            server.server_close()
    plain_stored = runs["plain"][0].stored  # what the plain site gives: the pages that count
    verdict = True
    for shape in shapes:
        wall = statistics.median(r.wall for r in runs[shape])
        correct = all(r.stored == plain_stored and not r.blog_stored for r in runs[shape])
        # each round ingests every shape back to back: the ratio within a round shares
        # the machine's load of that moment, so its median is the fairer comparison
        ratio = statistics.median(r.wall / p.wall for r, p in zip(runs[shape], runs["plain"],
                                                                  strict=True))
        verdict &= correct and (shape == "plain" or ratio <= TARGET_RATIO)
        print(f"median {shape:>9}: wall {wall:6.2f} s  ({ratio:.2f}x plain, median of the "
              f"rounds' ratios)  stored "
              f"{runs[shape][0].stored} of {expected[shape]} docs pages (plain: "
              f"{plain_stored}), no blog page: {'yes' if correct else 'NO'}")
    print("targets met" if verdict else "targets MISSED")


if __name__ == "__main__":
    main()
