"""The one guarded HTTP client: every fetch of content goes through ``GuardedClient``.

Each hop (the first request and every redirect) is parsed, resolved once and vetted by
``kbctl.net.guard``; the request is then sent to the vetted address itself with the name in
the ``Host`` header and, for https, in TLS SNI (httpcore's ``sni_hostname`` extension), so
certificate checks still use the name and no second lookup can move the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from kbctl import USER_AGENT
from kbctl.errors import FetchError, NotAPage, Unreachable
from kbctl.net.decode import ACCEPT_ENCODING, BoundedDecoder, TooLarge
from kbctl.net.guard import IPAddress, Target, parse_url, resolve, vet
from kbctl.net.policy import FetchResult, NetPolicy, Resolver

Sleep = Callable[[float], Awaitable[None]]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,text/*;q=0.8,*/*;q=0.5"


@dataclass(frozen=True)
class _Redirect:
    location: str


@dataclass(frozen=True)
class _Retry:
    status: int
    reason: str
    wait: float


def parse_content_type(header: str | None) -> tuple[str, str | None]:
    """``("text/html", "utf-8")`` from ``Text/HTML; charset="UTF-8"``; ``("", None)`` if absent."""
    media, _, params = (header or "").partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower() or None
    return media.strip().lower(), charset


def content_type_allowed(media: str, allowed: Iterable[str]) -> bool:
    """Exact match, ``type/*`` or ``*/*``; a missing type passes only ``*/*``."""
    major = media.split("/", 1)[0] if media else None
    for entry in allowed:
        entry = entry.strip().lower()
        if entry == "*/*" or (media and (entry == media or entry == f"{major}/*")):
            return True
    return False


class GuardedClient:
    """Async client with the SSRF guard, limits, retries and conditional requests.

    Use it as an async context manager, one per event loop. At most ``policy.concurrency``
    requests are in flight in total and ``policy.per_host`` per host name; a 429 or 503 is
    retried ``policy.max_retries`` times after ``Retry-After`` (capped) or 1 s, 2 s, ....
    ``transport`` (e.g. ``httpx.MockTransport``) replaces the network for tests; the client
    closes it on exit.
    """

    def __init__(self, policy: NetPolicy | None = None, *, resolver: Resolver | None = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Sleep = asyncio.sleep) -> None:
        self.policy = policy or NetPolicy()
        self._resolver = resolver
        self._transport = transport
        self._sleep = sleep
        self._retry = self.policy.retry_policy()
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._total = asyncio.Semaphore(self.policy.concurrency)
        self._hosts: dict[str, asyncio.Semaphore] = {}

    async def __aenter__(self) -> GuardedClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    async def fetch(self, url: str, *, etag: str | None = None,
                    last_modified: str | None = None,
                    content_types: Iterable[str] | None = None) -> FetchResult:
        """GET ``url`` under the policy. Raises ``BlockedURL`` or ``FetchError``.

        ``etag``/``last_modified`` make the request conditional (the URL asked for only,
        not where it redirects): a 304 comes back as a result with ``not_modified=True``
        and no body. ``content_types`` replaces the
        policy's allow list for this fetch.
        """
        if isinstance(content_types, str):
            content_types = (content_types,)
        allowed = tuple(content_types) if content_types is not None else self.policy.content_types
        conditional = {}
        if etag:
            conditional["If-None-Match"] = etag
        if last_modified:
            conditional["If-Modified-Since"] = last_modified
        current, seen, redirected = url, set(), False
        try:
            for _ in range(self.policy.max_redirects + 1):
                target = parse_url(current)
                if target.url in seen:
                    raise FetchError(f"redirect loop: {target.url} again", url=target.url)
                seen.add(target.url)
                addresses = await self._vet(current, target)
                outcome = await self._hop(target, addresses, conditional, allowed)
                if isinstance(outcome, FetchResult):
                    return outcome
                current, redirected = urljoin(target.url, outcome.location), True
                # validators describe the page asked for: sent on to where it moved, a
                # 304 there would claim a page no run has stored is unchanged
                conditional = {}
        except FetchError as exc:
            if not redirected:
                raise
            raise type(exc)(f"{exc.message} (redirected from {url})", url=exc.url,
                            status=exc.status, hint=exc.hint) from exc
        raise FetchError(f"{url}: too many redirects (more than {self.policy.max_redirects})",
                         url=url)

    async def _vet(self, url: str, target: Target) -> list[IPAddress]:
        if target.literal is not None:
            return vet(url, [target.literal], self.policy)
        try:
            addresses = await asyncio.wait_for(
                asyncio.to_thread(resolve, target, self._resolver), self.policy.connect_timeout)
        except asyncio.TimeoutError:
            raise Unreachable(f"timed out resolving {target.host}", url=target.url) from None
        return vet(url, addresses, self.policy)

    async def _hop(self, target: Target, addresses: list[IPAddress],
                   conditional: dict[str, str],
                   allowed: tuple[str, ...]) -> FetchResult | _Redirect:
        attempt = 0
        while True:
            async with self._slot(target.host):
                try:
                    outcome = await asyncio.wait_for(
                        self._send(target, addresses, conditional, allowed, attempt),
                        self.policy.total_timeout)
                except asyncio.TimeoutError:
                    raise Unreachable(f"{target.url}: timed out after "
                                     f"{self.policy.total_timeout:g} s", url=target.url) from None
            if not isinstance(outcome, _Retry):
                return outcome
            if attempt >= self._retry.max_retries:
                raise FetchError(f"{target.url}: HTTP {outcome.status} {outcome.reason} "
                                 f"after {attempt + 1} attempts", url=target.url,
                                 status=outcome.status)
            await self._sleep(outcome.wait)
            attempt += 1

    @contextlib.asynccontextmanager
    async def _slot(self, host: str) -> AsyncIterator[None]:
        per_host = self._hosts.setdefault(host, asyncio.Semaphore(self.policy.per_host))
        async with per_host, self._total:  # host first: a waiting host holds no global slot
            yield

    def _client(self, target: Target) -> httpx.AsyncClient:
        # One pool per TLS name, so a connection verified for one name never serves another.
        key = "" if self._transport is not None or target.scheme == "http" else target.host
        client = self._clients.get(key)
        if client is None:
            policy = self.policy
            transport = self._transport or httpx.AsyncHTTPTransport(
                retries=0, limits=httpx.Limits(max_connections=policy.concurrency))
            client = httpx.AsyncClient(
                transport=transport, trust_env=False, follow_redirects=False,
                timeout=httpx.Timeout(policy.read_timeout, connect=policy.connect_timeout))
            self._clients[key] = client
        return client

    async def _send(self, target: Target, addresses: list[IPAddress],
                    conditional: dict[str, str], allowed: tuple[str, ...],
                    attempt: int) -> FetchResult | _Redirect | _Retry:
        headers = {"Host": target.host_header, "User-Agent": USER_AGENT, "Accept": ACCEPT,
                   "Accept-Encoding": ACCEPT_ENCODING, **conditional}
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        client = self._client(target)
        failure: Exception | None = None
        for address in addresses:  # all vetted; the next one only if a connect fails
            client.cookies.clear()
            request = client.build_request("GET", target.request_url(address),
                                           headers=headers, extensions=extensions)
            try:
                response = await client.send(request, stream=True)
            except httpx.ConnectError as exc:
                failure = exc
                continue
            except httpx.HTTPError as exc:
                raise _transport_error(target, exc) from exc
            try:
                return await self._read(target, response, conditional, allowed, attempt)
            finally:
                await response.aclose()
        raise Unreachable(f"{target.url}: cannot connect ({failure})", url=target.url)

    async def _read(self, target: Target, response: httpx.Response,
                    conditional: dict[str, str], allowed: tuple[str, ...],
                    attempt: int) -> FetchResult | _Redirect | _Retry:
        status, url = response.status_code, target.url
        if status in REDIRECT_STATUSES and response.headers.get("location"):
            return _Redirect(response.headers["location"])
        if self._retry.retryable(status):
            wait = self._retry.wait(attempt, response.headers.get("retry-after"))
            return _Retry(status, response.reason_phrase, wait)
        if status == 304:
            return _result(target, response, b"", conditional)
        if not 200 <= status < 300:
            raise FetchError(f"{url}: HTTP {status} {response.reason_phrase}", url=url,
                             status=status)
        media, _ = parse_content_type(response.headers.get("content-type"))
        if not content_type_allowed(media, allowed):
            raise NotAPage(f"{url}: content type {media or '(none)'} is not accepted "
                             f"({', '.join(allowed)})", url=url, status=status)
        limit = self.policy.max_bytes
        try:
            decoder = BoundedDecoder(response.headers.get("content-encoding", ""), limit)
        except ValueError as exc:
            raise FetchError(f"{url}: {exc}", url=url, status=status) from exc
        body = bytearray()
        try:
            length = int(response.headers.get("content-length", "-1"))
        except ValueError:
            length = -1
        try:
            if decoder.identity and length > limit:  # refuse before reading a byte
                raise TooLarge
            if response.is_stream_consumed:  # read and decoded by the transport (a mock)
                decoder = BoundedDecoder("identity", limit)
                body += decoder.feed(response.content)
            else:
                async for raw in response.aiter_raw():
                    body += decoder.feed(raw)
        except TooLarge:
            raise FetchError(f"{url}: body is larger than {limit} bytes (after decompression)",
                             url=url, status=status) from None
        except zlib.error as exc:
            raise FetchError(f"{url}: corrupt compressed body ({exc})", url=url,
                             status=status) from exc
        except httpx.HTTPError as exc:
            raise _transport_error(target, exc) from exc
        if not decoder.complete:
            raise FetchError(f"{url}: truncated compressed body", url=url, status=status)
        return _result(target, response, bytes(body), conditional)


def _transport_error(target: Target, exc: httpx.HTTPError) -> FetchError:
    if isinstance(exc, httpx.TimeoutException):
        return Unreachable(f"{target.url}: timed out ({type(exc).__name__})", url=target.url)
    return FetchError(f"{target.url}: {type(exc).__name__}: {exc}", url=target.url)


def _result(target: Target, response: httpx.Response, content: bytes,
            conditional: dict[str, str]) -> FetchResult:
    media, charset = parse_content_type(response.headers.get("content-type"))
    not_modified = response.status_code == 304
    headers = {name.lower(): value for name, value in response.headers.items()}
    etag = headers.get("etag") or (conditional.get("If-None-Match") if not_modified else None)
    last_modified = headers.get("last-modified") or (
        conditional.get("If-Modified-Since") if not_modified else None)
    return FetchResult(url=target.url, status=response.status_code, content=content,
                       content_type=media, charset=charset, headers=headers, etag=etag,
                       last_modified=last_modified, not_modified=not_modified)


def fetch(url: str, policy: NetPolicy | None = None, *, resolver: Resolver | None = None,
          transport: httpx.AsyncBaseTransport | None = None, etag: str | None = None,
          last_modified: str | None = None,
          content_types: Iterable[str] | None = None) -> FetchResult:
    """One-off fetch from synchronous code (not from inside a running event loop)."""

    async def run() -> FetchResult:
        async with GuardedClient(policy, resolver=resolver, transport=transport) as client:
            return await client.fetch(url, etag=etag, last_modified=last_modified,
                                      content_types=content_types)

    return asyncio.run(run())
