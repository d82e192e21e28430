"""Progress events: the pipeline reports, the output layer decides how to show them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    """``stage`` is one of: expand, total, loaded, written, skipped, failed, note."""

    stage: str
    ref: str = ""
    total: int | None = None
    message: str = ""


Progress = Callable[[ProgressEvent], None]


def no_progress(event: ProgressEvent) -> None:
    """The default sink: library callers get no output."""
