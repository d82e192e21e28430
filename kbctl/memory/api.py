"""The operations behind ``kbctl memory``: settings (and an explicit scope) in, a result
dataclass out.

The scope comes from ``--agent``/``--user``, ``KBCTL_AGENT``/``KBCTL_USER`` or
kbctl.yaml, resolved by ``scope_for``; a caller with a pinned scope (an MCP session)
passes its own ``MemoryScope`` instead. Paths are checked before the database is opened,
so a bad path writes nothing and needs no server.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import InputError, KbctlError
from ..hygiene import describe_bad_char, require_clean
from ..linefile import LoadError, decode_capped
from ..projectfiles import open_within
from ..wiring import input_window, open_store, remember_endpoint, resolve_embedder
from .choice import MissingExtra, chosen_backend, require_graph
from .model import (
    MAX_FILE_BYTES,
    DeleteResult,
    Health,
    ImportFailure,
    ImportReport,
    ListPage,
    MemoryListing,
    MemorySearchResult,
    MemoryStats,
    MemoryText,
    SearchOptions,
    WriteResult,
)
from .paths import AGENT_TIER, MemoryScope, parse_path, scope_of, tier_prefix
from .policy import FlushPolicy, should_flush
from .postgres import PostgresMemoryBackend

MAX_NOTE_BYTES = MAX_FILE_BYTES  # a note imported may be as large as a memory file holds
MAX_STATS_TOP = 1000  # most recalled entries ``stats`` lists, at most

Announce = Callable[[str], None]


def scope_for(settings: Settings) -> MemoryScope:
    """The caller's scope from resolved settings; an agent id is required."""
    return scope_of(settings.agent, settings.user)


@contextmanager
def open_backend(settings: Settings, *, writing: bool = False,
                 announce: Announce = lambda _m: None) -> Iterator[Any]:
    """The configured backend (``memory.backend``) on the configured database, with the
    KB's embedder. Only a write may make the embedded database: a read of a mistyped
    ``--data-dir`` is refused, not answered with nothing and a new database left behind."""
    require_graph(settings)
    with open_store(settings, existing=not writing, writes=writing) as store, (
            store.locks.embedder(waiting=announce) if writing else nullcontext()):
        # a write embeds: its embedder is resolved, and used, while no reembed changes it
        # the graph's vectors are not rows of this KB: a KB whose memory lives in the graph
        # "holds nothing", and a write there would choose its embedder afresh
        rebinds = writing and not (settings.memory.backend == "graph"
                                   and settings.embedder is None
                                   and store.embedder.identity() is not None)
        embedder = resolve_embedder(store, settings, writing=rebinds, announce=announce)
        vectors = PostgresMemoryBackend(store.conn, embedder,
                                        vector_weight=settings.vector_weight,
                                        window=input_window(settings, embedder))
        with chosen_backend(settings, vectors, embedder, writing=writing) as backend:
            yield backend
        if writing and embedder is not None:  # the write embedded through it
            remember_endpoint(store, settings, announce)


def append(settings: Settings, path: str, text: str, *, scope: MemoryScope | None = None,
           announce: Announce = lambda _m: None) -> WriteResult:
    scope = scope or scope_for(settings)
    parse_path(path).owner(scope)
    require_clean("the text", text)  # before the store is opened: a NUL is bad input
    with open_backend(settings, writing=True, announce=announce) as backend:
        return backend.append(scope, path, text)


def search(settings: Settings, query: str, options: SearchOptions | None = None, *,
           scope: MemoryScope | None = None) -> MemorySearchResult:
    """Search the caller's memory; without ``options``, the ``memory:`` settings rank.

    ``options.track`` (or the ``memory.track`` setting) records the recall.
    """
    scope = scope or scope_for(settings)
    opts = options or SearchOptions.from_settings(settings.memory)
    if not opts.track and settings.memory.track:
        opts = replace(opts, track=True)
    if not settings.typo_tolerance:
        opts = replace(opts, typo_tolerance=False)
    opts = replace(opts, thesaurus=settings.thesaurus)
    with open_backend(settings) as backend:
        return backend.search(scope, query, opts)


def get(settings: Settings, path: str, *, from_line: int | None = None,
        lines: int | None = None, scope: MemoryScope | None = None) -> MemoryText:
    scope = scope or scope_for(settings)
    parse_path(path).owner(scope)
    with open_backend(settings) as backend:
        return backend.get(scope, path, from_line=from_line, lines=lines)


def list_files(settings: Settings, tier: str | None = None, *,
               page: ListPage | None = None,
               scope: MemoryScope | None = None) -> MemoryListing:
    scope = scope or scope_for(settings)
    with open_backend(settings) as backend:
        return backend.list_files(scope, tier, page)


