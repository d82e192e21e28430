"""What memory operations take and return; plain frozen dataclasses, rendered elsewhere."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from ..errors import InputError
from ..memory_config import MemorySettings, search_problem
from ..results import MAX_QUESTION_CHARS
from ..store.thesaurus import BUILT_IN, Thesaurus
from .chunking import line_window, split_lines
from .paths import TIERS, USER_TIER, MemoryPath, MemoryScope, tier_prefix

_DEFAULTS = MemorySettings()
DEFAULT_MAX_RESULTS = _DEFAULTS.max_results
DEFAULT_MMR_LAMBDA = _DEFAULTS.mmr_lambda
DEFAULT_HALF_LIFE_DAYS = _DEFAULTS.half_life_days

# A memory file holds at most this much, as a docs page may (kbctl.sources.files): every
# append rewrites and re-chunks its file, so a file an agent appended to for months would
# make each append slower and larger without end.
MAX_FILE_BYTES = 5 * 1024 * 1024
DEFAULT_LIST_LIMIT = 1000
MAX_LIST_LIMIT = 100_000


def citation(path: str, start_line: int, end_line: int) -> str:
    """``path#Lstart-Lend``: what ``get --from start --lines (end-start+1)`` returns."""
    return f"{path}#L{start_line}-L{end_line}"


def check_query(query: str) -> None:
    """A question every backend refuses: empty, or past the length a question may have."""
    if not query.strip():
        raise InputError("the search query is empty")
    if len(query) > MAX_QUESTION_CHARS:
        raise InputError(f"the search query is {len(query):,} characters long; at most "
                         f"{MAX_QUESTION_CHARS:,}")


def check_tier(scope: MemoryScope, tier: str | None) -> None:
    """A ``list`` tier filter the caller may use."""
    if tier is not None and tier not in TIERS:
        raise InputError(f"--tier must be one of {', '.join(TIERS)}, got '{tier}'")
    if tier == USER_TIER and scope.user_id is None:
        raise InputError("the user tier needs a user", hint="pass --user ID")


def check_window(from_line: int | None, lines: int | None) -> None:
    if from_line is not None and from_line < 1:
        raise InputError(f"--from must be 1 or more, got {from_line}")
    if lines is not None and lines < 1:
        raise InputError(f"--lines must be 1 or more, got {lines}")


@dataclass(frozen=True)
class SearchOptions:
    """How to rank; ``today`` pins the decay clock (tests, replays), else the current date."""

    max_results: int = DEFAULT_MAX_RESULTS
    min_score: float | None = None
    mmr: bool = False
    mmr_lambda: float = DEFAULT_MMR_LAMBDA
    decay: bool = False
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS
    track: bool = False
    today: date | None = None
    typo_tolerance: bool = True
    thesaurus: Thesaurus = BUILT_IN

    @classmethod
    def from_settings(cls, m: MemorySettings, **overrides: Any) -> SearchOptions:
        """The options ``memory:`` settings ask for, with single fields overridden."""
        base = {"max_results": m.max_results, "min_score": m.min_score, "mmr": m.mmr,
                "mmr_lambda": m.mmr_lambda, "decay": m.decay,
                "half_life_days": m.half_life_days, "track": m.track}
        return cls(**{**base, **overrides})

    def __post_init__(self) -> None:
        for name in ("max_results", "min_score", "mmr_lambda", "half_life_days"):
            problem = search_problem(name, getattr(self, name))
            if problem:
                raise InputError(f"--{name.replace('_', '-')} {problem}")


@dataclass(frozen=True)
class MemoryHit:
    """One retrieved line range of a memory file, with the backend it came from."""

    id: str
    path: str
    tier: str
    score: float
    start_line: int
    end_line: int
    content: str
    created_at: datetime | None
    backend: str
    text_score: float | None = None
    vector_score: float | None = None
    also_in: tuple[str, ...] = ()
    # a graph fact's validity interval: since when it holds, and when a later note ended it
    valid_at: datetime | None = None
    invalid_at: datetime | None = None

    @property
    def citation(self) -> str:
        return citation(self.path, self.start_line, self.end_line)

    @property
    def current(self) -> bool:
        """Whether the entry still holds (no later note ended it)."""
        return self.invalid_at is None


@dataclass(frozen=True)
class MemorySearchResult:
    """A ranked search; ``mode`` is ``hybrid`` or ``keyword`` (no embedder in this KB)."""

    query: str
    scope: MemoryScope
    hits: list[MemoryHit]
    mode: str
    embedder: str
    backend: str
    elapsed_ms: float
    notes: list[str] = field(default_factory=list)
    tracked: bool = False

    @property
    def keyword_only(self) -> bool:
        return self.mode == "keyword"


