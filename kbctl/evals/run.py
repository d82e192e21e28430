"""Run eval cases against a retriever and judge them: pure apart from the retriever call.

The retriever is injected, so the rules (what passes, what a failure says, the metrics)
are tested without a database and the same code gates CI against any store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from kbctl import __version__
from kbctl.errors import KbctlError
from kbctl.evals.model import Case, Suite
from kbctl.pipeline.results import Hit

Retriever = Callable[[str, int, float | None, dict[str, str]], list[Hit]]
"""(question, top_k, min_score, filter) -> hits, best first. May raise anything."""

RETRIEVAL_CHECK = "retrieval"
_SHOWN = 5


@dataclass(frozen=True)
class CheckResult:
    """One declared check (or the synthetic ``retrieval`` check) and why it went that way."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Retrieved:
    """What the report keeps of a retrieved chunk; ``rank`` is its 1-based position."""

    rank: int
    score: float
    citation: str
    url: str
    anchor: str | None
    source_ref: str
    title: str


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one case.

    ``first_match_rank`` is the position of the first chunk matching ``sourceIncludes``
    (``None`` when the case declares none or nothing matched); ``top_score`` is the best
    retrieved score (``None`` when nothing was retrieved).
    """

    case: Case
    passed: bool
    checks: tuple[CheckResult, ...]
    retrieved: tuple[Retrieved, ...]
    first_match_rank: int | None
    top_score: float | None
    duration_ms: float
    error: str | None = None

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(check for check in self.checks if not check.passed)


@dataclass(frozen=True)
class Metrics:
    """Retrieval quality over the cases that declare ``sourceIncludes`` (``scored``).

    ``hit_rate`` = hits / scored; ``mrr`` = mean of 1/first-match-rank (0 for a miss).
    Both are ``None`` when no case declares ``sourceIncludes``.
    """

    scored: int
    hits: int
    hit_rate: float | None
    mrr: float | None


@dataclass(frozen=True)
class EvalReport:
    """Everything one ``kbctl eval`` run produced, in input order."""

    suites: tuple[str, ...]
    namespace: str
    embedder: str
    kbctl_version: str
    started_at: str
    duration_ms: float
    results: tuple[CaseResult, ...]
    metrics: Metrics

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def passed(self) -> int:
        return sum(1 for result in self.results if result.passed)

    @property
    def failed(self) -> int:
        return self.total - self.passed

    @property
    def multi_suite(self) -> bool:
        return len(self.suites) > 1


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def run_suites(
    suites: Sequence[Suite],
    retriever: Retriever,
    *,
    namespace: str,
    embedder: object,
    clock: Callable[[], float] = time.perf_counter,
    now: Callable[[], datetime] = _utcnow,
    on_result: Callable[[CaseResult], None] | None = None,
) -> EvalReport:
    """Run every case of every suite, one after another, in input order.

    ``embedder`` is recorded by its ``str()`` (an identity string or object); ``on_result``
    is called after each case (progress display).
    """
    started_at = now().isoformat(timespec="seconds")
    run_start = clock()
    results: list[CaseResult] = []
    for suite in suites:
        for case in suite.cases:
            result = run_case(case, retriever, clock=clock)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return EvalReport(
        suites=tuple(suite.path for suite in suites),
        namespace=namespace,
        embedder=str(embedder),
        kbctl_version=__version__,
        started_at=started_at,
        duration_ms=(clock() - run_start) * 1000.0,
        results=tuple(results),
        metrics=compute_metrics(results),
    )


def run_case(case: Case, retriever: Retriever,
             *, clock: Callable[[], float] = time.perf_counter) -> CaseResult:
    """Retrieve for one case and judge it; a retriever failure fails this case only."""
    start = clock()
    try:
        hits = list(retriever(case.question, case.top_k, case.min_score, dict(case.filter)))
        retrieved = tuple(_keep(position, hit)
                          for position, hit in enumerate(hits[: case.top_k], start=1))
    except Exception as exc:  # any retriever failure fails this case only
        message = exc.message if isinstance(exc, KbctlError) else str(exc)
        error = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        check = CheckResult(RETRIEVAL_CHECK, False, f"retriever failed: {error}")
        return CaseResult(case=case, passed=False, checks=(check,), retrieved=(),
                          first_match_rank=None, top_score=None,
                          duration_ms=(clock() - start) * 1000.0, error=error)
    checks, first_rank = evaluate_checks(case, retrieved)
    return CaseResult(
        case=case,
        passed=all(check.passed for check in checks),
        checks=checks,
        retrieved=retrieved,
        first_match_rank=first_rank,
        top_score=max((chunk.score for chunk in retrieved), default=None),
        duration_ms=(clock() - start) * 1000.0,
    )


def _keep(position: int, hit: Hit) -> Retrieved:
    return Retrieved(rank=position, score=float(hit.score), citation=hit.citation, url=hit.url,
                     anchor=hit.anchor, source_ref=hit.source_ref, title=hit.title)


# --- checks ----------------------------------------------------------------------------


def matches(chunk: Retrieved, pattern: str) -> bool:
    """Case-insensitive substring match against the chunk's citation, url and source ref."""
    needle = pattern.lower()
    return any(needle in text.lower() for text in (chunk.citation, chunk.url, chunk.source_ref))


