"""The result shape of ``kbctl status``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..store.records import NamespaceStatus, SourceDef
from .keys import KeyRoute

# A recorded option longer than this shows its length (a text source's body travels there)
MAX_SHOWN_OPTION = 200
# The failures of a definition's last run shown (their count is always given)
MAX_SHOWN_ERRORS = 5


@dataclass(frozen=True)
class DefinitionStatus:
    """One recorded source definition: what resync will run, with which options and
    permission, and why its last run failed (what an operator reads the morning after)."""

    namespace: str
    id: str
    kind: str
    target: str
    allow_private_network: bool
    last_run_at: datetime | None
    last_ok_at: datetime | None
    last_run_failures: int
    options: dict[str, Any] = field(default_factory=dict)
    last_errors: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, d: SourceDef) -> DefinitionStatus:
        errors = d.last_errors or []
        return cls(d.namespace, d.id, d.kind, d.target,
                   d.options.get("allow_private_network") is True, d.last_run_at,
                   d.last_ok_at, len(errors), options={
                       key: f"<{len(value):,} characters>" if isinstance(value, str)
                       and len(value) > MAX_SHOWN_OPTION else value
                       for key, value in d.options.items()},
                   last_errors=[{k: e.get(k) for k in ("ref", "type", "error", "hint")}
                                for e in errors[:MAX_SHOWN_ERRORS] if isinstance(e, dict)])


@dataclass
class StatusReport:
    embedder: str
    namespaces: list[NamespaceStatus] = field(default_factory=list)
    source_definitions: list[DefinitionStatus] = field(default_factory=list)
    embedder_endpoint: str | None = None
    # which database and config file the settings resolved to (flags, environment and
    # kbctl.yaml combine: an operator sees which won), the URL without its password
    database: str = ""
    config: str | None = None
    # the host each provider's API key is sent to (``kbctl.pipeline.keys``)
    keys: list[KeyRoute] = field(default_factory=list)
