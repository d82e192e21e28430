"""The result shape of ``kbctl status``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..store.records import NamespaceStatus, SourceDef


@dataclass(frozen=True)
class DefinitionStatus:
    """One recorded source definition: what resync will run, and with which permission."""

    namespace: str
    id: str
    kind: str
    target: str
    allow_private_network: bool
    last_run_at: datetime | None
    last_ok_at: datetime | None
    last_run_failures: int

    @classmethod
    def of(cls, d: SourceDef) -> DefinitionStatus:
        return cls(d.namespace, d.id, d.kind, d.target,
                   d.options.get("allow_private_network") is True, d.last_run_at,
                   d.last_ok_at, len(d.last_errors or []))


@dataclass
class StatusReport:
    embedder: str
    namespaces: list[NamespaceStatus] = field(default_factory=list)
    source_definitions: list[DefinitionStatus] = field(default_factory=list)
    embedder_endpoint: str | None = None
