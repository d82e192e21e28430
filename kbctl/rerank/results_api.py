"""The ``results`` wire format: Cohere's rerank API, which Jina's follows and self-hosted
servers (Infinity, vLLM) copy.

Request ``{"model", "query", "documents": [str], "top_n"}``; response
``{"results": [{"index", "relevance_score"}, …]}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbctl.rerank.http import HttpReranker


class CohereReranker(HttpReranker):
    """``cohere:MODEL`` (e.g. ``rerank-v3.5``); with ``--rerank-base-url`` any server that
    speaks this format (Infinity, vLLM)."""

    provider = "cohere"
    default_base_url = "https://api.cohere.com/v2"
    key_variables = ("COHERE_API_KEY", "CO_API_KEY")

    def body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model, "query": query, "documents": list(documents),
                "top_n": len(documents)}

    def pairs(self, payload: Any) -> list[Any]:
        return payload.get("results") if isinstance(payload, dict) else None  # type: ignore[return-value]


class JinaReranker(CohereReranker):
    """``jina:MODEL`` (e.g. ``jina-reranker-v2-base-multilingual``)."""

    provider = "jina"
    default_base_url = "https://api.jina.ai/v1"
    key_variables = ("JINA_API_KEY",)

    def body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        # Jina echoes every document back unless told not to.
        return {**super().body(query, documents), "return_documents": False}
