"""A backend that merges several: search all, normalise, fold duplicates, tag origins.

Writes go to the first (primary) backend; reads of one file try the backends in order.
Each backend ranks on its own scale (a keyword-only store scores lower than a hybrid
one), so each result list is divided by its best score before merging.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import replace

from ..errors import InputError, KbctlError
from .backend import MemoryBackend
from .model import Health, MemoryHit, MemorySearchResult, MemoryText, SearchOptions, WriteResult
from .paths import MemoryScope

KIND = "composite"


class CompositeMemoryBackend:
    """Several backends behind one ``MemoryBackend``; ``names`` label their entries."""

    def __init__(self, backends: Sequence[MemoryBackend],
                 names: Sequence[str] | None = None) -> None:
        if not backends:
            raise InputError("a composite memory backend needs at least one backend")
        labels = list(names) if names is not None else [b.kind for b in backends]
        if len(labels) != len(backends):
            raise InputError("one name per backend, please")
        seen: dict[str, int] = {}
        self.names: list[str] = []
        for label in labels:  # two backends of one kind still get distinct tags
            seen[label] = seen.get(label, 0) + 1
            self.names.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
        self.backends = list(backends)

    @property
    def kind(self) -> str:
        return KIND

    def search(self, scope: MemoryScope, query: str,
               options: SearchOptions | None = None) -> MemorySearchResult:
        opts = options or SearchOptions()
        started = time.perf_counter()
        merged: dict[str, MemoryHit] = {}
        modes, embedders, notes = [], [], []
        for name, backend in zip(self.names, self.backends, strict=True):
            result = backend.search(scope, query, opts)
            modes.append(result.mode)
            embedders.append(f"{name}={result.embedder}")
            notes += [f"{name}: {n}" for n in result.notes]
            best = max((h.score for h in result.hits), default=0.0)
            for h in result.hits:
                hit = replace(h, id=f"{name}:{h.id}", backend=name,
                              score=round(h.score / best, 6) if best > 0 else 0.0)
                key = _fold_key(h)
                kept = merged.get(key)
                if kept is None:
                    merged[key] = hit
                elif hit.score > kept.score:
                    merged[key] = replace(hit, also_in=(*hit.also_in, kept.backend,
                                                        *kept.also_in))
                else:
                    merged[key] = replace(kept, also_in=(*kept.also_in, name))
        hits = sorted(merged.values(), key=lambda h: (-h.score, h.path, h.start_line))
        if opts.min_score is not None:
            hits = [h for h in hits if h.score >= opts.min_score]
        mode = modes[0] if len(set(modes)) == 1 else "mixed"
        return MemorySearchResult(
            query=query, scope=scope, hits=hits[:opts.max_results], mode=mode,
            embedder=", ".join(embedders), backend=KIND,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 2), notes=notes)

    def get(self, scope: MemoryScope, path: str, *, from_line: int | None = None,
            lines: int | None = None) -> MemoryText:
        """The file from the first backend that has it."""
        failure: KbctlError | None = None
        for backend in self.backends:
            try:
                return backend.get(scope, path, from_line=from_line, lines=lines)
            except InputError as exc:  # not there (or a bad path: every backend agrees)
                failure = exc
        assert failure is not None
        raise failure

    def append(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        return self.backends[0].append(scope, path, text)

    def health(self) -> Health:
        parts = {name: b.health() for name, b in zip(self.names, self.backends, strict=True)}
        bad = [f"{name}: {h.error}" for name, h in parts.items() if not h.ok]
        return Health(kind=KIND, ok=not bad, error="; ".join(bad) or None,
                      details={name: {"kind": h.kind, "ok": h.ok, "error": h.error}
                               for name, h in parts.items()})


def _fold_key(hit: MemoryHit) -> str:
    """Same tier, path and text (whitespace-insensitive) means the same entry."""
    text = " ".join(hit.content.split())
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"{hit.tier}\x1f{hit.path}\x1f{digest}"
