"""Source kind → adapter."""

from __future__ import annotations

from ..errors import InputError
from .base import SourceAdapter, SourceSpec

KINDS = ("files", "text", "url", "sitemap", "crawl", "llms")


def adapter_for(spec: SourceSpec, **context: object) -> SourceAdapter:
    """The adapter that expands and loads ``spec``; ``context`` carries network policy."""
    if spec.kind == "files":
        from .files import FilesSource

        return FilesSource()
    if spec.kind == "text":
        from .text import TextSource

        return TextSource()
    if spec.kind in KINDS:
        from . import web

        return web.adapter(spec, **context)
    raise InputError(f"unknown source kind '{spec.kind}' (expected one of {', '.join(KINDS)})")
