"""Endpoints the operator configures (an embedder's or a reranker's base URL): checked
once, when the provider is made, and named in messages and records without the
credentials a URL can carry (``https://user:key@host/v1``), since messages end up in CI
logs."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from kbctl.errors import ConfigError


def checked_endpoint(base_url: str, what: str) -> str:
    """``base_url`` without its trailing slash; refused (exit 2) unless it is an http(s)
    URL with a host and a valid port, rather than failing as a network error after
    every retry."""
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError as exc:
        raise ConfigError(f"{what} {public_endpoint(url)!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{what} must be an http(s) URL with a host, got "
                          f"{public_endpoint(url)!r}",
                          hint="for example http://127.0.0.1:8080/v1")
    return url


def public_endpoint(base_url: str) -> str:
    """``base_url`` as a message or a KB may show it: no user info, query or fragment,
    where a key could hide."""
    parts = urlsplit(base_url.strip())
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        netloc = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        netloc = host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
