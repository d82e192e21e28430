"""FetchResult → Document: routing by content type and extension, charsets, docs mode."""

from __future__ import annotations

import pytest

from kbctl.errors import ExtractError
from kbctl.net.policy import FetchResult
from kbctl.sources.page import route, to_document

HTML = """<!doctype html><html><head><title>Install — Widget docs</title></head><body>
<nav><a href="/">Home</a> <a href="/api">API</a></nav>
<main><h1 id="install">Install</h1><p>Widgets install quickly.</p>
<h2 id="with-pip">With pip</h2><pre><code class="language-shell">pip install widget</code></pre>
</main></body></html>"""


def result(body: bytes | str, content_type: str, url: str = "https://docs.test/install",
           charset: str | None = None) -> FetchResult:
    data = body.encode() if isinstance(body, str) else body
    return FetchResult(url=url, status=200, content=data, content_type=content_type,
                       charset=charset, headers={}, etag=None, last_modified=None)


def test_html_becomes_markdown_with_the_pages_real_anchors() -> None:
    doc = to_document(result(HTML, "text/html"), ref="https://docs.test/install", kind="url")
    assert doc.format == "markdown" and doc.title == "Install" and doc.kind == "url"
    assert "# Install {#install}" in doc.body
    assert "## With pip {#with-pip}" in doc.body
    assert "```shell\npip install widget\n```" in doc.body
    assert "Home" not in doc.body  # navigation chrome dropped


def test_no_docs_mode_takes_the_plain_text_path() -> None:
    doc = to_document(result(HTML, "text/html"), ref="https://docs.test/install", kind="url",
                      docs_mode=False)
    assert doc.format == "text"
    assert "Widgets install quickly." in doc.body
    assert "{#install}" not in doc.body and "```" not in doc.body
    md = to_document(result("# T\n\nbody\n", "text/markdown"), ref="https://docs.test/t",
                     kind="url", docs_mode=False)
    assert md.format == "text"


@pytest.mark.parametrize(("content_type", "url", "prefer", "expected"), [
    ("text/html", "https://d.test/a", False, "html"),
    ("application/xhtml+xml", "https://d.test/a", False, "html"),
    ("text/markdown", "https://d.test/a", False, "markdown"),
    ("text/plain", "https://d.test/a.md", False, "markdown"),
    ("text/plain", "https://d.test/a.mdx", False, "markdown"),
    ("text/plain", "https://d.test/a", False, "text"),
    ("text/plain", "https://d.test/a", True, "markdown"),
])
def test_routing(content_type: str, url: str, prefer: bool, expected: str) -> None:
    assert route(result("x", content_type, url), prefer_markdown=prefer) == expected


def test_markdown_keeps_front_matter_as_metadata() -> None:
    body = "---\ntitle: Config\nsection: ref\n---\n# Heading\n\nText.\n"
    doc = to_document(result(body, "text/markdown", "https://d.test/config.md"),
                      ref="https://d.test/config.md", kind="llms")
    assert doc.title == "Config" and doc.format == "markdown"
    assert doc.filterable == {"title": "Config", "section": "ref"}
    assert "section: ref" not in doc.body and "Text." in doc.body


def test_plain_text_title_comes_from_the_url() -> None:
    doc = to_document(result("Some notes.", "text/plain", "https://d.test/notes/"),
                      ref="https://d.test/notes/", kind="url")
    assert (doc.format, doc.title, doc.body) == ("text", "notes", "Some notes.")


def test_a_non_utf8_page_is_decoded_with_its_header_charset() -> None:
    page = "<html><head><title>Café</title></head><body><main><h1>Café crème</h1>" \
           "<p>Über naïve façades.</p></main></body></html>"
    doc = to_document(result(page.encode("iso-8859-1"), "text/html", charset="iso-8859-1"),
                      ref="https://d.test/cafe", kind="url")
    assert doc.title == "Café" and "Über naïve façades." in doc.body
    text = to_document(result("Grüße".encode("cp1252"), "text/plain", charset="windows-1252"),
                       ref="https://d.test/t", kind="url")
    assert text.body == "Grüße"


@pytest.mark.parametrize(("body", "content_type", "message"), [
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "text/html", "PNG"),
    (bytes(range(256)) * 16, "text/html", "not"),
    (b"abc\x00\x00\x01\x02", "text/plain", "binary"),
    (b"caf\xe9", "text/plain", "not valid utf-8"),
    (b"   ", "text/html", "empty"),
])
def test_bad_bodies_are_extract_errors_naming_the_url(body: bytes, content_type: str,
                                                       message: str) -> None:
    with pytest.raises(ExtractError) as info:
        to_document(result(body, content_type), ref="https://docs.test/install", kind="url")
    assert info.value.message.startswith("https://docs.test/install: ")
    assert message.lower() in info.value.message.lower()


def test_served_markdown_reads_as_its_readers_see_it() -> None:
    body = "# Guide\n\n<!-- an editor's note -->\nPress <kbd>Ctrl</kbd>, then `<b>`.\n"
    doc = to_document(result(body, "text/markdown", "https://d.test/guide.md"),
                      ref="https://d.test/guide.md", kind="llms")
    assert "editor's note" not in doc.body and "Press Ctrl, then `<b>`." in doc.body
    mdx = "import X from './x';\n\n# Guide\n\n:::tip\nPin it.\n:::\n"
    doc = to_document(result(mdx, "text/plain", "https://d.test/guide.mdx"),
                      ref="https://d.test/guide.mdx", kind="llms")
    assert "import" not in doc.body and "**Tip:**" in doc.body
