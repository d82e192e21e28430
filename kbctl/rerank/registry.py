"""Pick a reranker from a spec string: ``provider:model``.

Examples: ``cohere:rerank-v3.5``, ``jina:jina-reranker-v2-base-multilingual``,
``voyage:rerank-2.5-lite``, ``tei:BAAI/bge-reranker-base`` (with a base URL),
``local:Xenova/ms-marco-MiniLM-L-6-v2``, ``local:/path/to/model-dir``. Self-hosted servers
that copy Cohere's API (Infinity, vLLM) are ``cohere:MODEL`` with a base URL.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kbctl.errors import ConfigError
from kbctl.rerank.base import Reranker
from kbctl.rerank.local import LocalReranker
from kbctl.rerank.results_api import CohereReranker, JinaReranker
from kbctl.rerank.tei import TeiReranker
from kbctl.rerank.voyage import VoyageReranker

PROVIDERS: dict[str, Callable[..., Reranker]] = {
    "cohere": CohereReranker,
    "jina": JinaReranker,
    "voyage": VoyageReranker,
    "tei": TeiReranker,
    "local": LocalReranker,
}


def parse_rerank_spec(spec: str) -> tuple[str, str]:
    """``provider:model`` → (provider, model); both parts are required."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("empty reranker spec", hint=_hint())
    provider, sep, model = spec.strip().partition(":")
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise ConfigError(f"unknown reranker provider {provider!r} in spec {spec!r}",
                          hint=_hint())
    if not sep or not model.strip():
        raise ConfigError(f"reranker spec {spec!r} names no model", hint=_hint())
    return provider, model.strip()


def create_reranker(spec: str, *, base_url: str | None = None,
                    allow_private_network: bool = False, **options: Any) -> Reranker:
    """Build the reranker a spec names. ``options`` go to the provider's constructor
    (``api_key``, ``timeout``, ``transport``, ``retry``, ``cache_dir`` …); one it does not
    take is a ConfigError naming it. ``allow_private_network`` lets an HTTP reranker's
    endpoint be on this machine or a private network (``kbctl.net.provider``)."""
    provider, model = parse_rerank_spec(spec)
    factory = PROVIDERS[provider]
    accepted = inspect.signature(factory).parameters
    if "allow_private_network" in accepted:
        options["allow_private_network"] = allow_private_network
    if base_url is not None:
        if "base_url" not in accepted:
            raise ConfigError(f"reranker {spec!r}: the {provider} provider takes no base URL")
        options["base_url"] = base_url
    unknown = sorted(name for name in options if name not in accepted or name == "model")
    if unknown:
        raise ConfigError(f"reranker {spec!r}: unknown option(s) {', '.join(unknown)} for "
                          f"the {provider} provider")
    return factory(model, **options)


def _hint() -> str:
    return ("use provider:model with provider " + ", ".join(PROVIDERS)
            + ", e.g. cohere:rerank-v3.5 or tei:BAAI/bge-reranker-base")
