"""One retry policy for every HTTP embedder: 429 and 5xx back off exponentially with jitter.

Embedding APIs rate-limit bursts routinely, so a transient refusal must cost a pause, not
the run. ``sleep`` and ``random`` are injectable so tests drive the timing with a fake
clock instead of waiting.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timezone
from email.utils import parsedate_to_datetime

import httpx

from kbctl.errors import EmbedderError

DEFAULT_MAX_RETRIES = 4


def is_retryable(status: int) -> bool:
    """429 (rate limit) and every 5xx are worth another try; other statuses are final."""
    return status == 429 or 500 <= status <= 599


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date)."""
    if value is None:
        return None
    value = value.strip()
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


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with "equal jitter", honouring the server's ``Retry-After``.

    Attempt ``n`` (0-based) waits ``cap/2 + random()*cap/2`` with
    ``cap = min(max_delay, base_delay * 2**n)``: half the wait is guaranteed growth, half is
    spread so concurrent workers do not retry in lockstep. A ``Retry-After`` header replaces
    the computed wait: the server knows its own quota window. One longer than
    ``max_retry_after`` (a daily quota, say) fails at once instead of stalling the run.
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 300.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    random: Callable[[], float] = field(default=_random.random, compare=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")

    def backoff(self, attempt: int) -> float:
        """Wait before retry number ``attempt + 1`` when the server gave no Retry-After."""
        cap = min(self.max_delay, self.base_delay * (2**attempt))
        return cap / 2 + self.random() * cap / 2

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        return self.backoff(attempt)

    def send(self, call: Callable[[], httpx.Response], *, what: str) -> httpx.Response:
        """Run ``call`` until it returns a non-retryable response or retries run out.

        Returns the first response whose status is not 429/5xx (success or a final error
        for the caller to map). Raises EmbedderError naming ``what`` (provider and model)
        and the last status once ``max_retries`` retries have failed; transport errors
        (refused connection, timeout) are retried the same way.
        """
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = call()
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise EmbedderError(
                        f"{what}: request failed after {attempt + 1} attempts: {exc!r}",
                        hint="check the embedder's base URL and network",
                    ) from exc
            else:
                if not is_retryable(response.status_code):
                    return response
                if attempt >= self.max_retries:
                    raise EmbedderError(
                        f"{what}: HTTP {response.status_code} after {attempt + 1} attempts: "
                        f"{_snippet(response)}",
                        hint="the provider is rate-limiting or failing; retry later",
                    )
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                if retry_after is not None and retry_after > self.max_retry_after:
                    raise EmbedderError(
                        f"{what}: HTTP {response.status_code}, the server asks to wait "
                        f"{retry_after:.0f} s (more than {self.max_retry_after:.0f} s)",
                        hint="the provider's quota is exhausted; retry later",
                    )
            self.sleep(self.delay(attempt, retry_after))
            attempt += 1


def _snippet(response: httpx.Response, limit: int = 200) -> str:
    try:
        text = response.text
    except Exception:  # an unreadable body must not hide the status
        return ""
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")
