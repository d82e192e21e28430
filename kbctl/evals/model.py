"""The loaded shape of an eval suite: what the runner needs, plus where each case lives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbctl.evals.retriever import RetrieverPin
from kbctl.results import MAX_K, MIN_K

__all__ = ["DEFAULT_TOP_K", "MAX_K", "MIN_K", "Case", "Defaults", "Expect", "Suite"]

DEFAULT_TOP_K = 5  # topK bounds are the retriever's own (MIN_K..MAX_K): no silent cut


@dataclass(frozen=True, init=False)
class Expect:
    """A case's declared checks as ``(suite-file key, value)`` pairs, in the order they run
    (see ``kbctl.evals.checks.CHECKS``); a check that is absent is "not declared".

    The keyword arguments are a shorthand for the built-in checks (``source_includes``
    passes when ANY pattern matches a retrieved chunk, ``not_source_includes`` when NONE
    does); ``more`` carries any other registered check.
    """

    checks: tuple[tuple[str, Any], ...]

    def __init__(self, source_includes: Sequence[str] = (),
                 not_source_includes: Sequence[str] = (), min_score: float | None = None,
                 anchor: str | None = None, *, more: Mapping[str, Any] | None = None) -> None:
        pairs: list[tuple[str, Any]] = []
        if source_includes:
            pairs.append(("sourceIncludes", tuple(source_includes)))
        if not_source_includes:
            pairs.append(("notSourceIncludes", tuple(not_source_includes)))
        if min_score is not None:
            pairs.append(("minScore", min_score))
        if anchor is not None:
            pairs.append(("anchor", anchor))
        pairs += list((more or {}).items())
        object.__setattr__(self, "checks", tuple(pairs))

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Expect:
        """Checks in the order given (the suite reader gives the registry's order)."""
        expect = cls()
        object.__setattr__(expect, "checks", tuple(values.items()))
        return expect

    def value(self, name: str) -> Any:
        return dict(self.checks).get(name)

    @property
    def source_includes(self) -> tuple[str, ...]:
        return self.value("sourceIncludes") or ()

    @property
    def not_source_includes(self) -> tuple[str, ...]:
        return self.value("notSourceIncludes") or ()

    @property
    def min_score(self) -> float | None:
        return self.value("minScore")

    @property
    def anchor(self) -> str | None:
        return self.value("anchor")

    @property
    def declared(self) -> tuple[str, ...]:
        """Names of the declared checks, in evaluation order."""
        return tuple(name for name, _ in self.checks)

    def to_dict(self) -> dict[str, object]:
        """The suite-file spelling (lists for the pattern checks), declared checks only."""
        return {name: list(value) if isinstance(value, tuple) else value
                for name, value in self.checks}


@dataclass(frozen=True)
class Case:
    """One question with its effective retrieval settings (suite defaults applied).

    ``suite`` is the suite file's path as given (POSIX separators); cases are identified by
    ``(suite, id)``, ids being unique per file. ``index`` is the 0-based position in
    ``cases`` and ``line`` the 1-based line of the case mapping (``None`` if unknown).
    """

    suite: str
    index: int
    id: str
    question: str
    top_k: int
    min_score: float | None
    filter: dict[str, str]
    expect: Expect
    line: int | None = None
    tags: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.suite, self.id)


@dataclass(frozen=True)
class Defaults:
    top_k: int = DEFAULT_TOP_K
    min_score: float | None = None
    filter: dict[str, str] = field(default_factory=dict)
    retriever: RetrieverPin | None = None  # the retriever the suite was written for


@dataclass(frozen=True)
class Suite:
    """One suite file, validated."""

    path: str
    defaults: Defaults
    cases: tuple[Case, ...]

    @property
    def name(self) -> str:
        """The file stem: the JUnit classname and the short label of the suite."""
        return Path(self.path).stem
