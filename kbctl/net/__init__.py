"""The SSRF guard and the one guarded HTTP client every fetch of content goes through.

Pages, sitemaps, robots.txt and llms.txt are all fetched with ``GuardedClient`` (async,
for concurrency) or ``fetch`` (one-off, sync). URLs may be checked on their own with
``check_url``. Local sites on 127.0.0.1 and other private ranges need
``NetPolicy(allow_private_network=True)``.
"""

from __future__ import annotations

from kbctl.net.client import (
    GuardedClient,
    content_type_allowed,
    fetch,
    parse_content_type,
)
from kbctl.net.decode import gunzip
from kbctl.net.guard import (
    BLOCKED_V4,
    BLOCKED_V6,
    METADATA_ADDRESSES,
    IPAddress,
    blocked_reason,
    check_url,
    system_resolver,
)
from kbctl.net.policy import DEFAULT_CONTENT_TYPES, FetchResult, NetPolicy, Resolver
from kbctl.net.retry import RetryPolicy, parse_retry_after

__all__ = [
    "BLOCKED_V4",
    "BLOCKED_V6",
    "DEFAULT_CONTENT_TYPES",
    "METADATA_ADDRESSES",
    "FetchResult",
    "GuardedClient",
    "IPAddress",
    "NetPolicy",
    "Resolver",
    "RetryPolicy",
    "blocked_reason",
    "check_url",
    "content_type_allowed",
    "fetch",
    "gunzip",
    "parse_content_type",
    "parse_retry_after",
    "system_resolver",
]
