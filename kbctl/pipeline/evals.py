"""``kbctl eval`` as one library call: plan (validate and load once), run, compare, judge
once. The retriever is injected; see ``kbctl.evals.run.Retriever``."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbctl.config import Settings
from kbctl.embed.base import Embedder
from kbctl.errors import EnvironmentFailure, InputError, KbctlError
from kbctl.evals import CaseResult, Retriever, parse_suite, run_suites, scaffold_suite
from kbctl.evals.model import DEFAULT_TOP_K
from kbctl.evals.outcome import EvalOutcome
from kbctl.evals.plan import EvalPlan, plan_eval, run_plan
from kbctl.evals.retriever import MeasuredRetriever
from kbctl.rerank.base import Reranker
from kbctl.results import QueryResult
from kbctl.store.knowledge import KnowledgeStore
from kbctl.wiring import open_store, resolve_embedder, resolve_reranker

from . import pinning
from .query import require_chunks, retrieve

__all__ = ["EvalOutcome", "EvalPlan", "SuiteScaffold", "eval_init", "evaluate", "plan_eval",
           "run_eval", "run_plan", "scaffold_suite"]


def run_eval(
    paths: Sequence[str | Path],
    retriever: Retriever,
    *,
    namespace: str,
    embedder: object,
    baseline: str | Path | None = None,
    rank_tolerance: int = 0,
    score_tolerance: float | None = None,
    fail_on: str = "any",
    clock: Callable[[], float] = time.perf_counter,
    on_result: Callable[[CaseResult], None] | None = None,
) -> EvalOutcome:
    """Run the suites at ``paths`` and judge them, against ``baseline`` when given."""
    plan = plan_eval(paths, baseline=baseline, rank_tolerance=rank_tolerance,
                     score_tolerance=score_tolerance, fail_on=fail_on)
    return run_plan(plan, retriever, namespace=namespace, embedder=embedder, clock=clock,
                    on_result=on_result)


class _BrokenFromStart(BaseException):
    """Carries an environment failure out of the eval runner, which keeps ordinary
    exceptions to the failing case (so it must not be an ``Exception``)."""

    def __init__(self, error: EnvironmentFailure) -> None:
        super().__init__(error.message)
        self.error = error


def evaluate(
    settings: Settings,
    suites: Sequence[str | Path],
    *,
    baseline: str | Path | None = None,
    rank_tolerance: int = 0,
    score_tolerance: float | None = None,
    fail_on: str = "any",
    on_result: Callable[[CaseResult], None] | None = None,
    reports: Mapping[str, str | Path | None] | None = None,
    retriever: str | None = None,
) -> EvalOutcome:
    """Run eval suites against the configured namespace and judge them.

    Suites, baseline and policy are checked before the database is opened, so a bad file is
    a usage error (exit 2) even where no database is reachable. An environment failure
    (no API key, embedder or database unreachable) before any retrieval has succeeded ends
    the run with that error (exit 3): it says nothing about retrieval quality. Once a
    retrieval has worked, a failure fails its case only.

    The retriever the gate was written for (the suites' ``defaults.retriever``, kbctl.yaml's
    ``eval.retriever``, ``retriever`` as ``--retriever`` spells it) must be the one measured:
    another, or one that cannot run here, is refused (exit 2) before any case runs.
    """
    plan = plan_eval(suites, baseline=baseline, rank_tolerance=rank_tolerance,
                     score_tolerance=score_tolerance, fail_on=fail_on, reports=reports)
    pins = pinning.collect(plan.pins, settings.eval_retriever, retriever)
    with open_store(settings, existing=True) as store:
        try:
            embedder = resolve_embedder(store, settings, writing=False)
            reranker = resolve_reranker(store, settings)
        except KbctlError as exc:
            raise pinning.unavailable(pins, exc) from None
        require_chunks(store, settings.namespace)
        measured = MeasuredRetriever(
            embedder=str(embedder.identity) if embedder is not None else "none",
            fusion=settings.fusion, vector_weight=settings.vector_weight,
            reranker=str(reranker.identity) if reranker is not None else "none")
        pinning.require(pins, measured)
        worked = False

        plain = _retriever(store, settings, embedder, reranker)

        def retrieve_one(question: str, top_k: int, min_score: float | None,
                         filters: dict[str, str]) -> QueryResult:
            nonlocal worked
            try:
                found = plain(question, top_k, min_score, filters)
            except EnvironmentFailure as exc:
                if not worked:
                    raise _BrokenFromStart(exc) from exc
                raise
            worked = True
            return found

        try:
            return run_plan(
                plan, retrieve_one, namespace=settings.namespace,
                embedder=embedder.identity if embedder is not None else "none",
                reranker=reranker.identity if reranker is not None else "none",
                measured=measured, on_result=on_result,
            )
        except _BrokenFromStart as broken:
            raise pinning.unavailable(pins, broken.error) from None


@dataclass(frozen=True)
class SuiteScaffold:
    """A starter suite's text, and the cases left out because they fail today."""

    text: str
    failing: tuple[str, ...]


def eval_init(settings: Settings, *, top_k: int = DEFAULT_TOP_K, fmt: str = "yaml",
              on_result: Callable[[CaseResult], None] | None = None) -> SuiteScaffold:
    """A starter suite (``yaml`` or ``json`` text) with one case per top-level section of
    the namespace, each run once against the KB: a case the KB fails today is left out,
    so the suite passes on the KB it was made from (a committed scaffold failed the first
    build)."""
    with open_store(settings, existing=True) as store:
        sections = store.documents.top_sections(settings.namespace)
        if not sections:
            raise InputError(f"nothing to scaffold: namespace '{settings.namespace}' holds "
                             "no documents", hint="ingest your docs first (kbctl ingest files "
                             "docs/), or pick the namespace with -n")
        draft = parse_suite(scaffold_suite(sections, top_k=top_k, fmt="json"), "scaffold.json")
        embedder = resolve_embedder(store, settings, writing=False)
        reranker = resolve_reranker(store, settings)
        report = run_suites([draft], _retriever(store, settings, embedder, reranker),
                            namespace=settings.namespace, embedder="-", on_result=on_result)
    failing = tuple(r.case.id for r in report.results if not r.passed)
    if len(failing) == len(report.results):
        raise InputError("nothing to scaffold: no section is found by its own heading",
                         hint="write the suite's questions by hand")
    return SuiteScaffold(scaffold_suite(sections, top_k=top_k, fmt=fmt, without=failing),
                         failing)


def _retriever(store: KnowledgeStore, settings: Settings, embedder: Embedder | None,
               reranker: Reranker | None) -> Retriever:
    """Eval's retrieval: the namespace's, with the settings' fusion and reranking."""
    def retriever(question: str, top_k: int, min_score: float | None,
                  filters: dict[str, str]) -> QueryResult:
        return retrieve(store, question,
                        settings.retrieval.asking(k=top_k, min_score=min_score,
                                                  filters=filters),
                        embedder=embedder, reranker=reranker)
    return retriever
