"""The retriever a gate was written for, and the one a run measured.

A suite tuned against hybrid search passes or fails for other reasons on a lexical-only
knowledge base (a CI job without the embedder's key builds one, with a single note on
stderr). A pin names the retriever (embedder, fusion, reranker) a suite, ``kbctl.yaml`` or
``--retriever`` requires; every report names the retriever it measured, so neither a run
nor a baseline comparison silently measures another.

Pure shapes only: whether a spec names a known provider is checked where the registries
live (``kbctl.pipeline.pinning``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kbctl.linefile import value_kind
from kbctl.results import FUSIONS

PIN_KEYS = ("embedder", "fusion", "rerank")


@dataclass(frozen=True)
class RetrieverPin:
    """What a gate requires; ``None`` leaves that part free. ``source`` says where the pin
    was written (``docs.yaml:3``, ``kbctl.yaml:8``, ``--retriever``), for messages."""

    embedder: str | None = None
    fusion: str | None = None
    rerank: str | None = None
    source: str = ""

    def describe(self) -> str:
        parts = [f"{key} {value}" for key, value in
                 (("embedder", self.embedder), ("fusion", self.fusion),
                  ("rerank", self.rerank)) if value is not None]
        return ", ".join(parts)


@dataclass(frozen=True)
class MeasuredRetriever:
    """The retriever a run used: identity strings as the KB and providers show them."""

    embedder: str  # "none": lexical-only
    fusion: str
    vector_weight: float
    reranker: str = "none"

    @property
    def lexical(self) -> bool:
        return self.embedder == "none"

    def to_json(self) -> dict[str, Any]:
        return {"embedder": self.embedder,
                "mode": "lexical" if self.lexical else "hybrid",
                "fusion": None if self.lexical else self.fusion,
                "vectorWeight": None if self.lexical or self.fusion != "weighted"
                else self.vector_weight,
                "reranker": self.reranker}

    def describe(self) -> str:
        if self.lexical:
            head = "lexical only (no embedder)"
        elif self.fusion == "weighted":
            head = (f"hybrid, {self.embedder}, weighted fusion "
                    f"(vector weight {self.vector_weight:g})")
        else:
            head = f"hybrid, {self.embedder}, {self.fusion} fusion"
        return head + ("" if self.reranker == "none" else f", reranked by {self.reranker}")


def pin_problems(raw: Mapping[Any, Any]) -> list[tuple[str, str]]:
    """``(key, what is wrong)`` for each problem of a ``retriever:`` mapping."""
    problems: list[tuple[str, str]] = []
    for key, value in raw.items():
        if key not in PIN_KEYS:
            problems.append((str(key), f"unknown key; known: {', '.join(PIN_KEYS)}"))
        elif not isinstance(value, str) or not value.strip():
            problems.append((key, f"expected a non-empty string, got {value_kind(value)}"
                             if not isinstance(value, str) else "must not be empty"))
        elif key == "fusion" and value.strip() not in FUSIONS:
            problems.append((key, f"must be {' or '.join(FUSIONS)}, got {value!r}"))
    if not problems and not raw:
        problems.append(("", f"names nothing to require; give {', '.join(PIN_KEYS)}"))
    return problems


def pin_from_mapping(raw: Mapping[Any, Any], source: str) -> RetrieverPin:
    """A checked ``retriever:`` mapping as a pin (call ``pin_problems`` first)."""
    values = {key: str(raw[key]).strip() for key in PIN_KEYS if key in raw}
    return RetrieverPin(**values, source=source)


def pin_from_text(text: str, source: str,
                  fail: Callable[[str], Exception]) -> RetrieverPin:
    """``--retriever``: ``EMBEDDER`` or ``embedder=…,fusion=…,rerank=…`` (a leading part
    without ``=`` is the embedder)."""
    raw: dict[str, str] = {}
    for index, part in enumerate(p.strip() for p in text.split(",")):
        key, sep, value = part.partition("=")
        if not sep and index == 0:
            key, value = "embedder", part
        elif not sep:
            raise fail(f"{source} {text!r}: '{part}' is not key=value")
        key = key.strip()
        if key in raw:
            raise fail(f"{source} {text!r}: '{key}' is given twice")
        raw[key] = value.strip()
    problems = pin_problems(raw)
    if problems:
        key, message = problems[0]
        raise fail(f"{source} {text!r}: {key + ': ' if key else ''}{message}")
    return pin_from_mapping(raw, source)
