"""Embedders: the protocol, the registry that builds one from a spec, and the providers."""

from __future__ import annotations

from kbctl.embed.base import NO_EMBEDDER, Embedder, EmbedderIdentity
from kbctl.embed.gemini import GeminiEmbedder
from kbctl.embed.local import LocalEmbedder
from kbctl.embed.openai import OpenAIEmbedder
from kbctl.embed.registry import EmbedderSpec, create_embedder, default_spec, parse_spec
from kbctl.net.retry import RetryPolicy

__all__ = [
    "NO_EMBEDDER",
    "Embedder",
    "EmbedderIdentity",
    "EmbedderSpec",
    "GeminiEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "RetryPolicy",
    "create_embedder",
    "default_spec",
    "parse_spec",
]
