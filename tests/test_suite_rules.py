"""The suite's own rule: no test asserts on the clock. A budget is counted in work (calls,
bytes, lines), and a hang is ended by pytest-timeout at a generous limit, so the suite
passes on a busy machine as on a quiet one."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"time", "monotonic", "perf_counter", "process_time", "thread_time",
          "monotonic_ns", "perf_counter_ns", "time_ns"}


def _reads_clock(node: ast.AST, timed: set[str]) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and (
                inner.func.attr in CLOCKS and isinstance(inner.func.value, ast.Name)
                and inner.func.value.id == "time"):
            return True
        if isinstance(inner, ast.Name) and inner.id in timed:
            return True
    return False


def clock_assertions(source: str) -> list[int]:
    """The lines of the assertions that read the clock, directly or through a name that
    holds a reading (``started = time.monotonic()`` ... ``assert waited < 5``)."""
    tree = ast.parse(source)
    found: list[int] = []
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        timed: set[str] = set()
        for _ in range(3):  # names from names from a reading
            for node in ast.walk(scope):
                if isinstance(node, ast.Assign) and _reads_clock(node.value, timed):
                    timed |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        found += [node.lineno for node in ast.walk(scope)
                  if isinstance(node, ast.Assert) and _reads_clock(node.test, timed)]
    return sorted(set(found))


def test_the_check_sees_a_budget_however_it_is_written() -> None:
    assert clock_assertions(
        "import time\n"
        "def test_a():\n"
        "    started = time.perf_counter()\n"
        "    work()\n"
        "    waited = time.perf_counter() - started\n"
        "    assert waited < 5\n"
        "def test_b():\n"
        "    assert time.monotonic() > 0\n"
        "def test_c():\n"
        "    deadline = time.monotonic() + 10\n"
        "    while time.monotonic() < deadline:\n"
        "        pass\n"
        "    assert done()\n") == [6, 8]


def test_no_test_asserts_on_the_clock() -> None:
    offending = {path.name: lines for path in sorted(TESTS.glob("*.py"))
                 if (lines := clock_assertions(path.read_text(encoding="utf-8")))}
    assert not offending, offending
