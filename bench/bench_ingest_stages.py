"""Benchmark: where an ingest's time goes, stage by stage, per page, as the site grows.

Three ingests, each a fresh ``kbctl`` process with its own embedded database (lexical
mode, no embedder):

- ``site``: ``kbctl ingest sitemap`` of the real 530-page docs site (the Python 3.11 HTML
  docs that ``docs-site prepare`` unpacks);
- ``site x4``: the same site four times over (2,120 pages) from one sitemap, each copy under
  its own path with its own page titles, so no page is a copy of another;
- ``rust book``: ``kbctl ingest files`` of the Rust book's markdown.

The site is served by this script itself (``--serve``, a subprocess on 127.0.0.1). Per run
it prints wall time, the CPU of kbctl's processes (extraction workers included), the CPU
of the database server (from /proc: the postmaster and its backends), peak RSS, and the
report's stage timings (``load``, ``normalise``, ``chunk``, ``analyse``, ``write``) in ms
per page; then the medians. ``--compare DIR``
runs a second kbctl checkout (PYTHONPATH=DIR) in the same runs, interleaved, for
before/after figures. Each ingest's data directory is made and its server started before
the clock starts (``--cold``: not).

    .venv/bin/python bench/bench_ingest_stages.py [--runs 3] [--compare /path/to/main]
        [--only site,site4,book] [--cold]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _common import KBCTL, ROOT, RUST_BOOK, SHARED, compiled, temp_dir

DOCS_SITE = SHARED / "scripts" / "docs-site"
CACHE = Path.home() / ".cache" / "kbctl-docs-site"
COPIES = 4
STAGES = ("load", "normalise", "chunk", "analyse", "write")
TITLE = re.compile(rb"<title>(.*?)</title>", re.S)


# --- the site, served N times over ----------------------------------------------------------

class _CopiesHandler(SimpleHTTPRequestHandler):
    """``/cK/path`` is the site's ``path``; copy K > 0 has " (copy K)" in each page's title.
    ``/sitemap-N.xml`` lists the first N copies' pages."""

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        listing = re.fullmatch(r"/sitemap-(\d+)\.xml", path)
        if listing:
            return self._send(self._sitemap(int(listing.group(1))), "application/xml")
        copy = re.match(r"/c(\d+)/", path)
        if copy is None:
            return self.send_error(404)
        self.path = path[copy.end() - 1:]
        if int(copy.group(1)) == 0 or not path.endswith(".html"):
            return super().do_GET()
        file = Path(self.translate_path(self.path))
        if not file.is_file():
            return self.send_error(404)
        body = TITLE.sub(lambda m: b"<title>" + m.group(1) + f" (copy {copy.group(1)})".encode()
                         + b"</title>", file.read_bytes(), count=1)
        return self._send(body, "text/html; charset=utf-8")

    def _sitemap(self, copies: int) -> bytes:
        template = (CACHE / "html" / "sitemap.template").read_text()
        host = f"http://{self.headers.get('Host', '127.0.0.1')}"
        entries = re.findall(r"<url>.*?</url>", template)
        urls = [e.replace("BASE/", f"{host}/c{k}/") for k in range(copies) for e in entries]
        return ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                + "\n".join(urls) + "\n</urlset>\n").encode()

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve(port: int) -> None:
    handler = lambda *a: _CopiesHandler(*a, directory=str(CACHE / "html"))  # noqa: E731
    ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()


# --- one ingest ---------------------------------------------------------------------------

@dataclass
class Run:
    wall: float
    cpu: float  # kbctl and its extraction workers
    pg_cpu: float  # the database server, all its processes
    rss_mb: float
    pages: int
    chunks: int
    failed: int
    stages: dict[str, float] = field(default_factory=dict)


def _proc_cpu(pid: int) -> tuple[float, list[int]]:
    """CPU seconds of ``pid`` and of its children it reaped, and its live children."""
    tick = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = sum(int(v) for v in fields[11:15]) / tick  # utime stime cutime cstime
    kids = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return own, kids


def server_cpu(data_dir: Path, *, stop: bool = False) -> float:
    """The embedded server's CPU so far (its postmaster, the backends it reaped, its live
    processes); ``stop``: then stop it (SIGINT, a fast shutdown)."""
    pid_file = data_dir / "pg" / "postmaster.pid"
    if not pid_file.exists():
        return 0.0
    pm = int(pid_file.read_text().split()[0])
    total, kids = _proc_cpu(pm)
    for kid in kids:
        with contextlib.suppress(OSError):
            total += _proc_cpu(kid)[0]
    if stop:
        with contextlib.suppress(OSError):
            os.kill(pm, signal.SIGINT)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pm}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    return total


