"""The chunk shape every chunker returns and the pipeline stores."""

from __future__ import annotations

from dataclasses import dataclass, field

CHARS_PER_TOKEN = 4
DEFAULT_MAX_TOKENS = 512
DEFAULT_OVERLAP_TOKENS = 64


# A page title or heading is kept to this many characters: every result carries its title
# and heading path, so a hostile 1 MB <title> made every answer megabytes long.
MAX_TITLE_CHARS = 500


def clip_title(name: str) -> str:
    """A title or heading as stored: its first ``MAX_TITLE_CHARS`` characters, "…" ended."""
    return name if len(name) <= MAX_TITLE_CHARS else name[:MAX_TITLE_CHARS - 1] + "…"


def estimate_tokens(text: str) -> int:
    """≈4 characters per token: cheap, deterministic, provider-independent."""
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN) if text else 0


@dataclass(frozen=True)
class Chunk:
    """One retrievable unit of a document.

    ``text`` is what gets indexed and embedded (breadcrumb included); ``anchor`` is the
    fragment a citation should point at (``None`` when the chunk sits above any heading);
    ``heading_path`` is the chain of headings from the document root to the section.
    """

    text: str
    anchor: str | None = None
    heading_path: tuple[str, ...] = field(default_factory=tuple)
    token_count: int = 0
