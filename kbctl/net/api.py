"""Calls to provider APIs (embedders, rerankers): one bounded POST, one JSON reader (an
error quotes the body through ``net.decode.snippet``).

httpx's timeouts are per network operation, so a server that trickles a byte every few
seconds never trips them, and ``client.post`` reads the whole body into memory however
large it is. A provider runs inside cron jobs and long-lived MCP servers, so every answer
is read here under a whole-request deadline and a byte cap (counted after decompression,
with the same bounded decoder the content client uses).
"""

from __future__ import annotations

import time
import zlib
from typing import TYPE_CHECKING, Any

import httpx

from kbctl.errors import KbctlError
from kbctl.net.decode import ACCEPT_ENCODING, BoundedDecoder, TooLarge
from kbctl.net.endpoint import public_endpoint

if TYPE_CHECKING:
    from kbctl.net.retry import RetryPolicy

#: One answer may take this long in all (connect, wait, and read), and be this large.
DEADLINE_S = 300.0
MAX_BYTES = 64 * 1024 * 1024
#: An answer someone is waiting on (a question's embedding, a rerank) may take this long.
QUESTION_DEADLINE_S = 30.0


def send_json(retry: RetryPolicy, client: httpx.Client, url: str, *, body: Any,
              headers: dict[str, str], what: str, error: type[KbctlError],
              question: bool = False) -> httpx.Response:
    """``post_json`` under the retry policy: the one way a provider is called.

    A ``question`` is a call someone waits on (a query, an eval case, an agent's tool
    call): each attempt gets ``QUESTION_DEADLINE_S`` and a timed-out attempt is retried
    once (``RetryPolicy.for_question``), so a stalled provider costs a question about a
    minute, not the ~25 minutes an ingest batch may wait. An ingest keeps the long budget:
    waiting out a slow provider is cheaper there than failing the batch.
    """
    policy = retry.for_question() if question else retry
    deadline = QUESTION_DEADLINE_S if question else DEADLINE_S
    return policy.send(
        lambda: post_json(client, url, body=body, headers=headers, what=what, error=error,
                          deadline=deadline),
        what=what, error=error)


def _within(timeout: httpx.Timeout, deadline: float) -> httpx.Timeout:
    """The client's per-operation timeouts, none longer than ``deadline``."""
    def cap(value: float | None) -> float:
        return deadline if value is None else min(value, deadline)
    return httpx.Timeout(connect=cap(timeout.connect), read=cap(timeout.read),
                         write=cap(timeout.write), pool=cap(timeout.pool))


def post_json(client: httpx.Client, url: str, *, body: Any, headers: dict[str, str],
              what: str, error: type[KbctlError], deadline: float | None = None,
              max_bytes: int | None = None) -> httpx.Response:
    """POST ``body`` as JSON and read the answer whole, within ``deadline`` seconds and
    ``max_bytes`` decoded bytes (the module's defaults when None).

    A body past the cap is ``error`` naming ``what``; a body still arriving at the deadline
    raises ``httpx.ReadTimeout``, a transport failure the retry policy tries again. The
    deadline is checked between reads, so one call ends within the deadline plus the
    client's per-read timeout, itself held to the deadline (a server that answers nothing
    at all times out at the deadline).
    """
    deadline = DEADLINE_S if deadline is None else deadline
    limit = MAX_BYTES if max_bytes is None else max_bytes
    started = time.monotonic()
    request = client.build_request("POST", url, json=body,
                                   headers={"Accept-Encoding": ACCEPT_ENCODING, **headers},
                                   timeout=_within(client.timeout, deadline))
    response = client.send(request, stream=True)
    if response.is_redirect:
        # not followed: a key sent on would reach wherever the answer points
        response.close()
        moved = public_endpoint(response.headers.get("location", "")) or "(nowhere)"
        raise error(f"{what}: HTTP {response.status_code} redirects to {moved}; kbctl "
                    "does not follow a provider's redirects, so its key goes nowhere else",
                    hint="set the base URL to where the provider now answers")
    try:
        try:
            decoder = BoundedDecoder(response.headers.get("content-encoding", ""), limit)
        except ValueError as exc:
            raise error(f"{what}: HTTP {response.status_code}: {exc}") from None
        content = bytearray()
        if response.is_stream_consumed:  # read and decoded by the transport (a mock)
            decoder = BoundedDecoder("identity", limit)
            content += decoder.feed(response.content)
        else:
            for raw in response.iter_raw():
                content += decoder.feed(raw)
                if time.monotonic() - started > deadline:
                    raise httpx.ReadTimeout(f"the answer was still arriving after "
                                            f"{deadline:g} s", request=request)
        if not decoder.complete:
            raise error(f"{what}: HTTP {response.status_code} with a truncated compressed "
                        "body")
    except TooLarge:
        raise error(f"{what}: HTTP {response.status_code} with a body larger than "
                    f"{limit} bytes", hint="the provider's answer is not what kbctl expects"
                    ) from None
    except zlib.error as exc:
        raise error(f"{what}: HTTP {response.status_code} with a corrupt compressed body "
                    f"({exc})") from None
    finally:
        response.close()
    kept = {name: value for name, value in response.headers.multi_items()
            if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")}
    return httpx.Response(response.status_code, headers=kept, content=bytes(content),
                          request=request)


def read_json(response: httpx.Response, *, what: str, error: type[KbctlError]) -> Any:
    """A provider's JSON answer; a body that is not JSON, or nested past the parser's
    depth, is ``error`` naming ``what`` (never a traceback)."""
    try:
        return response.json()
    except (ValueError, RecursionError) as exc:
        raise error(f"{what}: HTTP {response.status_code} with a body that is not JSON "
                    "(or nests too deeply)") from exc


