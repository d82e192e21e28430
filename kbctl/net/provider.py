"""The SSRF guard on the connections to provider APIs (embedders, rerankers).

``GuardedTransport`` sits under the provider's httpx client, whatever transport does the
sending (the network's, or one a test injects): each request's host is resolved once,
every address vetted by ``kbctl.net.guard`` (metadata endpoints always refused, private
and loopback ones unless the opt-in was given), and the request is sent to a vetted
address itself, with the name in the ``Host`` header and in TLS SNI, so no second lookup
can move it. A refusal happens before any connection and names the rule; it is a
configuration error (exit 2), as the operator chose the endpoint.

The client never follows redirects (``kbctl.net.api`` refuses a 3xx answer), so a key
never follows one to another host.
"""

from __future__ import annotations

import httpx

from kbctl.errors import BlockedURL, ConfigError, FetchError
from kbctl.net.endpoint import PRIVATE_HINT, bare_url, public_endpoint
from kbctl.net.guard import parse_url, resolve, vet
from kbctl.net.policy import NetPolicy, Resolver


class GuardedTransport(httpx.BaseTransport):
    """Vets every request's host and sends it to a vetted address through ``inner``."""

    def __init__(self, inner: httpx.BaseTransport, *, allow_private_network: bool = False,
                 resolver: Resolver | None = None, what: str = "provider") -> None:
        self.inner = inner
        self.policy = NetPolicy(allow_private_network=allow_private_network)
        self.resolver = resolver
        self.what = what

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = bare_url(str(request.url))
        shown = public_endpoint(url)
        try:
            target = parse_url(url)
            addresses = vet(url, resolve(target, self.resolver), self.policy)
        except BlockedURL as exc:
            reason = exc.message.replace(url, shown).replace(target_url(url), shown)
            raise ConfigError(f"{self.what} {shown}: {reason}",
                              hint=PRIVATE_HINT if exc.hint else None) from None
        except FetchError as exc:  # the name does not resolve: a connection failure
            raise httpx.ConnectError(exc.message, request=request) from None
        extensions = dict(request.extensions)
        if target.scheme == "https":
            extensions["sni_hostname"] = target.host
        failure: httpx.TransportError | None = None
        for address in addresses:  # all vetted; the next one only if a connect fails
            headers = httpx.Headers(request.headers)
            headers["Host"] = target.host_header
            pinned = httpx.Request(request.method, target.request_url(address),
                                   headers=headers, stream=request.stream,
                                   extensions=extensions)
            try:
                return self.inner.handle_request(pinned)
            except httpx.ConnectError as exc:
                failure = exc
        assert failure is not None
        raise failure

    def close(self) -> None:
        self.inner.close()


def target_url(url: str) -> str:
    """``url`` as the guard's messages spell it (a root path made explicit)."""
    try:
        return parse_url(url).url
    except BlockedURL:
        return url