@dataclass(frozen=True)
class MemoryText:
    """A file's text, or a 1-indexed window of its lines: the lines joined by newlines,
    with no final one, exactly as a search hit citing them shows its content (``jq -r``
    and the table add the last newline back)."""

    path: str
    tier: str
    from_line: int
    line_count: int
    total_lines: int
    text: str
    backend: str


def text_window(mp: MemoryPath, content: str, from_line: int | None, lines: int | None,
                backend: str) -> MemoryText:
    """A file's text, or ``lines`` lines from 1-indexed ``from_line``, as ``get`` shows it."""
    all_lines = split_lines(content)
    start = from_line or 1
    shown = max(0, min(len(all_lines) - start + 1,
                       lines if lines is not None else len(all_lines)))
    return MemoryText(path=mp.path, tier=mp.tier, from_line=start, line_count=shown,
                      total_lines=len(all_lines), text=line_window(all_lines, start, lines),
                      backend=backend)


@dataclass(frozen=True)
class WriteResult:
    """The outcome of writing one file: ``created``, ``appended``, ``updated``,
    ``unchanged``; chunks kept as they were, and chunks (re)indexed."""

    path: str
    tier: str
    status: str
    lines: int
    chunks: int
    reindexed: int
    embedded: int
    content_hash: str
    notes: tuple[str, ...] = ()  # e.g. a composite side that could not take the write


@dataclass(frozen=True)
class MemoryFile:
    path: str
    tier: str
    lines: int
    chunks: int
    chars: int
    content_hash: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class ListPage:
    """Which files one ``list`` shows: those under ``prefix``, after the path ``after``
    (the previous page's last), at most ``limit``: an agent with 50,000 notes is listed
    page by page, in bounded memory."""

    prefix: str | None = None
    after: str | None = None
    limit: int = DEFAULT_LIST_LIMIT

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIST_LIMIT:
            raise InputError(f"--limit must be within 1..{MAX_LIST_LIMIT:,}, got {self.limit:,}")


@dataclass(frozen=True)
class MemoryListing:
    scope: MemoryScope
    tier: str | None
    files: list[MemoryFile]
    total: int = 0  # files matching the tier and prefix, on every page
    next_after: str | None = None  # pass as ``after`` for the next page; None on the last


@dataclass(frozen=True)
class DeleteResult:
    path: str
    tier: str
    chunks: int


@dataclass(frozen=True)
class Health:
    kind: str
    ok: bool
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    settings: MemorySettings | None = None


@dataclass(frozen=True)
class RecallStat:
    """How often one entry came back from tracked searches."""

    path: str
    tier: str
    start_line: int
    end_line: int
    recalls: int
    # by the caller's own searches; None when only other users' recalled it (shared entry)
    last_recalled_at: datetime | None

    @property
    def citation(self) -> str:
        return citation(self.path, self.start_line, self.end_line)


@dataclass(frozen=True)
class TierCount:
    tier: str
    files: int
    chunks: int


@dataclass(frozen=True)
class MemoryStats:
    scope: MemoryScope
    backend: str
    mode: str
    embedder: str
    tiers: list[TierCount]
    searches_tracked: int
    top: list[RecallStat]


@dataclass(frozen=True)
class ImportFailure:
    file: str
    error: str


@dataclass(frozen=True)
class ImportReport:
    """``import DIR``: one WriteResult per file; files that broke a rule are in ``errors``."""

    directory: str
    tier: str
    files: list[WriteResult]
    errors: list[ImportFailure]

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def ok(self) -> bool:
        return not self.errors


def check_file_size(mp: MemoryPath, content: str, *, appending: bool) -> None:
    """Refuse a file past ``MAX_FILE_BYTES``, telling an agent where to write instead."""
    size = len(content.encode("utf-8", "surrogatepass"))
    if size <= MAX_FILE_BYTES:
        return
    if appending:
        dated = f"{tier_prefix(mp.tier)}{date.today().isoformat()}.md"
        raise InputError(f"appending would grow {mp.path} to {size:,} bytes, past the "
                         f"{MAX_FILE_BYTES:,} a memory file holds",
                         hint=f"append to a new file, e.g. a dated one: {dated}; or replace "
                         "this one with a condensed version")
    raise InputError(f"{mp.path} would hold {size:,} bytes, past the {MAX_FILE_BYTES:,} a "
                     "memory file holds", hint="split it into several files")


def missing_file(path: str) -> InputError:
    """The error for a file the caller's scope does not hold (another scope's looks the same)."""
    return InputError(f"no memory file '{path}' in this scope")


def content_sha256(text: str) -> str:
    """A memory file's content hash, as both backends record it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
