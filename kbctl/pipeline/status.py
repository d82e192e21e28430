"""The result shape of ``kbctl status``."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..store.records import NamespaceStatus


@dataclass
class StatusReport:
    embedder: str
    namespaces: list[NamespaceStatus] = field(default_factory=list)
