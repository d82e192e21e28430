"""`search_knowledge` round trip over MCP stdio on the Rust book, lexical mode.

1. Ingest the book into an embedded server in a temporary data dir (or use ``--db``).
2. Start ONE `kbctl serve mcp` process and drive it with the MCP SDK's stdio client:
   10 warm-up calls, then ``--calls`` (200) timed `tools/call search_knowledge` round trips
   cycling through the 60 questions of bench/suites/rust-book.yaml (top_k 5).
   Target: p50 <= 50 ms. Then the same calls with ``IN_FLIGHT`` (8) sent at once, as an
   assistant's parallel tool calls are: calls a second, against one at a time.
3. The same calls in process (``AgentTools.call``, no transport) for comparison.

Run: .venv/bin/python bench/bench_mcp.py [--calls 200] [--db URL]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    KBCTL,
    ROOT,
    RUST_BOOK,
    embedded_server,
    median,
    pct,
    require,
    run_timed,
    temp_dir,
)

from kbctl.agent.session import AgentTools  # noqa: E402
from kbctl.config import Settings  # noqa: E402
from kbctl.evals.suite import load_suite  # noqa: E402

NAMESPACE = "rust-book"
WARMUP = 10
IN_FLIGHT = 8
TARGET_MS = 50.0
QUESTIONS = ROOT / "bench" / "suites" / "rust-book.yaml"


def questions() -> list[str]:
    return [case.question for case in load_suite(QUESTIONS).cases]


async def over_stdio(db: str, cwd: Path, qs: list[str], calls: int
                     ) -> tuple[list[float], float, list[int], float]:
    """Round-trip times (ms) of ``calls`` searches, the server's start-up time (s), the
    size of each answer's text, and the wall time (s) of the same calls ``IN_FLIGHT`` at
    once."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from kbctl.cli import main; main()", "serve", "mcp", "--db", db,
              "-n", NAMESPACE], cwd=str(cwd))
    times: list[float] = []
    sizes: list[int] = []
    started = time.perf_counter()
    with open(cwd / "server.log", "w") as log:
        async with stdio_client(params, errlog=log) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            ready = time.perf_counter() - started
            for i in range(WARMUP):
                await session.call_tool("search_knowledge", {"query": qs[i % len(qs)]})
            for i in range(calls):
                t0 = time.perf_counter()
                result = await session.call_tool("search_knowledge",
                                                 {"query": qs[i % len(qs)], "top_k": 5})
                times.append((time.perf_counter() - t0) * 1000)
                if result.is_error:
                    raise SystemExit(f"tool error: {result.content[0].text}")
                sizes.append(len(result.content[0].text))
            limiter = anyio.CapacityLimiter(IN_FLIGHT)

            async def one(i: int) -> None:
                async with limiter:
                    result = await session.call_tool("search_knowledge",
                                                     {"query": qs[i % len(qs)], "top_k": 5})
                if result.is_error:
                    raise SystemExit(f"tool error: {result.content[0].text}")

            t0 = time.perf_counter()
            async with anyio.create_task_group() as tasks:
                for i in range(calls):
                    tasks.start_soon(one, i)
            burst = time.perf_counter() - t0
    return times, ready, sizes, burst


def in_process(db: str, qs: list[str], calls: int) -> list[float]:
    times = []
    with AgentTools(Settings(db_url=db, namespace=NAMESPACE)) as tools:
        for i in range(WARMUP):
            tools.call("search_knowledge", {"query": qs[i % len(qs)]})
        for i in range(calls):
            t0 = time.perf_counter()
            tools.call("search_knowledge", {"query": qs[i % len(qs)], "top_k": 5})
            times.append((time.perf_counter() - t0) * 1000)
    return times


def summary(label: str, times: list[float]) -> str:
    return (f"{label}: p50 {median(times):.1f} ms  p95 {pct(times, 95):.1f} ms  "
            f"min {min(times):.1f} ms  max {max(times):.1f} ms  ({len(times)} calls)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--db", help="use this server instead of a temporary embedded one")
    opts = parser.parse_args()
    require(RUST_BOOK, "the Rust book")
    qs = questions()
    with ExitStack() as stack:
        work = stack.enter_context(temp_dir())
        db = opts.db or stack.enter_context(embedded_server(work))
        wall, _, proc = run_timed([*KBCTL, "ingest", "files", str(RUST_BOOK), "--db", db,
                                   "-n", NAMESPACE, "--embedder", "none", "--json"], cwd=work)
        if proc.returncode != 0:
            raise SystemExit(f"ingest failed:\n{proc.stderr}")
        report = json.loads(proc.stdout)
        print(f"ingest: {report['added'] + report['updated'] + report['unchanged']} files, "
              f"{report['chunksWritten']} chunks written in {wall:.1f} s")
        times, ready, sizes, burst = anyio.run(over_stdio, db, work, qs, opts.calls)
        print(f"server start to initialized: {ready * 1000:.0f} ms")
        print(summary("search_knowledge over MCP stdio", times))
        print(f"  answer text: median {median(sizes):.0f} chars")
        print(f"  throughput: one at a time {opts.calls / (sum(times) / 1000):.0f} calls/s; "
              f"{IN_FLIGHT} in flight {opts.calls / burst:.0f} calls/s")
        print(summary("search_knowledge in process (AgentTools.call)",
                      in_process(db, qs, opts.calls)))
        verdict = "met" if median(times) <= TARGET_MS else "MISSED"
        print(f"  target p50 <= {TARGET_MS:.0f} ms over stdio: {verdict}")


if __name__ == "__main__":
    main()
