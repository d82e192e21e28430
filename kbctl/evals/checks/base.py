"""What every eval check shares: what it sees of a retrieved chunk, what it returns, and
the shape of a check (parse its value from a suite file, run it against the hits)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

SHOWN = 5  # how many citations or anchors a failure message lists


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


class SuiteReader(Protocol):
    """The suite validator's typed readers: each records a problem (with the file, line
    and field) and returns ``None`` when the value is not acceptable."""

    def patterns(self, parent: Mapping[Any, Any], key: str, where: str,
                 field: str) -> tuple[str, ...] | None: ...

    def score(self, parent: Mapping[Any, Any], key: str, where: str,
              field: str) -> float | None: ...

    def text(self, parent: Mapping[Any, Any], key: str, where: str, field: str,
             *, single_line: bool = False) -> str | None: ...


@dataclass(frozen=True)
class Check:
    """One ``expect`` key: ``parse(reader, expect, key, where, field)`` reads its value
    from the suite (``None`` when invalid, the problem recorded); ``run(value, retrieved)``
    judges the hits."""

    parse: Callable[[SuiteReader, Mapping[Any, Any], str, str, str], Any]
    run: Callable[[Any, Sequence[Retrieved]], CheckResult]


def matches(chunk: Retrieved, pattern: str) -> bool:
    """Case-insensitive substring match against the chunk's citation, url and source ref."""
    needle = pattern.lower()
    return any(needle in text.lower() for text in (chunk.citation, chunk.url, chunk.source_ref))


def quoted(patterns: Sequence[str]) -> str:
    text = ", ".join(f"'{p}'" for p in patterns)
    return text if len(patterns) == 1 else f"any of {text}"


def listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    more = len(items) - SHOWN
    return f"{shown}, … (+{more} more)" if more > 0 else shown


def read_patterns(reader: SuiteReader, expect: Mapping[Any, Any], key: str, where: str,
                  field: str) -> tuple[str, ...] | None:
    return reader.patterns(expect, key, where, field)


def read_score(reader: SuiteReader, expect: Mapping[Any, Any], key: str, where: str,
               field: str) -> float | None:
    return reader.score(expect, key, where, field)


def read_line(reader: SuiteReader, expect: Mapping[Any, Any], key: str, where: str,
              field: str) -> str | None:
    return reader.text(expect, key, where, field, single_line=True)
