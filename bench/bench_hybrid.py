"""Hybrid query latency on a ≥100k-chunk KB with 384-dimension vectors.

The Rust book is ingested once through the real pipeline with a deterministic 384-d
embedder, then its rows are copied (vectors perturbed per copy, so the HNSW graph is not
full of exact duplicates) into one ~100k-chunk namespace plus a few book-sized ones.
Queries run in one process: 200 per scenario, p50 and p95.

    python bench/bench_hybrid.py [--copies N] [--queries 200]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RUST_BOOK, embedded_server, pct, require, temp_dir  # noqa: E402
from bench_foundation import (  # noqa: E402
    QUESTIONS,
    SMALL_NAMESPACES,
    _copy_namespace,
    add_copies_option,
    copies_for,
)

from kbctl.embed.base import EmbedderIdentity  # noqa: E402

DIMS = 384
_WORD = re.compile(r"[a-z0-9]+")


class BenchEmbedder:
    """Hashed bag of words in 384 dimensions: deterministic, no model, no network."""

    identity = EmbedderIdentity("bench", "hashing-384", DIMS)
    dimensions = DIMS

    def _vec(self, text: str) -> list[float]:
        v = [0.0] * DIMS
        for w in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(w[:6].encode(), digest_size=4).digest(), "big")
            v[h % DIMS] += 1.0 if h & 1 else -1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]

    def embed(self, texts, titles=None):
        return [self._vec(t) for t in texts]

    def embed_query(self, text):
        return self._vec(text)


def build(url: str, copies: int | None) -> None:
    from kbctl.pipeline.ingest import ingest
    from kbctl.sources.registry import source_spec
    from kbctl.store.db import connect
    from kbctl.store.knowledge import KnowledgeStore

    store = KnowledgeStore(connect(url))
    emb = BenchEmbedder()
    store.embedder.bind(emb.identity)
    ingest(store, [source_spec("files", str(RUST_BOOK))], namespace="seed", embedder=emb)
    conn = store.conn
    copies = copies_for(conn, "seed") if copies is None else copies
    t0 = time.perf_counter()
    with conn.transaction():
        for i in range(SMALL_NAMESPACES):
            _copy_namespace(conn, "seed", f"ns{i:03d}", ref_suffix="")
        for i in range(copies):
            _copy_namespace(conn, "seed", "big", ref_suffix=f"?copy={i}")
    conn.execute(
        f"""UPDATE chunks SET embedding = l2_normalize(embedding + (
                SELECT array_agg((random() - 0.5) * 0.02)::vector({DIMS})
                FROM generate_series(1, {DIMS}) WHERE chunks.id > 0))
            WHERE namespace = 'big'""")
    t1 = time.perf_counter()
    store.embedder.ensure_vector_index()
    conn.execute("VACUUM ANALYZE")
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    big = conn.execute("SELECT count(*) FROM chunks WHERE namespace = 'big'").fetchone()[0]
    print(f"built KB: {total} chunks with {DIMS}-d vectors, namespace 'big' {big} (copy "
          f"{t1 - t0:.0f}s, HNSW index {time.perf_counter() - t1:.0f}s)")
    conn.close()


def run(url: str, n: int) -> None:
    from kbctl.config import RetrievalSettings
    from kbctl.pipeline.query import retrieve
    from kbctl.store.db import connect
    from kbctl.store.knowledge import KnowledgeStore

    store = KnowledgeStore(connect(url))
    emb = BenchEmbedder()
    scenarios = [
        ("big", {}, "one ~100k-chunk namespace (HNSW, iterative scan)"),
        ("ns003", {}, "a ~1k-chunk namespace inside the table (exact scan)"),
        ("big", {"kind": "files"}, "~100k namespace with a metadata filter"),
    ]
    for ns, filters, label in scenarios:
        for q in QUESTIONS[:5]:
            retrieve(store, q, RetrievalSettings(namespace=ns, k=5, filters=filters), embedder=emb)
        times = []
        for i in range(n):
            q = QUESTIONS[i % len(QUESTIONS)]
            t0 = time.perf_counter()
            res = retrieve(store, q, RetrievalSettings(namespace=ns, k=5, filters=filters),
                           embedder=emb)
            times.append((time.perf_counter() - t0) * 1000)
            assert len(res.hits) == 5 and res.mode == "hybrid", q
        print(f"hybrid query, {label}: {n} queries, p50 {pct(times, 50):.1f} ms, "
              f"p95 {pct(times, 95):.1f} ms")
    store.conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    add_copies_option(parser)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="build the KB in this directory and keep "
                        "it; a later run with the same --keep only queries")
    args = parser.parse_args()
    require(RUST_BOOK, "the Rust book corpus")
    if args.keep:
        fresh = not (args.keep / "pg").exists()
        args.keep.mkdir(parents=True, exist_ok=True)
        args.keep.chmod(0o755)
        with embedded_server(args.keep) as url:
            if fresh:
                build(url, args.copies)
            run(url, args.queries)
        return
    with temp_dir() as d, embedded_server(d) as url:
        build(url, args.copies)
        run(url, args.queries)


if __name__ == "__main__":
    main()
