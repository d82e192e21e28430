"""URL normalisation and link filters for web sources."""

from __future__ import annotations

import pytest

from kbctl.sources.weburl import (
    extension,
    host_allowed,
    html_twin,
    is_markdown_url,
    is_origin_only,
    is_page_link,
    normalize_url,
    origin,
    site_key,
)


@pytest.mark.parametrize(("raw", "expected"), [
    ("HTTP://Docs.Example.COM:80/a#frag", "http://docs.example.com/a"),
    ("https://docs.example.com:443", "https://docs.example.com/"),
    ("https://docs.example.com:8443/x", "https://docs.example.com:8443/x"),
    ("http://x.test/a/./b/../c", "http://x.test/a/c"),
    ("http://x.test/dir/..", "http://x.test/"),
    ("http://x.test/%7euser/%2f?q=%41%2f", "http://x.test/~user/%2F?q=A%2F"),
    ("http://[::1]:8080/p", "http://[::1]:8080/p"),
    # a visit's session id and tracking parameters are no part of the page
    ("http://x.test/day/2?sid=8f3a&page=2", "http://x.test/day/2?page=2"),
    ("http://x.test/a;jsessionid=AB12?utm_source=feed&UTM_medium=x", "http://x.test/a"),
    ("http://x.test/a?PHPSESSID=1&q=sid", "http://x.test/a?q=sid"),
])
def test_normalize_folds_spellings_of_one_page(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


@pytest.mark.parametrize("raw", ["mailto:a@b.test", "javascript:void(0)", "ftp://x.test/f",
                                 "not a url", "http://", "http://x.test:99999/",
                                 "http://x.test/" + "a" * 9000])
def test_normalize_rejects_what_is_not_http(raw: str) -> None:
    assert normalize_url(raw) is None


def test_relative_links_resolve_against_the_base() -> None:
    base = "https://docs.example.com/guide/install.html"
    assert normalize_url("../api/#x", base) == "https://docs.example.com/api/"
    assert normalize_url("?page=2", base) == "https://docs.example.com/guide/install.html?page=2"
    assert normalize_url("//other.test/p", base) == "https://other.test/p"


def test_fragment_only_links_fold_into_the_page() -> None:
    base = "https://docs.example.com/a"
    assert normalize_url("#one", base) == normalize_url("#two", base) == base


def test_sites_and_origins() -> None:
    assert origin("https://docs.example.com:8443/a/b") == "https://docs.example.com:8443"
    assert site_key("http://docs.example.com/a") == site_key("https://docs.example.com/b")
    assert site_key("http://x.test:8000/") != site_key("http://x.test/")
    assert host_allowed("https://api.example.com/x", frozenset({"example.com"}))
    assert not host_allowed("https://badexample.com/x", frozenset({"example.com"}))
    assert is_origin_only("https://x.test") and is_origin_only("https://x.test/")
    assert not is_origin_only("https://x.test/sitemap.xml")


@pytest.mark.parametrize(("url", "page"), [
    ("http://x.test/guide/", True),
    ("http://x.test/guide/install.html", True),
    ("http://x.test/python3.11/", True),
    ("http://x.test/README.md", True),
    ("http://x.test/logo.PNG", False),
    ("http://x.test/docs.tar.gz", False),
    ("http://x.test/manual.pdf", False),
    ("http://x.test/_sources/index.rst.txt", False),
    ("http://x.test/en/latest/_sources/guide/intro.md", False),  # a theme's source button
    ("http://x.test/my_sources/intro.md", True),
    ("http://x.test/static/app.js?v=3", False),
])
def test_page_links_by_extension(url: str, page: bool) -> None:
    assert is_page_link(url) is page


def test_extensions() -> None:
    assert extension("http://x.test/sitemap.xml.gz") == ".xml.gz"
    assert extension("http://x.test/.hidden") == ""
    assert is_markdown_url("http://x.test/a/b.mdx")
    assert not is_markdown_url("http://x.test/a/md")


@pytest.mark.parametrize(("copy", "page"), [
    ("https://d.test/guide/install.md", "https://d.test/guide/install"),
    ("https://d.test/page.html.md", "https://d.test/page.html"),
    ("https://d.test/index.md", "https://d.test/"),
    ("https://d.test/docs/index.md", "https://d.test/docs/"),
    ("https://d.test/A.MD?x=1#top", "https://d.test/A"),
    ("https://d.test/docs/.md", None),
    ("https://d.test/page.mdx", None),
    ("https://d.test/notes.txt", None),
])
def test_the_page_a_markdown_copy_was_made_from(copy: str, page: str | None) -> None:
    assert html_twin(copy) == page
