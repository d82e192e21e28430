"""Load and validate eval suite files (JSON or YAML, same shape).

A suite that is wrong in any way is refused before anything runs: a CI gate that silently
skips a misspelt check would pass for the wrong reason. Every problem in a file is
reported at once, each as ``file:line: case 'id' (cases[i]): field: what is wrong``
(``cases[i]`` is the 0-based position in the ``cases`` list).

``null`` for ``defaults``, ``filter`` or ``expect`` means empty; any other field must have
its declared type (a ``null`` score is an error, not "no floor"). A case's own ``filter``
is merged over ``defaults.filter`` (its keys win); ``tags`` (a string or a list) group
cases for per-tag metrics.

Several files can be loaded in one run (paths, directories or globs). Ids are unique per
file; a case is identified by ``(suite path, id)`` and carries its suite path, so
reports can say ``docs.yaml:install-pnpm`` when it matters.
"""

from __future__ import annotations

import difflib
import glob
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kbctl.errors import SuiteError
from kbctl.evals.checks import CHECKS
from kbctl.evals.model import DEFAULT_TOP_K, MAX_K, MIN_K, Case, Defaults, Expect, Suite
from kbctl.evals.retriever import RetrieverPin, pin_from_mapping, pin_problems
from kbctl.linefile import LineDict, LoadError, load_json, load_yaml, read_capped, value_kind
from kbctl.results import MAX_QUESTION_CHARS

SUITE_SUFFIXES = (".json", ".yaml", ".yml")
SUITE_VERSION = 1

_TOP_KEYS = ("version", "defaults", "cases")
_DEFAULT_KEYS = ("topK", "minScore", "filter", "retriever")
_CASE_KEYS = ("id", "question", "topK", "minScore", "filter", "tags", "expect")
_MAX_REPORTED = 20


def load_suites(paths: Sequence[str | Path]) -> list[Suite]:
    """Load suite files given as paths, directories or glob patterns, in the order given."""
    return [load_suite(path) for path in expand_suite_paths(paths)]


