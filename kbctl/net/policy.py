"""What a fetch may do (``NetPolicy``) and what it brings back (``FetchResult``).

Both are frozen values so one policy can be shared by every task of a run, and a result
can be cached or compared without surprises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kbctl.encoding import decode_text
from kbctl.net.retry import CONTENT_STATUSES, RetryPolicy

#: A resolver maps a host name to the IP address strings it stands for (tests inject one).
Resolver = Callable[[str], Iterable[str]]

#: Media types a content fetch accepts unless the caller passes its own list. Entries may
#: end in ``/*`` (``text/*``) or be ``*/*``.
DEFAULT_CONTENT_TYPES: tuple[str, ...] = (
    "text/html",
    "application/xhtml+xml",
    "application/xml",
    "text/xml",
    "text/plain",
    "text/markdown",
    "text/x-markdown",
    "application/gzip",
    "application/x-gzip",
)


@dataclass(frozen=True)
class NetPolicy:
    """Limits for every fetch. ``allow_private_network`` is the only way to reach local sites.

    ``max_bytes`` counts the body after decompression. ``total_timeout`` bounds one attempt
    end to end, so a server that drips a byte just inside ``read_timeout`` still stops.
    ``max_retry_wait`` caps what a ``Retry-After`` header may make us wait.
    """

    allow_private_network: bool = False
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 120.0
    max_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 5
    content_types: tuple[str, ...] = DEFAULT_CONTENT_TYPES
    concurrency: int = 8
    per_host: int = 4
    max_retries: int = 2
    max_retry_wait: float = 30.0

    def retry_policy(self) -> RetryPolicy:
        """The shared retry policy with this client's settings: only "try later" answers
        (429, 503), 1 s, 2 s, 4 s … without jitter, and any wait (a ``Retry-After`` too)
        capped at ``max_retry_wait`` rather than refused."""
        return RetryPolicy(max_retries=self.max_retries, base_delay=1.0,
                           max_delay=self.max_retry_wait, jitter=False,
                           max_retry_after=self.max_retry_wait, give_up_after=None,
                           statuses=CONTENT_STATUSES)

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "read_timeout", "total_timeout", "max_bytes",
                     "concurrency", "per_host"):
            if getattr(self, name) <= 0:
                raise ValueError(f"NetPolicy.{name} must be > 0")
        for name in ("max_redirects", "max_retries", "max_retry_wait"):
            if getattr(self, name) < 0:
                raise ValueError(f"NetPolicy.{name} must be >= 0")


@dataclass(frozen=True)
class FetchResult:
    """One successful fetch (2xx, or 304 with ``not_modified`` set and an empty body).

    ``url`` is the final URL after redirects, without fragment. ``headers`` has lower-case
    names. ``content`` is the decoded body (transfer encodings such as gzip undone); a
    ``.xml.gz`` file served as ``application/gzip`` stays compressed (see ``gunzip``).
    """

    url: str
    status: int
    content: bytes
    content_type: str
    charset: str | None
    headers: dict[str, str]
    etag: str | None
    last_modified: str | None
    not_modified: bool = False

    def text(self) -> str:
        """The body as text: the declared charset, else UTF-8 (a BOM wins either way)."""
        return decode_text(self.content, self.charset, source=self.url)
