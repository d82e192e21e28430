"""`kbctl eval` wall time and retrieval quality on the Rust book, lexical mode.

1. Ingest the book into an embedded server in a temporary data dir.
2. A 200-case suite generated from the book's headings (question = heading text,
   sourceIncludes = its file): time `kbctl eval SUITE --json` as a whole process, embedded
   database start included (3 runs, median; target <= 5 s), and report hit@5 and MRR.
3. The 60 hand-written questions of bench/suites/rust-book.yaml: hit@5, MRR and wall time.

Run: .venv/bin/python bench/bench_eval.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import KBCTL, ROOT, RUST_BOOK, median, require, run_timed, temp_dir  # noqa: E402

CASES = 200
RUNS = 3
TARGET_S = 5.0
HAND_WRITTEN = ROOT / "bench" / "suites" / "rust-book.yaml"
_HEADING = re.compile(r"^(#{2,4})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def headings(path: Path) -> list[str]:
    """Section headings (levels 2-4) outside code fences, markdown markup stripped."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2))
            text = " ".join(text.replace("`", "").replace("*", "").split())
            if len(text.split()) >= 2:
                out.append(text)
    return out


def heading_suite(book: Path, count: int) -> dict[str, Any]:
    """``count`` cases spread evenly over the book; headings used in two files are left out
    (they name no single page)."""
    pairs = [(f.name, h) for f in sorted(book.glob("*.md")) if f.name != "SUMMARY.md"
             for h in headings(f)]
    files_of: dict[str, set[str]] = {}
    for name, heading in pairs:
        files_of.setdefault(heading.lower(), set()).add(name)
    unique = [(n, h) for n, h in pairs if len(files_of[h.lower()]) == 1]
    if len(unique) < count:
        raise SystemExit(f"only {len(unique)} usable headings, need {count}")
    picked = [unique[i * len(unique) // count] for i in range(count)]
    cases = [{"id": f"h{i:03d}", "question": heading, "expect": {"sourceIncludes": name}}
             for i, (name, heading) in enumerate(picked)]
    return {"version": 1, "defaults": {"topK": 5}, "cases": cases}


def timed_eval(suite: Path, data: Path, cwd: Path) -> tuple[list[float], dict[str, Any]]:
    walls, report = [], {}
    for _ in range(RUNS):
        wall, _rss, proc = run_timed([*KBCTL, "eval", str(suite), "--json",
                                      "--data-dir", str(data)], cwd)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"kbctl eval exited {proc.returncode}: {proc.stderr}")
        walls.append(wall)
        report = json.loads(proc.stdout)
    return walls, report


def describe(label: str, walls: list[float], report: dict[str, Any]) -> None:
    metrics, totals = report["metrics"], report["totals"]
    runs = ", ".join(f"{w:.2f}" for w in walls)
    print(f"{label}: {totals['total']} cases, {totals['passed']} passed")
    print(f"  wall (whole process, embedded db start included): median {median(walls):.2f} s "
          f"[{runs}]")
    print(f"  in-process run time (last run): {report['durationMs'] / 1000:.2f} s")
    print(f"  hit@5 {metrics['hitRate']:.3f}  MRR {metrics['mrr']:.3f}")


def main() -> None:
    require(RUST_BOOK, "the Rust book corpus")
    with temp_dir() as tmp:
        data = tmp / "kb"
        wall, _rss, proc = run_timed([*KBCTL, "ingest", "files", str(RUST_BOOK), "--json",
                                      "--data-dir", str(data)], tmp)
        if proc.returncode != 0:
            raise SystemExit(f"ingest failed ({proc.returncode}): {proc.stderr}")
        ingested = json.loads(proc.stdout)
        print(f"ingest: {ingested['added']} files, {ingested['chunksWritten']} chunks "
              f"in {wall:.1f} s (first start of the embedded server included)")

        suite = tmp / "rust-book-headings.yaml"
        suite.write_text(yaml.safe_dump(heading_suite(RUST_BOOK, CASES), sort_keys=False),
                         encoding="utf-8")
        walls, report = timed_eval(suite, data, tmp)
        describe(f"generated heading suite ({CASES} cases)", walls, report)
        verdict = "within" if median(walls) <= TARGET_S else "OVER"
        print(f"  target <= {TARGET_S:.0f} s: {verdict}")

        walls, report = timed_eval(HAND_WRITTEN, data, tmp)
        describe("bench/suites/rust-book.yaml (hand-written)", walls, report)


if __name__ == "__main__":
    main()
