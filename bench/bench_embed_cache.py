"""What hybrid ingest costs a CI run, and what the portable embedding cache saves.

On the 530-page Python docs site (``../shared/scripts/docs-site``'s pages, served here on
127.0.0.1 with a sitemap written in memory) with the shared all-MiniLM-L6-v2 server
(``../shared/scripts/embed-server``, KBCTL_EMBEDDER_BASE_URL), through what ``kbctl
ingest sitemap`` runs (``kbctl.pipeline.api.ingest_sources``, in-process, with one request
in flight and a long timeout: the shared model server is slow under load), with a
counting proxy between kbctl and the model server:

1. ``first``: a fresh data directory, the embedder, ``--embedding-cache FILE``: embedding
   inputs, requests, wall time;
2. ``lexical``: a fresh data directory, no embedder: the wall time a lexical-only ingest
   takes, the yardstick for the next one;
3. ``second``: a copy of the site with 3 pages edited, a fresh data directory, FILE kept
   from the first run (as a CI cache restores it): inputs and requests sent (only the
   edited pages' changed sections should be), wall time.

Data directories and FILE live under ``--out`` (default bench/out/embed-cache, git
ignored); ``first`` keeps its data directory, so bench_ranking.py can measure it
(``--dense bench/out/embed-cache/first``).

    python bench/bench_embed_cache.py [--phases first,lexical,second]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, require  # noqa: E402
from bench_ranking import SITE, _SiteHandler  # noqa: E402

MODEL = "all-minilm-l6-v2"
OUT = ROOT / "bench" / "out" / "embed-cache"
# The pages edited for the second run, and what is appended to one section of each.
EDITED = ("library/shutil.html", "library/json.html", "tutorial/controlflow.html")
EDIT = ("<p>Note added for the benchmark: this paragraph did not exist when the knowledge "
        "base was first built.</p>")


class Counter:
    """Requests and inputs that reached the model server."""

    def __init__(self) -> None:
        self.requests = 0
        self.inputs = 0
        self.lock = threading.Lock()


@contextmanager
def counting_proxy(upstream: str) -> Iterator[tuple[str, Counter]]:
    """An OpenAI-compatible endpoint on 127.0.0.1 that forwards to ``upstream`` and counts."""
    counter = Counter()
    client = httpx.Client(timeout=900.0)

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            texts = json.loads(body or b"{}").get("input")
            with counter.lock:
                counter.requests += 1
                counter.inputs += 1 if isinstance(texts, str) else len(texts or [])
            answer = client.post(upstream.rstrip("/") + self.path.removeprefix("/v1"),
                                 content=body, headers={"Content-Type": "application/json"})
            self.send_response(answer.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", counter
    finally:
        server.shutdown()
        server.server_close()
        client.close()


@contextmanager
def serve(site: Path, port: int, pages: Sequence[str] | None) -> Iterator[str]:
    """``site`` on 127.0.0.1:port with its sitemap for that origin (of ``pages`` only,
    when given)."""
    origin = f"http://127.0.0.1:{port}"
    lines = (site / "sitemap.template").read_text(encoding="utf-8").splitlines()
    if pages is not None:
        keep = {f"<loc>BASE/{p}</loc>" for p in pages}
        lines = [*lines[:2], *(ln for ln in lines[2:-1] if any(k in ln for k in keep)),
                 lines[-1]]
    sitemap = "\n".join(lines).replace("BASE/", origin + "/").encode()
    handler = type("Handler", (_SiteHandler,), {"sitemap": sitemap})
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"{origin}/sitemap.xml"
    finally:
        server.shutdown()
        server.server_close()


def pages_of(data: Path) -> list[str]:
    """The site paths of the pages a KB holds (one built from part of the site)."""
    from kbctl.config import Settings
    from kbctl.wiring import open_store

    with open_store(Settings(data_dir=data)) as store:
        return sorted(urlsplit(s.ref).path.lstrip("/") for s in store.documents.stored("default"))


def edited_copy(out: Path, edited: Sequence[str]) -> Path:
    """The site with ``edited`` pages changed (a paragraph added to the first paragraph
    of their text)."""
    copy = out / "site-edited"
    if copy.exists():
        shutil.rmtree(copy)
    if not copy.exists():
        shutil.copytree(SITE, copy, symlinks=True,
                        ignore=shutil.ignore_patterns("_sources", "*.tar*"))
        for page in edited:
            path = copy / page
            html = path.read_text(encoding="utf-8")
            main = html.find('role="main"')  # the page's text, not its navigation
            at = html.index("</p>", max(main, 0)) + len("</p>")
            path.write_text(html[:at] + EDIT + html[at:], encoding="utf-8")
    return copy


def ingest(data: Path, sitemap: str, *, embed_url: str | None, cache: Path | None
           ) -> tuple[float, Any]:
    """What ``kbctl ingest [--embedding-cache FILE] sitemap URL [--embedder …]`` runs
    (``api.ingest_sources``), in a fresh data directory; wall seconds and the report."""
    from kbctl.config import Settings
    from kbctl.pipeline import api
    from kbctl.sources.registry import source_spec

    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    data.chmod(0o755)
    settings = Settings(data_dir=data, allow_private_network=True, embedding_cache=cache,
                        embedder=f"openai:{MODEL}" if embed_url else "none",
                        embedder_base_url=embed_url)
    t0 = time.perf_counter()
    report = api.ingest_sources(settings, [source_spec("sitemap", sitemap,
                                                       {"llms_txt": False})])
    wall = time.perf_counter() - t0
    if report.failed:
        sys.exit(f"ingest failed for {report.failed} pages: {report.errors[:3]}")
    return wall, report


def patient_provider() -> None:
    """One request in flight and a long timeout for the OpenAI-compatible provider: the
    shared model server encodes one request at a time, and on a loaded machine a batch
    outlasts the default timeout (bench_ranking.py's build does the same)."""
    from kbctl.embed import registry

    openai = registry.PROVIDERS["openai"]
    registry.PROVIDERS["openai"] = replace(
        openai, factory=partial(openai.build(), concurrency=1, timeout=900.0))


def export(data: Path, cache: Path, base_url: str) -> int:
    """What ``--embedding-cache`` writes after an ingest, from a KB built before."""
    from kbctl.config import Settings
    from kbctl.pipeline.cache_carry import save
    from kbctl.pipeline.cached_embedder import with_cache
    from kbctl.wiring import open_store, resolve_embedder

    settings = Settings(data_dir=data, embedder_base_url=base_url)
    with open_store(settings) as store:
        cached = with_cache(resolve_embedder(store, settings, writing=False), store, settings)
        assert cached is not None, f"{data} has no embedder"
        return save(store, cached, cache, ["default"], settings.max_tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", default="first,lexical,second")
    parser.add_argument("--port", type=int, default=18710)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--pages-of", type=Path, metavar="DATA_DIR", help="serve only the "
                        "pages this KB holds (a KB built from part of the site), and edit "
                        "three of them")
    parser.add_argument("--max-pages", type=int, help="with --pages-of: its first N pages")
    parser.add_argument("--from-kb", type=Path, metavar="DATA_DIR", help="write the cache "
                        "file from a KB built before (bench_ranking.py's kb-dense, from the "
                        "same --port), in place of the first phase's")
    args = parser.parse_args()
    require(SITE / "sitemap.template", "the docs site (shared/scripts/docs-site prepare)")
    upstream = os.environ.get("KBCTL_EMBEDDER_BASE_URL", "http://127.0.0.1:8799/v1")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o755)
    cache = out / "embeddings.kbvec"
    phases = args.phases.split(",")
    patient_provider()
    pages = pages_of(args.pages_of)[:args.max_pages] if args.pages_of else None
    edited = EDITED if pages is None else tuple(
        pages[i] for i in (len(pages) // 4, len(pages) // 2, 3 * len(pages) // 4))
    if pages is not None:
        print(f"{len(pages)} pages (those {args.pages_of} holds); edited: {', '.join(edited)}")
    if "first" in phases:
        cache.unlink(missing_ok=True)  # a first run has no cache to restore
        with serve(SITE, args.port, pages) as sitemap, counting_proxy(upstream) as (url, counter):
            wall, report = ingest(out / "first", sitemap, embed_url=url, cache=cache)
        print(f"first ingest, embedder, fresh data dir: {report.added} pages, "
              f"{report.chunks_written} chunks, {counter.inputs} inputs in "
              f"{counter.requests} requests, {wall:.0f}s")
        (out / "first" / "built-default").write_text("bench_embed_cache.py first\n")
    if args.from_kb is not None:
        print(f"embedding cache from {args.from_kb}: {export(args.from_kb, cache, upstream)} "
              "vectors")
    if "lexical" in phases:
        with serve(SITE, args.port, pages) as sitemap:
            wall, report = ingest(out / "lexical", sitemap, embed_url=None, cache=None)
        print(f"lexical-only ingest, fresh data dir: {report.added} pages, "
              f"{report.chunks_written} chunks, {wall:.0f}s")
    if "second" in phases:
        site = edited_copy(out, edited)
        restored = out / "restored.kbvec"
        shutil.copyfile(cache, restored)  # what the CI cache hands the next run
        with serve(site, args.port, pages) as sitemap, counting_proxy(upstream) as (url, counter):
            wall, report = ingest(out / "second", sitemap, embed_url=url, cache=restored)
        print(f"second ingest ({len(edited)} pages edited), fresh data dir, cache restored: "
              f"{report.chunks_written} chunks, {counter.inputs} inputs in "
              f"{counter.requests} requests (cache hits {report.embedding_cache_hits}), "
              f"{wall:.0f}s")


if __name__ == "__main__":
    main()
