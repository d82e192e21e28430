"""The event-loop-in-a-thread bridge behind web sources' ``load()``."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kbctl.sources.webload import Outbox, run_async, stream


def test_items_arrive_in_completion_order_and_the_iterator_ends() -> None:
    async def produce(outbox: Outbox[str]) -> None:
        gate = asyncio.Event()

        async def slow() -> None:
            async with outbox.slot() as slot:
                await gate.wait()
                slot.put("slow")

        async def fast() -> None:
            async with outbox.slot() as slot:
                slot.put("fast")
            gate.set()

        await asyncio.gather(slow(), fast())

    assert list(stream(produce)) == ["fast", "slow"]


def test_the_window_bounds_work_ahead_of_the_consumer() -> None:
    taken: list[int] = []
    started: list[int] = []

    async def produce(outbox: Outbox[int]) -> None:
        async def one(i: int) -> None:
            async with outbox.slot() as slot:
                started.append(i)
                slot.put(i)

        await asyncio.gather(*(one(i) for i in range(10)))

    for item in stream(produce, window=3):
        # started but not yet finished by the consumer: at most the window
        assert len(started) - len(taken) <= 3
        taken.append(item)
    assert sorted(taken) == list(range(10))


def test_calls_run_on_the_consumers_thread() -> None:
    consumer = threading.get_ident()

    async def produce(outbox: Outbox[int]) -> None:
        ident = await outbox.call(threading.get_ident)
        async with outbox.slot() as slot:
            slot.put(ident)
        with pytest.raises(ZeroDivisionError):
            await outbox.call(lambda: 1 / 0)

    assert list(stream(produce)) == [consumer]


def test_a_producer_error_is_raised_after_the_items_before_it() -> None:
    async def produce(outbox: Outbox[int]) -> None:
        async with outbox.slot() as slot:
            slot.put(1)
        raise RuntimeError("boom")

    it = stream(produce)
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="boom"):
        next(it)


def test_closing_early_cancels_the_producer_and_joins_its_thread() -> None:
    cancelled = threading.Event()

    async def produce(outbox: Outbox[int]) -> None:
        try:
            for i in range(1000):
                async with outbox.slot() as slot:
                    slot.put(i)
        finally:
            cancelled.set()

    before = threading.active_count()
    it = stream(produce, window=2)
    assert next(it) == 0
    it.close()
    assert cancelled.is_set()
    assert threading.active_count() == before


def test_run_async_works_inside_a_running_loop() -> None:
    async def inner() -> int:
        await asyncio.sleep(0)
        return 42

    async def outer() -> int:
        return run_async(inner)

    assert asyncio.run(outer()) == 42
    with pytest.raises(ValueError, match="bad"):
        run_async(lambda: _raise(ValueError("bad")))


async def _raise(exc: Exception) -> None:
    raise exc
