"""A deterministic embedder for tests: hashed bag of stems, L2-normalised.

Texts that share words get a high cosine, unrelated texts a low one, with no model and no
network, so hybrid ranking can be tested for real.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from kbctl.embed.base import EmbedderIdentity

_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    def __init__(self, dimensions: int = 64, model: str = "hashing-v1") -> None:
        self._dims = dimensions
        self._identity = EmbedderIdentity("test", model, dimensions)
        self.calls: list[list[str]] = []

    @property
    def identity(self) -> EmbedderIdentity:
        return self._identity

    @property
    def dimensions(self) -> int:
        return self._dims

    def _vector(self, text: str) -> list[float]:
        v = [0.0] * self._dims
        for word in _WORD.findall(text.lower()):
            stem = word[:5]
            h = int.from_bytes(hashlib.blake2b(stem.encode(), digest_size=4).digest(), "big")
            v[h % self._dims] += 1.0 if (h >> 31) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]

    def embed(self, texts: Sequence[str],
              titles: Sequence[str | None] | None = None) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)
