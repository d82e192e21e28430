from __future__ import annotations

import time
from email.utils import formatdate

import httpx
import pytest

from kbctl.embed.retry import RetryPolicy, is_retryable, parse_retry_after
from kbctl.errors import EmbedderError
from tests.embed_fakes import FakeClock


@pytest.mark.parametrize(("status", "retry"), [
    (429, True), (500, True), (503, True), (599, True),
    (200, False), (400, False), (401, False), (404, False),
])
def test_is_retryable(status: int, retry: bool) -> None:
    assert is_retryable(status) is retry


def test_parse_retry_after_seconds_and_dates() -> None:
    now = time.time()
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    in_a_minute = formatdate(now + 60, usegmt=True)
    assert parse_retry_after(in_a_minute, now=now) == pytest.approx(60, abs=1)
    assert parse_retry_after(formatdate(now - 60, usegmt=True), now=now) == 0.0


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0, random=lambda: 1.0)
    assert [policy.backoff(n) for n in range(5)] == [1.0, 2.0, 4.0, 4.0, 4.0]


def test_send_returns_final_non_retryable_response_untouched() -> None:
    clock = FakeClock()
    policy = RetryPolicy(sleep=clock.sleep)
    response = httpx.Response(404)
    assert policy.send(lambda: response, what="m") is response
    assert clock.sleeps == []


def test_send_gives_up_after_max_retries() -> None:
    clock = FakeClock()
    calls: list[int] = []
    policy = RetryPolicy(max_retries=3, base_delay=2.0, sleep=clock.sleep, random=lambda: 0.0)

    def call() -> httpx.Response:
        calls.append(1)
        return httpx.Response(429)

    with pytest.raises(EmbedderError, match="model-x: HTTP 429 after 4 attempts"):
        policy.send(call, what="model-x")
    assert len(calls) == 4
    assert clock.sleeps == [1.0, 2.0, 4.0]


def test_negative_max_retries_is_refused() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)


def test_a_retry_after_beyond_the_limit_fails_at_once() -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_retry_after=60, sleep=clock.sleep)
    response = httpx.Response(429, headers={"Retry-After": "3600"})
    with pytest.raises(EmbedderError, match="asks to wait 3600 s"):
        policy.send(lambda: response, what="m")
    assert clock.sleeps == []
