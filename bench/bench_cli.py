"""How long a person waits for kbctl: whole-process wall times of the commands typed most.

Builds a lexical knowledge base of the Rust book (``kbctl ingest files``) with each tree's
code, then runs, round after round, ``python -c pass`` (the interpreter's own start, the floor),
``kbctl --version``, ``kbctl --help``, ``kbctl query`` warm (the server lingering from the
run before) and cold (no server running yet), and ``kbctl eval`` of a suite of the first 53
cases of ``bench/suites/rust-book.yaml``. Each command runs under every code tree given
(``--tree NAME=PATH`` puts PATH first on PYTHONPATH; the default compares the main checkout
with this one) in the same round, so a machine that gets busier mid-run weighs on both
alike. Prints medians of the rounds, with the CPU seconds of the same runs.

    python bench/bench_cli.py --runs 10
    python bench/bench_cli.py --tree before=../other-checkout --tree after=.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import KBCTL, ROOT, RUST_BOOK, SHARED, compiled, require, temp_dir  # noqa: E402

SUITE = ROOT / "bench" / "suites" / "rust-book.yaml"
EVAL_CASES = 53
QUESTION = "how do I borrow a value without taking ownership"
WARM_LINGER = "600"  # seconds a server waits for the next warm run
STOP_WAIT_S = 60.0


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """Run ``argv``; its wall seconds, CPU seconds (user + system), and exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv[1:])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu, done.returncode


def server_running(data: Path) -> bool:
    return any(data.rglob("postmaster.pid"))


def wait_stopped(data: Path) -> None:
    """Wait until the embedded server of ``data`` has stopped (its watchdog stops it once
    the linger is over)."""
    deadline = time.monotonic() + STOP_WAIT_S
    while server_running(data):
        if time.monotonic() > deadline:
            doctor = subprocess.run([*KBCTL, "doctor", "--check", "--data-dir", str(data)],
                                    capture_output=True, text=True)
            sys.exit(f"the server of {data} did not stop within {STOP_WAIT_S:.0f} s: "
                     f"{doctor.stdout}{doctor.stderr}")
        time.sleep(0.2)


def write_suite(path: Path) -> int:
    """The first ``EVAL_CASES`` cases of the Rust book suite (one case a line), as a suite
    of their own; how many cases the whole suite has."""
    lines = SUITE.read_text(encoding="utf-8").splitlines()
    cases = [i for i, line in enumerate(lines) if line.startswith("  - {id:")]
    kept = lines[:cases[0]] + [lines[i] for i in cases[:EVAL_CASES]]
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME=PATH: a checkout whose kbctl to run (repeatable) "
                             "[default: before=the main checkout beside ../shared, "
                             "after=this checkout]")
    args = parser.parse_args()
    require(RUST_BOOK, "the Rust book corpus")
    trees = dict(t.split("=", 1) for t in args.tree) or {
        "before": str(SHARED.parent / "main"), "after": str(ROOT)}
    trees = {name: str(Path(path).resolve()) for name, path in trees.items()}
    for tree in trees.values():
        compiled(tree)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("KBCTL_") and k != "PYTHONPATH"}
    base["COLUMNS"] = "120"

    with temp_dir() as work:
        suite = work / "rust-53.yaml"
        total = write_suite(suite)
        # a knowledge base per tree, built by its own code: trees a migration apart cannot
        # share one (an older kbctl refuses a newer schema)
        data = {name: work / f"kb-{name}" for name in trees}
        for name, tree in trees.items():
            build = {**base, "PYTHONPATH": tree, "KBCTL_SERVER_LINGER": "0"}
            started = time.perf_counter()
            run([*KBCTL, "ingest", "files", str(RUST_BOOK), "--data-dir", str(data[name])],
                build, work)
            print(f"Rust book KB built in {time.perf_counter() - started:.1f} s ({name}'s "
                  "code, lexical)")
            wait_stopped(data[name])
        print(f"eval suite: {EVAL_CASES} of the {total} cases of {SUITE.relative_to(ROOT)}")

        def commands(name: str) -> dict[str, list[str]]:
            where = ["--data-dir", str(data[name])]
            return {
                "python -c pass": [sys.executable, "-c", "pass"],
                "kbctl --version": [*KBCTL, "--version"],
                "kbctl --help": [*KBCTL, "--help"],
                "kbctl query (cold)": [*KBCTL, "query", QUESTION, *where],
                "kbctl query (warm)": [*KBCTL, "query", QUESTION, *where],
                f"kbctl eval ({EVAL_CASES} cases)": [*KBCTL, "eval", str(suite), *where],
            }

        labels = list(commands(next(iter(trees))))
        walls: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}

        def timed(name: str, label: str, env: dict[str, str]) -> None:
            wall, cpu, _code = run(commands(name)[label], env, work)
            walls.setdefault((name, label), []).append(wall)
            cpus.setdefault((name, label), []).append(cpu)

        # cold: each run starts the server and, lingering 0 s, leaves none behind
        for _ in range(args.runs):
            for name, tree in trees.items():
                wait_stopped(data[name])
                timed(name, "kbctl query (cold)",
                      {**base, "PYTHONPATH": tree, "KBCTL_SERVER_LINGER": "0"})
        # warm: the server a first run (not timed) starts lingers between runs
        for name, tree in trees.items():
            run(commands(name)["kbctl query (warm)"],
                {**base, "PYTHONPATH": tree, "KBCTL_SERVER_LINGER": WARM_LINGER}, work)
        for _ in range(args.runs):
            for name, tree in trees.items():
                env = {**base, "PYTHONPATH": tree, "KBCTL_SERVER_LINGER": WARM_LINGER}
                for label in labels:
                    if not label.endswith("(cold)"):
                        timed(name, label, env)
        # the lingering servers stop as their directories are removed

    names = list(trees)
    print(f"\nmedians of {args.runs} runs, wall seconds (CPU seconds); "
          f"load average now {os.getloadavg()[0]:.1f}")
    head = f"{'':28}" + "".join(f"{n:>20}" for n in names)
    if len(names) == 2:
        head += f"{names[1] + '/' + names[0]:>14}"
    print(head)
    for label in labels:
        row = f"{label:28}"
        medians = []
        for n in names:
            w = statistics.median(walls[(n, label)])
            c = statistics.median(cpus[(n, label)])
            medians.append(w)
            row += f"{f'{w:.3f} ({c:.3f})':>20}"
        if len(names) == 2 and medians[0]:
            row += f"{medians[1] / medians[0]:>14.2f}"
        print(row)
    for n, tree in trees.items():
        print(f"{n}: PYTHONPATH={tree}")


if __name__ == "__main__":
    main()
