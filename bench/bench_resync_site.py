"""Benchmark: resync of the real 530-page docs site.

1. ingest the site through its sitemap (lexical mode), timed;
2. resync with nothing changed: wall time as a ratio to the ingest, chunks written and
   embedding calls (targets: ratio <= 0.25, 0 chunks, 0 calls);
3. change the text of 10 pages (and their sitemap lastmod, as a site generator would),
   restart the server, resync: exactly those 10 sources must be rewritten;
4. the same site crawled from its front page (namespace ``crawl``), then resynced with
   nothing changed: pages answered 304 (a crawl keeps each page's links for this) against
   pages fetched whole, and the wall time as a ratio to the crawl.

    .venv/bin/python bench/bench_resync_site.py
"""

from __future__ import annotations

import datetime
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest_site import (  # noqa: E402
    CACHE,
    DOCS_SITE,
    clean_env,
    free_port,
    kbctl_command,
    private_tree,
    wait_for,
)


def serve(site: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """The site on ``port``; its request log (http.server's, one line a request, with the
    status) is appended to ``log``."""
    with log.open("ab") as sink:
        proc = subprocess.Popen([str(DOCS_SITE), "serve", str(port), str(site)],
                                stdout=subprocess.DEVNULL, stderr=sink)
    wait_for(f"http://127.0.0.1:{port}/sitemap.xml")
    return proc


def statuses(log: Path, since: int) -> dict[str, int]:
    """Responses by status among the page requests logged past byte ``since``."""
    counts: dict[str, int] = {}
    text = log.read_bytes()[since:].decode(errors="replace")
    for m in re.finditer(r'"GET [^"]*\.html[^"]* HTTP/1\.\d" (\d{3})', text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def crawl_phase(origin: str, work: Path, log: Path) -> None:
    ns = ["-n", "crawl"]
    t_crawl, first = kbctl(["ingest", "crawl", f"{origin}/index.html", "--embedder", "none",
                            "--max-pages", "2000", "--max-depth", "20", "--no-llms-txt",
                            *ns], work)
    print(f"crawl: {t_crawl:.2f}s, {first['added']} pages, {first['chunksWritten']} chunks, "
          f"{first['failed']} failed")
    for run in (1, 2):  # the first resync after a crawl by an older version stores links
        mark = log.stat().st_size
        t_resync, again = kbctl(["resync", *ns], work)
        t, answers = again["totals"], statuses(log, mark)
        print(f"crawl resync {run}, nothing changed: {t_resync:.2f}s = "
              f"{t_resync / t_crawl:.3f} of the crawl; page responses {answers} (304: asked "
              f"whether it changed; 200: fetched whole); not modified {t['notModified']}, "
              f"chunks written {t['chunksWritten']}, deleted {t['deleted']}, failed "
              f"{t['failed']}")


def kbctl(args: list[str], workdir: Path) -> tuple[float, dict]:
    cmd = [*kbctl_command(), *args, "--allow-private-network", "--json",
           "--data-dir", str(workdir / ".kbctl")]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, env=clean_env())
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr.decode())
        raise SystemExit(f"kbctl {' '.join(args)} exited {proc.returncode}")
    return wall, json.loads(proc.stdout)


def _own(path: Path) -> None:
    """Make every directory on the way to ``path`` a real directory of this private tree
    (a symlinked directory would let an edit reach the shared prepared site)."""
    for parent in reversed(path.parents):
        if parent.is_symlink():
            target = parent.resolve()
            parent.unlink()
            parent.mkdir()
            for entry in target.iterdir():
                (parent / entry.name).symlink_to(entry)
    if path.is_symlink():
        path.unlink()


def touch_pages(site: Path, n: int) -> list[str]:
    """Replace n page symlinks with edited copies and bump their sitemap lastmod."""
    html = site / "html"
    pages = sorted(p.relative_to(html).as_posix() for p in html.glob("library/*.html"))
    chosen = random.Random(7).sample(pages, n)
    today = datetime.date.today().isoformat()
    template = (html / "sitemap.template").read_text()
    for rel in chosen:
        path = html / rel
        text = path.read_text(encoding="utf-8")
        _own(path)
        edited = re.sub(r"(<h1>.*?</h1>)", r"\1<p>Edited for the resync benchmark.</p>", text,
                        count=1, flags=re.S)
        assert edited != text, rel
        path.write_text(edited, encoding="utf-8")
        template = re.sub(rf"(<loc>BASE/{re.escape(rel)}</loc><lastmod>)[^<]+",
                          rf"\g<1>{today}", template)
    (html / "sitemap.template").write_text(template)
    return chosen


def main() -> None:
    if not DOCS_SITE.exists():
        print(f"skipped: {DOCS_SITE} is absent")
        return
    if not (CACHE / "html" / "sitemap.template").exists():
        subprocess.run([str(DOCS_SITE), "prepare"], check=True)
    root = Path(tempfile.mkdtemp(prefix="kbctl-bench-resync-"))
    root.chmod(0o755)
    site, work = private_tree(root / "site"), root / "work"
    work.mkdir()
    port = free_port()
    sitemap = f"http://127.0.0.1:{port}/sitemap.xml"
    log = root / "requests.log"
    server = serve(site, port, log)
    try:
        t_ingest, first = kbctl(["ingest", "sitemap", sitemap, "--embedder", "none"], work)
        print(f"ingest: {t_ingest:.2f}s, {first['added']} pages, "
              f"{first['chunksWritten']} chunks, {first['failed']} failed")
        t_resync, again = kbctl(["resync"], work)
        t = again["totals"]
        print(f"resync, nothing changed: {t_resync:.2f}s = {t_resync / t_ingest:.3f} of the "
              f"ingest (target <= 0.25); chunks written {t['chunksWritten']}, embedding "
              f"calls {t['embedded']}, not modified {t['notModified']}, unchanged "
              f"{t['unchanged']}, failed {t['failed']}")
        t_full, full = kbctl(["resync", "--full"], work)
        t = full["totals"]
        print(f"resync --full (every page requested, conditional GET): {t_full:.2f}s = "
              f"{t_full / t_ingest:.3f} of the ingest; chunks written {t['chunksWritten']}, "
              f"not modified (304) {t['notModified']}, unchanged {t['unchanged']}")
        server.terminate()
        server.wait()
        touched = touch_pages(site, 10)
        server = serve(site, port, log)
        t_touch, third = kbctl(["resync"], work)
        ns = third["namespaces"][0]
        rewritten = sorted(r.split(f":{port}/", 1)[1] for r in ns["changes"]["updated"])
        exact = rewritten == sorted(touched)
        print(f"resync after editing 10 pages: {t_touch:.2f}s; rewritten "
              f"{len(rewritten)} sources, exactly the edited ones: {exact}; added "
              f"{ns['added']}, deleted {ns['deleted']}, chunks written "
              f"{ns['chunksWritten']}")
        crawl_phase(f"http://127.0.0.1:{port}", work, log)
    finally:
        server.terminate()
        server.wait()
        subprocess.run(["rm", "-rf", str(root)], check=False)
        os.sync()


if __name__ == "__main__":
    main()
