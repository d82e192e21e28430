"""Docsify: routes, heading ids and ``?id=`` citations, checked against Docsify itself.

The last tests render each page with Docsify's own code (versions 4 and 5) in jsdom, as a
browser would, and compare the ids on the page with the anchors kbctl cites. They need
Node.js and a folder of node modules holding ``jsdom``, ``docsify4`` (Docsify 4) and
``docsify5`` (Docsify 5), named by ``KBCTL_DOCSIFY_MODULES`` (``.ci/run`` installs them);
without them they skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kbctl.generators import GENERATORS, detect_site, heading_ids
from kbctl.generators.docsify import slugify
from kbctl.pipeline.query import citation_for
from tests.sitebuild import citations, page_bodies, sections, write_tree

RENDER = Path(__file__).with_name("docsify_render.cjs")
BASE = "https://owner.github.io/project/"
HEADINGS = [
    "# Project Guide", "## Install the tool", "## Install the tool", "## Install the tool-1",
    "## Tom & Jerry's \"quotes\"", "## x < y > z", "## `--max-depth` option",
    "## **Bold** and _it_", "## [A link](other.md) here", "## C++ / C#: 2 languages!",
    "## 1. Numbered first", "## Ünïcödé Ärger", "## 中文 标题", "## Launch 🚀 now",
    "## a -- b", "## snake_case_name", "## Options :id=custom-options", "## Options",
    "## Heading {#not-an-id}", "## Left out of the sidebar {docsify-ignore}",
    "## Hidden too <!-- {docsify-ignore} -->", "## Left out {docsify-ignore-all}",
    "Setext heading\n--------------",
]


def _index(major: int | None, extra: str = "", src: str | None = None) -> str:
    """A Docsify shell loading ``src``, by default the CDN's copy of version ``major``."""
    package = f"docsify@{major}" if major else "docsify"
    src = src or f"//cdn.example.net/npm/{package}/lib/docsify.min.js"
    return (f"<!DOCTYPE html><html><body><div id=app></div>\n"
            f"<script>window.$docsify = {{ name: 'p'{extra} }}</script>\n"
            f"<script src=\"{src}\"></script>\n</body></html>\n")


def _ids(major: int, texts: list[str], root: Path) -> list[str | None]:
    site = GENERATORS["docsify"].default_site(root)
    allocate = heading_ids(replace(site, settings={**site.settings, "major": major}))
    return [allocate(t) for t in texts]


def test_detection_routes_and_the_shell_left_out(tmp_path: Path) -> None:
    write_tree(tmp_path, {"docs/index.html": _index(4), "docs/README.md": "# Home\n\nHi.\n",
                          "docs/guide.md": "# Guide\n\nText.\n",
                          "docs/zh/README.md": "# 主页\n\n文字.\n",
                          "docs/zh/guide/setup.md": "# Setup\n\nText.\n",
                          "docs/_sidebar.md": "- [Guide](guide.md)\n",
                          "docs/_coverpage.md": "# Cover\n"})
    site = detect_site(tmp_path / "docs")
    assert site is not None and site.generator == "docsify"
    assert site.settings["major"] == 4
    pairs, generator, failed = citations(tmp_path / "docs", base_url=BASE)
    assert generator == "docsify" and not failed
    assert sorted({url for url, _ in pairs}) == [
        BASE + "#/", BASE + "#/guide", BASE + "#/zh/", BASE + "#/zh/guide/setup"]


