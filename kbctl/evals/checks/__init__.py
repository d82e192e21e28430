"""The ``expect`` checks of an eval case: ``{suite-file key: Check}``, in the order checks
run and are reported. A new check is one module (a ``Check``) plus one line here."""

from __future__ import annotations

from . import anchor, min_score, not_source_includes, source_includes
from .base import Check, CheckResult, Retrieved, SuiteReader, matches

CHECKS: dict[str, Check] = {
    source_includes.NAME: source_includes.CHECK,
    not_source_includes.NAME: not_source_includes.CHECK,
    min_score.NAME: min_score.CHECK,
    anchor.NAME: anchor.CHECK,
}

__all__ = ["CHECKS", "Check", "CheckResult", "Retrieved", "SuiteReader", "matches"]
