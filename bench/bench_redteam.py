"""Red-team benchmark: every attack in ``bench/redteam/``, run against real kbctl processes.

Each module there exposing ``ATTACKS`` (a list of ``(class_name, attack_name, run)``, where
``run(workdir) -> (held, detail)``) is imported; every attack runs in a fresh temporary
directory and is timed. An exception, a traceback in its detail, or a run over
``MAX_SECONDS`` counts as not held. Printed per class: attacks tried, held, and the median
and maximum time to the refusal; then the totals and every attack that did not hold.
Exit 1 when any did not hold.

    python bench/bench_redteam.py [--only CLASS[,CLASS]]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _common import temp_dir  # noqa: E402

MAX_SECONDS = 30.0
Attack = tuple[str, str, Callable[[Path], tuple[bool, str]]]


@dataclass(frozen=True)
class Outcome:
    cls: str
    name: str
    held: bool
    seconds: float
    detail: str


def attacks() -> list[Attack]:
    """Every module's ``ATTACKS``, modules in name order (``bench/redteam`` is a namespace
    package: each engineer's module is one file)."""
    found: list[Attack] = []
    for path in sorted((BENCH / "redteam").glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = importlib.import_module(f"redteam.{path.stem}")
        found.extend(getattr(module, "ATTACKS", []))
    return found


def run_one(cls: str, name: str, run: Callable[[Path], tuple[bool, str]]) -> Outcome:
    with temp_dir("kbctl-redteam-") as workdir:
        started = time.perf_counter()
        try:
            held, detail = run(workdir)
        except Exception:  # an attack that crashes did not show the refusal
            held, detail = False, traceback.format_exc()
        seconds = time.perf_counter() - started
    if "Traceback" in detail:
        held = False
    if seconds > MAX_SECONDS:
        held, detail = False, f"took {seconds:.1f} s (over {MAX_SECONDS:g} s); {detail}"
    return Outcome(cls, name, held, seconds, detail)


def report(outcomes: list[Outcome]) -> int:
    classes: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        classes.setdefault(outcome.cls, []).append(outcome)
    print(f"\n{'class':<28} {'tried':>5} {'held':>5} {'median s':>9} {'max s':>7}")
    for cls, group in classes.items():
        times = [o.seconds for o in group]
        print(f"{cls:<28} {len(group):>5} {sum(o.held for o in group):>5} "
              f"{statistics.median(times):>9.2f} {max(times):>7.2f}")
    failed = [o for o in outcomes if not o.held]
    all_times = [o.seconds for o in outcomes]
    print(f"{'total':<28} {len(outcomes):>5} {len(outcomes) - len(failed):>5} "
          f"{statistics.median(all_times):>9.2f} {max(all_times):>7.2f}")
    held_classes = sum(all(o.held for o in group) for group in classes.values())
    print(f"classes held: {held_classes} of {len(classes)}")
    if failed:
        print("\ndid not hold:")
        for o in failed:
            print(f"- {o.cls} / {o.name} ({o.seconds:.2f} s): {o.detail[:400]}")
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated class names to run")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else None
    outcomes = []
    for cls, name, run in attacks():
        if wanted and cls not in wanted:
            continue
        outcome = run_one(cls, name, run)
        print(f"{'held' if outcome.held else 'FAILED':6} {outcome.seconds:6.2f} s  "
              f"{cls} / {name}: {outcome.detail[:160]}", flush=True)
        outcomes.append(outcome)
    if not outcomes:
        raise SystemExit("no attacks found")
    sys.exit(report(outcomes))


if __name__ == "__main__":
    main()
