"""Async fetching behind a synchronous iterator: an event loop in a worker thread.

The ingest pipeline consumes ``load()`` as a plain iterator and does its own slow work
(chunking, database writes) between items. Running the fetches on a private event loop
in another thread lets that work overlap with the network, and handing each outcome over
a queue as soon as it is ready lets the progress bar move while pages are still arriving.

Memory stays bounded: a producer reserves a slot (``Outbox.slot``) before it starts on an
item, and the slot is freed only when the consumer has finished with that item.
Callbacks that must run on the consumer's thread (database look-ups through the
pipeline's connection) go through ``Outbox.call``.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class _Item:
    value: Any


@dataclass(frozen=True)
class _Call:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: asyncio.Future[Any]


@dataclass(frozen=True)
class _End:
    error: BaseException | None = None


class Slot:
    """A reserved place in the hand-over window; ``put`` hands one item to the consumer."""

    def __init__(self, outbox: Outbox[Any]) -> None:
        self._outbox = outbox
        self.used = False

    def put(self, item: Any) -> None:
        if self.used:
            raise RuntimeError("a slot carries one item")
        self.used = True
        self._outbox._queue.put(_Item(item))


class Outbox(Generic[T]):
    """The producer's side of the hand-over (lives on the event loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, window: int,
                 channel: queue.SimpleQueue[Any]) -> None:
        self._loop = loop
        self._slots = asyncio.Semaphore(window)
        self._queue = channel

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """Wait for room in the window; a slot left unused is given back on exit."""
        await self._slots.acquire()
        slot = Slot(self)
        try:
            yield slot
        finally:
            if not slot.used:
                self._slots.release()

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on the consumer's thread and wait for its result."""
        future: asyncio.Future[Any] = self._loop.create_future()
        self._queue.put(_Call(fn, args, future))
        return await future

    def _release(self) -> None:
        self._slots.release()


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def stream(produce: Callable[[Outbox[T]], Awaitable[None]], *, window: int = 32) -> Iterator[T]:
    """Run ``produce(outbox)`` on a private loop in a worker thread; yield what it puts.

    Items arrive in completion order. An exception in the producer is re-raised here after
    the items put before it. Closing the iterator early cancels the producer and waits for
    its thread to end.
    """
    channel: queue.SimpleQueue[Any] = queue.SimpleQueue()
    started = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        outbox: Outbox[T] = Outbox(loop, window, channel)
        box.update(loop=loop, task=asyncio.current_task(), outbox=outbox)
        started.set()
        await produce(outbox)

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # handed to the consumer, which decides
            channel.put(_End(exc))
        else:
            channel.put(_End())
        finally:
            started.set()

    thread = threading.Thread(target=run, name="kbctl-fetch", daemon=True)
    thread.start()
    started.wait()
    finished = False
    try:
        while True:
            msg = channel.get()
            if isinstance(msg, _End):
                finished = True
                if msg.error is not None and not isinstance(msg.error, asyncio.CancelledError):
                    raise msg.error
                return
            if isinstance(msg, _Call):
                _answer(box["loop"], msg)
                continue
            yield msg.value
            _threadsafe(box["loop"], box["outbox"]._release)
    finally:
        if not finished:
            _threadsafe(box.get("loop"), getattr(box.get("task"), "cancel", None))
        thread.join()


def _answer(loop: asyncio.AbstractEventLoop, call: _Call) -> None:
    try:
        value, error = call.fn(*call.args), None
    except Exception as exc:
        value, error = None, exc
    _threadsafe(loop, lambda: _settle(call.future, value, error))


def _threadsafe(loop: asyncio.AbstractEventLoop | None, fn: Callable[[], Any] | None) -> None:
    if loop is None or fn is None:
        return
    with contextlib.suppress(RuntimeError):  # the loop has already closed
        loop.call_soon_threadsafe(fn)


def run_async(make: Callable[[], Awaitable[T]]) -> T:
    """Run one coroutine to completion on a private loop in a worker thread.

    Works the same whether or not the caller is itself inside an event loop (a notebook,
    an async application using kbctl as a library).
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = asyncio.run(make())  # type: ignore[arg-type]
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name="kbctl-fetch", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
