"""Pick an embedder from a spec string: ``provider[:model][@dimensions]`` or ``none``.

Examples: ``gemini``, ``gemini:gemini-embedding-001@768``,
``openai:text-embedding-3-small``, ``openai:nomic-embed-text`` (with a base URL such as
``http://127.0.0.1:11434/v1``), ``local:BAAI/bge-small-en-v1.5``, ``local:/path/to/dir``.
One string is what a user writes in kbctl.yaml, on the command line and in an env var.

A provider is one module with an ``Embedder`` class plus one line in ``PROVIDERS``, which
names the class rather than importing it: a provider's module (an HTTP client, a model
runtime) is imported when that provider is built, so a lexical knowledge base's query
loads none.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kbctl.embed.base import Embedder
from kbctl.errors import ConfigError


@dataclass(frozen=True)
class Provider:
    """How to build a provider's embedder: ``factory(model, dimensions=…, **options)``, or
    its ``"module:attribute"``. ``default_model`` is the module's ``DEFAULT_MODEL``.

    ``remote`` providers also take ``base_url`` and ``api_key``; a local one refuses them.
    """

    factory: Callable[..., Embedder] | str
    default_model: str
    remote: bool = True

    def build(self) -> Callable[..., Embedder]:
        """The factory, its module imported now when it is named."""
        if not isinstance(self.factory, str):
            return self.factory
        module, _, attribute = self.factory.partition(":")
        return getattr(importlib.import_module(module), attribute)  # type: ignore[no-any-return]


# Where a Gemini key is looked for: one there makes Gemini the default embedder (read
# here, without importing the provider and its HTTP client).
GEMINI_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY")

PROVIDERS: dict[str, Provider] = {
    "gemini": Provider("kbctl.embed.gemini:GeminiEmbedder", "gemini-embedding-2"),
    "openai": Provider("kbctl.embed.openai:OpenAIEmbedder", "text-embedding-3-small"),
    "local": Provider("kbctl.embed.local:LocalEmbedder", "BAAI/bge-small-en-v1.5",
                      remote=False),
}
_PROVIDER_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
_DIMENSIONS_RE = re.compile(r"^(?P<head>.*)@(?P<dims>[^@/]*)$")


@dataclass(frozen=True)
class EmbedderSpec:
    """A parsed spec; ``dimensions`` is None when the provider decides (or learns) it."""

    provider: str
    model: str
    dimensions: int | None = None

    def __str__(self) -> str:
        if self.provider == "none":
            return "none"
        dims = f"@{self.dimensions}" if self.dimensions is not None else ""
        return f"{self.provider}:{self.model}{dims}"


NONE_SPEC = EmbedderSpec("none", "none", None)


def parse_spec(spec: str) -> EmbedderSpec:
    """Parse ``provider[:model][@N]`` (or ``provider/model@N``, as identities are shown);
    the model defaults per provider."""
    if not isinstance(spec, str):
        raise ConfigError(f"embedder spec must be a string, got {spec!r}")
    text = spec.strip()
    if not text:
        raise ConfigError("empty embedder spec", hint=_spec_hint())
    if text.lower() == "none":
        return NONE_SPEC

    dimensions: int | None = None
    match = _DIMENSIONS_RE.match(text)
    if match:
        raw = match.group("dims")
        if not raw.isdigit() or int(raw) < 1:
            raise ConfigError(
                f"invalid embedder spec {spec!r}: dimensions after '@' must be a positive "
                f"integer, got {raw!r}",
                hint=_spec_hint(),
            )
        dimensions = int(raw)
        text = match.group("head")

    provider, sep, model = text.partition(":")
    if not sep and "/" in text and text.split("/", 1)[0].strip().lower() in PROVIDERS:
        # the way kbctl shows a KB's embedder (``openai/text-embedding-3-small@1536``, in
        # status and reports), taken back as it is shown
        provider, sep, model = text.partition("/")
    provider = provider.strip().lower()
    model = model.strip()
    if not _PROVIDER_RE.match(provider):
        raise ConfigError(f"invalid embedder spec {spec!r}", hint=_spec_hint())
    if provider == "none":
        raise ConfigError(f"invalid embedder spec {spec!r}: 'none' takes no model or dimensions")
    if provider not in PROVIDERS:
        raise ConfigError(
            f"unknown embedder provider {provider!r} in spec {spec!r}", hint=_spec_hint()
        )
    if sep and not model:
        raise ConfigError(f"invalid embedder spec {spec!r}: empty model after ':'",
                          hint=_spec_hint())
    return EmbedderSpec(provider, model or PROVIDERS[provider].default_model, dimensions)


def create_embedder(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    allow_private_network: bool = False,
    **options: Any,
) -> Embedder | None:
    """Build the embedder a spec names; ``none`` gives None (a lexical-only KB).

    ``options`` go to the provider's constructor (``concurrency``, ``batch_size``,
    ``max_retries``, ``timeout``, ``transport``, ``retry``, ``cache_dir`` …); one it does not
    take is a ConfigError naming it. ``allow_private_network`` lets a remote provider's
    endpoint be on this machine or a private network (``kbctl.net.provider``).
    """
    parsed = parse_spec(spec)
    if parsed.provider == "none":
        return None
    provider = PROVIDERS[parsed.provider]
    factory = provider.build()
    kwargs: dict[str, Any] = {}
    if provider.remote:
        kwargs = {"base_url": base_url, "api_key": api_key,
                  "allow_private_network": allow_private_network}
    else:
        for name, value in (("base_url", base_url), ("api_key", api_key)):
            if value is not None:
                raise ConfigError(
                    f"embedder {spec!r}: the {parsed.provider} provider takes no {name}")
    accepted = inspect.signature(factory).parameters
    unknown = sorted(name for name in options if name not in accepted or name == "model")
    if unknown:
        raise ConfigError(
            f"embedder {spec!r}: unknown option(s) {', '.join(unknown)} for the "
            f"{parsed.provider} provider"
        )
    kwargs.update(options)
    return factory(parsed.model, dimensions=parsed.dimensions, **kwargs)


def default_spec(env: Mapping[str, str]) -> str:
    """``gemini`` when a Gemini key is in the environment, otherwise ``none`` (asked on a
    new knowledge base's first write, which embeds through it)."""
    if any(env.get(name, "").strip() for name in GEMINI_KEY_VARIABLES):
        return "gemini"
    return "none"


def _spec_hint() -> str:
    names = list(PROVIDERS)
    listed = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
    return (
        f"use provider[:model][@dimensions] with provider {listed}, "
        "e.g. gemini:gemini-embedding-001@768, or none"
    )
