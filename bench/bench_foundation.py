"""Foundation benchmarks: ingest the Rust book, query latency on a ≥100k-chunk KB, and a
whole `kbctl query` process against a cold embedded server.

    python bench/bench_foundation.py [--copies N] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    KBCTL,
    RUST_BOOK,
    embedded_server,
    median,
    pct,
    require,
    run_timed,
    temp_dir,
)

SMALL_NAMESPACES = 5
# The big namespace's size: the book is copied as often as it takes to reach it (the book's
# chunk count moves with the chunker), unless --copies says how often.
BIG_CHUNKS = 100_000
NS_SMALL = "ns003"
QUESTIONS = [
    "How do I install Rust", "what is shadowing", "ownership rules", "mutable references",
    "string slices", "derive Debug for a struct", "Option instead of null",
    "match must be exhaustive", "package versus crate", "use keyword rename with as",
    "iterate over a vector", "hash map entry or_insert", "question mark operator errors",
    "trait bounds where clause", "lifetime elision", "should_panic test",
    "integration tests directory", "closures capture environment", "cargo workspace",
    "Box recursive type", "Rc reference counting", "RefCell interior mutability",
    "spawn threads join", "channels message passing", "Mutex Arc shared state",
    "async await futures", "trait objects dyn", "unsafe raw pointer", "macro_rules",
    "thread pool web server graceful shutdown",
]


def bench_ingest(runs: int) -> None:
    walls, internal, rss, chunks = [], [], [], 0
    for _ in range(runs):
        with temp_dir() as d:
            wall, peak, proc = run_timed([*KBCTL, "ingest", "files", str(RUST_BOOK), "--json"],
                                         cwd=d)
            assert proc.returncode == 0, proc.stderr
            report = json.loads(proc.stdout)
            walls.append(wall)
            internal.append(report["timings"]["total"])
            rss.append(peak)
            chunks = report["chunksWritten"]
    print(f"ingest files rust-book: {chunks} chunks from 112 files, {runs} runs")
    print(f"  ingest itself (pipeline): median {median(internal):.2f}s "
          f"({chunks / median(internal):.0f} chunks/s)")
    print(f"  whole process incl. embedded server init: median {median(walls):.2f}s")
    print(f"  peak RSS (child, upper bound): {max(rss)} MB")


def build_large_kb(url: str, copies: int | None) -> None:
    """Ingest the book once, then copy its rows with SQL into many namespaces and into one
    big namespace, so a ≥100k-chunk table exists without re-chunking the same text."""
    from kbctl.config import Settings
    from kbctl.pipeline.api import ingest_sources
    from kbctl.sources.registry import source_spec
    from kbctl.store.db import connect

    settings = Settings(db_url=url, namespace="seed")
    ingest_sources(settings, [source_spec("files", str(RUST_BOOK))])
    conn = connect(url)
    t0 = time.perf_counter()
    with conn.transaction():
        for i in range(SMALL_NAMESPACES):
            _copy_namespace(conn, "seed", f"ns{i:03d}", ref_suffix="")
    # one namespace holding ~100k chunks: the same book under many refs
    copies = copies_for(conn, "seed") if copies is None else copies
    with conn.transaction():
        for i in range(copies):
            _copy_namespace(conn, "seed", "big", ref_suffix=f"?copy={i}")
    conn.execute("VACUUM ANALYZE")
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    big = conn.execute("SELECT count(*) FROM chunks WHERE namespace = 'big'").fetchone()[0]
    print(f"built KB: {total} chunks in {SMALL_NAMESPACES + 2} namespaces "
          f"(namespace 'big' alone: {big}) in {time.perf_counter() - t0:.1f}s")
    conn.close()


def add_copies_option(parser: argparse.ArgumentParser) -> None:
    """``--copies``: how often the big namespace holds the book (default: ``copies_for``)."""
    def positive(text: str) -> int:
        if not text.isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"must be a whole number of at least 1: {text!r}")
        return int(text)

    parser.add_argument("--copies", type=positive, metavar="N",
                        help="copies of the book in the big namespace (default: enough "
                        f"for {BIG_CHUNKS:,} chunks)")


def copies_for(conn: Any, seed: str) -> int:
    """How many copies of the namespace ``seed`` make at least ``BIG_CHUNKS`` chunks."""
    n = conn.execute("SELECT count(*) FROM chunks WHERE namespace = %s", (seed,)).fetchone()[0]
    return -(-BIG_CHUNKS // max(n, 1))


def _copy_namespace(conn, src: str, dst: str, ref_suffix: str) -> None:
    conn.execute(
        """INSERT INTO sources (namespace, ref, def_id, kind, url, title, content_hash,
                                fetched_at, chunk_count, meta, lexeme_count, embedding)
           SELECT %(dst)s, ref || %(sfx)s, def_id, kind, url || %(sfx)s, title, content_hash,
                  fetched_at, chunk_count, meta, lexeme_count, embedding
           FROM sources WHERE namespace = %(src)s""", {"src": src, "dst": dst, "sfx": ref_suffix})
    conn.execute(
        """INSERT INTO page_postings (namespace, source_ref, lexeme, tf)
           SELECT %(dst)s, source_ref || %(sfx)s, lexeme, tf
           FROM page_postings WHERE namespace = %(src)s""",
        {"src": src, "dst": dst, "sfx": ref_suffix})
    conn.execute(
        """CREATE TEMP TABLE IF NOT EXISTS idmap (old bigint, new bigint);
           TRUNCATE idmap""")
    conn.execute(
        """WITH src AS (SELECT id, source_ref, ordinal, text, meta, lexeme_count, embedding,
                               nextval('chunks_id_seq') AS new_id
                        FROM chunks WHERE namespace = %(src)s),
                ins AS (INSERT INTO chunks (id, namespace, source_ref, ordinal, text, meta,
                                            lexeme_count, embedding)
                        SELECT new_id, %(dst)s, source_ref || %(sfx)s, ordinal,
                               text || %(mark)s,
                               CASE WHEN meta ? 'url' AND %(sfx)s <> ''
                                    THEN meta || jsonb_build_object('url',
                                                                    (meta->>'url') || %(sfx)s)
                                    ELSE meta END,
                               lexeme_count, embedding FROM src)
           INSERT INTO idmap SELECT id, new_id FROM src""",
        # each copy is a page of its own, as a real site's pages are: a passage all copies
        # shared would be shown once (query's distinct sections) and leave answers short
        {"src": src, "dst": dst, "sfx": ref_suffix,
         "mark": f"\n\n{ref_suffix}" if ref_suffix else ""})
    conn.execute(
        """INSERT INTO postings (namespace, lexeme, chunk_id, tf, dl, impact)
           SELECT %(dst)s, p.lexeme, m.new, p.tf, p.dl, p.impact
           FROM postings p JOIN idmap m ON m.old = p.chunk_id
           WHERE p.namespace = %(src)s""", {"src": src, "dst": dst})
    conn.execute(
        """INSERT INTO lexeme_stats AS s (namespace, lexeme, df)
           SELECT %(dst)s, lexeme, df FROM lexeme_stats WHERE namespace = %(src)s
           ON CONFLICT (namespace, lexeme) DO UPDATE SET df = s.df + excluded.df""",
        {"src": src, "dst": dst})
    conn.execute(
        """INSERT INTO namespace_stats (namespace, chunk_count, total_len, page_count)
           SELECT %(dst)s, chunk_count, total_len, page_count FROM namespace_stats
           WHERE namespace = %(src)s
           ON CONFLICT (namespace) DO UPDATE
             SET chunk_count = namespace_stats.chunk_count + excluded.chunk_count,
                 total_len = namespace_stats.total_len + excluded.total_len,
                 page_count = namespace_stats.page_count + excluded.page_count""",
        {"src": src, "dst": dst})


def bench_queries(url: str, n: int) -> None:
    """Lexical query latency, with kbctl's synonyms and without them (interleaved, so the
    machine's noise falls on both alike)."""
    from kbctl.config import RetrievalSettings
    from kbctl.pipeline.query import retrieve
    from kbctl.store.db import connect
    from kbctl.store.knowledge import KnowledgeStore
    from kbctl.store.thesaurus import BUILT_IN, NONE

    store = KnowledgeStore(connect(url))
    for ns, label in ((NS_SMALL, "a ~1k-chunk namespace inside the large table"),
                      ("big", "one namespace holding ~100k chunks")):
        for q in QUESTIONS[:5]:  # warm caches
            retrieve(store, q, RetrievalSettings(namespace=ns, k=5))
        times: dict[str, list[float]] = {"": [], " (no synonyms)": []}
        for i in range(n):
            question = QUESTIONS[i % len(QUESTIONS)]
            for variant, thesaurus in zip(times, (BUILT_IN, NONE), strict=True):
                t0 = time.perf_counter()
                result = retrieve(store, question,
                                  RetrievalSettings(namespace=ns, k=5, thesaurus=thesaurus))
                times[variant].append((time.perf_counter() - t0) * 1000)
                assert result.hits, question
        for variant, ms in times.items():
            print(f"query latency, {label}{variant}: {n} queries, p50 {pct(ms, 50):.1f} ms, "
                  f"p95 {pct(ms, 95):.1f} ms")
    store.conn.close()


def bench_cold_process(runs: int) -> None:
    with temp_dir() as d:
        proc = run_timed([*KBCTL, "ingest", "files", str(RUST_BOOK), "--json"], cwd=d)[2]
        assert proc.returncode == 0, proc.stderr
        walls = []
        for _ in range(runs):
            wall, _, proc = run_timed([*KBCTL, "query", "how do closures capture values",
                                       "--json"], cwd=d)
            assert proc.returncode == 0, proc.stderr
            walls.append(wall)
        print(f"`kbctl query` whole process, embedded server cold (started and stopped by "
              f"the process): median {median(walls):.2f}s over {runs} runs "
              f"(min {min(walls):.2f}s, max {max(walls):.2f}s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    add_copies_option(parser)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    require(RUST_BOOK, "the Rust book corpus")
    bench_ingest(args.runs)
    bench_cold_process(5)
    with temp_dir() as d, embedded_server(d) as url:
        build_large_kb(url, args.copies)
        bench_queries(url, args.queries)


if __name__ == "__main__":
    main()
