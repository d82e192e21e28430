"""Row shapes the store reads and writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class SourceRecord:
    """One document as stored: what it is, where it cites to, and the hash of its text."""

    namespace: str
    ref: str
    kind: str
    url: str
    title: str
    content_hash: str
    def_id: str | None = None
    chunk_count: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    fetched_at: datetime | None = None


@dataclass(frozen=True)
class ChunkRecord:
    """One chunk to write; ``embedding`` is None in a lexical-only KB."""

    ordinal: int
    text: str
    meta: dict[str, Any]
    embedding: list[float] | None = None


@dataclass(frozen=True)
class ScoredChunk:
    """A chunk with its fused score (0..1) and the two components it came from."""

    id: int
    namespace: str
    source_ref: str
    ordinal: int
    text: str
    meta: dict[str, Any]
    score: float
    text_score: float
    vector_score: float | None
    source_url: str
    source_title: str
    fused_score: float | None = None  # set when a reranker re-scored the chunk


@dataclass(frozen=True)
class SourceDef:
    """A source definition as the user gave it (kind, target, options), kept for resync."""

    namespace: str
    id: str
    kind: str
    target: str
    options: dict[str, Any] = field(default_factory=dict)
    last_run_at: datetime | None = None
    last_ok_at: datetime | None = None
    last_errors: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class NamespaceStatus:
    """What ``kbctl status`` shows for one namespace."""

    namespace: str
    sources: int
    chunks: int
    definitions: int
    last_run_at: datetime | None
    last_ok_at: datetime | None
    last_run_failures: int
    generators: list[str] = field(default_factory=list)  # docs generator profiles cited
