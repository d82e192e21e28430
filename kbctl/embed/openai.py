"""OpenAI-compatible embeddings: ``POST {base_url}/embeddings`` with a batched ``input``.

The same wire format is spoken by OpenAI and by the local servers people actually run
(Ollama, vLLM, TEI, LM Studio, llama.cpp), so one class covers them all.

Dimensions: when the spec says ``@N`` it is sent as ``dimensions`` and every vector must
have N values. Without it the width is whatever the server returns: learned from the first
response (official OpenAI models start from their documented native width instead). Reading
``dimensions``/``identity`` before anything was embedded sends one short probe request, so
the store can check a KB's recorded embedder before the first batch.

Titles are not sent: the API has no field for them.
"""

from __future__ import annotations

import os
import threading
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
from kbctl.errors import AuthError, ConfigError, EmbedderError
from kbctl.net.api import read_json, send_json
from kbctl.net.endpoint import checked_endpoint, public_endpoint
from kbctl.net.policy import Resolver
from kbctl.net.retry import DEFAULT_MAX_RETRIES, RetryPolicy

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_BATCH_SIZE = 64
DEFAULT_CONCURRENCY = 4
KEY_VARIABLE = "OPENAI_API_KEY"
PROBE_TEXT = "dimension probe"

# Native widths of OpenAI's own models, used only against OpenAI itself.
NATIVE_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """Embedder for any server speaking OpenAI's ``/embeddings`` API."""

    provider = "openai"
    key_variables = (KEY_VARIABLE,)
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        allow_private_network: bool = False,
        resolver: Resolver | None = None,
    ) -> None:
        model = model.strip()
        if not model:
            raise ConfigError("openai embedder needs a model name")
        require_positive("dimensions", dimensions)
        require_positive("batch_size", batch_size)
        require_positive("concurrency", concurrency)
        self.model = model
        self.custom_server = base_url is not None
        self.base_url = checked_endpoint(base_url or DEFAULT_BASE_URL, "embedder base URL",
                                         allow_private_network=allow_private_network)
        self.requested_dimensions = dimensions
        self._dimensions = dimensions
        if self._dimensions is None and not self.custom_server:
            self._dimensions = NATIVE_DIMENSIONS.get(model)
        self._api_key = api_key
        self._env = env
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self._clients = LazyClient(transport=transport, timeout=timeout,
                                   concurrency=concurrency, resolver=resolver,
                                   allow_private_network=allow_private_network,
                                   what="embedder base URL")
        self._lock = threading.Lock()

    # --- the Embedder protocol ---------------------------------------------------------

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(self.provider, self.model, self.dimensions)

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._post_batch([PROBE_TEXT])
        if self._dimensions is None:  # pragma: no cover - _post_batch raises first
            raise EmbedderError(f"could not learn the dimensions of {self.model}")
        return self._dimensions

    def embed(
        self, texts: Sequence[str], titles: Sequence[str | None] | None = None
    ) -> list[list[float]]:
        if titles is not None and len(titles) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(titles)} titles")
        if not texts:
            return []
        batches = [
            list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)
        ]
        if self._dimensions is None:
            # Learn the width from the first batch before fanning out, so every later
            # batch is checked against it.
            first = self._post_batch(batches[0])
            rest = map_bounded(self._post_batch, batches[1:], self.concurrency)
            results = [first, *rest]
        else:
            results = map_bounded(self._post_batch, batches, self.concurrency)
        return [vector for batch in results for vector in batch]

    def embed_query(self, text: str) -> list[float]:
        """No query mode in this API: a query is embedded like a one-item document."""
        return self._post_batch([text], question=True)[0]

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        self._clients.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- requests ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{self.base_url}/embeddings"

    def _http(self) -> httpx.Client:
        return self._clients.get()

    def _headers(self) -> dict[str, str]:
        key = self._key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _post_batch(self, batch: list[str], *, question: bool = False) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self.requested_dimensions is not None:
            body["dimensions"] = self.requested_dimensions
        what = f"openai-compatible model {self.model} at {public_endpoint(self.base_url)}"
        response = send_json(self.retry, self._http(), self.url, body=body,
                             headers=self._headers(), what=what, error=EmbedderError,
                             question=question)
        if response.status_code in (401, 403):
            raise AuthError(
                f"{what} refused the request (HTTP {response.status_code})",
                hint=f"set {KEY_VARIABLE} (or pass api_key) to a key this server accepts",
            )
        if not response.is_success:
            raise EmbedderError(
                f"{what}: HTTP {response.status_code}: {_error_message(response)}"
            )
        payload = read_json(response, what=what, error=EmbedderError)
        raw = _ordered_embeddings(payload, len(batch), what=what)
        with self._lock:
            if self._dimensions is None:
                first = raw[0]
                if isinstance(first, list) and first:
                    self._dimensions = len(first)
            expected = self._dimensions
        return [checked_vector(values, expected, what=what) for values in raw]

    def _key(self) -> str | None:
        if self._api_key:
            return self._api_key
        env = os.environ if self._env is None else self._env
        key = env.get(KEY_VARIABLE, "").strip() or None
        if key is None and not self.custom_server:
            raise AuthError(
                f"no OpenAI API key: set {KEY_VARIABLE}",
                hint="or point --embedder-base-url at a local OpenAI-compatible server",
            )
        return key


def _ordered_embeddings(payload: Any, count: int, *, what: str) -> list[Any]:
    """``data[i].embedding`` put back in input order by ``index`` (servers may reorder)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise EmbedderError(f"{what}: response has no data list")
    if len(data) != count:
        raise EmbedderError(f"{what}: sent {count} inputs, got {len(data)} embeddings")
    slots: list[Any] = [None] * count
    seen: set[int] = set()
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            raise EmbedderError(f"{what}: data[{position}] is not an object")
        index = item.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count \
                or index in seen:
            raise EmbedderError(f"{what}: data[{position}] has a bad or repeated index")
        seen.add(index)
        slots[index] = item.get("embedding")
    return slots


def _error_message(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"][:300]
        if isinstance(error, str):
            return error[:300]
    return " ".join(response.text.split())[:300]