def test_settings_homepage_history_base_path_and_version(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "index.html": _index(None, ", homepage: 'intro.md', routerMode: 'history', "
                                   "basePath: 'pages/'"),
        "pages/intro.md": "# Intro\n\nText.\n", "pages/README.md": "# Readme\n\nText.\n"})
    site = detect_site(tmp_path)
    assert site is not None and site.content == tmp_path / "pages"
    assert site.settings == {"major": 5, "history": True, "homepage": "intro.md"}
    pairs = citations(tmp_path, base_url=BASE)[0]
    assert sorted({url for url, _ in pairs}) == [BASE, BASE + "README"]
    vendored = tmp_path / "v"
    write_tree(vendored, {"index.html": "<script>window.$docsify={}</script>"
                                        "<script src='lib/docsify.min.js'></script>",
                          "lib/docsify.min.js": '!function(){var e={version:"4.13.1"}}()'})
    assert GENERATORS["docsify"].detect(vendored).settings["major"] == 4
    plugin = tmp_path / "p"
    write_tree(plugin, {"index.html": "<script>window.$docsify={}</script>"
                                      "<script src='docsify-tabs.js'></script>",
                        "docsify-tabs.js": 'var x={version:"1.6.3"}'})  # a plugin's own
    assert GENERATORS["docsify"].detect(plugin).settings["major"] == 5


def test_settings_commented_out_are_not_read(tmp_path: Path) -> None:
    # as Docsify's own docs ship their index.html: the options a reader may turn on are
    # there, commented out
    write_tree(tmp_path, {
        "index.html": _index(5, ",\n  // routerMode: 'history',\n  /* homepage: 'intro.md',\n"
                                "  basePath: 'pages/', */\n  repo: 'https://x.example/a//b'"),
        "README.md": "# Home\n\nText.\n", "guide.md": "# Guide\n\n## Install\n\nText.\n"})
    site = detect_site(tmp_path)
    assert site is not None and site.content == tmp_path
    assert site.settings == {"major": 5, "history": False, "homepage": "README.md"}
    pairs = citations(tmp_path, base_url=BASE)[0]
    assert sorted({citation_for(url, anchor) for url, anchor in pairs}) == [
        BASE + "#/?id=home", BASE + "#/guide?id=install"]


def test_an_index_html_without_docsify_is_not_docsify(tmp_path: Path) -> None:
    write_tree(tmp_path, {"index.html": "<html><body>Hello</body></html>", "a.md": "# A\n"})
    site = detect_site(tmp_path)
    assert site is None or site.generator != "docsify"
    about = ("<html><body><p>Set it up:</p><pre><code>&lt;script&gt;window.$docsify = "
             "{}&lt;/script&gt;</code></pre></body></html>")  # a page about Docsify
    write_tree(tmp_path, {"index.html": about})
    site = detect_site(tmp_path)
    assert site is None or site.generator != "docsify"


def test_a_hostile_shell_is_read_in_one_pass(tmp_path: Path) -> None:
    """A megabyte of unclosed ``<script`` tags after the config: patterns over the raw page
    took minutes on this (quadratic); parsed, it is read at once (the suite's per-test
    timeout is the bound)."""
    config = "<script>window.$docsify = { routerMode: 'history' }</script>"
    for tail in ("<script " * 120_000, "<script src='docsify" * 50_000,
                 "<script src='lib/docsify.min.js'></script>" * 20_000):
        write_tree(tmp_path, {"index.html": config + tail})
        site = GENERATORS["docsify"].detect(tmp_path)
        assert site is not None and site.settings["history"] is True


def test_ids_as_docsify_slugs_them(tmp_path: Path) -> None:
    texts = ["Install", "Install", "Install-1", "Install", "Tom & Jerry's", "x < y",
             "1st place", "a -- b", "Ünïcödé", "Options :id=custom"]
    # 4 slugs the rendered HTML (&amp; leaves "amp") and collapses dashes; a third
    # "Install" after "Install-1" gets "install-2", and "install-1" is given twice
    assert _ids(4, texts, tmp_path) == [
        "install", "install-1", "install-1", "install-2", "tom-amp-jerry39s", "x-lt-y",
        "_1st-place", "a-b", "Ünïcödé", "custom"]
    assert _ids(5, texts, tmp_path) == [
        "install", "install-1", "install-1", "install-2", "tom--jerrys", "x--y",
        "_1st-place", "a----b", "Ünïcödé", "custom"]
    assert slugify("Launch 🚀 now", 5) == "launch--now"
    assert slugify("[A link](x.md) here", 5) == "a-link-here"


