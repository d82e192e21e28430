"""Compare a run with an earlier JSON report (the baseline) and name the regressions.

Cases are matched by ``(suite path, id)``; when both runs used exactly one suite file
they are matched by id alone, so renaming or moving the file keeps the history. A suite
path is compared as a path, not as typed: ``suites/docs.yaml`` run from the repository's
root and ``docs.yaml`` run from ``suites/`` (or an absolute path) are one suite when one
ends with the other and nothing else does. A baseline that shares no case with the run
is refused: its gate would pass whatever happened.

A case regressed when it passed in the baseline and fails now, when its first-match rank
got worse by more than ``rank_tolerance`` (a match that disappeared is always worse), or,
when ``score_tolerance`` is set, when its top score fell by more than that.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from kbctl.errors import InputError
from kbctl.evals.run import CaseResult, EvalReport, format_pair
from kbctl.evals.schema import REPORT_SCHEMA, REPORT_SCHEMA_VERSION, case_fingerprint
from kbctl.hygiene import describe_bad_char
from kbctl.linefile import LoadError, first_clause, read_capped

_HINT = "a baseline is a JSON report written by an earlier `kbctl eval` run"
_EPSILON = 1e-9


@dataclass(frozen=True)
class CaseRef:
    """Where a case lives: enough to name it and to annotate its line."""

    suite: str
    id: str
    line: int | None = None


@dataclass(frozen=True)
class Regression:
    ref: CaseRef
    reasons: tuple[str, ...]
    failed_now: bool


@dataclass(frozen=True)
class BaselineDiff:
    """How this run compares with the baseline; every list keeps this run's case order
    (``removed`` keeps the baseline's)."""

    source: str
    rank_tolerance: int
    score_tolerance: float | None
    regressions: tuple[Regression, ...]
    fixed: tuple[CaseRef, ...]
    added: tuple[CaseRef, ...]
    removed: tuple[CaseRef, ...]
    changed: tuple[CaseRef, ...]
    warnings: tuple[str, ...]
    baseline_total: int
    baseline_passed: int
    baseline_hit_rate: float | None
    baseline_mrr: float | None

    @cached_property
    def _by_key(self) -> dict[tuple[str, str], Regression]:
        return {(r.ref.suite, r.ref.id): r for r in self.regressions}

    def regression_for(self, suite: str, case_id: str) -> Regression | None:
        return self._by_key.get((suite, case_id))


@dataclass(frozen=True)
class _Past:
    suite: str
    id: str
    line: int | None
    passed: bool
    rank: int | None
    score: float | None
    fingerprint: str | None


# --- loading and validation ------------------------------------------------------------


@dataclass(frozen=True)
class Baseline:
    """A validated baseline report: where it came from, its cases and its metrics."""

    source: str
    cases: tuple[_Past, ...]
    metrics: dict[str, Any]
    namespace: Any = None  # as recorded; compared only when a string
    embedder: Any = None
    reranker: Any = None  # absent from reports of earlier versions: then not compared
    retriever: Any = None  # the whole retriever measured; absent from earlier reports


# A baseline is a report kbctl wrote itself (about 5 KB per case at topK 10), so it may be
# far larger than a hand-written suite or config, but still bounded.
MAX_BASELINE_BYTES = 64 * 1024 * 1024


def load_baseline(path: str | Path) -> Baseline:
    """Read and validate a baseline report; every problem names the file."""
    label = Path(path).as_posix()
    try:
        text = read_capped(Path(path), MAX_BASELINE_BYTES)
    except FileNotFoundError:
        raise InputError(f"{label}: baseline file not found", hint=_HINT) from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read baseline: {exc.strerror or exc}") from None
    except LoadError as exc:
        raise InputError(f"{label}: cannot use baseline: {exc.message}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{label}:{exc.lineno}: baseline is not valid JSON: {exc.msg}",
                         hint=_HINT) from None
    except ValueError as exc:  # an integer of over 4,300 digits
        raise InputError(f"{label}: baseline is not valid JSON: {first_clause(exc)}",
                         hint=_HINT) from None
    return parse_baseline(data, label)


def _bad(source: str, field: str, message: str) -> InputError:
    where = f"{source}: {field}" if field else source
    return InputError(f"{where}: {message}", hint=_HINT)


def _optional_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value))


