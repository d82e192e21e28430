"""Chunkers: plain text, heading-aware markdown, and GitHub-compatible anchors."""

from __future__ import annotations

from kbctl.chunk.markdown import chunk_markdown
from kbctl.chunk.model import (
    CHARS_PER_TOKEN,
    DEFAULT_MAX_TOKENS,
    DEFAULT_OVERLAP_TOKENS,
    Chunk,
    estimate_tokens,
)
from kbctl.chunk.slug import Slugger, slugify
from kbctl.chunk.text import chunk_text

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_OVERLAP_TOKENS",
    "Chunk",
    "Slugger",
    "chunk_markdown",
    "chunk_text",
    "estimate_tokens",
    "slugify",
]