def expand_suite_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Resolve globs and directories into suite files, dropping repeats.

    A glob or directory keeps only ``.json``/``.yaml``/``.yml`` files (sorted); a file named
    explicitly must have one of those suffixes. Nothing matched is an error, not an empty run.
    """
    found: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        text = str(raw)
        if any(ch in text for ch in "*?["):
            matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))]
            files = [m for m in matches if m.is_file() and m.suffix.lower() in SUITE_SUFFIXES]
            if not files:
                raise SuiteError(f"{text}: no suite file ({', '.join(SUITE_SUFFIXES)}) matches")
        elif Path(text).is_dir():
            files = sorted(p for p in Path(text).iterdir()
                           if p.is_file() and p.suffix.lower() in SUITE_SUFFIXES)
            if not files:
                raise SuiteError(f"{text}: directory holds no suite file "
                                 f"({', '.join(SUITE_SUFFIXES)})")
        else:
            path = Path(text)
            if not path.is_file():
                raise SuiteError(f"{text}: suite file not found" if not path.exists()
                                 else f"{text}: not a regular file")
            if path.suffix.lower() not in SUITE_SUFFIXES:
                raise SuiteError(f"{text}: unsupported suite file type "
                                 f"(use {', '.join(SUITE_SUFFIXES)})")
            files = [path]
        for file in files:
            resolved = file.resolve()
            if resolved not in seen:
                seen.add(resolved)
                found.append(file)
    if not found:
        raise SuiteError("no suite file given")
    return found


def load_suite(path: str | Path) -> Suite:
    """Read and validate one suite file; the format follows the suffix."""
    path = Path(path)
    label = path.as_posix()
    try:
        text = read_capped(path)
    except OSError as exc:
        raise SuiteError(f"{label}: cannot read suite file: {exc.strerror or exc}") from None
    except LoadError as exc:
        hint = ("split it into several suites: `kbctl eval` takes several files, a folder "
                "or a glob" if "byte limit" in exc.message else None)
        raise SuiteError(f"{label}: {exc.message}", hint=hint) from None
    return parse_suite(text, label)


def parse_suite(text: str, path: str) -> Suite:
    """Validate suite text; ``path`` names the file in errors and its suffix picks the format."""
    is_json = path.lower().endswith(".json")
    try:
        data = load_json(text) if is_json else load_yaml(text)
    except LoadError as exc:
        where = f"{path}:{exc.line}" if exc.line else path
        raise SuiteError(f"{where}: {exc.message}") from None
    return _Validator(path).suite(data)


# --- validation ------------------------------------------------------------------------


def _not_text(value: Any) -> str:
    """Why a value is no string; for a scalar, that quotes make it one (YAML reads a bare
    ``no``, ``on``, ``1.10`` or ``null`` as another type)."""
    scalar = value is None or isinstance(value, bool | int | float)
    return f"expected a string, got {value_kind(value)}" + (" (quote it)" if scalar else "")


def _line(mapping: Any, key: str | None = None) -> int | None:
    if not isinstance(mapping, LineDict):
        return None
    return mapping.line if key is None else mapping.line_of(key)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Validator:
    """Collects every problem of one file, then builds the Suite or raises one SuiteError."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[tuple[int | None, str]] = []

    def add(self, line: int | None, where: str, field: str, message: str) -> None:
        parts = [p for p in (where, field) if p]
        prefix = f"{self.path}:{line}" if line else self.path
        self.problems.append((line, ": ".join([prefix, *parts, message])))

    def fail(self) -> SuiteError:
        ordered = sorted(self.problems, key=lambda item: item[0] or 0)
        lines = [text for _, text in ordered]
        if len(lines) == 1:
            return SuiteError(lines[0])
        shown = lines[:_MAX_REPORTED]
        more = len(lines) - len(shown)
        body = "\n".join(f"  {text}" for text in shown)
        tail = f"\n  … and {more} more" if more else ""
        return SuiteError(f"{self.path}: {len(lines)} problems in suite file\n{body}{tail}")

    # -- generic checks --

    def keys(self, mapping: dict[Any, Any], allowed: Sequence[str], where: str,
             prefix: str = "") -> None:
        for key in mapping:
            if key in allowed:
                continue
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; allowed: {', '.join(allowed)}"
            self.add(_line(mapping, key), where, f"{prefix}{key}", f"unknown key{hint}")
        if isinstance(mapping, LineDict):
            for key, line in mapping.duplicates:
                self.add(line, where, f"{prefix}{key}", "duplicate key")

    def mapping(self, parent: dict[Any, Any], key: str, where: str,
                field: str) -> dict[Any, Any] | None:
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.add(_line(parent, key), where, field,
                     f"expected a mapping, got {value_kind(value)}")
            return None
        return value

    def top_k(self, parent: dict[Any, Any], where: str, field: str) -> int | None:
        value = parent["topK"]
        if not isinstance(value, int) or isinstance(value, bool):
            self.add(_line(parent, "topK"), where, field,
                     f"expected a positive integer, got {value_kind(value)}")
            return None
        if not MIN_K <= value <= MAX_K:
            self.add(_line(parent, "topK"), where, field,
                     f"must be between {MIN_K} and {MAX_K}, got {value}")
            return None
        return value

    def score(self, parent: dict[Any, Any], key: str, where: str, field: str) -> float | None:
        value = parent[key]
        if not _is_number(value):
            self.add(_line(parent, key), where, field,
                     f"expected a number between 0 and 1, got {value_kind(value)}")
            return None
        if not math.isfinite(value) or not 0 <= value <= 1:
            self.add(_line(parent, key), where, field,
                     f"must be between 0 and 1 (scores are in 0..1), got {value}")
            return None
        return float(value)

    def text(self, parent: dict[Any, Any], key: str, where: str, field: str,
             *, single_line: bool = False) -> str | None:
        value = parent[key]
        if not isinstance(value, str):
            self.add(_line(parent, key), where, field, _not_text(value))
            return None
        if not value.strip():
            self.add(_line(parent, key), where, field, "must not be empty")
            return None
        if single_line and any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            self.add(_line(parent, key), where, field, "must be one line of text")
            return None
        return value

    def patterns(self, parent: dict[Any, Any], key: str, where: str,
                 field: str) -> tuple[str, ...] | None:
        value = parent[key]
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            self.add(_line(parent, key), where, field,
                     f"expected a string or a list of strings, got {value_kind(value)}")
            return None
        if not items:
            self.add(_line(parent, key), where, field, "must not be an empty list")
            return None
        out: list[str] = []
        for i, item in enumerate(items):
            label = field if isinstance(value, str) else f"{field}[{i}]"
            if not isinstance(item, str):
                self.add(_line(parent, key), where, label, _not_text(item))
            elif not item.strip():
                self.add(_line(parent, key), where, label, "must not be empty")
            else:
                out.append(item)
        return tuple(out) if len(out) == len(items) else None

    def filter(self, parent: dict[Any, Any], where: str, field: str) -> dict[str, str] | None:
        value = self.mapping(parent, "filter", where, field)
        if value is None:
            return None
        ok = True
        for key, item in value.items():
            if not isinstance(key, str) or not key.strip():
                self.add(_line(value, key), where, f"{field}.{key}",
                         "filter keys must be non-empty strings")
                ok = False
            elif not isinstance(item, str):
                self.add(_line(value, key), where, f"{field}.{key}",
                         _not_text(item))
                ok = False
        if isinstance(value, LineDict):
            for key, line in value.duplicates:
                self.add(line, where, f"{field}.{key}", "duplicate key")
                ok = False
        return dict(value) if ok else None

    # -- structure --

    def suite(self, data: Any) -> Suite:
        if data is None:
            self.add(None, "", "", "the file is empty; expected version, defaults and cases")
            raise self.fail()
        if not isinstance(data, dict):
            self.add(1, "", "", f"expected a mapping with version, defaults and cases at the "
                     f"top level, got {value_kind(data)}")
            raise self.fail()
        self.keys(data, _TOP_KEYS, "")
        if "version" not in data:
            self.add(_line(data), "", "version", f"is required (version: {SUITE_VERSION})")
        elif not isinstance(data["version"], int) or isinstance(data["version"], bool) \
                or data["version"] != SUITE_VERSION:
            self.add(_line(data, "version"), "", "version",
                     f"unsupported version {data['version']!r}; this kbctl reads "
                     f"version {SUITE_VERSION}")
        defaults = self.defaults(data)
        cases = data.get("cases")
        if "cases" not in data:
            self.add(_line(data), "", "cases", "is required (a list of cases)")
        elif not isinstance(cases, list):
            self.add(_line(data, "cases"), "", "cases", f"expected a list, got {value_kind(cases)}")
        elif not cases:
            self.add(_line(data, "cases"), "", "cases", "must hold at least one case")
        built: list[Case] = []
        if isinstance(cases, list):
            first_seen: dict[str, int | None] = {}
            for index, item in enumerate(cases):
                case = self.case(item, index, defaults, _line(data, "cases"), first_seen)
                if case is not None:
                    built.append(case)
        if self.problems:
            raise self.fail()
        assert defaults is not None
        return Suite(path=self.path, defaults=defaults, cases=tuple(built))

    def defaults(self, data: dict[Any, Any]) -> Defaults | None:
        raw = self.mapping(data, "defaults", "", "defaults")
        if raw is None:
            return None
        self.keys(raw, _DEFAULT_KEYS, "", "defaults.")
        top_k = self.top_k(raw, "", "defaults.topK") if "topK" in raw else DEFAULT_TOP_K
        min_score = self.score(raw, "minScore", "", "defaults.minScore") \
            if "minScore" in raw else None
        filt = self.filter(raw, "", "defaults.filter")
        pin = self.retriever(raw) if "retriever" in raw else None
        if top_k is None or filt is None or ("minScore" in raw and min_score is None) \
                or ("retriever" in raw and pin is None):
            return None
        return Defaults(top_k=top_k, min_score=min_score, filter=filt, retriever=pin)

    def retriever(self, raw: dict[Any, Any]) -> RetrieverPin | None:
        """``defaults.retriever``: the retriever the suite was written for."""
        value = raw["retriever"]
        line = _line(raw, "retriever")
        if not isinstance(value, dict):
            self.add(line, "", "defaults.retriever",
                     f"expected a mapping of {', '.join(('embedder', 'fusion', 'rerank'))}, "
                     f"got {value_kind(value)}")
            return None
        problems = pin_problems(value)
        for key, message in problems:
            field = f"defaults.retriever.{key}" if key else "defaults.retriever"
            self.add(_line(value, key) if key in value else line, "", field, message)
        if problems:
            return None
        return pin_from_mapping(value, f"{self.path}:{line}" if line else self.path)

    def case(self, item: Any, index: int, defaults: Defaults | None, list_line: int | None,
             first_seen: dict[str, int | None]) -> Case | None:
        where = f"cases[{index}]"
        if not isinstance(item, dict):
            self.add(list_line, where, "", f"expected a mapping, got {value_kind(item)}")
            return None
        before = len(self.problems)
        case_id: str | None = None
        if "id" not in item:
            self.add(_line(item), where, "id", "is required")
        else:
            case_id = self.text(item, "id", where, "id", single_line=True)
        if case_id is not None:
            where = f"case '{case_id}' ({where})"
            if case_id in first_seen:
                seen_at = first_seen[case_id]
                at = f" (first used at line {seen_at})" if seen_at else ""
                self.add(_line(item, "id"), where, "id", f"duplicate id '{case_id}'{at}")
            else:
                first_seen[case_id] = _line(item, "id")
        self.keys(item, _CASE_KEYS, where)
        question = None
        if "question" not in item:
            self.add(_line(item), where, "question", "is required")
        else:
            question = self.text(item, "question", where, "question")
            if question is not None and len(question) > MAX_QUESTION_CHARS:
                self.add(_line(item, "question"), where, "question",
                         f"is {len(question):,} characters long; at most "
                         f"{MAX_QUESTION_CHARS:,}")
                question = None
        top_k = self.top_k(item, where, "topK") if "topK" in item else None
        min_score = self.score(item, "minScore", where, "minScore") if "minScore" in item else None
        own_filter = self.filter(item, where, "filter")
        tags = self.patterns(item, "tags", where, "tags") if "tags" in item else ()
        expect = self.expect(item, where)
        if len(self.problems) > before or defaults is None:
            return None
        assert case_id is not None and question is not None and expect is not None
        assert own_filter is not None and tags is not None
        return Case(
            suite=self.path,
            index=index,
            id=case_id,
            question=question,
            top_k=top_k if top_k is not None else defaults.top_k,
            min_score=min_score if "minScore" in item else defaults.min_score,
            filter={**defaults.filter, **own_filter},
            expect=expect,
            line=_line(item),
            tags=tuple(dict.fromkeys(tag.strip() for tag in tags)),
        )

    def expect(self, item: dict[Any, Any], where: str) -> Expect | None:
        raw = self.mapping(item, "expect", where, "expect")
        if raw is None:
            return None
        before = len(self.problems)
        self.keys(raw, tuple(CHECKS), where, "expect.")
        values: dict[str, Any] = {}
        for name, check in CHECKS.items():
            if name in raw:
                value = check.parse(self, raw, name, where, f"expect.{name}")
                if value is not None and value != ():
                    values[name] = value
        if len(self.problems) > before:
            return None
        return Expect.of(values)
