from __future__ import annotations

from email.utils import formatdate

import httpx
import pytest

from kbctl.errors import EmbedderError
from kbctl.net.policy import NetPolicy
from kbctl.net.retry import RetryPolicy, WaitTooLong, parse_retry_after
from tests.embed_fakes import FakeClock


@pytest.mark.parametrize(("status", "retry"), [
    (429, True), (500, True), (503, True), (599, True),
    (200, False), (400, False), (401, False), (404, False),
])
def test_is_retryable(status: int, retry: bool) -> None:
    assert RetryPolicy().retryable(status) is retry


def test_parse_retry_after_seconds_and_dates() -> None:
    now = 1_700_000_000.0  # a fixed instant: the dates are read against it
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
    assert policy.send(lambda: response, what="m", error=EmbedderError) is response
    assert clock.sleeps == []


def test_send_gives_up_after_max_retries() -> None:
    clock = FakeClock()
    calls: list[int] = []
    policy = RetryPolicy(max_retries=3, base_delay=2.0, sleep=clock.sleep, random=lambda: 0.0)

    def call() -> httpx.Response:
        calls.append(1)
        return httpx.Response(429)

    with pytest.raises(EmbedderError, match="model-x: HTTP 429 after 4 attempts"):
        policy.send(call, what="model-x", error=EmbedderError)
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
        policy.send(lambda: response, what="m", error=EmbedderError)
    assert clock.sleeps == []


def test_one_wait_function_for_seconds_dates_and_backoff() -> None:
    now = 1_700_000_000.0  # a fixed instant: the dates are read against it
    policy = RetryPolicy(base_delay=1.0, jitter=False, max_retry_after=30, give_up_after=None)
    assert policy.wait(0, "7") == 7.0
    assert policy.wait(0, formatdate(now + 20, usegmt=True), now=now) == pytest.approx(20, abs=1)
    assert policy.wait(0, formatdate(now + 3600, usegmt=True), now=now) == 30.0  # capped
    assert [policy.wait(n, None) for n in range(3)] == [1.0, 2.0, 4.0]
    strict = RetryPolicy(give_up_after=60)
    with pytest.raises(WaitTooLong):
        strict.wait(0, "61")


def test_content_fetches_retry_only_try_later_answers_without_jitter() -> None:
    policy = NetPolicy(max_retries=2, max_retry_wait=30).retry_policy()
    assert [s for s in (429, 500, 502, 503, 504) if policy.retryable(s)] == [429, 503]
    assert policy.max_retries == 2
    assert [policy.backoff(n) for n in range(7)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_a_question_retries_a_timeout_once_and_other_failures_as_usual() -> None:
    policy = RetryPolicy(max_retries=4, sleep=FakeClock().sleep)

    def failing(exc: Exception) -> tuple[list[int], object]:
        calls: list[int] = []

        def call() -> httpx.Response:
            calls.append(1)
            raise exc
        return calls, call

    timeout = httpx.ReadTimeout("stalled")
    refused = httpx.ConnectError("refused")
    for chosen, exc, attempts in ((policy.for_question(), timeout, 2),
                                  (policy.for_question(), refused, 5),
                                  (policy, timeout, 5)):
        calls, call = failing(exc)
        with pytest.raises(EmbedderError, match=f"after {attempts} attempts"):
            chosen.send(call, what="m", error=EmbedderError)
        assert len(calls) == attempts
    assert policy.for_question().max_retries == 4


def test_each_retry_after_no_answer_is_told() -> None:
    """A stalled provider costs an ingest minutes per attempt: each retry is said, so a run
    logged by cron shows why it waits."""
    told: list[str] = []
    policy = RetryPolicy(max_retries=2, sleep=FakeClock().sleep, on_retry=told.append)
    answers = iter([httpx.ReadTimeout("stalled"), httpx.Response(503),
                    httpx.Response(200, json={})])

    def call() -> httpx.Response:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert policy.send(call, what="openai/m", error=EmbedderError).status_code == 200
    assert len(told) == 1  # a 503 answered: retried as ever, without a word
    assert told[0].startswith("openai/m: no answer (ReadTimeout); trying again in ")
    assert told[0].endswith("(attempt 2 of 3)")
