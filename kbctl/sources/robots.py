"""robots.txt (RFC 9309): which paths a crawl may fetch, and which sitemaps a site lists.

Rules are matched the RFC way, not ``urllib.robotparser``'s: ``*`` and ``$`` wildcards,
the longest matching pattern wins and ``Allow`` wins a tie. A robots.txt that cannot be
fetched for a server error means "crawl nothing" (RFC 9309 §2.3.1.4); a missing one (4xx)
means "crawl anything".
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..encoding import lenient_text
from ..errors import BlockedURL, FetchError, KbctlError, Unreachable

if TYPE_CHECKING:  # the ingest pipeline reads ROBOTS_DROP here; only web kinds fetch
    from kbctl.net.client import GuardedClient

#: The product token kbctl answers to in ``User-agent`` lines.
AGENT_TOKEN = "kbctl"
#: What a page a listing names and robots.txt disallows counts as in a report's dropped.
ROBOTS_DROP = "robots.txt"
#: RFC 9309 §2.5: at least 500 KiB must be parsed; more is ignored.
MAX_ROBOTS_CHARS = 512 * 1024
#: Longer patterns are dropped: no real path is this long, and it bounds matching work.
MAX_PATTERN_CHARS = 2048
#: Rules past this many in the chosen groups are ignored (the file is hostile or broken).
MAX_RULES = 4096


@dataclass(frozen=True)
class Robots:
    """The rules of the group that applies to kbctl, and the ``Sitemap:`` lines."""

    rules: tuple[tuple[bool, str], ...] = ()  # (allow, pattern)
    sitemaps: tuple[str, ...] = ()
    refuse_all: str | None = None  # why every path is refused (robots.txt unreachable)
    site_down: bool = False  # refused because the site did not answer at all

    def allows(self, url: str) -> bool:
        """True when the URL's path (and query) may be fetched."""
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if path == "/robots.txt":
            return True
        if self.refuse_all:
            return False
        best_len, allowed = -1, True
        for allow, pattern in self.rules:
            if self._match(pattern, path):
                size = len(pattern)
                if size > best_len or (size == best_len and allow):
                    best_len, allowed = size, allow
        return allowed

    def _match(self, pattern: str, path: str) -> bool:
        return pattern_matches(pattern, path)


def pattern_matches(pattern: str, path: str) -> bool:
    """Whether a robots pattern (``*`` any run, trailing ``$`` the end) matches ``path``.

    Greedy leftmost search for each literal piece between the stars: with ``*`` as the only
    wildcard, the earliest place a piece fits never loses a match a later place would give,
    so this never backtracks and does at most one substring search per piece. A regex or
    ``fnmatch`` translation backtracks, and a pattern of many stars never ends.
    """
    anchored, pieces = _pieces(pattern)
    first, last = pieces[0], pieces[-1]
    if not path.startswith(first):
        return False
    if len(pieces) == 1:
        return path == first if anchored else True
    pos = len(first)
    for piece in pieces[1:-1]:
        if piece:
            found = path.find(piece, pos)
            if found < 0:
                return False
            pos = found + len(piece)
    if not anchored:
        return path.find(last, pos) >= 0
    return len(path) - len(last) >= pos and path.endswith(last)


@functools.lru_cache(maxsize=MAX_RULES)
def _pieces(pattern: str) -> tuple[bool, tuple[str, ...]]:
    """A pattern split once, not once per URL: (ends with ``$``, the pieces between stars)."""
    anchored = pattern.endswith("$")
    return anchored, tuple((pattern[:-1] if anchored else pattern).split("*"))


def parse_robots(text: str, agent: str = AGENT_TOKEN) -> Robots:
    """Parse robots.txt, keeping the groups for ``agent`` (else the ``*`` groups)."""
    agent = agent.lower()
    sitemaps: list[str] = []
    groups: list[tuple[list[str], list[tuple[bool, str]]]] = []
    agents: list[str] = []
    rules: list[tuple[bool, str]] = []
    in_rules = False
    for raw in text[:MAX_ROBOTS_CHARS].splitlines():
        line = raw.split("#", 1)[0].strip()
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "sitemap":
            if value:
                sitemaps.append(value)
        elif key in ("user-agent", "useragent"):
            if in_rules:
                groups.append((agents, rules))
                agents, rules, in_rules = [], [], False
            agents.append(value.lower())
        elif key in ("allow", "disallow"):
            in_rules = True
            # an empty Disallow allows everything: no rule; an absurd one is dropped
            if value and len(value) <= MAX_PATTERN_CHARS:
                rules.append((key == "allow", _encode_pattern(value)))
    if agents:
        groups.append((agents, rules))
    def named(names: list[str]) -> bool:
        return any(n.split("/")[0].strip() == agent for n in names)

    chosen = [g for g in groups if named(g[0])] or [g for g in groups if "*" in g[0]]
    mine = [rule for _names, group in chosen for rule in group][:MAX_RULES]
    return Robots(rules=tuple(mine), sitemaps=tuple(dict.fromkeys(sitemaps)))


def _encode_pattern(value: str) -> str:
    # Patterns are compared with the percent-encoded path the request sends.
    return "".join(c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode())
                   for c in value)


async def fetch_robots(client: GuardedClient, site_origin: str) -> Robots:
    """The site's robots.txt; missing means allow all, unreachable means refuse all."""
    url = site_origin.rstrip("/") + "/robots.txt"
    try:
        result = await client.fetch(url, content_types=("*/*",))
    except BlockedURL:
        return Robots()  # the pages themselves will be refused, naming the rule
    except Unreachable as exc:  # the site is down or the address wrong
        return Robots(refuse_all=f"the site does not answer ({exc.message})", site_down=True)
    except FetchError as exc:
        if exc.status is not None and 400 <= exc.status < 500:
            return Robots()
        return Robots(refuse_all=f"{url} could not be fetched ({exc.message}), so robots "
                                 f"rules are unknown and nothing is crawled")
    try:
        text = result.text()
    except KbctlError:
        text = lenient_text(result.content)
    return parse_robots(text)
