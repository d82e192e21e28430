"""Throughput of the Gemini embedder against a local stand-in for ``embedContent``.

A threaded HTTP server on 127.0.0.1 answers each request after a fixed latency (50 ms by
default) with a deterministic vector. 1,000 chunks go through GeminiEmbedder with
concurrency 8; the ideal wall time is 1000 / 8 * 0.05 s = 6.25 s, the target is <= 8 s, and
the server must see exactly one request per chunk.

    .venv/bin/python bench/bench_embed_gemini.py [--chunks 1000] [--latency 0.05]
        [--concurrency 8] [--dims 1536] [--runs 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kbctl.embed.gemini import GeminiEmbedder

KEY = "bench-key"


class Counter:
    def __init__(self) -> None:
        self.requests = 0
        self.bad = 0
        self.lock = threading.Lock()


def make_handler(counter: Counter, latency: float, dims: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # headers and body go out in separate writes; without this, Nagle plus the
            # client's delayed ACK adds ~40 ms to every response
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            ok = (
                self.path.endswith(":embedContent")
                and self.headers.get("x-goog-api-key") == KEY
                and body["config"]["output_dimensionality"] == dims
            )
            with counter.lock:
                counter.requests += 1
                counter.bad += not ok
            time.sleep(latency)
            text = body["content"]["parts"][0]["text"]
            rng = random.Random(hashlib.sha256(text.encode()).digest())
            values = [rng.uniform(-1, 1) for _ in range(dims)]
            data = json.dumps({"embedding": {"values": values}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def run_once(base_url: str, chunks: list[str], concurrency: int, dims: int) -> float:
    with GeminiEmbedder(
        dimensions=dims, api_key=KEY, base_url=base_url, concurrency=concurrency,
        allow_private_network=True,
    ) as embedder:
        start = time.perf_counter()
        vectors = embedder.embed(chunks, titles=[f"Page {i // 10}" for i in range(len(chunks))])
        elapsed = time.perf_counter() - start
    assert len(vectors) == len(chunks) and all(len(v) == dims for v in vectors)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--dims", type=int, default=1536)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    counter = Counter()
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), make_handler(counter, args.latency, args.dims)
    )
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1beta"
    chunks = [f"chunk {i}: " + "lorem ipsum dolor sit amet " * 20 for i in range(args.chunks)]

    ideal = args.chunks / args.concurrency * args.latency
    times: list[float] = []
    try:
        for run in range(1, args.runs + 1):
            before = counter.requests
            elapsed = run_once(base_url, chunks, args.concurrency, args.dims)
            seen = counter.requests - before
            times.append(elapsed)
            print(f"run {run}: {args.chunks} chunks in {elapsed:.2f} s, "
                  f"server saw {seen} requests")
        print(f"median wall time: {statistics.median(times):.2f} s "
              f"(ideal {ideal:.2f} s, target <= 8 s at the defaults)")
        print(f"requests per run: {counter.requests / args.runs:.0f} "
              f"(expected {args.chunks}); malformed requests: {counter.bad}")
        ingest_twice(base_url, chunks, counter, args.dims)
    finally:
        server.shutdown()
        server.server_close()


def ingest_twice(base_url: str, chunks: list[str], counter: Counter, dims: int) -> None:
    """The same documents through the real ingest pipeline twice: the KB's embedding cache
    must make the second run cost zero provider requests."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import embedded_server, temp_dir

    from kbctl.embed.gemini import GeminiEmbedder
    from kbctl.pipeline.cached_embedder import CachedEmbedder
    from kbctl.pipeline.ingest import ingest
    from kbctl.sources.registry import source_spec
    from kbctl.store.db import connect
    from kbctl.store.knowledge import KnowledgeStore

    with temp_dir() as d, embedded_server(d) as url:
        docs = d / "docs"
        docs.mkdir()
        for i, text in enumerate(chunks):  # one short page per chunk
            (docs / f"page{i:04d}.txt").write_text(text)
        specs = [source_spec("files", str(docs))]
        store = KnowledgeStore(connect(url))
        embedder = GeminiEmbedder(base_url=base_url, api_key="bench-key", dimensions=dims,
                                  allow_private_network=True)
        store.embedder.bind(embedder.identity)
        for label, namespace in (("first ingest", "one"), ("second ingest (new namespace)",
                                                          "two")):
            before = counter.requests
            started = time.perf_counter()
            report = ingest(store, specs, namespace=namespace,
                            embedder=CachedEmbedder(embedder, store))
            print(f"{label}: {report.chunks_written} chunks written in "
                  f"{time.perf_counter() - started:.2f} s, provider requests "
                  f"{counter.requests - before}")
        store.conn.close()


if __name__ == "__main__":
    main()
