"""Run eval cases against a retriever and judge them: pure apart from the retriever call.

The retriever is injected, so the rules (what passes, what a failure says, the metrics)
are tested without a database and the same code gates CI against any store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from kbctl import __version__
from kbctl.errors import EnvironmentFailure, KbctlError
from kbctl.evals.checks import CHECKS, CheckResult, Retrieved
from kbctl.evals.checks.min_score import format_pair
from kbctl.evals.checks.source_includes import first_match_rank
from kbctl.evals.metrics import Metrics, compute_metrics
from kbctl.evals.model import Case, Suite
from kbctl.evals.retriever import MeasuredRetriever
from kbctl.results import Hit, QueryResult

Retriever = Callable[[str, int, float | None, dict[str, str]], QueryResult]
"""(question, top_k, min_score, filter) -> the retrieval, hits best first. May raise
anything."""

RETRIEVAL_CHECK = "retrieval"
# Cases in a row whose retrieval failed for the environment (the database, the embedding or
# rerank provider): past this the service is down, not unlucky, and the run stops with
# that error (exit 3) instead of failing every later case after the same wait, which
# would read as a retrieval regression.
ENVIRONMENT_FAILURES_TO_STOP = 2

__all__ = ["RETRIEVAL_CHECK", "CaseResult", "CheckResult", "EvalReport", "Metrics",
           "Retrieved", "Retriever", "compute_metrics", "evaluate_checks", "format_pair",
           "run_case", "run_suites"]


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
    # The question's words the KB never uses: matched by spelling, and matched by nothing.
    corrected: dict[str, str] = field(default_factory=dict)
    unmatched: tuple[str, ...] = ()
    # The synonyms its words also looked for: {words it used: words added}.
    related: dict[str, tuple[str, ...]] = field(default_factory=dict)
    searchable: bool = True  # False: the question is all stop words
    # Nothing retrieved because the case's minScore cut it all: the best score it cut.
    best_below_min: float | None = None

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(check for check in self.checks if not check.passed)


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
    reranker: str = "none"
    # the whole retriever measured (fusion too); None from a caller that knows only names
    retriever: MeasuredRetriever | None = None

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
    reranker: object = "none",
    measured: MeasuredRetriever | None = None,
    clock: Callable[[], float] = time.perf_counter,
    now: Callable[[], datetime] = _utcnow,
    on_result: Callable[[CaseResult], None] | None = None,
) -> EvalReport:
    """Run every case of every suite, one after another, in input order.

    ``embedder`` and ``reranker`` are recorded by their ``str()`` (an identity string or
    object): a score means something else under another of either; ``measured`` is the
    whole retriever, fusion included, for the report; ``on_result`` is called after each
    case (progress display).
    """
    started_at = now().isoformat(timespec="seconds")
    run_start = clock()
    results: list[CaseResult] = []
    down = 0  # environment failures in a row
    for suite in suites:
        for case in suite.cases:
            result, exc = _run_case(case, retriever, clock)
            down = down + 1 if isinstance(exc, EnvironmentFailure) else 0
            if isinstance(exc, EnvironmentFailure) and down >= ENVIRONMENT_FAILURES_TO_STOP:
                raise type(exc)(
                    f"{exc.message} (stopped: {down} cases in a row could not be retrieved)",
                    hint=exc.hint or "a service the knowledge base needs is down; "
                                     "nothing was judged, retry when it is back") from exc
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
        reranker=str(reranker),
        retriever=measured,
    )


def run_case(case: Case, retriever: Retriever,
             *, clock: Callable[[], float] = time.perf_counter) -> CaseResult:
    """Retrieve for one case and judge it; a retriever failure fails this case only."""
    return _run_case(case, retriever, clock)[0]


def _run_case(case: Case, retriever: Retriever, clock: Callable[[], float]
              ) -> tuple[CaseResult, Exception | None]:
    """``run_case``, and the retriever's exception when it raised one."""
    start = clock()
    try:
        found = retriever(case.question, case.top_k, case.min_score, dict(case.filter))
        retrieved = tuple(_keep(position, hit)
                          for position, hit in enumerate(list(found.hits)[: case.top_k],
                                                         start=1))
    except Exception as exc:  # any retriever failure fails this case only
        message = exc.message if isinstance(exc, KbctlError) else str(exc)
        error = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        check = CheckResult(RETRIEVAL_CHECK, False, f"retriever failed: {error}")
        return CaseResult(case=case, passed=False, checks=(check,), retrieved=(),
                          first_match_rank=None, top_score=None,
                          duration_ms=(clock() - start) * 1000.0, error=error), exc
    checks, first_rank = evaluate_checks(case, retrieved)
    return CaseResult(
        case=case,
        passed=all(check.passed for check in checks),
        checks=checks,
        retrieved=retrieved,
        first_match_rank=first_rank,
        top_score=max((chunk.score for chunk in retrieved), default=None),
        duration_ms=(clock() - start) * 1000.0,
        corrected=dict(found.corrected), unmatched=tuple(found.unmatched),
        related=dict(found.related), searchable=found.searchable,
        best_below_min=found.best_below_min,
    ), None


def _keep(position: int, hit: Hit) -> Retrieved:
    return Retrieved(rank=position, score=float(hit.score), citation=hit.citation, url=hit.url,
                     anchor=hit.anchor, source_ref=hit.source_ref, title=hit.title)


# --- checks ----------------------------------------------------------------------------


def evaluate_checks(case: Case, retrieved: Sequence[Retrieved]
                    ) -> tuple[tuple[CheckResult, ...], int | None]:
    """Run the declared checks in registry order; returns (checks, first match rank)."""
    checks = tuple(CHECKS[name].run(value, retrieved) for name, value in case.expect.checks)
    return checks, first_match_rank(case.expect.source_includes, retrieved)