def delete(settings: Settings, path: str, *,
           scope: MemoryScope | None = None) -> DeleteResult:
    scope = scope or scope_for(settings)
    parse_path(path).owner(scope)
    with open_backend(settings) as backend:
        return backend.delete(scope, path)


def stats(settings: Settings, *, top: int = 10,
          scope: MemoryScope | None = None) -> MemoryStats:
    if not 0 <= top <= MAX_STATS_TOP:
        raise InputError(f"--top must be within 0..{MAX_STATS_TOP:,}, got {top:,}")
    scope = scope or scope_for(settings)
    with open_backend(settings) as backend:
        return backend.stats(scope, top=top)


def health(settings: Settings) -> Health:
    """Never raises for an environment failure: an unreachable database is ``ok: false``.

    Carries the memory settings in force, so an operator sees what config resolved to.
    """
    try:
        with open_backend(settings) as backend:
            return replace(backend.health(), settings=settings.memory)
    except MissingExtra:  # a choice this install cannot serve: bad usage, not a health
        raise
    except KbctlError as exc:
        return Health(kind=settings.memory.backend, ok=False, error=exc.message,
                      settings=settings.memory)


def flush_due(settings: Settings, used_tokens: int,
              context_window: int | None = None) -> bool:
    """Whether an agent runtime should flush now, by the ``memory.flush`` settings.

    ``context_window`` falls back to ``memory.flush.context_window``; a disabled policy
    never asks for a flush.
    """
    flush = settings.memory.flush
    if not flush.enabled:
        return False
    window = context_window if context_window is not None else flush.context_window
    if window is None:
        raise InputError("no context window given and memory.flush.context_window is not set")
    return should_flush(used_tokens, window, FlushPolicy.from_settings(flush))


def import_dir(settings: Settings, directory: Path, *, tier: str = AGENT_TIER,
               scope: MemoryScope | None = None,
               announce: Announce = lambda _m: None) -> ImportReport:
    """Index every ``.md`` file under ``directory`` as ``memory/<tier>/<relative path>``.

    Idempotent: a file whose content hash is stored already is left as it is. A file that
    cannot be read or breaks a path rule is reported and the others go on.
    """
    scope = scope or scope_for(settings)
    prefix = tier_prefix(tier)
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"{root} is not a directory")
    parse_path(prefix + "x.md").owner(scope)  # a user tier needs a user, before any work
    found = _markdown_files(root)
    base = root.resolve()
    if not found:  # a wrong folder, or notes named otherwise: not a silent success
        raise InputError(f"{root} holds no .md file to import",
                         hint="import reads *.md files (hidden entries and links that "
                         "leave the folder are skipped)")
    results: list[WriteResult] = []
    errors: list[ImportFailure] = []
    with open_backend(settings, writing=True, announce=announce) as backend:
        for file in found:
            rel = file.relative_to(root).as_posix()
            try:
                text = _read_note(file, base)
                bad = describe_bad_char(text)
                if bad:
                    errors.append(ImportFailure(rel, f"holds {bad}, which cannot be stored"))
                    continue
                results.append(backend.put(scope, prefix + rel, text))
            except OSError as exc:
                errors.append(ImportFailure(rel, f"cannot read: {exc.strerror or exc}"))
            except RuntimeError:  # a symlink loop
                errors.append(ImportFailure(rel, "cannot read: a symlink loop"))
            except LoadError as exc:  # too large, or not UTF-8
                errors.append(ImportFailure(rel, exc.message))
            except KbctlError as exc:
                if exc.exit_code == 3:  # the environment failed: stop, do not mask it
                    raise
                errors.append(ImportFailure(rel, exc.message))
    return ImportReport(directory=str(root), tier=tier, files=results, errors=errors)


def _read_note(file: Path, base: Path) -> str:
    """The text of a note listed under ``base``, read only if it still resolves inside it
    to a regular file that is not hidden: a link swapped in after the listing (or a link to
    a hidden file) was followed, and a file outside the folder imported into memory."""
    real = file.resolve()
    if real.is_relative_to(base) and any(p.startswith(".")
                                         for p in real.relative_to(base).parts):
        raise LoadError("it links to a hidden file, which import does not read", None)
    with os.fdopen(open_within(file, base), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise LoadError("not a regular file", None)
        return decode_capped(handle, MAX_NOTE_BYTES, what="the file")


def _markdown_files(root: Path) -> list[Path]:
    """``*.md`` files under ``root``, skipping hidden entries and links that leave it."""
    base = root.resolve()
    out = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if not path.resolve().is_relative_to(base):
            continue
        out.append(path)
    return out
