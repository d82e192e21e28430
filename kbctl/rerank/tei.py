"""Hugging Face text-embeddings-inference (TEI) serving a cross-encoder.

Request ``{"query", "texts": [str], "raw_scores": false, "truncate": true}``; response
``[{"index", "score"}, …]``. The server runs one model, so the name is only recorded (it
keys the score cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbctl.rerank.http import HttpReranker


class TeiReranker(HttpReranker):
    """``tei:MODEL`` with ``--rerank-base-url`` (no hosted default, no key needed)."""

    provider = "tei"
    score_field = "score"

    def body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        # raw_scores false: TEI applies the model's sigmoid, so scores are within 0..1
        return {"query": query, "texts": list(documents), "raw_scores": False,
                "truncate": True}

    def pairs(self, payload: Any) -> list[Any]:
        return payload  # type: ignore[no-any-return]