def evaluate_checks(case: Case, retrieved: Sequence[Retrieved]
                    ) -> tuple[tuple[CheckResult, ...], int | None]:
    """Evaluate the declared checks in a fixed order; returns (checks, first match rank)."""
    expect = case.expect
    checks: list[CheckResult] = []
    first_rank: int | None = None
    if expect.source_includes:
        check, first_rank = _source_includes(expect.source_includes, retrieved)
        checks.append(check)
    if expect.not_source_includes:
        checks.append(_not_source_includes(expect.not_source_includes, retrieved))
    if expect.min_score is not None:
        checks.append(_min_score(expect.min_score, retrieved))
    if expect.anchor is not None:
        checks.append(_anchor(expect.anchor, retrieved))
    return tuple(checks), first_rank


def _quoted(patterns: Sequence[str]) -> str:
    text = ", ".join(f"'{p}'" for p in patterns)
    return text if len(patterns) == 1 else f"any of {text}"


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    more = len(items) - _SHOWN
    return f"{shown}, … (+{more} more)" if more > 0 else shown


def _first_match(patterns: Sequence[str],
                 retrieved: Sequence[Retrieved]) -> tuple[Retrieved, str] | None:
    for chunk in retrieved:
        for pattern in patterns:
            if matches(chunk, pattern):
                return chunk, pattern
    return None


def _source_includes(patterns: Sequence[str],
                     retrieved: Sequence[Retrieved]) -> tuple[CheckResult, int | None]:
    name = "sourceIncludes"
    if not retrieved:
        detail = f"nothing retrieved; expected a chunk matching {_quoted(patterns)}"
        return CheckResult(name, False, detail), None
    found = _first_match(patterns, retrieved)
    if found is None:
        got = _listing([chunk.citation for chunk in retrieved])
        return CheckResult(name, False, f"no chunk matched {_quoted(patterns)}; got: {got}"), None
    chunk, pattern = found
    return CheckResult(name, True, f"rank {chunk.rank} matched '{pattern}': {chunk.citation}"), \
        chunk.rank


def _not_source_includes(patterns: Sequence[str],
                         retrieved: Sequence[Retrieved]) -> CheckResult:
    name = "notSourceIncludes"
    if not retrieved:
        return CheckResult(name, True, f"nothing retrieved, so nothing matched {_quoted(patterns)}")
    offending = [(chunk, pattern) for chunk in retrieved for pattern in patterns
                 if matches(chunk, pattern)]
    if not offending:
        return CheckResult(name, True, f"no chunk matched {_quoted(patterns)}")
    chunk, pattern = offending[0]
    ranks = sorted({c.rank for c, _ in offending})
    more = f" (matching ranks: {', '.join(map(str, ranks))})" if len(ranks) > 1 else ""
    return CheckResult(name, False,
                       f"rank {chunk.rank} matched excluded '{pattern}': {chunk.citation}{more}")


def _digits(value: float) -> int:
    for digits in range(2, 7):
        if float(f"{value:.{digits}f}") == value:
            return digits
    return 6


def format_pair(value: float, threshold: float) -> tuple[str, str]:
    """At least two decimals, enough to write ``threshold`` as given and to show that the
    two numbers differ when they do."""
    for digits in range(_digits(threshold), 7):
        left, right = f"{value:.{digits}f}", f"{threshold:.{digits}f}"
        if left != right or value == threshold:
            return left, right
    return repr(value), repr(threshold)


def _min_score(threshold: float, retrieved: Sequence[Retrieved]) -> CheckResult:
    name = "minScore"
    if not retrieved:
        return CheckResult(name, False,
                           f"nothing retrieved; expected a top score >= {threshold:.2f}")
    top = max(chunk.score for chunk in retrieved)
    shown_top, shown_threshold = format_pair(top, threshold)
    if top >= threshold:
        return CheckResult(name, True, f"top score {shown_top} >= {shown_threshold}")
    return CheckResult(name, False, f"top score {shown_top} < {shown_threshold}")


def _anchor(fragment: str, retrieved: Sequence[Retrieved]) -> CheckResult:
    name = "anchor"
    if not retrieved:
        return CheckResult(name, False,
                           f"nothing retrieved; expected a chunk anchor containing '{fragment}'")
    anchored = [chunk for chunk in retrieved if chunk.anchor]
    if not anchored:
        return CheckResult(name, False, "no retrieved chunk carries an anchor; expected one "
                           f"containing '{fragment}'")
    needle = fragment.lower()
    for chunk in anchored:
        if chunk.anchor and needle in chunk.anchor.lower():
            return CheckResult(name, True,
                               f"rank {chunk.rank} anchor '{chunk.anchor}' contains '{fragment}'")
    got = _listing(list(dict.fromkeys(chunk.anchor or "" for chunk in anchored)))
    return CheckResult(name, False, f"no chunk anchor contains '{fragment}'; got anchors: {got}")


# --- metrics ---------------------------------------------------------------------------


def compute_metrics(results: Sequence[CaseResult]) -> Metrics:
    """Hit rate and MRR over the cases that declare ``sourceIncludes``."""
    scored = [result for result in results if result.case.expect.source_includes]
    if not scored:
        return Metrics(scored=0, hits=0, hit_rate=None, mrr=None)
    ranks = [result.first_match_rank for result in scored]
    hits = sum(1 for rank in ranks if rank is not None)
    reciprocal = sum(1.0 / rank for rank in ranks if rank is not None)
    return Metrics(scored=len(scored), hits=hits, hit_rate=hits / len(scored),
                   mrr=reciprocal / len(scored))
