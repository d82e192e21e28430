"""The loaded shape of an eval suite: what the runner needs, plus where each case lives."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kbctl.pipeline.results import MAX_K, MIN_K

__all__ = ["DEFAULT_TOP_K", "MAX_K", "MIN_K", "Case", "Defaults", "Expect", "Suite"]

DEFAULT_TOP_K = 5  # topK bounds are the retriever's own (MIN_K..MAX_K): no silent cut


@dataclass(frozen=True)
class Expect:
    """A case's declared checks; an empty tuple or ``None`` means "not declared".

    ``source_includes`` passes when ANY pattern matches a retrieved chunk,
    ``not_source_includes`` when NONE does.
    """

    source_includes: tuple[str, ...] = ()
    not_source_includes: tuple[str, ...] = ()
    min_score: float | None = None
    anchor: str | None = None

    @property
    def declared(self) -> tuple[str, ...]:
        """Names of the declared checks, in evaluation order."""
        names = []
        if self.source_includes:
            names.append("sourceIncludes")
        if self.not_source_includes:
            names.append("notSourceIncludes")
        if self.min_score is not None:
            names.append("minScore")
        if self.anchor is not None:
            names.append("anchor")
        return tuple(names)

    def to_dict(self) -> dict[str, object]:
        """The suite-file spelling (lists for the pattern checks), declared checks only."""
        out: dict[str, object] = {}
        if self.source_includes:
            out["sourceIncludes"] = list(self.source_includes)
        if self.not_source_includes:
            out["notSourceIncludes"] = list(self.not_source_includes)
        if self.min_score is not None:
            out["minScore"] = self.min_score
        if self.anchor is not None:
            out["anchor"] = self.anchor
        return out


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

    @property
    def key(self) -> tuple[str, str]:
        return (self.suite, self.id)


@dataclass(frozen=True)
class Defaults:
    top_k: int = DEFAULT_TOP_K
    min_score: float | None = None
    filter: dict[str, str] = field(default_factory=dict)


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
