"""Voyage AI's rerank API.

Request ``{"model", "query", "documents": [str], "truncation": true}``; response
``{"data": [{"index", "relevance_score"}, …]}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbctl.rerank.http import HttpReranker


class VoyageReranker(HttpReranker):
    """``voyage:MODEL`` (e.g. ``rerank-2.5-lite``)."""

    provider = "voyage"
    default_base_url = "https://api.voyageai.com/v1"
    key_variables = ("VOYAGE_API_KEY",)

    def body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        # truncation: a long chunk is cut to the model's context instead of failing the call
        return {"model": self.model, "query": query, "documents": list(documents),
                "truncation": True}

    def pairs(self, payload: Any) -> list[Any]:
        return payload.get("data") if isinstance(payload, dict) else None  # type: ignore[return-value]
