"""Benchmark: graph memory against vector memory, and their composite.

Part 1, quality. A question set written for memory (facts linked across files, facts that
change over time, private facts of two users, notes of a second agent) is written through
each backend's real write path, then asked: recall@5 (the share of the lines that answer a
question found among the top 5 entries' cited lines), "current fact first" (for a fact
that changed, the first entry citing either its old or its new line cites the new one),
and leaks (entries carrying another user's or agent's marker: must be 0, probed with
every question and with each foreign marker searched directly).

Part 2, cost. Append and search latency (p50/p95) of the graph backend on the embedded
engine (Kùzu) as it grows to each ``--sizes`` count of episodes, with ``--budget-s``
bounding the load.

The language model is the loopback stand-in of the tests (``tests/graph_model.py``),
which reads one fact per sentence; the embedder is the tests' hashing embedder. Vector
memory runs on its own embedded PostgreSQL.

    .venv/bin/python bench/bench_graph_memory.py [--sizes 1000,10000] [--budget-s 1800]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from _common import embedded_server, pct, temp_dir  # noqa: E402

from kbctl.memory.composite import CompositeMemoryBackend  # noqa: E402
from kbctl.memory.graph import open_graph  # noqa: E402
from kbctl.memory.llm import make_model  # noqa: E402
from kbctl.memory.model import SearchOptions  # noqa: E402
from kbctl.memory.paths import MemoryScope  # noqa: E402
from kbctl.memory.postgres import PostgresMemoryBackend  # noqa: E402
from kbctl.store.db import connect  # noqa: E402
from tests.embedders import HashingEmbedder  # noqa: E402
from tests.graph_model import stand_in_model  # noqa: E402

BOT, OTHER = "helpdesk", "salesbot"
ERIN, FRANK = MemoryScope(BOT, "erin"), MemoryScope(BOT, "frank")
AGENT = MemoryScope(BOT)
OTHER_AGENT = MemoryScope(OTHER)
_MARK = re.compile(r"\bzq[a-z]+\b")

# (scope, path, text): appended in this order, one append per line
NOTES: list[tuple[MemoryScope, str, str]] = [
    (AGENT, "memory/agent/teams.md", "Alice leads team Falcon."),
    (AGENT, "memory/agent/services.md", "Falcon owns the Billing service."),
    (AGENT, "memory/agent/teams.md", "Bruno leads team Heron."),
    (AGENT, "memory/agent/services.md", "Heron owns the Search service."),
    (AGENT, "memory/agent/oncall.md", "Carla runs the Pager rotation."),
    (AGENT, "memory/agent/services.md", "Billing deploys from the Atlas pipeline."),
    (AGENT, "memory/agent/people.md", "Dana works on team Osprey."),
    (AGENT, "memory/agent/people.md", "Gus works on team Falcon."),
    (AGENT, "memory/agent/oncall.md", "Pager escalates to Carla."),
    (AGENT, "memory/agent/people.md", "Dana works on team Kestrel."),
    (AGENT, "memory/agent/services.md", "Search deploys from the Comet pipeline."),
    (AGENT, "memory/agent/people.md", "Gus works on team Heron."),
    (AGENT, "memory/agent/services.md", "Billing deploys from the Nova pipeline."),
    (ERIN, "memory/user/prefs.md", "Erin prefers the Staging cluster zqerin."),
    (ERIN, "memory/user/prefs.md", "Erin locker code is 4411 zqerin."),
    (FRANK, "memory/user/prefs.md", "Frank prefers the Canary cluster zqfrank."),
    (FRANK, "memory/user/prefs.md", "Frank locker code is 9922 zqfrank."),
    (ERIN, "memory/user/prefs.md", "Erin prefers the Canary cluster zqerin."),
    (OTHER_AGENT, "memory/agent/teams.md", "Alice leads team Albatross zqsalesbot."),
]


@dataclass(frozen=True)
class Question:
    kind: str
    scope: MemoryScope
    text: str
    answers: tuple[tuple[str, int], ...]  # (path, line) that answer it
    stale: tuple[str, int] | None = None  # the line a change replaced


QUESTIONS = [
    Question("multi-file", ERIN, "Who leads the team that owns the Billing service?",
             (("memory/agent/services.md", 1), ("memory/agent/teams.md", 1))),
    Question("multi-file", FRANK, "Which team owns Search and who leads Heron?",
             (("memory/agent/services.md", 2), ("memory/agent/teams.md", 2))),
    Question("multi-file", ERIN, "Who runs the Pager rotation and where does Pager "
             "escalate?", (("memory/agent/oncall.md", 1), ("memory/agent/oncall.md", 2))),
    Question("multi-file", AGENT, "Which pipeline deploys Search, and which team owns it?",
             (("memory/agent/services.md", 4), ("memory/agent/services.md", 2))),
    Question("changed", ERIN, "Which team does Dana work on?",
             (("memory/agent/people.md", 3),), ("memory/agent/people.md", 1)),
    Question("changed", FRANK, "Which team does Gus work on?",
             (("memory/agent/people.md", 4),), ("memory/agent/people.md", 2)),
    Question("changed", AGENT, "Which pipeline does Billing deploy from?",
             (("memory/agent/services.md", 5),), ("memory/agent/services.md", 3)),
    Question("changed", ERIN, "Which cluster does Erin prefer?",
             (("memory/user/prefs.md", 3),), ("memory/user/prefs.md", 1)),
    Question("private", ERIN, "What is my locker code?", (("memory/user/prefs.md", 2),)),
    Question("private", FRANK, "What is my locker code?", (("memory/user/prefs.md", 2),)),
    Question("private", FRANK, "Which cluster does Frank prefer?",
             (("memory/user/prefs.md", 1),)),
]


def visible(scope: MemoryScope) -> set[str]:
    return {f"zq{scope.user_id}"} if scope.user_id else set()


def covers(hit: Any, where: tuple[str, int]) -> bool:
    return hit.path == where[0] and hit.start_line <= where[1] <= hit.end_line


def quality(backend: Any) -> dict[str, Any]:
    """Write the notes, ask the questions; recall@5, current-first and leaks."""
    for scope, path, text in NOTES:
        backend.append(scope, path, text)
    recall: dict[str, list[float]] = {}
    current, leaks = [], 0
    for q in QUESTIONS:
        hits = backend.search(q.scope, q.text, SearchOptions(max_results=5)).hits
        found = sum(1 for a in q.answers if any(covers(h, a) for h in hits))
        recall.setdefault(q.kind, []).append(found / len(q.answers))
        if q.stale is not None:
            first = next((h for h in hits if covers(h, q.answers[0]) or covers(h, q.stale)),
                         None)
            current.append(first is not None and covers(first, q.answers[0])
                           and not covers(first, q.stale))
        leaks += sum(1 for h in hits if set(_MARK.findall(h.content)) - visible(q.scope))
    for scope in (ERIN, FRANK, AGENT, MemoryScope(OTHER, "erin")):
        for probe in ("zqerin", "zqfrank", "zqsalesbot", "locker code", "Alice leads team"):
            for h in backend.search(scope, probe, SearchOptions(max_results=20)).hits:
                mine = visible(scope) | ({"zqsalesbot"} if scope.agent_id == OTHER else set())
                leaks += bool(set(_MARK.findall(h.content)) - mine)
    every = [v for vs in recall.values() for v in vs]
    return {"recall@5": round(sum(every) / len(every), 3),
            **{f"recall@5 {k}": round(sum(v) / len(v), 3) for k, v in recall.items()},
            "current first": f"{sum(current)}/{len(current)}", "leaks": leaks}


def cost(make_graph: Any, sizes: list[int], budget_s: float, searches: int) -> list[dict]:
    """Grow one graph to each size; time appends on the way and searches at each size."""
    graph = make_graph("cost")
    users = [MemoryScope(BOT, f"u{i}") for i in range(10)]
    out, appends, n, started = [], [], 0, time.monotonic()
    try:
        for size in sizes:
            while n < size and time.monotonic() - started < budget_s:
                scope = users[n % len(users)]
                t = time.perf_counter()
                graph.append(scope, f"memory/user/log-{n % 20}.md",
                             f"Person{n} works on team Team{n % 97}. "
                             f"Team{n % 97} owns the Service{n % 53} service.")
                appends.append((time.perf_counter() - t) * 1000)
                n += 1
            times = []
            for i in range(searches):
                t = time.perf_counter()
                graph.search(users[i % len(users)], f"Which team does Person{(i * 37) % n} "
                             "work on?", SearchOptions(max_results=5))
                times.append((time.perf_counter() - t) * 1000)
            window = appends[-min(len(appends), 200):]
            out.append({"episodes": n, "target": size,
                        "append p50 ms": round(pct(window, 50), 1),
                        "append p95 ms": round(pct(window, 95), 1),
                        "search p50 ms": round(pct(times, 50), 1),
                        "search p95 ms": round(pct(times, 95), 1),
                        "load s": round(time.monotonic() - started, 1)})
            print(out[-1], flush=True)
            if n < size:
                break  # the budget ran out: the larger sizes were not reached
    finally:
        graph.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--budget-s", type=float, default=1800.0)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--skip-cost", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with temp_dir("kbctl-bench-graph-") as data, embedded_server(data) as admin_url, \
            stand_in_model() as model:
        def make_graph(name: str) -> Any:
            chat = make_model("openai:stand-in", model.url, allow_private_network=True,
                              timeout_s=120)
            return open_graph(str(data / f"graph-{name}"), url=False, model=chat,
                              embedder=HashingEmbedder(), timeout_s=300, writing=True)

        def make_vectors(name: str) -> PostgresMemoryBackend:
            import psycopg
            from psycopg import sql
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            conn = connect(psycopg.conninfo.make_conninfo(admin_url, dbname=name))
            return PostgresMemoryBackend(conn, HashingEmbedder())

        rows = {}
        rows["vector"] = quality(make_vectors("q_vector"))
        graph = make_graph("q_graph")
        rows["graph"] = quality(graph)
        graph.close()
        graph = make_graph("q_composite")
        rows["composite"] = quality(CompositeMemoryBackend(
            [make_vectors("q_composite"), graph], names=["postgres", "graph"],
            mirror_writes=True))
        graph.close()
        keys = list(rows["vector"])
        print(f"{'':10}" + "".join(f"{k:>22}" for k in keys))
        for name, row in rows.items():
            print(f"{name:10}" + "".join(f"{row[k]!s:>22}" for k in keys))
        if not args.skip_cost:
            cost(make_graph, sizes, args.budget_s, args.searches)


if __name__ == "__main__":
    main()