def parse_baseline(data: Any, source: str) -> Baseline:
    """A report (as parsed JSON) validated as a baseline; ``source`` names it in errors."""
    if not isinstance(data, dict):
        raise _bad(source, "", "expected a JSON object (an eval report)")
    if data.get("schema") != REPORT_SCHEMA:
        raise _bad(source, "schema", f"expected '{REPORT_SCHEMA}', got {data.get('schema')!r}")
    version = data.get("schemaVersion")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _bad(source, "schemaVersion", f"expected an integer, got {version!r}")
    if version != REPORT_SCHEMA_VERSION:
        newer = " (written by a newer kbctl)" if version > REPORT_SCHEMA_VERSION else ""
        raise _bad(source, "schemaVersion", f"unsupported version {version}{newer}")
    cases = data.get("cases")
    if not isinstance(cases, list):
        raise _bad(source, "cases", "expected a list")
    past: list[_Past] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(cases):
        field = f"cases[{i}]"
        if not isinstance(item, dict):
            raise _bad(source, field, "expected an object")
        for key in ("suite", "id"):
            if not isinstance(item.get(key), str):
                raise _bad(source, f"{field}.{key}", "expected a string")
            bad = describe_bad_char(item[key])
            if bad:
                raise _bad(source, f"{field}.{key}", f"{bad} is not allowed")
        if not isinstance(item.get("passed"), bool):
            raise _bad(source, f"{field}.passed", "expected true or false")
        rank = item.get("firstMatchRank")
        if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or rank < 1):
            raise _bad(source, f"{field}.firstMatchRank", "expected a positive integer or null")
        if not _optional_number(item.get("topScore")):
            raise _bad(source, f"{field}.topScore", "expected a number or null")
        line = item.get("line")
        fingerprint = item.get("fingerprint")
        key = (item["suite"], item["id"])
        if key in seen:
            raise _bad(source, f"{field}.id", f"duplicate case '{item['id']}'")
        seen.add(key)
        past.append(_Past(
            suite=item["suite"], id=item["id"],
            line=line if isinstance(line, int) and not isinstance(line, bool) else None,
            passed=item["passed"], rank=rank,
            score=float(item["topScore"]) if item.get("topScore") is not None else None,
            fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        ))
    metrics = data.get("metrics", {})
    if not isinstance(metrics, dict):
        raise _bad(source, "metrics", "expected an object")
    for key in ("hitRate", "mrr"):
        if not _optional_number(metrics.get(key)):
            raise _bad(source, f"metrics.{key}", "expected a number or null")
    return Baseline(source, tuple(past), metrics, data.get("namespace"), data.get("embedder"),
                    data.get("reranker"), data.get("retriever"))


# --- comparison ------------------------------------------------------------------------


def check_tolerances(rank_tolerance: Any, score_tolerance: Any) -> None:
    """Refuse tolerances that make no sense (negative, wrong type)."""
    if isinstance(rank_tolerance, bool) or not isinstance(rank_tolerance, int) \
            or rank_tolerance < 0:
        raise InputError(f"rank tolerance must be a non-negative integer, got {rank_tolerance!r}")
    if score_tolerance is not None and (not _optional_number(score_tolerance)
                                        or not 0 <= score_tolerance <= 1):
        raise InputError(f"score tolerance must be a number within 0..1 (scores lie in "
                         f"0..1), got {score_tolerance!r}")


def compare_with_baseline(
    report: EvalReport,
    baseline: Baseline | Mapping[str, Any],
    *,
    rank_tolerance: int = 0,
    score_tolerance: float | None = None,
    source: str = "baseline",
) -> BaselineDiff:
    """Regressions, fixes, added/removed/edited cases of ``report`` against ``baseline``
    (a loaded ``Baseline``, or a report's JSON named ``source``)."""
    check_tolerances(rank_tolerance, score_tolerance)
    if not isinstance(baseline, Baseline):
        baseline = parse_baseline(baseline, source)
    past, metrics, source = baseline.cases, baseline.metrics, baseline.source
    _require_same_retriever(report, baseline)

    baseline_suites = {item.suite for item in past}
    by_id_only = len(report.suites) == 1 and len(baseline_suites) <= 1
    same_suite = _same_suites(baseline_suites, report.suites)

    def key_of(suite: str, case_id: str) -> tuple[str, str]:
        return ("", case_id) if by_id_only else (same_suite.get(suite, suite), case_id)

    remaining = {key_of(item.suite, item.id): item for item in past}
    regressions: list[Regression] = []
    fixed: list[CaseRef] = []
    added: list[CaseRef] = []
    changed: list[CaseRef] = []
    for result in report.results:
        case = result.case
        ref = CaseRef(case.suite, case.id, case.line)
        before = remaining.pop(key_of(case.suite, case.id), None)
        if before is None:
            added.append(ref)
            continue
        reasons = _reasons(before, result, rank_tolerance, score_tolerance)
        if reasons:
            regressions.append(Regression(ref, tuple(reasons), failed_now=not result.passed))
        if not before.passed and result.passed:
            fixed.append(ref)
        if before.fingerprint is not None and before.fingerprint != case_fingerprint(case):
            changed.append(ref)
    removed = [CaseRef(item.suite, item.id, item.line) for item in past
               if key_of(item.suite, item.id) in remaining]
    if past and report.results and len(removed) == len(past):
        theirs = ", ".join(sorted(baseline_suites)[:3])
        raise InputError(
            f"{source}: the baseline shares no case with this run (it was run with "
            f"{theirs}; this run with {', '.join(report.suites[:3])}), so no regression "
            "could be found", hint="compare with a report of these suites (--save-baseline "
            "writes one), or check the suite paths and case ids")

    warnings = []
    if isinstance(baseline.namespace, str) and baseline.namespace != report.namespace:
        warnings.append(f"the baseline was run with namespace '{baseline.namespace}', this "
                        f"run with '{report.namespace}'")
    return BaselineDiff(
        source=source,
        rank_tolerance=rank_tolerance,
        score_tolerance=score_tolerance,
        regressions=tuple(regressions),
        fixed=tuple(fixed),
        added=tuple(added),
        removed=tuple(removed),
        changed=tuple(changed),
        warnings=tuple(warnings),
        baseline_total=len(past),
        baseline_passed=sum(1 for item in past if item.passed),
        baseline_hit_rate=metrics.get("hitRate"),
        baseline_mrr=metrics.get("mrr"),
    )


