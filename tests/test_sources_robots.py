"""robots.txt: RFC 9309 matching, group choice, Sitemap lines and fetch outcomes."""

from __future__ import annotations

import asyncio
import random
import re
import socket

from kbctl.net.client import GuardedClient
from kbctl.net.policy import NetPolicy
from kbctl.sources.robots import (
    MAX_PATTERN_CHARS,
    MAX_RULES,
    Robots,
    fetch_robots,
    parse_robots,
    pattern_matches,
)
from tests.http_server import LocalServer, Response, html, ok

LOCAL = NetPolicy(allow_private_network=True, max_retries=0)

ROBOTS = """\
# comments are ignored
User-agent: *
Disallow: /private/
Disallow: /*.pdf$
Allow: /private/public-*

User-agent: otherbot
Disallow: /

Sitemap: https://docs.example.com/sitemap.xml
Sitemap: /relative-sitemap.xml
"""


def test_star_group_rules_with_wildcards_and_longest_match() -> None:
    robots = parse_robots(ROBOTS)
    base = "https://docs.example.com"
    assert robots.allows(f"{base}/guide/")
    assert not robots.allows(f"{base}/private/notes")
    assert robots.allows(f"{base}/private/public-faq")  # longer Allow beats Disallow
    assert not robots.allows(f"{base}/files/report.pdf")
    assert robots.allows(f"{base}/files/report.pdf?download=1")  # $ anchors the end
    assert robots.sitemaps == ("https://docs.example.com/sitemap.xml", "/relative-sitemap.xml")


def test_a_group_naming_kbctl_replaces_the_star_group() -> None:
    robots = parse_robots("User-agent: *\nDisallow: /\n\nUser-agent: KBCTL\nDisallow: /drafts\n")
    assert robots.allows("https://x.test/guide")
    assert not robots.allows("https://x.test/drafts/1")


def test_grouped_user_agents_share_rules_and_empty_disallow_allows() -> None:
    robots = parse_robots("User-agent: a\nUser-agent: kbctl\nDisallow:\n")
    assert robots.allows("https://x.test/anything")
    robots = parse_robots("User-agent: a\nUser-agent: kbctl\nDisallow: /x\n")
    assert not robots.allows("https://x.test/x")


def test_equal_length_tie_goes_to_allow_and_robots_txt_is_always_allowed() -> None:
    robots = parse_robots("User-agent: *\nDisallow: /page\nAllow: /page\nDisallow: /\n")
    assert robots.allows("https://x.test/page")
    assert not robots.allows("https://x.test/other")
    assert robots.allows("https://x.test/robots.txt")


def _fetch(server: LocalServer) -> Robots:
    async def run() -> Robots:
        async with GuardedClient(LOCAL) as client:
            return await fetch_robots(client, server.url("/").rstrip("/"))

    return asyncio.run(run())


def test_fetch_outcomes_follow_rfc_9309() -> None:
    with LocalServer({"/robots.txt": ok("User-agent: *\nDisallow: /x\n")}) as server:
        assert not _fetch(server).allows(server.url("/x"))
    with LocalServer({}) as server:  # 404: no rules, crawl anything
        assert _fetch(server) == Robots()
    with LocalServer({"/robots.txt": Response(500, b"oops")}) as server:
        robots = _fetch(server)
        assert not robots.allows(server.url("/guide"))
        assert robots.refuse_all and "HTTP 500" in robots.refuse_all
    with LocalServer({"/robots.txt": html("<html><body>soft 404</body></html>")}) as server:
        assert _fetch(server).allows(server.url("/guide"))
        assert not _fetch(server).site_down


def test_a_site_that_does_not_answer_is_said_to_be_down() -> None:
    with socket.socket() as sock:  # a port nothing listens on once it is closed
        sock.bind(("127.0.0.1", 0))
        origin = f"http://127.0.0.1:{sock.getsockname()[1]}"

    async def run() -> Robots:
        async with GuardedClient(LOCAL) as client:
            return await fetch_robots(client, origin)

    robots = asyncio.run(run())
    assert robots.site_down and not robots.allows(origin + "/guide")
    assert robots.refuse_all and robots.refuse_all.startswith("the site does not answer (")
    assert "cannot connect" in robots.refuse_all


def _reference_match(pattern: str, path: str) -> bool:
    """The regex translation (correct, but exponential on many stars): small inputs only."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(p) for p in body.split("*")) + ("$" if anchored else "")
    return re.match(regex, path) is not None


def test_the_linear_matcher_agrees_with_the_regex_translation() -> None:
    rng = random.Random(9309)
    for _ in range(4000):
        pattern = "".join(rng.choice("ab*/") for _ in range(rng.randint(0, 7)))
        if rng.random() < 0.3:
            pattern += "$"
        path = "".join(rng.choice("ab/") for _ in range(rng.randint(0, 9)))
        assert pattern_matches(pattern, path) == _reference_match(pattern, path), (
            pattern, path)


def test_a_pattern_of_many_stars_ends_at_once() -> None:
    # The regex form of this pattern backtracks for ever against the path below.
    robots = parse_robots("User-agent: *\nDisallow: /" + "*a" * 1000 + "*b\n"
                          "Disallow: /" + "a*" * 900 + "c$\n")
    assert [pattern.count("*") for _allow, pattern in robots.rules] == [1001, 900]
    assert robots.allows("https://x.test/" + "a" * 4000)
    assert not robots.allows("https://x.test/" + "a" * 4000 + "b")
    assert not robots.allows("https://x.test/" + "a" * 4000 + "c")


def test_absurd_patterns_and_rule_floods_are_bounded() -> None:
    long_rule = "Disallow: /" + "x" * (MAX_PATTERN_CHARS + 1) + "\n"
    flood = "".join(f"Disallow: /p{i}\n" for i in range(MAX_RULES + 10))
    robots = parse_robots("User-agent: *\n" + long_rule + flood)
    assert len(robots.rules) == MAX_RULES
    assert all(len(pattern) <= MAX_PATTERN_CHARS for _allow, pattern in robots.rules)
