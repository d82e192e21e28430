"""Building blocks shared by the providers: vector checks, bounded fan-out, JSON reading.

Every provider must hand back unit-length vectors of exactly the advertised width, since
the store compares them by cosine and a KB never mixes widths.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, TypeVar

import httpx

from kbctl.errors import ConfigError, EmbedderError
from kbctl.net.policy import Resolver

T = TypeVar("T")
R = TypeVar("R")


def l2_normalize(values: Sequence[float], *, what: str) -> list[float]:
    """Scale to unit length; a zero or non-finite vector is the provider's fault, not ours."""
    floats = [float(v) for v in values]
    norm = math.sqrt(math.fsum(v * v for v in floats))
    if not math.isfinite(norm):
        raise EmbedderError(f"{what}: vector contains non-finite values")
    if norm == 0.0:
        raise EmbedderError(f"{what}: returned an all-zero vector")
    return [v / norm for v in floats]


def checked_vector(values: Any, expected: int | None, *, what: str) -> list[float]:
    """Validate one raw vector from a response and normalise it.

    A wrong length is an error, never truncated or padded: silently fixing it would store
    vectors from a different model configuration than the KB records.
    """
    if not isinstance(values, list) or not values:
        raise EmbedderError(f"{what}: response has no embedding values")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise EmbedderError(f"{what}: embedding values are not all numbers")
    if expected is not None and len(values) != expected:
        raise EmbedderError(
            f"{what}: expected a {expected}-dimensional vector, got {len(values)}",
            hint="the model or dimensions in the embedder spec do not match the server",
        )
    return l2_normalize(values, what=what)


def map_bounded(fn: Callable[[T], R], items: Sequence[T], concurrency: int) -> list[R]:
    """``[fn(x) for x in items]`` with at most ``concurrency`` calls running at once.

    Plain threads rather than asyncio: callers are synchronous and may themselves run
    inside a worker thread while some other event loop is alive in the process. The first
    failure cancels everything not yet started and is re-raised.
    """
    if not items:
        return []
    workers = max(1, min(concurrency, len(items)))
    if workers == 1:
        return [fn(item) for item in items]
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kbctl-embed")
    try:
        futures = [pool.submit(fn, item) for item in items]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            if future in done and future.exception() is not None:
                for other in futures:
                    other.cancel()
                raise future.exception()  # type: ignore[misc]
        results = [future.result() for future in futures]
    except BaseException:
        # a signal (or a failure) is not made to wait for the calls still in flight: a
        # stalled provider kept a stopped run waiting out every retry
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results


class LazyClient:
    """One pooled httpx client per provider, made on first use (so building a provider, or
    ``--help``, opens nothing) and sized so ``concurrency`` requests never queue. Every
    request passes the SSRF guard (``kbctl.net.provider``), an injected ``transport``'s
    too; the environment's proxies are not used, as they would bypass it."""

    def __init__(self, *, transport: httpx.BaseTransport | None, timeout: float,
                 concurrency: int, allow_private_network: bool = False,
                 resolver: Resolver | None = None, what: str = "provider") -> None:
        self._transport = transport
        self._timeout = timeout
        self._concurrency = concurrency
        self._allow_private_network = allow_private_network
        self._resolver = resolver
        self._what = what
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def get(self) -> httpx.Client:
        from kbctl.net.provider import GuardedTransport

        with self._lock:
            if self._client is None:
                limits = httpx.Limits(max_connections=self._concurrency,
                                      max_keepalive_connections=self._concurrency)
                inner = self._transport or httpx.HTTPTransport(limits=limits)
                guarded = GuardedTransport(inner, resolver=self._resolver, what=self._what,
                                           allow_private_network=self._allow_private_network)
                self._client = httpx.Client(transport=guarded, timeout=self._timeout,
                                            limits=limits, trust_env=False,
                                            follow_redirects=False)
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


def require_positive(name: str, value: int | None) -> None:
    """Reject a non-positive option early, where the message can still name it."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"embedder option {name} must be a positive integer, got {value!r}")
