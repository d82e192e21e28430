"""Gemini embeddings over plain REST (``models/{model}:embedContent``), no Google SDK.

``embedContent`` takes one content and returns one vector, so documents are embedded one
request each, with at most ``concurrency`` requests in flight. The two model families ask
for the retrieval task differently:

- ``gemini-embedding-2``: the task is a text prefix (queries
  ``task: search result | query: …``, documents ``title: … | text: …``) and the width is
  ``config.output_dimensionality``;
- ``gemini-embedding-001``: ``taskType`` (``RETRIEVAL_DOCUMENT`` / ``RETRIEVAL_QUERY``),
  ``title`` for documents and ``outputDimensionality``.

The API key is looked up on the first request, never at construction, so building an
embedder (or printing ``--help``) works without one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from kbctl.embed.base import EmbedderIdentity
from kbctl.embed.common import (
    LazyClient,
    checked_vector,
    map_bounded,
    require_positive,
)
from kbctl.embed.registry import GEMINI_KEY_VARIABLES
from kbctl.errors import AuthError, ConfigError, EmbedderError
from kbctl.net.api import read_json, send_json
from kbctl.net.endpoint import checked_endpoint, public_endpoint
from kbctl.net.policy import Resolver
from kbctl.net.retry import DEFAULT_MAX_RETRIES, RetryPolicy

DEFAULT_MODEL = "gemini-embedding-2"
FALLBACK_MODEL = "gemini-embedding-001"
DEFAULT_DIMENSIONS = 1536
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_CONCURRENCY = 8
KEY_VARIABLES = GEMINI_KEY_VARIABLES

QUERY_PREFIX = "task: search result | query: "


def uses_task_prefix(model: str) -> bool:
    """Whether ``model`` takes its task as a text prefix (the gemini-embedding-2 family)."""
    return model.startswith(("gemini-embedding-2", "embeddinggemma"))


def document_text(text: str, title: str | None) -> str:
    """The gemini-embedding-2 document form; ``none`` stands in for a missing title."""
    return f"title: {title if title else 'none'} | text: {text}"


def query_text(text: str) -> str:
    return f"{QUERY_PREFIX}{text}"


class GeminiEmbedder:
    """Embedder for the Gemini API; see the module docstring for the request shapes."""

    provider = "gemini"
    key_variables = KEY_VARIABLES
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        allow_private_network: bool = False,
        resolver: Resolver | None = None,
    ) -> None:
        model = model.removeprefix("models/").strip()
        if not model:
            raise ConfigError("gemini embedder needs a model name")
        require_positive("dimensions", dimensions)
        require_positive("concurrency", concurrency)
        self.model = model
        self._dimensions = dimensions or DEFAULT_DIMENSIONS
        self._api_key = api_key
        self._env = env
        self.base_url = checked_endpoint(base_url or DEFAULT_BASE_URL, "embedder base URL",
                                         allow_private_network=allow_private_network)
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self._clients = LazyClient(transport=transport, timeout=timeout,
                                   concurrency=concurrency, resolver=resolver,
                                   allow_private_network=allow_private_network,
                                   what="embedder base URL")

    # --- the Embedder protocol ---------------------------------------------------------

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(self.provider, self.model, self._dimensions)

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def document_task(self) -> str:
        """How documents are told apart from queries, for the embedding cache's key."""
        if uses_task_prefix(self.model):
            return "prefix:" + document_text("{text}", "{title}")
        return "taskType:RETRIEVAL_DOCUMENT"

    def embed(
        self, texts: Sequence[str], titles: Sequence[str | None] | None = None
    ) -> list[list[float]]:
        if titles is not None and len(titles) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(titles)} titles")
        if not texts:
            return []
        key = self._key()
        bodies = [
            self._document_body(text, titles[i] if titles is not None else None)
            for i, text in enumerate(texts)
        ]
        return map_bounded(lambda body: self._post(body, key), bodies, self.concurrency)

    def embed_query(self, text: str) -> list[float]:
        return self._post(self._query_body(text), self._key(), question=True)

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        self._clients.close()

    def __enter__(self) -> GeminiEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- requests ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{self.base_url}/models/{self.model}:embedContent"

    def _base_body(self, text: str) -> dict[str, Any]:
        return {"model": f"models/{self.model}", "content": {"parts": [{"text": text}]}}

    def _document_body(self, text: str, title: str | None) -> dict[str, Any]:
        return self._body(text, title, query=False)

    def _query_body(self, text: str) -> dict[str, Any]:
        return self._body(text, None, query=True)

    def _body(self, text: str, title: str | None, *, query: bool) -> dict[str, Any]:
        """The task goes in a text prefix (gemini-embedding-2) or in taskType (001)."""
        if uses_task_prefix(self.model):
            body = self._base_body(query_text(text) if query else document_text(text, title))
            body["config"] = {"output_dimensionality": self._dimensions}
            return body
        body = self._base_body(text)
        body["taskType"] = "RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT"
        if title and not query:
            body["title"] = title
        body["outputDimensionality"] = self._dimensions
        return body

    def _http(self) -> httpx.Client:
        return self._clients.get()

    def _post(self, body: dict[str, Any], key: tuple[str, str], *,
              question: bool = False) -> list[float]:
        secret, source = key
        what = f"gemini model {self.model}"
        response = send_json(self.retry, self._http(), self.url, body=body,
                             headers={"x-goog-api-key": secret}, what=what,
                             error=EmbedderError, question=question)
        if response.status_code in (401, 403) or _is_invalid_key(response):
            raise AuthError(
                f"Gemini refused the API key from {source} (HTTP {response.status_code}) "
                f"for model {self.model}",
                hint=f"set {source} to a valid Gemini API key" if source in KEY_VARIABLES
                else "pass a valid Gemini API key, or set GEMINI_API_KEY",
            )
        if response.status_code == 404:
            raise EmbedderError(
                f"{what}: HTTP 404, the model is not available at "
                f"{public_endpoint(self.base_url)}",
                hint=f"check the model name (fallback: gemini:{FALLBACK_MODEL})",
            )
        if not response.is_success:
            raise EmbedderError(f"{what}: HTTP {response.status_code}: {_error_message(response)}")
        payload = read_json(response, what=what, error=EmbedderError)
        return checked_vector(_values(payload), self._dimensions, what=what)

    def _key(self) -> tuple[str, str]:
        """The key and where it came from, so an auth error can name what to fix."""
        if self._api_key:
            return self._api_key, "the api_key option"
        env = os.environ if self._env is None else self._env
        for name in KEY_VARIABLES:
            value = env.get(name, "").strip()
            if value:
                return value, name
        raise AuthError(
            "no Gemini API key: set GEMINI_API_KEY (or GOOGLE_GENERATIVE_AI_API_KEY)",
            hint="export GEMINI_API_KEY=…, or choose another embedder with --embedder",
        )


def _values(payload: Any) -> Any:
    """The vector from either response shape: ``embedding.values`` or ``embeddings[0]``."""
    if not isinstance(payload, dict):
        return None
    single = payload.get("embedding")
    if isinstance(single, dict) and "values" in single:
        return single.get("values")
    many = payload.get("embeddings")
    if isinstance(many, list) and many and isinstance(many[0], dict):
        return many[0].get("values")
    return None


def _is_invalid_key(response: httpx.Response) -> bool:
    """Google answers a malformed or unknown key with 400 ``API_KEY_INVALID``, not 401."""
    return response.status_code == 400 and (
        "API_KEY_INVALID" in response.text or "API key not valid" in response.text
    )


def _error_message(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        message = payload["error"].get("message")
        if isinstance(message, str):
            return message[:300]
    return " ".join(response.text.split())[:300]
