"""Canonical URLs and noindex, from response headers and the page's head."""

from __future__ import annotations

import pytest

from kbctl.net import FetchResult
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