_RETRIEVER_KEYS = ("embedder", "fusion", "vectorWeight", "reranker")


def _require_same_retriever(report: EvalReport, baseline: Baseline) -> None:
    """Refuse to compare runs of two retrievers: a change of embedder, fusion or reranker
    moves every rank, and would read as regressions and fixes of the docs. A baseline
    from before reports named the whole retriever is compared on what it names."""
    now = report.retriever.to_json() if report.retriever is not None else None
    then = baseline.retriever if isinstance(baseline.retriever, dict) else None
    if now is not None and then is not None:
        differs = [key for key in _RETRIEVER_KEYS if key in then and then[key] != now[key]]
    else:
        differs = [key for key, old, new in (("embedder", baseline.embedder, report.embedder),
                                             ("reranker", baseline.reranker, report.reranker))
                   if isinstance(old, str) and old != new]
    if not differs:
        return
    def shown(values: Mapping[str, Any] | None, fallback: Baseline | EvalReport) -> str:
        if values is None:
            values = {"embedder": fallback.embedder, "reranker": fallback.reranker}
        return ", ".join(f"{key} {values.get(key)}" for key in differs)

    raise InputError(
        f"{baseline.source}: the baseline measured another retriever ({shown(then, baseline)}"
        f"; this run: {shown(now, report)}), so its ranks and scores do not compare",
        hint="save a baseline with this retriever (--save-baseline), or run with the "
             "baseline's")


def _same_suites(theirs: set[str], ours: Sequence[str]) -> dict[str, str]:
    """Each baseline suite path that names one of this run's suites, typed otherwise (from
    another folder, or absolute): one path's parts end with the other's, and no other
    suite of either run's fits as well. Linear in the baseline's suites, which a hostile
    baseline may hold by the 100,000."""
    def parts(path: str) -> tuple[str, ...]:
        return tuple(p for p in PurePosixPath(path.replace("\\", "/")).parts
                     if p not in ("/", "."))

    by_name: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for path in theirs:
        split = parts(path)
        if split:
            by_name.setdefault(split[-1], []).append((path, split))
    def ends_alike(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
        n = min(len(x), len(y))
        return ".." not in x[-n:] and x[-n:] == y[-n:]

    fitting: dict[str, list[str]] = {}
    for mine in ours:
        y = parts(mine)
        fitting[mine] = [path for path, x in by_name.get(y[-1] if y else "", [])
                         if ends_alike(x, y)]
    mines = Counter(p for paths in fitting.values() for p in paths)  # of ours each fits
    return {paths[0]: mine for mine, paths in fitting.items()
            if len(paths) == 1 and paths[0] not in ours and mines[paths[0]] == 1}


def _reasons(before: _Past, result: CaseResult, rank_tolerance: int,
             score_tolerance: float | None) -> list[str]:
    reasons = []
    if before.passed and not result.passed:
        reasons.append("passed in the baseline, fails now")
    now_rank = result.first_match_rank
    if before.rank is not None:
        if now_rank is None:
            reasons.append(f"first match lost (was rank {before.rank})")
        elif now_rank - before.rank > rank_tolerance:
            reasons.append(f"first match rank {before.rank} → {now_rank} "
                           f"(tolerance {rank_tolerance})")
    if score_tolerance is not None and before.score is not None:
        now_score = result.top_score if result.top_score is not None else 0.0
        drop = before.score - now_score
        if drop > score_tolerance + _EPSILON:
            then_text, now_text = format_pair(before.score, now_score)
            now_text = now_text if result.top_score is not None else "nothing retrieved"
            drop_text, tol_text = format_pair(drop, score_tolerance)
            reasons.append(f"top score {then_text} → {now_text} "
                           f"(fell {drop_text} > tolerance {tol_text})")
    return reasons
