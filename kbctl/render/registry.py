"""Which formats each result type offers: ``{result type: {format name: renderer}}``.

A command prints a result with ``Output.show(result, fmt)``; the choices for ``--format``
come from here, so a new format is one renderer plus one line in its type's table (for
example ``kbctl.render.query.FORMATS``).
"""

from __future__ import annotations

from typing import Any

from ..evals.outcome import EvalOutcome
from ..memory.model import (
    DeleteResult,
    Health,
    ImportReport,
    MemoryListing,
    MemorySearchResult,
    MemoryStats,
    MemoryText,
    WriteResult,
)
from ..pipeline.forget import ForgetReport
from ..pipeline.ingest import IngestReport
from ..pipeline.reembed import ReembedReport
from ..pipeline.resync import ResyncReport
from ..pipeline.status import StatusReport
from ..results import QueryResult
from ..store.server import DoctorReport
from . import eval as eval_formats
from . import memory, query, reports
from .formats import Formats, as_json

FORMATS: dict[type, Formats] = {
    QueryResult: query.FORMATS,
    IngestReport: reports.INGEST,
    ResyncReport: reports.RESYNC,
    StatusReport: reports.STATUS,
    ReembedReport: reports.REEMBED,
    ForgetReport: reports.FORGET,
    DoctorReport: reports.DOCTOR,
    EvalOutcome: eval_formats.FORMATS,
    MemorySearchResult: memory.SEARCH,
    MemoryText: memory.TEXT,
    WriteResult: memory.WRITE,
    MemoryListing: memory.LISTING,
    DeleteResult: memory.DELETE,
    Health: memory.HEALTH,
    MemoryStats: memory.STATS,
    ImportReport: memory.IMPORT,
}

JSON_ONLY: Formats = {"json": as_json()}


def formats_for(result: Any) -> Formats:
    """The formats of ``result``'s type (JSON alone for a type nobody registered)."""
    return FORMATS.get(type(result), JSON_ONLY)
