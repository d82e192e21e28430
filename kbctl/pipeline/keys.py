"""Which host receives each API key: what ``kbctl status`` shows, so an operator sees
where a key set in the environment would be sent before any command sends it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..config import Settings
from ..embed.base import NO_EMBEDDER, EmbedderIdentity
from ..net.endpoint import endpoint_host


@dataclass(frozen=True)
class KeyRoute:
    """A provider, the key variables of the environment it sends (those set), and the
    host its requests go to."""

    provider: str
    host: str
    variables: list[str] = field(default_factory=list)


def key_routes(settings: Settings, embedder: EmbedderIdentity | None, endpoint: str | None,
               env: Mapping[str, str]) -> list[KeyRoute]:
    """The KB's embedder (at ``endpoint``, its recorded base URL, unless the settings name
    another) and the configured reranker, each with where its key goes."""
    from ..embed.registry import PROVIDERS as EMBEDDERS

    routes = []
    if embedder is not None and embedder != NO_EMBEDDER and embedder.provider in EMBEDDERS:
        factory = EMBEDDERS[embedder.provider].build()  # that provider's module only
        base = settings.embedder_base_url or endpoint
        routes.append(_route(f"embedder {embedder}", factory, base, env))
    if settings.rerank:
        # here: the reranker registry loads every reranker's HTTP client
        from ..rerank.registry import PROVIDERS as RERANKERS
        from ..rerank.registry import parse_rerank_spec

        name, model = parse_rerank_spec(settings.rerank)
        routes.append(_route(f"reranker {name}/{model}", RERANKERS[name],
                             settings.rerank_base_url, env))
    return [route for route in routes if route is not None]


def _route(provider: str, factory: object, base_url: str | None,
           env: Mapping[str, str]) -> KeyRoute | None:
    variables = getattr(factory, "key_variables", None)
    base = base_url or getattr(factory, "default_base_url", None)
    if variables is None or not base:  # a local model: no key, no host
        return None
    return KeyRoute(provider, endpoint_host(base),
                    [name for name in variables if env.get(name, "").strip()])
