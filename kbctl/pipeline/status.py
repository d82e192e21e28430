"""The result shape of ``kbctl status``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..config import Settings
from ..embedded.server import DoctorReport
from ..embedded.server import doctor as diagnose
from ..errors import InputError
from ..results import EMPTY_NAMESPACE_HINT
from ..store.db import describe
from ..store.records import NamespaceStatus, SourceDef
from ..wiring import open_store
from .keys import KeyRoute, key_routes
from .query import known_namespaces

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


def status(settings: Settings, namespace: str | None = None) -> StatusReport:
    """Per-namespace sources, chunks, embedder and sync history. A ``namespace`` that
    holds nothing and records nothing is bad input naming those that do (a typo must not
    read as an empty table)."""
    with open_store(settings, existing=True) as store:
        ident, endpoint = store.embedder.state()
        if namespace is not None and not store.status.per_namespace(namespace) \
                and not store.definitions.recorded(namespace):
            raise InputError(f"namespace '{namespace}' holds nothing (namespaces: "
                             f"{known_namespaces(store)})", hint=EMPTY_NAMESPACE_HINT)
        return StatusReport(embedder=str(ident) if ident else "none",
                            namespaces=store.status.per_namespace(namespace),
                            source_definitions=[DefinitionStatus.of(d)
                                                for d in store.definitions.recorded(namespace)],
                            embedder_endpoint=endpoint,
                            database=describe(settings.db_url, settings.data_dir),
                            config=str(settings.config_path) if settings.config_path else None,
                            keys=key_routes(settings, ident, endpoint, os.environ))


def doctor(settings: Settings, *, fix: bool = True) -> DoctorReport:
    """The embedded server's data directory: its state, and with ``fix`` its repairs."""
    return diagnose(settings.data_dir, fix=fix)
