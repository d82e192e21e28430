"""The JSON report of an eval run: the machine-readable record, and the next baseline.

Schema (``schema: "kbctl.eval.report"``, ``schemaVersion: 1``); keys are camelCase like
the suite files, numbers are plain JSON numbers, absent values are ``null``::

    schema, schemaVersion       format identity; readers refuse other versions
    kbctlVersion                the kbctl that wrote it
    startedAt, durationMs       ISO-8601 UTC start, wall time of the whole run
    namespace, embedder         the KB namespace and the embedder identity string
    reranker                    the reranker identity string, "none" without one
    retriever                   what was measured: {embedder, mode ("lexical" or
                                "hybrid"), fusion, vectorWeight, reranker}; null from
                                a caller that named only the embedder and reranker
    suites                      [{path, name, cases}] in run order (name = file stem)
    totals                      {total, passed, failed}; passed + failed == total
    metrics                     {hitRate, mrr, ndcg, recall, scoredCases, hits, byTag}:
                                over cases declaring sourceIncludes (null when none
                                does); ndcg and recall at each case's topK (see
                                kbctl.evals.metrics); byTag {tag: the same without byTag}
    cases[]                     in input order:
      suite, id, line, index    suite path, case id, 1-based line, 0-based position
      question, topK, minScore, filter, expect   effective settings (defaults applied);
                                expect lists only declared checks, patterns as lists
      tags                      the case's tags (per-tag metrics)
      fingerprint               hash of question/topK/minScore/filter/expect
      passed, error             error: the retriever's failure, else null
      durationMs
      firstMatchRank, topScore  rank of the first sourceIncludes match; best score
      bestBelowMin              nothing retrieved as the case's minScore cut it all: the
                                best score it cut (else null)
      ndcg, recall              this case's nDCG@topK and recall@topK (null: not scored)
      corrected, unmatched      the question's words the KB never uses: {typed: the
                                indexed word matched instead}, and [those matching nothing]
      synonyms                  {the question's words: the synonyms they also looked for}
      searchable                false: every word of the question is a stop word
      checks[]                  {name, passed, detail}; name "retrieval" marks a
                                retriever failure
      retrieved[]               {rank, score, citation, url, anchor, sourceRef, title}
    baseline                    null, or {source, rankTolerance, scoreTolerance,
                                total, passed, hitRate, mrr, regressions[{suite, id, line,
                                reasons[], failedNow}], fixed[], added[], removed[],
                                changed[] ({suite, id, line}), warnings[]}
    verdict                     {passed, failOn, reason}

A case is identified by (suite, id).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from kbctl.evals.baseline import BaselineDiff, CaseRef
from kbctl.evals.metrics import Metrics, case_gains
from kbctl.evals.run import CaseResult, EvalReport
from kbctl.evals.schema import REPORT_SCHEMA, REPORT_SCHEMA_VERSION, case_fingerprint
from kbctl.evals.verdict import Verdict


def _ms(value: float) -> float:
    return round(value, 3)


def _ref(ref: CaseRef) -> dict[str, Any]:
    return {"suite": ref.suite, "id": ref.id, "line": ref.line}


def case_to_json(result: CaseResult) -> dict[str, Any]:
    case = result.case
    return {
        "suite": case.suite,
        "id": case.id,
        "line": case.line,
        "index": case.index,
        "question": case.question,
        "topK": case.top_k,
        "minScore": case.min_score,
        "filter": dict(case.filter),
        "tags": list(case.tags),
        "expect": case.expect.to_dict(),
        "fingerprint": case_fingerprint(case),
        "passed": result.passed,
        "error": result.error,
        "durationMs": _ms(result.duration_ms),
        "firstMatchRank": result.first_match_rank,
        "topScore": result.top_score,
        "bestBelowMin": result.best_below_min,
        **_gains(result),
        "corrected": dict(result.corrected),
        "unmatched": list(result.unmatched),
        "synonyms": {used: list(added) for used, added in result.related.items()},
        "searchable": result.searchable,
        "checks": [{"name": c.name, "passed": c.passed, "detail": c.detail}
                   for c in result.checks],
        "retrieved": [
            {"rank": r.rank, "score": r.score, "citation": r.citation, "url": r.url,
             "anchor": r.anchor, "sourceRef": r.source_ref, "title": r.title}
            for r in result.retrieved
        ],
    }


def _gains(result: CaseResult) -> dict[str, Any]:
    if not result.case.expect.source_includes:
        return {"ndcg": None, "recall": None}
    ndcg, recall = case_gains(result)
    return {"ndcg": ndcg, "recall": recall}


def diff_to_json(diff: BaselineDiff) -> dict[str, Any]:
    return {
        "source": diff.source,
        "rankTolerance": diff.rank_tolerance,
        "scoreTolerance": diff.score_tolerance,
        "total": diff.baseline_total,
        "passed": diff.baseline_passed,
        "hitRate": diff.baseline_hit_rate,
        "mrr": diff.baseline_mrr,
        "regressions": [{**_ref(r.ref), "reasons": list(r.reasons), "failedNow": r.failed_now}
                        for r in diff.regressions],
        "fixed": [_ref(r) for r in diff.fixed],
        "added": [_ref(r) for r in diff.added],
        "removed": [_ref(r) for r in diff.removed],
        "changed": [_ref(r) for r in diff.changed],
        "warnings": list(diff.warnings),
    }


def metrics_to_json(metrics: Metrics) -> dict[str, Any]:
    return {"hitRate": metrics.hit_rate, "mrr": metrics.mrr, "ndcg": metrics.ndcg,
            "recall": metrics.recall, "scoredCases": metrics.scored, "hits": metrics.hits}


def report_to_json(report: EvalReport, diff: BaselineDiff | None,
                   verdict: Verdict) -> dict[str, Any]:
    """The judged report as a JSON-ready dict (see the module docstring for the schema)."""
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result.case.suite] = counts.get(result.case.suite, 0) + 1
    metrics = report.metrics
    return {
        "schema": REPORT_SCHEMA,
        "schemaVersion": REPORT_SCHEMA_VERSION,
        "kbctlVersion": report.kbctl_version,
        "startedAt": report.started_at,
        "durationMs": _ms(report.duration_ms),
        "namespace": report.namespace,
        "embedder": report.embedder,
        "reranker": report.reranker,
        "retriever": report.retriever.to_json() if report.retriever is not None else None,
        "suites": [{"path": path, "name": PurePosixPath(path).stem, "cases": counts.get(path, 0)}
                   for path in report.suites],
        "totals": {"total": report.total, "passed": report.passed, "failed": report.failed},
        "metrics": {**metrics_to_json(metrics),
                    "byTag": {tag: metrics_to_json(m) for tag, m in metrics.by_tag}},
        "cases": [case_to_json(result) for result in report.results],
        "baseline": diff_to_json(diff) if diff is not None else None,
        "verdict": {"passed": verdict.passed, "failOn": verdict.fail_on,
                    "reason": verdict.reason},
    }
