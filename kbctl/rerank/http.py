"""What every HTTP reranker shares: one pooled client, the one retry policy, the API
key from the environment, and turning a response into scores in input order.

A wire format subclasses ``HttpReranker`` and supplies ``body`` and ``pairs``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from kbctl.embed.common import LazyClient
from kbctl.errors import ConfigError, RerankerError
from kbctl.net.api import read_json, send_json
from kbctl.net.decode import snippet
from kbctl.net.endpoint import checked_endpoint, public_endpoint
from kbctl.net.policy import Resolver
from kbctl.net.retry import DEFAULT_MAX_RETRIES, RetryPolicy
from kbctl.rerank.base import RerankerIdentity


class HttpReranker:
    """Posts ``body(query, documents)`` to ``{base_url}/rerank`` and reads the scores.

    ``default_base_url`` is the hosted API; a custom ``base_url`` (a self-hosted server)
    makes the key optional. Scores are clamped into 0..1: the formats here return
    probabilities already (servers that can return logits are asked not to).
    """

    provider = ""
    default_base_url: str | None = None
    key_variables: tuple[str, ...] = ()

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        env: Mapping[str, str] | None = None,
        allow_private_network: bool = False,
        resolver: Resolver | None = None,
    ) -> None:
        model = model.strip()
        if not model:
            raise ConfigError(f"{self.provider} reranker needs a model name")
        if base_url is None and self.default_base_url is None:
            raise ConfigError(f"the {self.provider} reranker needs --rerank-base-url "
                              "(the server's address, e.g. http://127.0.0.1:8080)")
        self.model = model
        self.custom_server = base_url is not None
        self.base_url = checked_endpoint(base_url or self.default_base_url or "",
                                         "reranker base URL",
                                         allow_private_network=allow_private_network)
        self._api_key = api_key
        self._env = env
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self._clients = LazyClient(transport=transport, timeout=timeout, concurrency=1,
                                   resolver=resolver, what="reranker base URL",
                                   allow_private_network=allow_private_network)

    @property
    def identity(self) -> RerankerIdentity:
        return RerankerIdentity(self.provider, self.model)

    @property
    def url(self) -> str:
        return f"{self.base_url}/rerank"

    def close(self) -> None:
        self._clients.close()

    # --- what a wire format supplies -----------------------------------------------------

    def body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        raise NotImplementedError

    def pairs(self, payload: Any) -> list[Any]:
        """The response's result objects: each carries an index and a score."""
        raise NotImplementedError

    score_field = "relevance_score"

    # --- the Reranker protocol ------------------------------------------------------------

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        what = f"{self.provider} reranker {self.model} at {public_endpoint(self.base_url)}"
        body = self.body(query, list(documents))
        # a rerank only ever serves a question
        response = send_json(self.retry, self._clients.get(), self.url, body=body,
                             headers=self._headers(), what=what, error=RerankerError,
                             question=True)
        if response.status_code in (401, 403):
            raise RerankerError(
                f"{what} refused the request (HTTP {response.status_code})",
                hint=f"set {self.key_variables[0]} to a key this service accepts"
                if self.key_variables else "check the server's access settings")
        if not response.is_success:
            raise RerankerError(f"{what}: HTTP {response.status_code}: "
                                f"{snippet(response)}")
        payload = read_json(response, what=what, error=RerankerError)
        return ordered_scores(self.pairs(payload), len(documents), self.score_field,
                              what=what)

    def _headers(self) -> dict[str, str]:
        key = self._key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _key(self) -> str | None:
        if self._api_key:
            return self._api_key
        env = os.environ if self._env is None else self._env
        for name in self.key_variables:
            if env.get(name, "").strip():
                return env[name].strip()
        if not self.custom_server and self.key_variables:
            raise RerankerError(f"no {self.provider} API key: set {self.key_variables[0]}",
                                hint="or point --rerank-base-url at a self-hosted server")
        return None


def ordered_scores(items: Any, count: int, field: str, *, what: str) -> list[float]:
    """Scores put back in input order by ``index``; every document must be scored once."""
    if not isinstance(items, list):
        raise RerankerError(f"{what}: response has no list of results")
    scores: list[float | None] = [None] * count
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        value = item.get(field) if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise RerankerError(f"{what}: result index {index!r} is not one of the "
                                f"{count} documents sent")
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not math.isfinite(value)):
            raise RerankerError(f"{what}: result {index} has no numeric {field}")
        if scores[index] is not None:
            raise RerankerError(f"{what}: document {index} was scored twice")
        scores[index] = min(1.0, max(0.0, float(value)))
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise RerankerError(f"{what}: {len(missing)} of {count} documents came back "
                            "without a score")
    return [s for s in scores if s is not None]
