"""Endpoints the operator configures (an embedder's or a reranker's base URL): checked
when they are read and when the provider is made, and named in messages and records
without the credentials a URL can carry (``https://user:key@host/v1``), since messages
end up in CI logs.

A provider is sent an API key, so its endpoint passes the same SSRF rules as a fetch
(``kbctl.net.guard``): cloud metadata and credential endpoints are refused always,
private and loopback addresses only with ``--allow-private-network``. What can be judged
without a lookup (the URL's shape, a numeric host, a metadata host name) is judged here,
before any connection; a name is resolved and vetted once per connection by
``kbctl.net.provider``.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit, urlunsplit

from kbctl.errors import BlockedURL, ConfigError

PRIVATE_HINT = ("pass --allow-private-network (or set allow_private_network: true in "
                "kbctl.yaml) to use a provider on this machine or a private network")


def _parts(base_url: str, what: str) -> SplitResult:
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError as exc:
        raise ConfigError(f"{what} {public_endpoint(base_url)!r} is not a valid URL "
                          f"({exc})", hint="for example http://127.0.0.1:8080/v1") from None
    return parts


def checked_endpoint(base_url: str, what: str, *,
                     allow_private_network: bool | None = None) -> str:
    """``base_url`` without its trailing slash; refused (exit 2) unless it is an http(s)
    URL with a host and a valid port, rather than failing as a network error after
    every retry. A host the guard refuses for a fetch is refused here too, naming the
    rule: a metadata endpoint always, a private or loopback address unless
    ``allow_private_network`` (None: not known yet, only the rules no opt-in lifts)."""
    url = base_url.strip().rstrip("/")
    parts = _parts(url, what)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{what} must be an http(s) URL with a host, got "
                          f"{public_endpoint(url)!r}",
                          hint="for example http://127.0.0.1:8080/v1")
    refused = endpoint_refusal(url, allow_private_network=bool(allow_private_network),
                               metadata_only=allow_private_network is None)
    if refused is not None:
        raise ConfigError(f"{what} {public_endpoint(url)!r} refused: {refused.message}",
                          hint=refused.hint)
    return url


def endpoint_refusal(base_url: str, *, allow_private_network: bool,
                     metadata_only: bool = False) -> BlockedURL | None:
    """Why the guard refuses ``base_url`` before any lookup (its shape, a numeric host or
    a metadata host name), or None; the rule is named, the credentials are not."""
    from kbctl.net.guard import opt_in_verdict, parse_url

    bare = bare_url(base_url)
    try:
        target = parse_url(bare)
    except BlockedURL as exc:
        return BlockedURL(exc.message.replace(bare, public_endpoint(base_url)), url="")
    if target.literal is None:
        return None
    verdict = opt_in_verdict(target.literal, allow_private_network)
    if verdict is None or (metadata_only and verdict[1]):
        return None
    reason, liftable = verdict
    return BlockedURL(reason, url="", hint=PRIVATE_HINT if liftable else None)


def bare_url(base_url: str) -> str:
    """``base_url`` without its user info (a provider's basic auth, not part of where it
    connects)."""
    parts = urlsplit(base_url.strip())
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def public_endpoint(base_url: str) -> str:
    """``base_url`` as a message or a KB may show it: no user info, query or fragment,
    where a key could hide."""
    try:
        parts = urlsplit(base_url.strip())
        host = parts.hostname or ""
    except ValueError:  # an unclosed "[": show what precedes the host
        return base_url.strip().split("//", 1)[0] + "//(malformed host)"
    if ":" in host:
        host = f"[{host}]"
    try:
        netloc = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        netloc = host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def endpoint_host(base_url: str) -> str:
    """The host (and port) a provider's requests, and its key, go to."""
    return urlsplit(public_endpoint(base_url)).netloc
