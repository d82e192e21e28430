"""URL rules: globs on the path (linear, no backtracking), ``re:`` expressions, per-rule
drop counts, and validation errors that name the pattern."""

from __future__ import annotations

import pytest

from kbctl.errors import InputError
from kbctl.sources.urlrules import NOT_INCLUDED, UrlRule, UrlRules, rule_target


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("/blog/*", "/blog/2024/hello.html", True),
    ("/blog/*", "/blog/", True),
    ("/blog/*", "/blog", False),
    ("/blog/*", "/docs/blog/x", False),
    ("*/blog/*", "/docs/blog/x", True),
    ("/docs/*.html", "/docs/a/b.html", True),
    ("/docs/*.html", "/docs/a/b.htm", False),
    ("/v?/*", "/v2/intro", True),
    ("/v?/*", "/v10/intro", False),
    ("/a*b*c", "/abc", True),
    ("/a*b*c", "/axxbyyc", True),
    ("/a*b*c", "/axxbyy", False),
    ("/a*b*c", "/acb", False),
    ("/exact", "/exact", True),
    ("/exact", "/exactly", False),
    ("*", "/anything?q=1", True),
    ("/search*", "/search?q=x", True),
    ("/x*x", "/x", False),  # the two fixed pieces may not overlap
    ("/ab*ba", "/aba", False),
    ("/ab*ba", "/abba", True),
    ("/a.b", "/aXb", False),  # a dot is a dot
])
def test_glob_matching(pattern: str, path: str, expected: bool) -> None:
    assert UrlRule.parse("exclude", pattern).matches(path) is expected


def test_regex_rules_search_the_path_and_query() -> None:
    rule = UrlRule.parse("include", r"re:^/(en|fr)/stable/")
    assert rule.matches("/en/stable/index.html")
    assert not rule.matches("/de/stable/index.html")
    assert UrlRule.parse("exclude", "re:[?&]page=").matches(
        rule_target("https://x.test/list?page=2"))


def test_rule_target_keeps_query_and_drops_fragment() -> None:
    assert rule_target("https://x.test/a/b?q=1#frag") == "/a/b?q=1"
    assert rule_target("https://x.test") == "/"


def test_include_and_exclude_with_counts_per_rule() -> None:
    rules = UrlRules.parse(include=["/docs/*", "/guide/*"], exclude=["*/changelog*",
                                                                     "re:/old/"])
    urls = [f"https://x.test{p}" for p in (
        "/docs/a", "/docs/changelog.html", "/guide/old/b", "/blog/post", "/guide/c",
        "/blog/other")]
    kept, dropped = rules.split(urls)
    assert kept == ["https://x.test/docs/a", "https://x.test/guide/c"]
    assert dropped == {"exclude */changelog*": 1, "exclude re:/old/": 1, NOT_INCLUDED: 2}


def test_no_rules_keep_everything() -> None:
    rules = UrlRules.parse()
    assert not rules
    assert rules.split(["https://x.test/a"]) == (["https://x.test/a"], {})


def test_a_rule_that_drops_nothing_is_still_reported() -> None:
    _, dropped = UrlRules.parse(exclude=["/nothing/*"]).split(["https://x.test/a"])
    assert dropped == {"exclude /nothing/*": 0}


@pytest.mark.parametrize(("pattern", "message"), [
    ("re:([a-z", "not a valid regular expression"),
    ("blog/*", "begins with '/' or '*'"),
    ("", "non-empty pattern"),
    ("/" + "a" * 2000, "longer than"),
])
def test_bad_patterns_are_input_errors_naming_the_pattern(pattern: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        UrlRules.parse(exclude=[pattern], where="sitemap source https://x.test/")
    assert message in info.value.message
    assert info.value.message.startswith("sitemap source https://x.test/: --exclude")
    if pattern and len(pattern) < 100:
        assert repr(pattern) in info.value.message


def test_non_string_patterns_are_refused() -> None:
    with pytest.raises(InputError, match="non-empty pattern"):
        UrlRules.parse(include=[3])


@pytest.mark.timeout(60)
def test_globs_stay_fast_on_adversarial_paths() -> None:
    """A backtracking matcher takes exponential time here; ours one pass per piece."""
    rule = UrlRule.parse("exclude", "/" + "*a" * 30 + "*b")
    path = "/" + "a" * 20000
    for _ in range(20):
        assert not rule.matches(path)
