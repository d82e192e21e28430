"""Identity of the JSON report format, and of a case's definition across runs."""

from __future__ import annotations

import hashlib
import json

from kbctl.evals.model import Case

REPORT_SCHEMA = "kbctl.eval.report"
REPORT_SCHEMA_VERSION = 1


def case_fingerprint(case: Case) -> str:
    """A short hash of what a case asks and expects, so a baseline can tell edited cases.

    The id, the suite path and the line are left out: moving or renaming a file does not
    change what the case measures.
    """
    body = {
        "question": case.question,
        "topK": case.top_k,
        "minScore": case.min_score,
        "filter": dict(sorted(case.filter.items())),
        "expect": case.expect.to_dict(),
    }
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
