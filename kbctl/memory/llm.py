"""The language model that reads memory episodes into facts: one seam, two wire formats.

Like the embedders, a model is ``provider:name``: ``openai`` for any server speaking
OpenAI's ``/chat/completions`` (structured output through ``response_format``
``json_schema``), ``gemini`` for Gemini's ``generateContent`` (``responseJsonSchema``).
Every call is one bounded POST under kbctl's retry policy (``kbctl.net.retry``) and a
whole-request deadline and byte cap (``kbctl.net.api``); the key comes from the
environment and never follows a redirect (redirects are not followed at all).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from kbctl.net.provider import GuardedTransport

from ..embed.gemini import DEFAULT_BASE_URL as GEMINI_BASE_URL
from ..embed.openai import DEFAULT_BASE_URL as OPENAI_BASE_URL
from ..embed.registry import GEMINI_KEY_VARIABLES as GEMINI_KEYS
from ..errors import AuthError, ConfigError, EnvironmentFailure
from ..memory_config import GRAPH_PROVIDERS
from ..net.api import post_json, read_json
from ..net.decode import snippet
from ..net.endpoint import checked_endpoint, public_endpoint
from ..net.retry import DEFAULT_MAX_RETRIES, RetryPolicy

KEY_VARIABLE = "KBCTL_MEMORY_GRAPH_MODEL_API_KEY"
OPENAI_KEY = "OPENAI_API_KEY"
MAX_ANSWER_BYTES = 4 * 1024 * 1024


class ModelError(EnvironmentFailure):
    """The language model failed or answered something that is not the JSON asked for."""


class ChatModel(Protocol):
    """What the graph needs from a model: a JSON object shaped by a JSON schema."""

    @property
    def identity(self) -> str: ...

    def complete_json(self, system: str, user: str, *, name: str, schema: dict[str, Any],
                      max_tokens: int) -> dict[str, Any]: ...

    def close(self) -> None: ...


def provider_endpoint(base_url: str, *, allow_private_network: bool) -> str:
    """A model's base URL, checked as an embedder's is (``checked_endpoint``): well-formed,
    and a host the guard refuses without a lookup named at once; names are vetted by the
    guard under every request (``net/provider``)."""
    return checked_endpoint(base_url, "language model base URL",
                            allow_private_network=allow_private_network)


@dataclass
class _Http:
    """A model's HTTP side: the pooled client, the retry policy and the deadline."""

    base_url: str
    key: str | None
    timeout_s: float
    transport: httpx.BaseTransport | None = None
    allow_private_network: bool = False
    client: httpx.Client | None = None

    def post(self, url: str, body: dict[str, Any], headers: dict[str, str],
             what: str) -> Any:
        if self.client is None:
            # the guard under every request, as under the embedders' (``net/provider``):
            # the name resolved once, the vetted address the one connected to
            guarded = GuardedTransport(self.transport or httpx.HTTPTransport(),
                                       allow_private_network=self.allow_private_network,
                                       what="language model")
            self.client = httpx.Client(transport=guarded, timeout=self.timeout_s,
                                       follow_redirects=False, trust_env=False)
        client = self.client
        policy = RetryPolicy(max_retries=DEFAULT_MAX_RETRIES)
        response = policy.send(
            lambda: post_json(client, url, body=body, headers=headers, what=what,
                              error=ModelError, deadline=self.timeout_s,
                              max_bytes=MAX_ANSWER_BYTES),
            what=what, error=ModelError)
        if response.status_code in (401, 403):
            raise AuthError(f"{what} refused the request (HTTP {response.status_code})",
                            hint=f"set {KEY_VARIABLE} to a key this server accepts")
        if not response.is_success:
            raise ModelError(f"{what}: HTTP {response.status_code}: {snippet(response)}")
        return read_json(response, what=what, error=ModelError)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


