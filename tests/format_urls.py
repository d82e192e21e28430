"""A tiny output format for query results, to show that a format is one module plus one
registry line: the distinct page URLs, one a line, for `xargs curl`."""

from __future__ import annotations

from typing import Any

from kbctl.render import Rendered
from kbctl.results import QueryResult


def urls(result: QueryResult, **options: Any) -> Rendered:
    seen = dict.fromkeys(h.url for h in result.hits)
    return Rendered.stdout(*(f"{url}\n" for url in seen))