def ingest(argv: list[str], checkout: Path, workdir: Path, *, cold: bool = False) -> Run:
    """One ingest into a new data directory; unless ``cold``, its server is made and started
    first (a one-line text ingested into a namespace of its own): the figures are the
    ingest's, not initdb's."""
    data = workdir / ".kbctl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBCTL_")
           and k not in ("GEMINI_API_KEY", "OPENAI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY")}
    # the server stays up after the run so that its CPU can be read, then this stops it
    env.update(PYTHONPATH=str(checkout), KBCTL_SERVER_LINGER="600", COLUMNS="120")
    if not cold:
        subprocess.run([*KBCTL, "ingest", "text", "warm", "--ref", "warm", "--namespace",
                        "bench-warm-up", "--embedder", "none", "--data-dir", str(data)],
                       cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
    pg_before = server_cpu(data)
    cmd = [*KBCTL, "ingest", *argv, "--json", "--embedder", "none", "--data-dir", str(data)]
    out, err = workdir / "report.json", workdir / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=workdir, stdout=stdout, stderr=stderr, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    pg_cpu = server_cpu(data, stop=True) - pg_before
    try:
        report = json.loads(out.read_text())
    except json.JSONDecodeError:
        sys.stderr.write(err.read_text()[-4000:])
        raise SystemExit(f"kbctl exited {os.waitstatus_to_exitcode(status)} without a report"
                         ) from None
    pages = sum(report.get(k, 0) for k in ("added", "updated", "unchanged", "notModified"))
    timings = report.get("timings", {})
    return Run(wall=wall, cpu=usage.ru_utime + usage.ru_stime, pg_cpu=pg_cpu,
               rss_mb=usage.ru_maxrss / 1024, pages=pages,
               chunks=int(report["chunksWritten"]), failed=int(report["failed"]),
               stages={s: float(timings[s]) for s in STAGES if s in timings})


def per_page_ms(run: Run) -> str:
    if not run.stages:
        return "no stage timings"
    return "  ".join(f"{s} {1000 * run.stages.get(s, 0) / max(run.pages, 1):5.2f}"
                     for s in STAGES)


def show(label: str, run: Run) -> None:
    print(f"  {label:<24} wall {run.wall:6.2f} s  kbctl CPU {run.cpu:6.2f} s  "
          f"server CPU {run.pg_cpu:6.2f} s  peak RSS {run.rss_mb:6.1f} MB  pages "
          f"{run.pages}  chunks {run.chunks}  failed {run.failed}", flush=True)
    print(f"  {'':<24} ms/page: {per_page_ms(run)}", flush=True)


def median_run(runs: list[Run]) -> Run:
    stages = {s: statistics.median(r.stages.get(s, 0) for r in runs) for s in STAGES
              if any(s in r.stages for r in runs)}
    return Run(wall=statistics.median(r.wall for r in runs),
               cpu=statistics.median(r.cpu for r in runs),
               pg_cpu=statistics.median(r.pg_cpu for r in runs),
               rss_mb=max(r.rss_mb for r in runs), pages=runs[0].pages,
               chunks=runs[0].chunks, failed=max(r.failed for r in runs), stages=stages)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), urllib.request.urlopen(  # noqa: S310 (local)
                url, timeout=2) as response:
            if response.status == 200:
                return
        if time.monotonic() > deadline:
            raise SystemExit(f"the site did not come up at {url}")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="another kbctl checkout, run alongside")
    parser.add_argument("--only", default="site,site4,book")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cold", action="store_true",
                        help="time each ingest's server start (initdb) too")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve)
    wanted = set(args.only.split(","))
    if wanted & {"site", "site4"} and not (CACHE / "html" / "sitemap.template").exists():
        if not DOCS_SITE.exists():
            print(f"skipped: {DOCS_SITE} is absent")
            return None
        subprocess.run([str(DOCS_SITE), "prepare"], check=True)
    port = args.port or free_port()
    site = f"http://127.0.0.1:{port}"
    scenarios = {
        "site": ["sitemap", f"{site}/sitemap-1.xml", "--allow-private-network"],
        "site4": ["sitemap", f"{site}/sitemap-{COPIES}.xml", "--allow-private-network"],
        "book": ["files", str(RUST_BOOK)],
    }
    if not RUST_BOOK.exists():
        wanted.discard("book")
    checkouts = {"after": ROOT}
    if args.compare:
        checkouts = {"before": args.compare.resolve(), "after": ROOT}
    for checkout in checkouts.values():
        compiled(checkout)
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results: dict[tuple[str, str], list[Run]] = {}
    try:
        wait_for(f"{site}/sitemap-1.xml")
        print(f"{os.cpu_count()} CPUs, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"checkouts: {', '.join(f'{k} {v}' for k, v in checkouts.items())}")
        for i in range(args.runs):
            for name in [n for n in scenarios if n in wanted]:
                for label, checkout in checkouts.items():
                    with temp_dir("kbctl-bench-stages-") as workdir:
                        run = ingest(scenarios[name], checkout, workdir, cold=args.cold)
                    results.setdefault((name, label), []).append(run)
                    show(f"run {i + 1} {name} {label}", run)
    finally:
        server.terminate()
        server.wait(10)
    print(f"medians of {args.runs} (load now {os.getloadavg()[0]:.2f}):")
    for (name, label), runs in results.items():
        show(f"{name} {label}", median_run(runs))
    return None


if __name__ == "__main__":
    main()
