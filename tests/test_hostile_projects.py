"""Docs projects with settings and front matter no profile foresaw: wrong types, broken
patterns, absurd dates, nesting, junk. Reading such a project may fail a file or the
source with a ``KbctlError`` naming it; it may never end the run with anything else, and
no profile may need the last-resort net (which turns any other exception into a failed
file or source) to get there.

The projects are drawn from a seeded generator, so a failure reproduces; each seed makes
one project per generator marker."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbctl.errors import KbctlError
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec
from tests.sitebuild import write_tree

STRINGS = [
    "", "[z-a]", "!", "\\", "**", "/", "../..", "/etc", "x" * 3000, "\x00", "ä", "{", "}",
    ":rest*", "(.*)", "(", "[", "*a" * 30 + "b", "%", "${x}", "{{ .Title }}", "2024-13-45",
    "9999-01-01", "true", "null",
]
SCALARS: list[Any] = [0, -1, 1.5, True, False, None, 10**30, float("inf")]
YAML_SETTINGS = {
    "mkdocs.yml": ["site_name", "docs_dir", "use_directory_urls", "exclude_docs",
                   "draft_docs", "plugins", "markdown_extensions", "nav"],
    "_config.yml": ["permalink", "collections", "exclude", "include", "timezone", "kramdown",
                    "defaults", "markdown", "plugins", "future", "source"],
    "hugo.yaml": ["contentDir", "uglyURLs", "markup", "module", "buildDrafts", "buildFuture",
                  "permalinks", "defaultContentLanguage", "languages", "cascade", "configDir",
                  "disableLanguages", "defaultContentLanguageInSubdir"],
    "config/_default/languages.yaml": ["en", "fr", "contentDir", "languages", "x"],
}
FRONT_MATTER = ["title", "slug", "permalink", "url", "date", "draft", "published",
                "expiryDate", "publishDate", "id", "build", "headless", "cascade",
                "categories", "layout", "aliases"]
PAGES = ["a.md", "docs/b.md", "content/c.md", "content/en/c.fr.md", "content/_index.x.md",
         "src/d.md", "src/content/docs/e.mdx", "_posts/2024-01-01-x.md", "_docs/f.md",
         "g/index.md", "h.html", "i.rst"]
# What the last-resort nets say: a profile or reader met an exception it did not expect.
NET = re.compile(r"cannot place this page \(|settings there cannot be read \(|"
                 r"cannot read: [A-Z]\w*(Error|Exception)")
MARKERS = [*YAML_SETTINGS, "book.toml", "conf.py", "docusaurus.config.js",
           ".vitepress/config.mts", "astro.config.mjs", "index.html"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 2 or roll < 0.5:
        return rng.choice(SCALARS) if rng.random() < 0.4 else rng.choice(STRINGS)
    if roll < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["permalink", "slug", "path", "docs_dir", "name", "x", "contentDir",
                        "source", "target", "lang"]):
            _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _word(rng: random.Random) -> str:
    return rng.choice(STRINGS).replace("'", "").replace("\n", "")


def _config(rng: random.Random, marker: str) -> dict[str, str]:
    if marker in YAML_SETTINGS:
        keys = rng.sample(YAML_SETTINGS[marker], rng.randint(1, len(YAML_SETTINGS[marker])))
        return {marker: yaml.safe_dump({k: _value(rng) for k in keys}, allow_unicode=True)}
    if marker == "book.toml":
        return {marker: rng.choice([f'[book]\nsrc = "{_word(rng)}"\n'.replace('\\"', ""),
                                    "[book\n", "x = [\n" * 100,
                                    "[output.html]\nsite-url = 5\n"])}
    if marker == "conf.py":
        return {marker: rng.choice([f"exclude_patterns = {_value(rng)!r}\n",
                                    f"html_file_suffix = {_value(rng)!r}\n",
                                    "(" * 5000, "x = " + "[" * 200 + "\n"])}
    if marker == "docusaurus.config.js":
        return {marker: f"module.exports = {{ trailingSlash: {rng.choice(['true', 'x', ''])}, "
                        f"presets: [['classic', {{ docs: {{ path: '{_word(rng)}', "
                        f"routeBasePath: '{_word(rng)}' }} }}]] }}"}
    if marker == ".vitepress/config.mts":
        return {marker: f"export default {{ srcDir: '{_word(rng)}', cleanUrls: true, "
                        f"srcExclude: ['{_word(rng)}'], rewrites: {{ '{_word(rng)}': "
                        f"'{_word(rng)}' }} }}"}
    if marker == "index.html":  # Docsify's shell
        return {marker: f"<script>window.$docsify = {{ homepage: '{_word(rng)}', basePath: "
                        f"'{rng.choice(['../..', '/', _word(rng)])}', routerMode: "
                        f"'{rng.choice(['history', 'hash', _word(rng)])}' }}</script><script "
                        f"src='{rng.choice(['../../../etc/passwd', 'h.html', _word(rng)])}'>"
                        "</script>" + rng.choice(["", "<script src='docsify@x'>" * 1000])}
    return {marker: f"import starlight from '@astrojs/starlight'; export default {{ srcDir: "
                    f"'{_word(rng)}', trailingSlash: '{_word(rng)}', build: {{ format: "
                    f"'{_word(rng)}' }} }}",
            "package.json": rng.choice([json.dumps({"dependencies": {"astro": _value(rng)}}),
                                        "[" * 3000, "{", "null"])}


def _page(rng: random.Random, rel: str) -> str:
    if rel.endswith(".html"):
        return "<html><body><main><h1>T</h1><p>Words.</p></main></body></html>"
    body = "T\n=\n\nWords.\n" if rel.endswith(".rst") else "# T\n\nWords.\n\n## S {#x}\n\nMore.\n"
    if rng.random() < 0.2:
        return body
    keys = rng.sample(FRONT_MATTER, rng.randint(0, 4))
    try:
        block = yaml.safe_dump({k: _value(rng) for k in keys}, allow_unicode=True)
    except yaml.YAMLError:
        return body
    return f"---\n{block}---\n{body}"


@pytest.mark.parametrize("seed", range(60))
def test_a_hostile_project_fails_files_or_sources_never_the_run(tmp_path: Path,
                                                                seed: int) -> None:
    rng = random.Random(seed)
    for marker in MARKERS:
        root = tmp_path / marker.replace("/", "_")
        files = _config(rng, marker)
        files.update({rel: _page(rng, rel) for rel in rng.sample(PAGES, 4)})
        write_tree(root, files)
        options = {"base_url": "https://docs.test/"} if rng.random() < 0.8 else {}
        source = FilesSource()
        try:
            expansion = source.expand(source_spec("files", str(root), options))
            errors = [item.error for item in source.load(expansion.leaves, lambda r: None)
                      if item.error is not None]
        except KbctlError as exc:
            errors = [exc]
        for error in errors:
            assert isinstance(error, KbctlError)
            assert not NET.search(error.message), f"{marker}: {error.message}"