class _Chat:
    """What both wire formats share: the model's name, its HTTP side, how it is named."""

    provider = ""

    def __init__(self, model: str, http: _Http) -> None:
        self.model = model
        self.http = http

    @property
    def identity(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def what(self) -> str:
        return f"language model {self.identity} at {public_endpoint(self.http.base_url)}"

    def close(self) -> None:
        self.http.close()


class OpenAIChat(_Chat):
    """Any OpenAI-compatible ``/chat/completions`` server, structured output on."""

    provider = "openai"

    def complete_json(self, system: str, user: str, *, name: str, schema: dict[str, Any],
                      max_tokens: int) -> dict[str, Any]:
        body = {"model": self.model, "temperature": 0, "max_tokens": max_tokens,
                "messages": [{"role": "system", "content": system},
                             {"role": "user", "content": user}],
                "response_format": {"type": "json_schema",
                                    "json_schema": {"name": name, "schema": schema}}}
        headers = {"Authorization": f"Bearer {self.http.key}"} if self.http.key else {}
        what = self.what
        payload = self.http.post(f"{self.http.base_url}/chat/completions", body, headers, what)
        try:
            text = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"{what}: the answer has no choices[0].message.content") from None
        return _object(text, what)


class GeminiChat(_Chat):
    """Gemini's ``generateContent`` with a JSON schema for the answer."""

    provider = "gemini"

    def complete_json(self, system: str, user: str, *, name: str, schema: dict[str, Any],
                      max_tokens: int) -> dict[str, Any]:
        body = {"systemInstruction": {"parts": [{"text": system}]},
                "contents": [{"role": "user", "parts": [{"text": user}]}],
                "generationConfig": {"temperature": 0, "maxOutputTokens": max_tokens,
                                     "responseMimeType": "application/json",
                                     "responseJsonSchema": schema}}
        headers = {"x-goog-api-key": self.http.key} if self.http.key else {}
        what = self.what
        payload = self.http.post(f"{self.http.base_url}/models/{self.model}:generateContent",
                                 body, headers, what)
        try:
            parts = payload["candidates"][0]["content"]["parts"]
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ModelError(f"{what}: the answer has no candidates[0].content.parts") from None
        return _object(text, what)


def _object(text: Any, what: str) -> dict[str, Any]:
    if not isinstance(text, str):
        raise ModelError(f"{what}: the answer's content is not text")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise ModelError(f"{what}: the answer is not JSON: {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise ModelError(f"{what}: the answer is JSON but not an object")
    return value


def make_model(spec: str | None, base_url: str | None, *, allow_private_network: bool,
               timeout_s: float, env: Mapping[str, str] | None = None,
               transport: httpx.BaseTransport | None = None) -> ChatModel:
    """The model ``provider:name`` names, at ``base_url`` or the provider's own API."""
    if not spec:
        raise ConfigError("graph memory needs a language model",
                          hint="set memory.graph.model (e.g. openai:gpt-4.1-mini) or "
                          "KBCTL_MEMORY_GRAPH_MODEL")
    provider, _, model = spec.partition(":")
    if provider not in GRAPH_PROVIDERS or not model.strip():
        raise ConfigError(f"memory.graph.model must be provider:model with a provider of "
                          f"{', '.join(GRAPH_PROVIDERS)}, got {spec!r}")
    env = os.environ if env is None else env
    default = OPENAI_BASE_URL if provider == "openai" else GEMINI_BASE_URL
    url = provider_endpoint(base_url or default, allow_private_network=allow_private_network)
    names = (KEY_VARIABLE, OPENAI_KEY) if provider == "openai" else (KEY_VARIABLE, *GEMINI_KEYS)
    key = next((env[n].strip() for n in names if env.get(n, "").strip()), None)
    if key is None and base_url is None:
        raise AuthError(f"no key for {provider}:{model}: set {' or '.join(names)}",
                        hint="or point memory.graph.model_base_url at a local server")
    http = _Http(url, key, timeout_s, transport, allow_private_network)
    return OpenAIChat(model, http) if provider == "openai" else GeminiChat(model, http)
