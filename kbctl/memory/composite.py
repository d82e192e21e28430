"""A backend that merges several: search all, normalise, fold duplicates, tag origins.

Writes go to the first (primary) backend, or to every backend when they index the same
notes two ways (``mirror_writes``: vectors and a graph); reads of one file try the
backends in order. Each backend ranks on its own scale (a keyword-only store scores
lower than a hybrid one), so each result list is divided by its best score before
merging. Entries citing the same lines fold into one, tagged with every backend that
found them. A backend after the first whose environment fails (its engine, its model) is
left out of that call and named in its notes: the primary keeps working.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..errors import EnvironmentFailure, InputError, KbctlError
from .backend import MemoryBackend
from .model import (
    DeleteResult,
    Health,
    ListPage,
    MemoryHit,
    MemoryListing,
    MemorySearchResult,
    MemoryStats,
    MemoryText,
    SearchOptions,
    WriteResult,
)
from .paths import MemoryScope

KIND = "composite"


class CompositeMemoryBackend:
    """Several backends behind one ``MemoryBackend``; ``names`` label their entries."""

    def __init__(self, backends: Sequence[MemoryBackend],
                 names: Sequence[str] | None = None, *, mirror_writes: bool = False) -> None:
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
        self.mirror_writes = mirror_writes

    @property
    def kind(self) -> str:
        return KIND

    def search(self, scope: MemoryScope, query: str,
               options: SearchOptions | None = None) -> MemorySearchResult:
        opts = options or SearchOptions()
        started = time.perf_counter()
        merged: dict[str, MemoryHit] = {}
        modes, embedders, notes = [], [], []
        for i, (name, backend) in enumerate(zip(self.names, self.backends, strict=True)):
            try:
                result = backend.search(scope, query, opts)
            except Exception as exc:
                notes.append(_left_out(i, name, exc, "searched"))
                continue
            modes.append(result.mode)
            embedders.append(f"{name}={result.embedder}")
            notes += [f"{name}: {n}" for n in result.notes]
            best = max((h.score for h in result.hits), default=0.0)
            seen: dict[str, int] = {}
            for h in result.hits:
                hit = replace(h, id=f"{name}:{h.id}", backend=name,
                              score=round(h.score / best, 6) if best > 0 else 0.0)
                cited = f"{h.tier}\x1f{h.citation}"
                seen[cited] = seen.get(cited, 0) + 1
                key = f"{cited}\x1f{seen[cited]}"  # a backend's own entries never fold
                kept = merged.get(key)
                if kept is None:
                    merged[key] = hit
                elif hit.score > kept.score:
                    merged[key] = replace(hit, also_in=(*hit.also_in, kept.backend,
                                                        *kept.also_in))
                else:
                    merged[key] = replace(kept, also_in=(*kept.also_in, name))
        hits = sorted(merged.values(), key=_rank)
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
        for i, backend in enumerate(self.backends):
            try:
                return backend.get(scope, path, from_line=from_line, lines=lines)
            except InputError as exc:  # not there (or a bad path: every backend agrees)
                failure = exc
            except EnvironmentFailure as exc:  # a secondary down: the others still answer
                if i == 0:
                    raise
                failure = failure or exc
        assert failure is not None
        raise failure

    def append(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        return self._write("append", scope, path, text)

    def put(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        return self._write("put", scope, path, text)

    def _write(self, how: str, scope: MemoryScope, path: str, text: str) -> WriteResult:
        """The primary's write; mirrored to the others, whose failure is noted, not raised
        (each backend's own write is whole or nothing)."""
        done = getattr(self.backends[0], how)(scope, path, text)
        if not self.mirror_writes:
            return done
        notes = list(done.notes)
        for i, (name, backend) in enumerate(zip(self.names, self.backends, strict=True)):
            if i == 0:
                continue
            try:
                getattr(backend, how)(scope, path, text)
            except Exception as exc:
                notes.append(_left_out(i, name, exc, "written"))
        return replace(done, notes=tuple(notes))

    def delete(self, scope: MemoryScope, path: str) -> DeleteResult:
        done = self._primary().delete(scope, path)
        for i, (name, backend) in enumerate(zip(self.names, self.backends, strict=True)):
            if i and self.mirror_writes:
                try:
                    backend.delete(scope, path)  # type: ignore[attr-defined]
                except InputError:  # never written there
                    pass
                except Exception as exc:
                    _left_out(i, name, exc, "deleted")
        return done

    def list_files(self, scope: MemoryScope, tier: str | None = None,
                   page: ListPage | None = None) -> MemoryListing:
        return self._primary().list_files(scope, tier, page)

    def stats(self, scope: MemoryScope, *, top: int = 10) -> MemoryStats:
        return self._primary().stats(scope, top=top)

    def _primary(self) -> Any:
        return self.backends[0]

    def health(self) -> Health:
        parts = {name: b.health() for name, b in zip(self.names, self.backends, strict=True)}
        bad = [f"{name}: {h.error}" for name, h in parts.items() if not h.ok]
        return Health(kind=KIND, ok=not bad, error="; ".join(bad) or None,
                      details={name: {"kind": h.kind, "ok": h.ok, "error": h.error,
                                      **h.details} for name, h in parts.items()})


def _rank(hit: MemoryHit) -> tuple[float, int, str, int]:
    """By score; among equals, a fact known to hold before text of unknown date, and that
    before a fact a later note ended."""
    known = hit.valid_at is not None or hit.invalid_at is not None
    standing = 1 if not known else (0 if hit.current else 2)
    return (-hit.score, standing, hit.path, hit.start_line)


def _left_out(index: int, name: str, exc: BaseException, how: str) -> str:
    """The note for a backend left out of a call; the primary's failure is raised, as is
    anything but an environment failure (a bad path is bad for every backend)."""
    if index == 0 or (isinstance(exc, KbctlError) and not isinstance(exc, EnvironmentFailure)):
        raise exc
    why = exc.message if isinstance(exc, KbctlError) else f"{type(exc).__name__}: {exc}"
    return f"{name}: not {how}, left out: {why}"


class Unavailable:
    """A backend that could not be opened: every call raises why, so a composite leaves it
    out and says so, and its health names it."""

    def __init__(self, kind: str, error: KbctlError) -> None:
        self._kind = kind
        self.error = error

    @property
    def kind(self) -> str:
        return self._kind

    def search(self, scope: MemoryScope, query: str,
               options: SearchOptions | None = None) -> MemorySearchResult:
        raise self.error

    def get(self, scope: MemoryScope, path: str, *, from_line: int | None = None,
            lines: int | None = None) -> MemoryText:
        raise self.error

    def append(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        raise self.error

    def put(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        raise self.error

    def delete(self, scope: MemoryScope, path: str) -> DeleteResult:
        raise self.error

    def health(self) -> Health:
        return Health(kind=self._kind, ok=False, error=self.error.message)
