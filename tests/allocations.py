"""The most memory Python held at once inside a block, for tests that hold hostile input
to a bound."""

from __future__ import annotations

import tracemalloc


class AllocationPeak:
    """``with AllocationPeak() as peak: ...``, then ``peak.bytes`` (tracemalloc's peak)."""

    bytes = 0

    def __enter__(self) -> AllocationPeak:
        tracemalloc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