@pytest.mark.parametrize(("major", "hidden"), [(4, "hidden-too"), (5, "hidden-too-")])
def test_headings_read_as_docsify_shows_them(tmp_path: Path, major: int, hidden: str) -> None:
    """``:id=`` and the sidebar marks are not part of the heading a reader sees; Docsify 5
    slugs the commented mark's tag away and keeps the space before it."""
    write_tree(tmp_path, {"index.html": _index(major), "README.md": sections(
        "# Home", "## Options :id=custom-options", "## Hidden too <!-- {docsify-ignore} -->",
        "## Left out {docsify-ignore-all}")})
    body = page_bodies(tmp_path, base_url=BASE)[BASE + "#/"]
    assert "## Options {#custom-options}" in body
    assert f"## Hidden too {{#{hidden}}}" in body
    left = "left-out" if major == 4 else "left-out-docsify-ignore-all"
    assert f"## Left out {{#{left}}}" in body
    assert "docsify-ignore" not in body.replace(f"{{#{left}}}", "")


def test_a_hash_route_takes_its_anchor_as_an_id_parameter() -> None:
    assert citation_for(BASE + "#/guide", "install") == BASE + "#/guide?id=install"
    assert citation_for(BASE + "#/", "install") == BASE + "#/?id=install"
    assert citation_for(BASE + "#/guide?lang=en", "a") == BASE + "#/guide?lang=en&id=a"
    assert citation_for(BASE + "guide", "install") == BASE + "guide#install"
    assert citation_for(BASE + "guide#top", "install") == BASE + "guide#top"
    assert citation_for(BASE + "#/guide", None) == BASE + "#/guide"


# --- against Docsify itself -------------------------------------------------------------


def _modules() -> Path | None:
    folder = os.environ.get("KBCTL_DOCSIFY_MODULES")
    if not folder or not shutil.which("node"):
        return None
    path = Path(folder)
    return path if all((path / m).is_dir() for m in ("jsdom", "docsify4", "docsify5")) else None


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    site = tmp_path / "site"
    site.mkdir()
    handler = partial(_Quiet, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return None


@pytest.mark.parametrize("major", [4, 5])
def test_every_cited_id_is_on_the_page_docsify_renders(served: tuple[Path, str],
                                                        major: int) -> None:
    modules = _modules()
    if modules is None:
        pytest.skip("Node.js with jsdom and Docsify 4 and 5 (KBCTL_DOCSIFY_MODULES) is "
                    "not installed")
    site, url = served
    page = sections(*HEADINGS, text="Text under it.")
    # the copy beside the page is Docsify's own: its version stamp names the major
    write_tree(site, {"index.html": _index(None, src="docsify.min.js"), "README.md": page,
                      "guide.md": page, "zh/README.md": "# 主页\n\n文字.\n"})
    bundle = modules / f"docsify{major}" / ("lib" if major == 4 else "dist")
    shutil.copy(bundle / "docsify.min.js", site / "docsify.min.js")
    site_info = detect_site(site)
    assert site_info is not None and site_info.settings["major"] == major
    pairs, generator, failed = citations(site, base_url=url)
    assert generator == "docsify" and not failed
    cited: dict[str, set[str]] = {}
    for page_url, anchor in pairs:
        assert anchor is not None
        cited.setdefault(page_url.split("#", 1)[1], set()).add(anchor)
    proc = subprocess.run(["node", str(RENDER), url, *cited], capture_output=True, text=True,
                          timeout=180, check=False, env=os.environ | {"NODE_PATH": str(modules)})
    assert proc.returncode == 0, proc.stderr
    rendered = {route: {h["id"] for h in heads}
                for route, heads in json.loads(proc.stdout).items()}
    assert set(rendered) == {"/", "/guide", "/zh/"}
    for route, anchors in cited.items():
        assert anchors == rendered[route], (route, sorted(anchors ^ rendered[route]))
