"""Text a hostile page, header or file can put in front of kbctl's parsers: each must be
answered in linear time (each of these took from seconds to minutes before), and still
parse what is well-formed. No clock is read: the sizes are such that a quadratic or
backtracking scan takes minutes to hours, and a test that hangs fails at a generous
timeout."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kbctl.chunk.anchors import CountingIds
from kbctl.extract.mdx import mdx_to_markdown
from kbctl.extract.rst_sphinx import api_display, api_fullname
from kbctl.generators import detect_site, page_path, resolve_site
from kbctl.generators.mdbook import _summary
from kbctl.generators.mkdocs import TocIds
from kbctl.linefile import LoadError, load_json, load_yaml
from kbctl.net.policy import FetchResult
from kbctl.sources.directives import read_directives

pytestmark = pytest.mark.timeout(60)


def _response(link: str) -> FetchResult:
    return FetchResult(url="https://docs.example/a", status=200, content=b"",
                       content_type="text/plain", charset=None, headers={"link": link},
                       etag=None, last_modified=None)


def test_a_link_header_full_of_blanks_or_brackets() -> None:
    for header in ("canonical <" + " " * 50_000, "canonical " + "<" * 50_000):
        assert read_directives(_response(header)).canonical is None
    ok = read_directives(_response('< https://docs.example/b >; rel="canonical"'))
    assert ok.canonical == "https://docs.example/b"


def test_a_python_signature_with_an_unclosed_bracket() -> None:
    assert api_fullname("py:function", "f[" + " " * 20_000 + "x", module=None,
                        enclosing=None) is None
    assert api_fullname("py:function", "join(a, *p) -> str", module="os.path",
                        enclosing=None) == "os.path.join"
    assert api_display("Box[T](x: T)", "pkg.Box") == "pkg.Box[T](x: T)"


def test_an_mdx_tag_that_never_closes() -> None:
    assert mdx_to_markdown("<a" + " " * 200_000).startswith("<a")
    assert mdx_to_markdown('x <Tabs groupId="a" {...p}>y</Tabs> <br/>').strip() == "x y"


def test_malformed_json_of_escaped_quotes() -> None:
    with pytest.raises(LoadError, match="Unterminated string"):
        load_json('"' + '\\"' * 500_000)
    data = load_json('{\n "a": 1,\n "b": {"c": 2}}')
    assert data.key_lines == {"a": 2, "b": 3} and data["b"].line == 3


@pytest.mark.parametrize(("make", "last"), [
    (lambda: CountingIds(lambda t: t), "x-19999"),
    (lambda: TocIds(lambda t: t, honour_explicit=True), "x_19999"),
])
def test_thousands_of_equal_headings(make: Callable[[], Callable[[str], str]],
                                     last: str) -> None:
    ids = make()
    got = [ids("x") for _ in range(20_000)]
    assert got[:2] == ["x", last.replace("19999", "1")] and got[-1] == last


_BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n"
    for i in range(9))


@pytest.mark.parametrize(("marker", "text"), [
    ("hugo.yaml", _BOMB + "baseURL: x\n"),
    ("mkdocs.yml", _BOMB),
    ("hugo.json", "[" * 100_000),
    ("hugo.toml", "a = " + "[" * 5_000),
])
def test_a_generator_config_bomb_counts_as_empty_settings(tmp_path: Path, marker: str,
                                                          text: str) -> None:
    (tmp_path / marker).write_text(text)
    (tmp_path / "content").mkdir()
    site = detect_site(tmp_path)
    assert site is not None and site.marker == tmp_path / marker


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_a_summary_is_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "SUMMARY.md")
    assert _summary(tmp_path)["chapters"] is None


@pytest.mark.parametrize("text", [
    '{"topK": ' + "9" * 5000 + "}",
    "topK: " + "9" * 5000 + "\n",
    "released: 2024-13-45\n",
])
def test_a_value_python_refuses_to_convert_is_a_load_error(text: str) -> None:
    """An integer of over 4,300 digits (Python's guard against quadratic conversion) or an
    impossible date was a traceback with exit 1 from a suite, a config or front matter."""
    load = load_json if text.startswith("{") else load_yaml
    with pytest.raises(LoadError, match=r"invalid (JSON|YAML): .*(4300 digits|month)"):
        load(text)


def test_thousands_of_sibling_hugo_pages_are_placed_in_linear_time(tmp_path: Path) -> None:
    """Each page looked for a leaf bundle's index by listing its folder: 5,000 siblings
    took about 12 s, 20,000 over 3 minutes."""
    (tmp_path / "hugo.toml").write_text("")
    docs = tmp_path / "content" / "docs"
    docs.mkdir(parents=True)
    for i in range(5000):
        (docs / f"p{i}.md").write_text("# P\n")
    site = resolve_site(tmp_path)
    placed = [page_path(site, docs / f"p{i}.md", {}) for i in range(5000)]
    assert placed[7] == "docs/p7/"
    (docs / "index.md").write_text("# A leaf bundle now\n")  # its files become resources
    assert page_path(site, docs / "p7.md", {}) is None
