"""The Embedder seam: everything else in kbctl talks to embedders through this protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class EmbedderIdentity:
    """What a KB records about the model its vectors came from.

    Two KBs compare equal only when provider, model and dimensions all match: vectors
    from different models (or truncations) are not comparable.
    """

    provider: str
    model: str
    dimensions: int

    def __str__(self) -> str:
        if self.provider == "none":
            return "none"
        return f"{self.provider}/{self.model}@{self.dimensions}"


NO_EMBEDDER = EmbedderIdentity("none", "none", 0)


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised vectors."""

    @property
    def identity(self) -> EmbedderIdentity: ...

    @property
    def dimensions(self) -> int: ...

    def embed(
        self, texts: Sequence[str], titles: Sequence[str | None] | None = None
    ) -> list[list[float]]:
        """Embed documents (chunks); ``titles`` are optional per-text document titles."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (providers without a query mode fall back to ``embed``)."""
        ...
