"""Which formats each result type offers: ``{result type: {format name: renderer}}``.

A command prints a result with ``Output.show(result, fmt)``; the choices for ``--format``
come from here, so a new format is one renderer plus one line in its type's table (for
example ``kbctl.render.query.FORMATS``).

Types and tables are named, not imported: the renderers of one result type (and the
result types themselves, some of which sit in heavy modules such as the ingest pipeline)
load only when a result of that type is shown, so ``kbctl query`` does not import
what ``kbctl ingest`` renders.
"""

from __future__ import annotations

import importlib
from typing import Any

from .formats import Formats, as_json

# {"module.TypeName" of a result type: "module:attribute" of its formats}
FORMATS: dict[str, str] = {
    "kbctl.results.QueryResult": "kbctl.render.query:FORMATS",
    "kbctl.pipeline.ingest.IngestReport": "kbctl.render.reports:INGEST",
    "kbctl.pipeline.resync.ResyncReport": "kbctl.render.reports:RESYNC",
    "kbctl.pipeline.status.StatusReport": "kbctl.render.reports:STATUS",
    "kbctl.pipeline.reembed.ReembedReport": "kbctl.render.reports:REEMBED",
    "kbctl.pipeline.forget.ForgetReport": "kbctl.render.reports:FORGET",
    "kbctl.embedded.server.DoctorReport": "kbctl.render.reports:DOCTOR",
    "kbctl.evals.outcome.EvalOutcome": "kbctl.render.eval:FORMATS",
    "kbctl.memory.model.MemorySearchResult": "kbctl.render.memory:SEARCH",
    "kbctl.memory.model.MemoryText": "kbctl.render.memory:TEXT",
    "kbctl.memory.model.WriteResult": "kbctl.render.memory:WRITE",
    "kbctl.memory.model.MemoryListing": "kbctl.render.memory:LISTING",
    "kbctl.memory.model.DeleteResult": "kbctl.render.memory:DELETE",
    "kbctl.memory.model.Health": "kbctl.render.memory:HEALTH",
    "kbctl.memory.model.MemoryStats": "kbctl.render.memory:STATS",
    "kbctl.memory.model.ImportReport": "kbctl.render.memory:IMPORT",
}

JSON_ONLY: Formats = {"json": as_json()}


def type_name(kind: type) -> str:
    """How ``FORMATS`` names a result type."""
    return f"{kind.__module__}.{kind.__qualname__}"


def formats_named(where: str) -> Formats:
    """The formats table ``"module:attribute"`` names, its module imported now."""
    module, _, attribute = where.partition(":")
    return getattr(importlib.import_module(module), attribute)  # type: ignore[no-any-return]


def formats_for(result: Any) -> Formats:
    """The formats of ``result``'s type (JSON alone for a type nobody registered)."""
    where = FORMATS.get(type_name(type(result)))
    return JSON_ONLY if where is None else formats_named(where)
