"""One retry policy for every HTTP client: the guarded content client, the embedders (and
any other provider API). Which statuses are worth another try, how long to wait before it
(exponential backoff, or what the server's ``Retry-After`` asks for), and when to give up.

``sleep`` and ``random`` are injectable so tests drive the timing with a fake clock instead
of waiting.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from kbctl.errors import KbctlError
from kbctl.net.decode import snippet

if TYPE_CHECKING:  # the policy is part of every web source's options; HTTP is only sent
    import httpx

DEFAULT_MAX_RETRIES = 4
# Content servers: a 500 on a page is usually the page's own fault, so only "try later"
# answers are retried. Provider APIs: every 5xx is worth another try.
CONTENT_STATUSES = frozenset({429, 503})
API_STATUSES = frozenset({429, *range(500, 600)})
# A call someone is waiting on (``RetryPolicy.for_question``) is tried again after at most
# this many timed-out attempts: a refused connection or a 503 costs a retry a second or
# two, a stalled server costs the whole attempt's deadline.
QUESTION_TIMEOUTS = 1


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date), or None."""
    value = (value or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


class WaitTooLong(Exception):
    """The server asks to wait longer than the policy will (a daily quota, say)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the server asks to wait {seconds:.0f} s")
        self.seconds = seconds


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff, honouring the server's ``Retry-After``.

    Retry ``n`` (0-based) waits ``cap = min(max_delay, base_delay * 2**n)``; with ``jitter``
    ("equal jitter") it waits ``cap/2 + random()*cap/2`` instead: half the wait is
    guaranteed growth, half is spread so concurrent workers do not retry in lockstep. A
    ``Retry-After`` header replaces the computed wait (the server knows its own window), at
    most ``max_retry_after`` seconds; one longer than ``give_up_after`` fails at once
    (``WaitTooLong``) instead of stalling the run.
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    base_delay: float = 0.5
    max_delay: float = 30.0
    jitter: bool = True
    max_retry_after: float = 300.0
    give_up_after: float | None = 300.0
    statuses: frozenset[int] = API_STATUSES
    # timed-out attempts retried at most this often (None: like any transport error)
    max_timeouts: int | None = None
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    random: Callable[[], float] = field(default=_random.random, compare=False)
    # told of each retry after no answer (a timeout, a refused connection): a stalled
    # provider costs an ingest minutes per attempt, and a run logged by cron said nothing
    on_retry: Callable[[str], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")

    def for_question(self) -> RetryPolicy:
        """This policy for a call someone is waiting on: a timed-out attempt is retried at
        most ``QUESTION_TIMEOUTS`` times. Quick failures and a server's ``Retry-After``
        are handled as before: they cost little, and an eval run in CI would rather wait
        out a rate limit than fail its cases."""
        limit = QUESTION_TIMEOUTS if self.max_timeouts is None \
            else min(self.max_timeouts, QUESTION_TIMEOUTS)
        return replace(self, max_timeouts=limit)

    def retryable(self, status: int) -> bool:
        return status in self.statuses

    def backoff(self, attempt: int) -> float:
        """Wait before retry number ``attempt + 1`` when the server gave no Retry-After."""
        cap = min(self.max_delay, self.base_delay * (2**attempt))
        return cap / 2 + self.random() * cap / 2 if self.jitter else cap

    def wait(self, attempt: int, retry_after: str | None, *, now: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1``, given the response's
        ``Retry-After`` header (or None). Raises ``WaitTooLong`` past ``give_up_after``."""
        asked = parse_retry_after(retry_after, now=now)
        if asked is None:
            return self.backoff(attempt)
        if self.give_up_after is not None and asked > self.give_up_after:
            raise WaitTooLong(asked)
        return min(asked, self.max_retry_after)

    def send(self, call: Callable[[], httpx.Response], *, what: str,
             error: type[KbctlError]) -> httpx.Response:
        """Run ``call`` until it returns a non-retryable response or retries run out.

        Returns the first response whose status is not retryable (success or a final error
        for the caller to map). Raises ``error`` naming ``what`` (provider and model) and the
        last status once ``max_retries`` retries have failed; transport errors (refused
        connection, timeout) are retried the same way, timeouts at most ``max_timeouts``
        times.
        """
        import httpx

        attempt = timeouts = 0
        while True:
            retry_after: str | None = None
            unanswered: httpx.TransportError | None = None
            try:
                response = call()
            except httpx.TransportError as exc:
                timeouts += isinstance(exc, httpx.TimeoutException)
                if attempt >= self.max_retries or (
                        self.max_timeouts is not None and timeouts > self.max_timeouts):
                    raise error(
                        f"{what}: request failed after {attempt + 1} attempts: {exc!r}",
                        hint="check the service's base URL and network",
                    ) from exc
                unanswered = exc
            else:
                if not self.retryable(response.status_code):
                    return response
                if attempt >= self.max_retries:
                    raise error(
                        f"{what}: HTTP {response.status_code} after {attempt + 1} attempts: "
                        f"{snippet(response)}",
                        hint="the provider is rate-limiting or failing; retry later",
                    )
                retry_after = response.headers.get("retry-after")
            try:
                delay = self.wait(attempt, retry_after)
            except WaitTooLong as exc:
                raise error(
                    f"{what}: HTTP {response.status_code}, the server asks to wait "
                    f"{exc.seconds:.0f} s (more than {self.give_up_after:.0f} s)",
                    hint="the provider's quota is exhausted; retry later",
                ) from None
            if unanswered is not None and self.on_retry is not None:
                self.on_retry(f"{what}: no answer ({type(unanswered).__name__}); trying again "
                              f"in {delay:.0f} s (attempt {attempt + 2} of "
                              f"{self.max_retries + 1})")
            self.sleep(delay)
            attempt += 1
