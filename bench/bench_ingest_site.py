"""Benchmark: `kbctl ingest sitemap` of a real 530-page docs site, end to end.

Serves the Python 3.11 HTML docs with ``docs-site serve PORT DIR`` (DIR is a private tree
of symlinks to the prepared site, so the sitemap.xml it writes for its port cannot clash
with another server of the same site), then runs, as a subprocess in a fresh temporary
directory with its own embedded database (lexical mode, no embedder):

    kbctl ingest sitemap http://127.0.0.1:PORT/sitemap.xml --allow-private-network --json

and prints wall time, pages/s, chunks, failures and the child's peak RSS, per run and
the median. Targets: <= 15 s end to end, peak RSS <= 600 MB.

    .venv/bin/python bench/bench_ingest_site.py [--runs 3] [--port 0] [--resync]

``--resync`` also times a second ingest of the same sitemap into the same database
(conditional requests: every page should come back not modified).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
DOCS_SITE = SHARED / "scripts" / "docs-site"
CACHE = Path.home() / ".cache" / "kbctl-docs-site"
TARGET_SECONDS = 15.0
TARGET_RSS_MB = 600.0


@dataclass
class Run:
    wall: float
    pipeline: float
    pages: int
    chunks: int
    failed: int
    rss_mb: float
    exit_code: int


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def private_tree(root: Path) -> Path:
    """A site dir whose html/ links to the prepared site but owns its sitemap.xml."""
    html = root / "html"
    html.mkdir(parents=True)
    for entry in (CACHE / "html").iterdir():
        if entry.name not in ("sitemap.xml", "sitemap.template"):
            (html / entry.name).symlink_to(entry)
    shutil.copy(CACHE / "html" / "sitemap.template", html / "sitemap.template")
    return root


def wait_for(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (local)
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"the docs site did not come up at {url}")
        time.sleep(0.2)


def kbctl_command() -> list[str]:
    script = Path(sys.executable).parent / "kbctl"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from kbctl.cli import main; main()"]


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KBCTL_") and k not in ("GEMINI_API_KEY", "OPENAI_API_KEY",
                                                      "GOOGLE_GENERATIVE_AI_API_KEY")}
    env["COLUMNS"] = "120"
    return env


def ingest(sitemap: str, workdir: Path) -> Run:
    """One ingest as a child process; peak RSS from that child's own rusage."""
    out_path = workdir / "report.json"
    err_path = workdir / "stderr.txt"
    cmd = [*kbctl_command(), "ingest", "sitemap", sitemap, "--allow-private-network",
           "--json", "--embedder", "none", "--data-dir", str(workdir / ".kbctl")]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=workdir, stdout=out, stderr=err, env=clean_env())
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
    try:
        report = json.loads(out_path.read_text())
    except json.JSONDecodeError:
        sys.stderr.write(err_path.read_text())
        raise SystemExit(f"kbctl exited {child.returncode} without a JSON report") from None
    pages = sum(report.get(k, 0) for k in ("added", "updated", "unchanged", "notModified"))
    return Run(wall=wall, pipeline=float(report["timings"]["total"]), pages=pages,
               chunks=int(report["chunksWritten"]), failed=int(report["failed"]),
               rss_mb=usage.ru_maxrss / 1024, exit_code=child.returncode)


def show(label: str, run: Run) -> None:
    print(f"{label:>10}: wall {run.wall:6.2f} s  pipeline {run.pipeline:6.2f} s  "
          f"{run.pages / run.wall:6.1f} pages/s  pages {run.pages}  chunks {run.chunks}  "
          f"failed {run.failed}  peak RSS {run.rss_mb:6.1f} MB  exit {run.exit_code}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=0, help="0: pick a free port")
    parser.add_argument("--resync", action="store_true",
                        help="also time a second ingest into the same database")
    args = parser.parse_args()
    if not DOCS_SITE.exists():
        print(f"skipped: {DOCS_SITE} is absent")
        return
    if not (CACHE / "html" / "sitemap.template").exists():
        subprocess.run([str(DOCS_SITE), "prepare"], check=True)
    port = args.port or free_port()
    site_dir = private_tree(Path(tempfile.mkdtemp(prefix="kbctl-bench-site-")))
    server = subprocess.Popen([str(DOCS_SITE), "serve", str(port), str(site_dir)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sitemap = f"http://127.0.0.1:{port}/sitemap.xml"
    runs: list[Run] = []
    resyncs: list[Run] = []
    try:
        wait_for(sitemap)
        print(f"site: {sitemap}  ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f})")
        for i in range(args.runs):
            workdir = Path(tempfile.mkdtemp(prefix="kbctl-bench-ingest-"))
            try:
                runs.append(ingest(sitemap, workdir))
                show(f"run {i + 1}", runs[-1])
                if args.resync:
                    resyncs.append(ingest(sitemap, workdir))
                    show(f"resync {i + 1}", resyncs[-1])
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(site_dir, ignore_errors=True)
    wall = statistics.median(r.wall for r in runs)
    rss = max(r.rss_mb for r in runs)
    median = sorted(runs, key=lambda r: r.wall)[len(runs) // 2]
    print(f"median: wall {wall:.2f} s (target <= {TARGET_SECONDS:.0f} s), "
          f"pipeline {statistics.median(r.pipeline for r in runs):.2f} s, "
          f"{median.pages / median.wall:.1f} pages/s, chunks {median.chunks}, "
          f"failed {median.failed}; peak RSS max {rss:.1f} MB (target <= "
          f"{TARGET_RSS_MB:.0f} MB)")
    if resyncs:
        print(f"resync median: wall {statistics.median(r.wall for r in resyncs):.2f} s, "
              f"not modified/unchanged pages {resyncs[0].pages}")
    verdict = wall <= TARGET_SECONDS and rss <= TARGET_RSS_MB
    print("targets met" if verdict else "targets MISSED")


if __name__ == "__main__":
    main()
