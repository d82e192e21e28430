"""Test doubles shared by the embedder tests: a recording transport and a fake clock."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class FakeClock:
    """Stands in for ``time.sleep``: records every wait instead of waiting."""

    sleeps: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


#: A resolver for provider tests on an injected transport: every host name is a public
#: address (the guard vets it; nothing is connected to).
PUBLIC_ADDRESS = "93.184.215.14"


def public_dns(host: str) -> list[str]:
    return [PUBLIC_ADDRESS]


def as_named(request: httpx.Request) -> httpx.Request:
    """``request`` with the host it is for (its Host header) in its URL: the guard sends
    it to the vetted address, and tests check what was asked of which host."""
    host = request.headers.get("host", request.url.netloc.decode())
    return httpx.Request(request.method, request.url.copy_with(netloc=host.encode()),
                         headers=request.headers, content=request.read(),
                         extensions=request.extensions)


class Recorder:
    """An ``httpx.MockTransport`` that keeps every request and counts concurrent calls.

    ``gate`` (when set) makes each call wait until that many calls are active at once (or
    a generous timeout passes) and then stay active a little longer, so the limit is
    reached for sure and any call beyond it has time to show up as an extra active call.
    """

    def __init__(
        self,
        respond: Callable[[httpx.Request], httpx.Response],
        *,
        gate: int | None = None,
        hold: float = 0.02,
    ) -> None:
        self.respond = respond
        self.requests: list[httpx.Request] = []
        self.connected: list[str] = []  # the URLs as sent: the vetted address, not the name
        self.active = 0
        self.max_active = 0
        self._gate = gate
        self._hold = hold
        self._reached = threading.Event()
        self._lock = threading.Lock()
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.connected.append(str(request.url))
            request = as_named(request)
            self.requests.append(request)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            if self._gate is not None and self.active >= self._gate:
                self._reached.set()
        try:
            if self._gate is not None:
                self._reached.wait(timeout=5)
                time.sleep(self._hold)
            return self.respond(request)
        finally:
            with self._lock:
                self.active -= 1

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) for r in self.requests]


def sequence(*responses: httpx.Response) -> Callable[[httpx.Request], httpx.Response]:
    """Answer with the given responses in turn (the last one repeats)."""
    lock = threading.Lock()
    remaining = list(responses)

    def respond(_: httpx.Request) -> httpx.Response:
        with lock:
            return remaining.pop(0) if len(remaining) > 1 else remaining[0]

    return respond
