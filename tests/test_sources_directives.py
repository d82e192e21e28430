"""Canonical URLs and noindex, from response headers and the page's head."""

from __future__ import annotations

import pytest

from kbctl.net.policy import FetchResult
from kbctl.sources.directives import read_directives

URL = "https://docs.test/a/page.html"


def result(body: str = "", headers: dict[str, str] | None = None,
           content_type: str = "text/html") -> FetchResult:
    return FetchResult(url=URL, status=200, content=body.encode(), content_type=content_type,
                       charset="utf-8", headers=headers or {}, etag=None, last_modified=None)


def head(inner: str, body: str = "<p>text</p>") -> str:
    return f"<!doctype html><html><head><title>t</title>{inner}</head><body>{body}</body></html>"


def test_canonical_link_in_the_head_is_resolved_and_normalised() -> None:
    found = read_directives(result(head("<link rel='canonical' href='../b/Page.html#x'>")))
    assert found.canonical == "https://docs.test/b/Page.html"
    assert found.noindex is None


def test_canonical_in_a_link_header() -> None:
    headers = {"link": '<https://docs.test/style.css>; rel="preload", '
                       '</stable/page.html>; rel="canonical"'}
    assert read_directives(result("", headers)).canonical == "https://docs.test/stable/page.html"


@pytest.mark.parametrize("meta", [
    "<meta name='robots' content='noindex, follow'>",
    "<meta name='ROBOTS' content='NONE'>",
    "<meta name='robots' content='nofollow'><meta name='robots' content='noindex'>",
])
def test_noindex_meta_tags(meta: str) -> None:
    assert read_directives(result(head(meta))).noindex == '<meta name="robots"> tag'


@pytest.mark.parametrize(("value", "noindex"), [
    ("noindex", True), ("noindex, nofollow", True), ("none", True), ("nofollow", False),
    ("otherbot: noindex", False), ("unavailable_after: 25 Jun 2010 15:00:00 PST", False),
])
def test_x_robots_tag_header(value: str, noindex: bool) -> None:
    found = read_directives(result(head(""), {"x-robots-tag": value}))
    assert (found.noindex is not None) is noindex


@pytest.mark.parametrize(("content", "target"), [
    ("0;URL=../../b/enum.Kind.html", "https://docs.test/b/enum.Kind.html"),
    ("0; url='/moved/'", "https://docs.test/moved/"),
    ("1, URL=next.html", "https://docs.test/a/next.html"),
    ("0.5;url=https://docs.test/x", "https://docs.test/x"),
    ("5; url=/later", None),  # time to read the page: not a redirect
    ("0", None),  # reloads itself
    ("soon; url=/x", None),
    ("0; url=/a,b;c", "https://docs.test/a,b;c"),  # separators inside the URL stay
    ("nan; url=/x", None),
    ("-1; url=/x", None),
])
def test_an_immediate_refresh_names_its_target_like_a_canonical_link(
        content: str, target: str | None) -> None:
    found = read_directives(result(head(f"<meta http-equiv='Refresh' content=\"{content}\">")))
    assert (found.canonical, found.redirect) == (target, target is not None)


def test_a_canonical_link_wins_over_a_refresh() -> None:
    found = read_directives(result(head(
        "<meta http-equiv='refresh' content='0; url=/b'><link rel='canonical' href='/c'>")))
    assert (found.canonical, found.redirect) == ("https://docs.test/c", False)


def test_tags_in_the_body_or_for_other_bots_do_not_count() -> None:
    page = head("<meta name='googlebot' content='noindex'>",
                body="<meta name='robots' content='noindex'><link rel='canonical' href='/x'>")
    found = read_directives(result(page))
    assert (found.canonical, found.noindex) == (None, None)


def test_markdown_responses_only_read_headers() -> None:
    found = read_directives(result("<meta name='robots' content='noindex'>", {},
                                   content_type="text/markdown"))
    assert found.noindex is None


def test_a_useless_canonical_is_ignored() -> None:
    assert read_directives(result(head("<link rel='canonical' href='mailto:x@y'>"))
                           ).canonical is None
