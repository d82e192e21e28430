"""How one server runs the tool calls a client sends without waiting for answers.

Reads run side by side, each on a session of its own (its own database connection), so a
search stalled on its embedder does not hold up a ``memory_get`` sent after it. A write
runs alone, in the order it arrived: it starts once every call before it has ended, and
no call after it starts before it has, so a client that sends an append and then a read
of the same note reads what it wrote.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from .session import AgentTools

#: Reads run at once, at most: one database connection each (the embedded server allows
#: 100 for every process that uses it), and two cores' worth of work on a small machine.
MAX_READERS = 4


class CallGate:
    """A first-come, first-served readers-writer gate for async callers."""

    def __init__(self, readers: int = MAX_READERS) -> None:
        self.readers = readers
        self._changed = anyio.Condition()
        self._line: deque[object] = deque()
        self._reading = 0
        self._writing = False

    def _free_for(self, write: bool) -> bool:
        if self._writing:
            return False
        return self._reading == 0 if write else self._reading < self.readers

    @asynccontextmanager
    async def passage(self, *, write: bool) -> AsyncIterator[None]:
        """Hold the gate for one call: shared for a read, alone for a write."""
        ticket = object()
        async with self._changed:
            self._line.append(ticket)
            try:
                while not (self._line[0] is ticket and self._free_for(write)):
                    await self._changed.wait()
            except BaseException:  # cancelled while waiting: the line moves on without it
                self._line.remove(ticket)
                self._changed.notify_all()
                raise
            self._line.popleft()
            if write:
                self._writing = True
            else:
                self._reading += 1
            self._changed.notify_all()  # the next in line may be a read that can start too
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    if write:
                        self._writing = False
                    else:
                        self._reading -= 1
                    self._changed.notify_all()


class SessionPool:
    """The server's sessions: the first, opened by the command, and siblings made as calls
    overlap (never more than the gate lets run at once)."""

    def __init__(self, first: AgentTools) -> None:
        self.first = first
        self._idle: list[AgentTools] = [first]
        self._made: list[AgentTools] = []

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AgentTools]:
        """A session no other call is using, for one call (opened on first use, as the
        first one reconnects after a lost connection)."""
        tools = self._idle.pop() if self._idle else self._new()
        try:
            yield tools
        finally:
            self._idle.append(tools)

    def _new(self) -> AgentTools:
        tools = self.first.sibling()
        self._made.append(tools)
        return tools

    def close(self) -> None:
        """Close the siblings (the first belongs to whoever opened it)."""
        for tools in self._made:
            tools.close()
