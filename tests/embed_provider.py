"""A tiny embedder provider, to show what adding one takes: this module (a factory that
builds an ``Embedder``) plus one line in ``kbctl.embed.registry.PROVIDERS``."""

from __future__ import annotations

from tests.embedders import HashingEmbedder

DEFAULT_MODEL = "hashing-v1"


def hashing_embedder(model: str, *, dimensions: int | None = None) -> HashingEmbedder:
    """Deterministic vectors of ``dimensions`` (default 64) for ``model``; no network."""
    return HashingEmbedder(dimensions=dimensions or 64, model=model)
