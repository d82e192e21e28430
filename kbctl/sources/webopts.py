"""Options every web source kind (``url``, ``sitemap``, ``crawl``, ``llms``) shares.

Each web kind's module subclasses ``WebOptions`` with its own fields; options that apply
to every web kind (URL rules, content selectors…) belong here, once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..net import NetPolicy
from .options import SourceOptions, boolean, integer, option, positive_number

if TYPE_CHECKING:
    from .base import SourceSpec
    from .web import WebSource


@dataclass(frozen=True)
class WebOptions(SourceOptions):
    """``timeout`` (seconds per request) and ``max_page_bytes`` default to the network
    policy's limits; ``allow_private_network`` is set on a definition whose ingest was
    given ``--allow-private-network``, so a later resync may reach the same private host."""

    docs_mode: bool = option(True, boolean, flag="--docs-mode/--no-docs-mode")
    timeout: float | None = option(None, positive_number)
    max_page_bytes: int | None = option(None, integer(1))
    allow_private_network: bool = option(False, boolean)

    def net_policy(self, base: NetPolicy) -> NetPolicy:
        """``base`` with this source's limits and private-network permission applied."""
        changes: dict[str, Any] = {}
        if self.timeout is not None:
            changes.update(total_timeout=self.timeout,
                           read_timeout=min(base.read_timeout, self.timeout),
                           connect_timeout=min(base.connect_timeout, self.timeout))
        if self.max_page_bytes is not None:
            changes["max_bytes"] = self.max_page_bytes
        if self.allow_private_network:
            changes["allow_private_network"] = True
        return dataclasses.replace(base, **changes) if changes else base


def allowing_private_network(spec: SourceSpec) -> SourceSpec:
    """``spec`` remembering that it was given ``--allow-private-network`` (a web source
    only: files and text never touch the network)."""
    if not isinstance(spec.options, WebOptions) or spec.options.allow_private_network:
        return spec
    options = dataclasses.replace(spec.options, allow_private_network=True)
    return dataclasses.replace(spec, options=options)


def web_adapter(spec: SourceSpec, **context: Any) -> WebSource:
    """The adapter of every web kind (imported late: it pulls in the fetch machinery)."""
    from .web import WebSource

    return WebSource(spec, **context)
