"""Generator profiles: detection, published paths and heading ids, each checked against
what the real generator's algorithm produces (the builds themselves are exercised in
test_generator_builds.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from kbctl.chunk import chunk_markdown
from kbctl.chunk.anchors import with_heading_ids
from kbctl.chunk.slug import mdit_vue_slugify
from kbctl.errors import InputError
from kbctl.extract.goldmark_attributes import split_heading_attributes
from kbctl.generators import (
    GENERATORS,
    detect_site,
    heading_ids,
    page_path,
    page_title,
    resolve_site,
)
from kbctl.generators.base import NO_FRONT_MATTER, Site
from kbctl.generators.docusaurus import MAX_DOCS_PLUGINS, MAX_VERSIONS, strip_number_prefix
from kbctl.generators.hugo import goldmark_id
from kbctl.generators.hugo_permalinks import urlize
from kbctl.generators.jekyll import gfm_id
from kbctl.generators.mdbook import id_from_content
from kbctl.generators.mkdocs import split_attr_list, toc_slugify
from kbctl.generators.sphinx import assigned
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec
from tests.sitebuild import write_tree


def _ids(generator: str, texts: list[str], root: Path) -> list[str]:
    allocate = heading_ids(GENERATORS[generator].default_site(root))
    return [allocate(t) for t in texts]


def _page(site, rel: str, front_matter: dict | None = None) -> str | None:
    return page_path(site, site.content / rel, front_matter)


@pytest.mark.parametrize(("marker", "generator", "content"), [
    ("book.toml", "mdbook", "src"),
    ("mkdocs.yml", "mkdocs", "docs"),
    ("conf.py", "sphinx", "."),
    ("docusaurus.config.ts", "docusaurus", "docs"),
    ("hugo.toml", "hugo", "content"),
    ("_config.yml", "jekyll", "."),
])
def test_detection_from_marker_files(tmp_path: Path, marker: str, generator: str,
                                     content: str) -> None:
    text = "project = 'x'\n" if marker == "conf.py" else ""
    write_tree(tmp_path, {marker: text, f"{content}/page.md": "# Page\n"})
    site = detect_site(tmp_path / content if content != "." else tmp_path)
    assert site is not None and site.generator == generator
    assert site.content == (tmp_path / content).resolve()
    assert site.marker == tmp_path.resolve() / marker


def test_detection_of_vitepress_and_a_plain_folder(tmp_path: Path) -> None:
    write_tree(tmp_path / "vp", {".vitepress/config.mts": "export default { cleanUrls: true }",
                                 "guide.md": "# Guide\n"})
    site = resolve_site(tmp_path / "vp")
    assert site.generator == "vitepress" and site.settings["cleanUrls"] is True
    assert _page(site, "guide.md") == "guide"
    write_tree(tmp_path / "plain", {"a.md": "# A\n", ".git/HEAD": ""})
    assert resolve_site(tmp_path / "plain").generator == "plain"
    # a config folder, as VitePress looks for it: config/index.ts before config.mts
    write_tree(tmp_path / "split", {".vitepress/config/index.ts": "export default { "
                                    "cleanUrls: true }", ".vitepress/config.mts": "export "
                                    "default {}", "guide.md": "# Guide\n"})
    site = resolve_site(tmp_path / "split")
    assert site.marker == (tmp_path / "split/.vitepress/config/index.ts").resolve()
    assert _page(site, "guide.md") == "guide"


def test_the_plain_rule_serves_text_files_as_themselves(tmp_path: Path) -> None:
    site = resolve_site(write_tree(tmp_path, {".git/HEAD": "", "a.md": "# A\n"}))
    assert _page(site, "guide/install.md") == "guide/install"
    assert _page(site, "guide/README.md") == "guide/"
    assert _page(site, "notes.txt") == "notes.txt"  # no generator renders a text file
    assert _page(site, "guide/README.txt") == "guide/README.txt"
    assert _page(site, "api/ref.html") == "api/ref.html"  # any server serves it so
    assert _page(site, "api/index.html") == "api/"
    assert _page(site, "api/README.html") == "api/README.html"  # no server's index
    assert _page(site, "404.html") is None  # the host's not-found page
    assert _page(site, "guide/404.html") == "guide/404.html"
    assert _page(site, "_sources/a.rst.txt") == "_sources/a.rst.txt"
    (tmp_path / ".buildinfo").write_text("# Sphinx build info\n")
    assert _page(site, "_sources/a.rst.txt") is None  # a built Sphinx site's copies
    # a built site's markdown copies of its pages (Hugo's markdown output, llms.txt's .md)
    write_tree(tmp_path, {"docs/intro/index.html": "", "docs/index.html": "", "x.html": ""})
    assert _page(site, "docs/intro.md") is None  # beside docs/intro/index.html
    assert _page(site, "docs/index.md") is None
    assert _page(site, "x.html.md") is None and _page(site, "x.md") is None
    assert _page(site, "docs/other.md") == "docs/other"  # no twin: a page of its own


def test_starlight_detection_pages_and_ids(tmp_path: Path) -> None:
    write_tree(tmp_path / "sl", {
        "astro.config.mjs": "import starlight from '@astrojs/starlight';\nexport default "
                            "{ srcDir: './www', trailingSlash: 'never', integrations: "
                            "[starlight({ title: 'x' })] };\n",
        "www/content/docs/a.md": "# A\n"})
    site = resolve_site(tmp_path / "sl")
    assert site.generator == "starlight"
    assert site.content == (tmp_path / "sl" / "www" / "content" / "docs").resolve()
    assert _page(site, "Getting Started/First Steps.md") == "getting-started/first-steps"
    assert _page(site, "guide/index.mdx") == "guide" and _page(site, "index.md") == ""
    assert _page(site, "a.md", {"slug": "/elsewhere/b/"}) == "elsewhere/b"
    for unpublished, front_matter in (("_partial.md", {}), ("404.md", {}),
                                      ("a.md", {"draft": True}), ("notes.txt", {})):
        assert _page(site, unpublished, front_matter) is None
    write_tree(tmp_path / "astro", {"astro.config.mjs": "export default {};\n", "a.md": "# A"})
    assert resolve_site(tmp_path / "astro").generator == "plain"  # Astro without Starlight
    headings = ["Foo -", "Foo", "Bar!", "Bar-", "Bar", "Opt {#x}"]
    allocate = heading_ids(site)
    assert [allocate(h) for h in headings] == [  # no package.json: current Astro
        "foo--", "foo", "bar", "bar-", "bar-1", "opt-x"]
    for manifest, cut in (('{"dependencies": {"astro": "^5.7.0"}}', True),
                          ('{"devDependencies": {"astro": "7.3.5"}}', False),
                          ("[" * 100_000, False)):  # hostile: read as no version
        (tmp_path / "sl" / "package.json").write_text(manifest)
        allocate = heading_ids(resolve_site(tmp_path / "sl"))
        assert [allocate(h) for h in headings] == ([  # Astro 5 cuts one trailing "-"
            "foo-", "foo", "bar", "bar", "bar-1", "opt-x"] if cut else [
            "foo--", "foo", "bar", "bar-", "bar-1", "opt-x"])


def test_a_config_toml_without_hugo_content_is_not_hugo(tmp_path: Path) -> None:
    write_tree(tmp_path, {".git/HEAD": "", "config.toml": "[tool]\nx = 1\n", "a.md": "# A\n"})
    assert detect_site(tmp_path) is None


def test_explicit_generator_wins_and_unknown_names_are_input_errors(tmp_path: Path) -> None:
    write_tree(tmp_path, {"mkdocs.yml": "site_name: x\n", "docs/a.md": "# A\n"})
    assert resolve_site(tmp_path / "docs", "sphinx-dirhtml").generator == "sphinx-dirhtml"
    assert resolve_site(tmp_path / "docs", "mkdocs").marker is not None
    with pytest.raises(InputError, match="unknown generator 'gitbook'"):
        resolve_site(tmp_path, "gitbook")


def test_mkdocs_pages_and_settings(tmp_path: Path) -> None:
    write_tree(tmp_path, {"mkdocs.yml": "docs_dir: src\nuse_directory_urls: false\n"
                                        "markdown_extensions:\n  - toc:\n      separator: _\n"})
    site = resolve_site(tmp_path)
    assert site.content == tmp_path.resolve() / "src"
    assert _page(site, "guide/install.md") == "guide/install.html"
    assert _page(site, "guide/README.md") == "guide/index.html"
    assert _ids("mkdocs", ["A b"], tmp_path) == ["a-b"]
    assert heading_ids(site)("A b") == "a_b"
    default = GENERATORS["mkdocs"].default_site(tmp_path)
    assert _page(default, "guide/install.md") == "guide/install/"
    assert _page(default, "index.md") == ""
    assert page_path(site, tmp_path / "README.md") is None  # outside docs_dir


@pytest.mark.parametrize("config", [
    ("zensical.toml", '[project]\nsite_name = "x"\ndocs_dir = "src"\nuse_directory_urls = '
     'false\n[project.markdown_extensions.toc]\nseparator = "_"\n'),
    ("zensical.yml", "docs_dir: src\nuse_directory_urls: false\n"
     "markdown_extensions:\n  - toc:\n      separator: _\n")])
def test_zensical_projects_are_read_as_mkdocs_projects(tmp_path: Path,
                                                        config: tuple[str, str]) -> None:
    """Zensical builds MkDocs projects from its own zensical.toml (MkDocs' settings under
    ``[project]``) or a YAML file of MkDocs' keys (pymdown-extensions' zensical.yml): read
    as plain files, their ids and URLs were a plain folder's."""
    name, text = config
    write_tree(tmp_path, {name: text, "src/guide/install.md": "# Install\n"})
    site = resolve_site(tmp_path)
    assert site.generator == "mkdocs" and site.content == tmp_path.resolve() / "src"
    assert _page(site, "guide/install.md") == "guide/install.html"
    assert heading_ids(site)("A b") == "a_b"


def test_python_markdown_slugs_and_unique_ids(tmp_path: Path) -> None:
    assert toc_slugify("Hello, World!") == "hello-world"
    assert toc_slugify("Ünïcödé — text") == "unicode-text"
    assert toc_slugify("Ünïcödé", unicode=True) == "ünïcödé"
    assert _ids("mkdocs", ["Foo", "Foo", "Foo_1", "!!!", "!!!"], tmp_path) == [
        "foo", "foo_1", "foo_2", "_1", "_2"]


@pytest.mark.parametrize(("generator", "config", "folder"), [
    ("mkdocs", {"mkdocs.yml": "site_name: x\n"}, "docs"),
    ("hugo", {"hugo.toml": ""}, "content"),
    ("mdbook", {"book.toml": "", "src/SUMMARY.md": "- [T](tags.md)\n"}, "src"),
    ("docusaurus", {"docusaurus.config.js": "module.exports = {}\n"}, "docs")])
def test_a_heading_of_only_a_comment_cites_the_section_around_it(
        tmp_path: Path, generator: str, config: dict[str, str], folder: str) -> None:
    """``#### <!-- md:setting config.tags -->`` is a placeholder a project's hook fills in
    (with an id such as ``config.tags``): the ``_3`` an empty heading would get is no id
    of the built page, so its text cites the enclosing section."""
    md = ("# Tags\n\n## Configuration\n\nIntro.\n\n#### <!-- md:setting config.tags -->"
          "\n\nEnables tags.\n\n#### <!-- a --> <!-- b -->\n\nMore.\n\n## Next\n\nText.\n")
    write_tree(tmp_path, {**config, f"{folder}/tags.md": md})
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(tmp_path), {}))
    [doc] = [loaded.document for loaded in source.load(expansion.leaves, lambda ref: None)]
    assert doc is not None and detect_site(tmp_path).generator == generator
    chunks = {c.text.split("\n\n")[-1]: c.anchor
              for c in chunk_markdown(doc.body, slug_headings=doc.slug_headings)}
    configuration = chunks["Intro."]
    assert configuration is not None
    assert chunks["Enables tags."] == chunks["More."] == configuration
    assert chunks["Text."] not in (None, configuration)


def test_mdbook_ids_and_pages(tmp_path: Path) -> None:
    # The cases of mdBook's own id_from_content tests.
    assert id_from_content("`--passes`: add more rustdoc passes") == (
        "--passes-add-more-rustdoc-passes")
    assert id_from_content("Method-call 🐙 expressions \U0001f47c") == "method-call--expressions-"
    assert id_from_content("中文") == "中文"
    assert _ids("mdbook", ["Über", "Über", "", ""], tmp_path) == [
        "über", "über-1", "section", "section-1"]
    write_tree(tmp_path, {"book.toml": "[book]\nsrc = 'pages'\n",
                          "pages/SUMMARY.md": "- [A](a.md)\n- [R](sub/README.md)\n"})
    site = resolve_site(tmp_path)
    assert _page(site, "a.md") == "a.html"
    assert _page(site, "sub/README.md") == "sub/index.html"
    assert _page(site, "orphan.md") is None
    # the page's title is its chapter's name in SUMMARY.md, which mdBook shows (a chapter
    # may open with an H2 or no heading): it was the file's name
    assert page_title(site, site.content / "a.md", None) == "A"
    assert page_title(site, site.content / "sub/README.md", "Written") == "R"
    assert page_title(site, site.content / "orphan.md", "Written") == "Written"


def test_sphinx_pages(tmp_path: Path) -> None:
    write_tree(tmp_path, {"conf.py": "extensions = []\nhtml_file_suffix = '.htm'\n"})
    site = resolve_site(tmp_path)
    assert _page(site, "guide/install.rst") == "guide/install.htm"
    assert _page(site, "notes.md") is None  # no markdown parser configured
    assert _page(site, "_build/html/x.rst") is None
    dirhtml = GENERATORS["sphinx-dirhtml"].default_site(tmp_path)
    assert _page(dirhtml, "guide/install.rst") == "guide/install/"
    assert _page(dirhtml, "guide/index.rst") == "guide/"
    plain_sources = GENERATORS["sphinx"].default_site(tmp_path)
    assert _page(plain_sources, "library/os.path.rst.txt") == "library/os.path.html"
    assert _ids("sphinx", ["Options", "Options", "☃", "Ünïcödé title"], tmp_path) == [
        "options", "id1", "id2", "unicode-title"]
    assert _ids("sphinx", ["Why doesn't it?"], tmp_path) == ["why-doesn-t-it"]
    # MyST's smartquotes extension makes the quote typographic first, and make_id drops it
    write_tree(tmp_path, {"conf.py": "extensions = ['myst_parser']\n"
                                     "myst_enable_extensions = [\n  'colon_fence',\n"
                                     "  \"smartquotes\",\n]\n"})
    ids = heading_ids(resolve_site(tmp_path))
    assert [ids(t) for t in ("Why doesn't it?", 'The "quoted" word')] == [
        "why-doesnt-it", "the-quoted-word"]


def test_docusaurus_routes(tmp_path: Path) -> None:
    write_tree(tmp_path, {"docusaurus.config.js": "module.exports = {presets: [['classic', "
                                                  "{docs: {routeBasePath: '/guide'}}]]}"})
    site = resolve_site(tmp_path)
    assert _page(site, "01-intro/02-setup.md") == "guide/intro/setup"
    assert _page(site, "intro/index.mdx") == "guide/intro"
    assert _page(site, "intro/intro.md") == "guide/intro"
    assert _page(site, "a/b.md", {"slug": "/custom"}) == "guide/custom"
    assert _page(site, "a/b.md", {"slug": "rel"}) == "guide/a/rel"
    assert _page(site, "a/b.md", {"id": "other"}) == "guide/a/other"
    assert _page(site, "_partial.mdx") is None
    assert strip_number_prefix("10 - Name") == "Name"


def test_hugo_pages_and_ids(tmp_path: Path) -> None:
    write_tree(tmp_path, {"hugo.toml": "uglyURLs = true\n", "content/x.md": ""})
    site = resolve_site(tmp_path)
    assert _page(site, "posts/My Post.md") == "posts/my-post.html"
    assert _page(site, "posts/_index.md") == "posts/"
    assert _page(site, "posts/p.md", {"draft": True}) is None
    assert _page(site, "posts/p.md", {"url": "/x/y/"}) == "x/y/"
    default = GENERATORS["hugo"].default_site(tmp_path)
    assert _page(default, "posts/bundle/index.md") == "posts/bundle/"
    assert _page(default, "posts/bundle/index.md", {"slug": "b2"}) == "posts/b2/"
    assert goldmark_id("Hello, World -- 2!") == "hello-world----2"
    assert goldmark_id("Ünï\tx", ascii_only=True) == "unix"
    assert _ids("hugo", ["A", "A", "?"], tmp_path) == ["a", "a-1", "heading"]


def test_hugo_config_folder_is_merged_as_hugo_builds(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "config/_default/hugo.toml": "baseURL = 'https://x.test/'\nuglyURLs = false\n",
        "config/_default/markup.toml": "[goldmark.parser]\nautoHeadingIDType = 'github-ascii'\n",
        "config/_default/languages.yaml": "languages:\n  fr: {weight: 2}\n  en: {weight: 1}\n",
        "config/production/hugo.toml": "uglyURLs = true\n",
        "config/development/hugo.toml": "buildDrafts = true\n",  # `hugo server` only
        "content/docs/guide.md": ""})
    site = resolve_site(tmp_path / "content" / "docs")
    assert site.generator == "hugo"
    assert site.marker == tmp_path.resolve() / "config/_default/hugo.toml"
    assert site.content == (tmp_path / "content").resolve()
    assert site.settings["autoHeadingIDType"] == "github-ascii"
    assert site.settings["languages"] == ("en", "fr")
    assert _page(site, "docs/guide.md") == "docs/guide.html"  # production wins
    assert _page(site, "docs/guide.md", {"draft": True}) is None
    # a root config file is read first, the folder over it
    write_tree(tmp_path / "both", {"hugo.toml": "uglyURLs = true\ncontentDir = 'pages'\n",
                                   "config/_default/params.toml": "x = 1\n",
                                   "config/_default/hugo.yaml": "uglyURLs: false\n"})
    both = resolve_site(tmp_path / "both")
    assert both.marker.name == "hugo.toml" and both.content.name == "pages"
    assert _page(both, "a.md") == "a/"


def test_a_config_folder_that_is_not_hugo_s_is_not_hugo(tmp_path: Path) -> None:
    write_tree(tmp_path, {".git/HEAD": "", "config/_default/settings.yaml": "x: 1\n",
                          "a.md": "# A\n"})
    assert detect_site(tmp_path) is None
    write_tree(tmp_path, {"outside/_default/hugo.toml": "uglyURLs = true\n",
                          "up/cfg/_default/hugo.toml": "uglyURLs = true\n", "up/content/a.md": ""})
    (tmp_path / "up" / "hugo.toml").write_text("configDir = 'cfg'\n")
    assert resolve_site(tmp_path / "up").settings["uglyURLs"] is True
    (tmp_path / "up" / "hugo.toml").write_text("configDir = '../outside'\n")
    assert resolve_site(tmp_path / "up").settings["uglyURLs"] is False  # never read outside


@pytest.mark.timeout(60)
def test_a_hostile_hugo_config_folder_is_read_within_bounds(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "_default"
    write_tree(tmp_path, {"content/a.md": "", **{
        f"config/_default/p{i:03d}.toml": "x = 1\n" for i in range(300)}})
    os.mkfifo(folder / "hugo.toml")  # would block a plain open() for ever
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    (tmp_path / "config" / "production").symlink_to(tmp_path / "config")
    site = resolve_site(tmp_path / "content")  # the FIFO would hang it, the loop too
    assert site.generator == "hugo" and _page(site, "a.md") == "a/"


def test_hugo_languages_place_pages_as_hugo_does(tmp_path: Path) -> None:
    # translations by file name: a configured language's suffix moves the page under /LANG/
    names = resolve_site(write_tree(tmp_path / "names", {
        "hugo.toml": "[languages.en]\n[languages.fr]\n[languages.zh-cn]\n", "content/x.md": ""}))
    assert _page(names, "about.md") == "about/"
    assert _page(names, "about.en.md") == "about/"
    assert _page(names, "about.fr.md") == "fr/about/"
    assert _page(names, "about.ZH-CN.md") == "zh-cn/about/"
    assert _page(names, "docs/_index.fr.md") == "fr/docs/"
    assert _page(names, "_index.fr.md") == "fr/"
    assert _page(names, "about.v2.md") == "about.v2/"  # no such language: part of the name
    assert _page(names, "b.fr.md", {"slug": "renamed"}) == "fr/renamed/"
    assert _page(names, "u.fr.md", {"url": "/custom/"}) == "custom/"  # from the root
    single = resolve_site(write_tree(tmp_path / "single", {"hugo.toml": "", "content/x.md": ""}))
    assert _page(single, "about.en.md") == "about/"  # the default language always exists
    assert _page(single, "about.fr.md") == "about.fr/"
    # a content folder per language (Docsy's layout); the default language in a subfolder
    dirs = resolve_site(write_tree(tmp_path / "dirs", {
        "hugo.toml": "defaultContentLanguage = 'en'\ndefaultContentLanguageInSubdir = true\n"
                     "disableLanguages = ['de']\n"
                     "[languages.en]\ncontentDir = 'content/en'\n"
                     "[languages.fr]\ncontentDir = 'content/fr'\n"
                     "[languages.de]\ncontentDir = 'content/de'\n",
        "content/en/x.md": ""}))
    assert dirs.content == (tmp_path / "dirs" / "content").resolve()
    assert _page(dirs, "en/docs/guide.md") == "en/docs/guide/"
    assert _page(dirs, "fr/docs/guide.md") == "fr/docs/guide/"
    assert _page(dirs, "fr/_index.md") == "fr/"
    assert _page(dirs, "fr/docs/only.en.md") == "en/docs/only/"  # the name wins
    assert _page(dirs, "de/docs/guide.md") is None  # a disabled language is not built
    assert _page(dirs, "stray.md") is None  # in no language's folder
    mounted = resolve_site(write_tree(tmp_path / "mounted", {
        "hugo.toml": "[languages.en]\n[languages.fr]\n[module]\n"
                     "[[module.mounts]]\nsource = 'docs/en'\ntarget = 'content'\nlang = 'en'\n"
                     "[[module.mounts]]\nsource = 'docs/fr'\ntarget = 'content'\nlang = 'fr'\n",
        "docs/en/x.md": ""}))
    assert _page(mounted, "en/a.md") == "a/" and _page(mounted, "fr/a.md") == "fr/a/"
    matrix = resolve_site(write_tree(tmp_path / "matrix", {  # Hugo 0.153's sites matrix
        "hugo.toml": "[languages.en]\n[languages.de]\n[module]\n"
                     "[[module.mounts]]\nsource = 'content/en'\ntarget = 'content'\n"
                     "[module.mounts.sites.matrix]\nlanguages = ['en']\n"
                     "[[module.mounts]]\nsource = 'content/de'\ntarget = 'content'\n"
                     "[module.mounts.sites.matrix]\nlanguages = ['de']\n",
        "content/en/x.md": ""}))
    assert _page(matrix, "en/a.md") == "a/" and _page(matrix, "de/a.md") == "de/a/"


def test_hugo_reads_yaml_as_yaml_1_2(tmp_path: Path) -> None:
    # Go's YAML: `no` (Norwegian) is a key, not False; MkDocs and Jekyll read YAML 1.1
    site = resolve_site(write_tree(tmp_path, {
        "hugo.yaml": "languages:\n  en: {}\n  no:\n    contentDir: content/no\n",
        "content/no/a.md": ""}))
    assert site.settings["languages"] == ("en", "no")
    assert _page(site, "no/a.md") == "no/a/"


@pytest.mark.timeout(60)
def test_hugo_permalink_patterns(tmp_path: Path) -> None:
    site = resolve_site(write_tree(tmp_path, {
        "hugo.toml": "[permalinks]\nblog = '/:year/:monthname/:weekdayname/:yearday/:slug'\n"
                     "'/' = '/top/:filename/'\nodd = '/:2006-01/:title'\n"
                     "[permalinks.page]\ndocs = '/d/:sections[last]/:sections[:1]/:section'\n",
        "content/docs/a/_index.md": "", "content/docs/a/b/_index.md": ""}))
    assert _page(site, "blog/x.md", {"title": "T", "date": "2024-03-05"}) == (
        "2024/march/tuesday/65/t/")
    assert _page(site, "blog/x.md") == "blog/x/"  # unread: its own path stands in
    assert _page(site, "about.md", {}) == "top/about/"  # '/': the top-level pages
    assert _page(site, "odd/x.md", {"title": "T"}) == "odd/x/"  # a Go layout: not read here
    assert _page(site, "docs/a/b/c.md", {}) == "d/b/docs/docs/"
    assert _page(site, "docs/a/b/_index.md", {}) == "docs/a/b/"  # a section page: no pattern
    assert urlize("  Héllo,  Wörld! C++ & 2.0 ") == "héllo-wörld-c++-2.0"
    hostile = resolve_site(write_tree(tmp_path / "hostile", {
        "hugo.toml": "[permalinks]\nblog = '" + "/:year" * 100_000 + "'\n",
        "content/x.md": ""}))
    # expanded, a fifth of this length took 1.2 s a page
    assert _page(hostile, "blog/x.md", {"date": "2024-01-01"}) == "blog/x/"  # not read


@pytest.mark.parametrize(("heading", "expected"), [
    ('Step {class="no-step-marker"}', ("Step", None)),
    ("A {#x .c}", ("A", "x")),
    ("A { #x }", ("A", "x")),
    ('A {id="q" data=[1, "s", {k=v}]}', ("A", "q")),
    ("A {.c,#z}", ("A", "z")),
    ("A {}", ("A", None)),
    ("Two\nlines {#m}", ("Two\nlines", "m")),
    ("A {#a b}", None),  # "b" is no attribute: the braces are text
    ("A { }", None),
    ("A {x=}", None),
    ("A \\{#x}", None),  # escaped
    ("A {#x} tail", None),  # not at the end
    ("A {{#include}}", None),
    ("x" + "{" * 5000, None),  # a hostile line: a bounded number of tries
    ("{" * 5000 + "}" * 5000, None),
])
def test_goldmark_heading_attributes(heading: str, expected: tuple | None) -> None:
    assert split_heading_attributes(heading) == expected


def test_hugo_heading_attributes_can_be_turned_off(tmp_path: Path) -> None:
    headings = "## Named {#named}\n\nT.\n\n## Classy {.c}\n\nT.\n"
    on = resolve_site(write_tree(tmp_path / "on", {"hugo.toml": "", "content/a.md": ""}))
    off = resolve_site(write_tree(tmp_path / "off", {
        "hugo.toml": "[markup.goldmark.parser.attribute]\ntitle = false\n", "content/a.md": ""}))
    def anchors(site: Site) -> list[str | None]:
        marked = with_heading_ids(headings, heading_ids(site))
        return [c.anchor for c in chunk_markdown(marked, slug_headings=False)]

    assert anchors(on) == ["named", "classy"]
    assert anchors(off) == ["named-named", "classy-c"]


def test_vitepress_and_jekyll_ids(tmp_path: Path) -> None:
    assert mdit_vue_slugify("Hello, World!") == "hello-world"
    assert mdit_vue_slugify("2. Ünïcödé") == "_2-unicode"
    assert _ids("vitepress", ["A", "A", "A"], tmp_path) == ["a", "a-1", "a-2"]
    assert gfm_id("Hello, World! (v2)") == "hello-world-v2"
    assert _ids("jekyll", ["A", "A", "A"], tmp_path) == ["a", "a-1", "a-2"]
    write_tree(tmp_path, {"_config.yml": "permalink: pretty\n"})
    site = resolve_site(tmp_path)
    assert _page(site, "about.md") == "about/"
    assert _page(site, "_posts/2024-01-02-hello.md") == "2024/01/02/hello/"
    assert _page(site, "_drafts/x.md") is None
    assert _page(site, "x.md", {"permalink": "/elsewhere/"}) == "elsewhere/"


def test_jekyll_files_without_front_matter_follow_the_builder(tmp_path: Path) -> None:
    bare = NO_FRONT_MATTER
    pages = resolve_site(write_tree(tmp_path / "pages", {"_config.yml": "", "g/index.md": ""}))
    assert _page(pages, "notes.md", bare) == "notes.html"
    assert _page(pages, "README.md", bare) == ""  # the index of its folder
    assert _page(pages, "g/README.md", bare) is None  # g/ has an index: it stays a file
    assert _page(pages, "README.md", {"title": "R"}) == "README.html"
    assert _page(pages, "CONTRIBUTING.md", bare) is None
    assert _page(pages, "raw.html", bare) == "raw.html"
    plain = resolve_site(write_tree(tmp_path / "plain", {"_config.yml": "",
                                                         "Gemfile": "gem 'jekyll'\n"}))
    assert _page(plain, "notes.md", bare) is None
    assert _page(plain, "README.md", bare) is None
    assert _page(plain, "notes.md", {}) == "notes.html"  # an empty block makes a page
    listed = resolve_site(write_tree(tmp_path / "listed", {
        "_config.yml": "plugins: [jekyll-optional-front-matter]\n", "Gemfile": "gem 'x'\n"}))
    assert _page(listed, "notes.md", bare) == "notes.html"
    assert _page(listed, "README.md", bare) is None


def test_hugo_files_inside_a_leaf_bundle_are_its_resources_not_pages(tmp_path: Path) -> None:
    site = resolve_site(write_tree(tmp_path / "hugo", {
        "hugo.toml": "", "content/docs/_index.md": "", "content/docs/guide.md": "",
        "content/docs/shortcodes/index.md": "",
        "content/docs/shortcodes/includes/installation.md": "",
        "content/docs/shortcodes/notes.md": "", "content/docs/shortcodes/deep/index.md": "",
        "content/blog/post/index.fr.md": "", "content/blog/post/extra.md": ""}))
    assert _page(site, "docs/guide.md") == "docs/guide/"  # a branch bundle's pages stay
    assert _page(site, "docs/shortcodes/index.md") == "docs/shortcodes/"
    for resource in ("docs/shortcodes/includes/installation.md", "docs/shortcodes/notes.md",
                     "docs/shortcodes/deep/index.md", "blog/post/extra.md"):
        assert _page(site, resource) is None, resource


def test_pages_each_generator_leaves_out_of_its_build(tmp_path: Path) -> None:
    hugo = resolve_site(write_tree(tmp_path / "hugo", {"hugo.toml": "", "content/x.md": ""}))
    assert _page(hugo, "a.md", {"Date": "2999-01-01"}) is None  # keys are case-insensitive
    assert _page(hugo, "a.md", {"date": "2999-01-01", "publishDate": "2001-01-01"}) == "a/"
    assert _page(hugo, "a.md", {"expirydate": "2001-01-01T00:00:00Z"}) is None
    assert _page(hugo, "a.md", {"_build": {"Render": "never"}}) is None
    assert _page(hugo, "a/index.md", {"headless": True}) is None
    assert _page(hugo, "a.md", {"date": "not a date"}) == "a/"
    future = resolve_site(write_tree(tmp_path / "hugo2", {
        "hugo.toml": "buildFuture = true\nbuildDrafts = true\n", "content/x.md": ""}))
    assert _page(future, "a.md", {"date": "2999-01-01", "draft": True}) == "a/"

    jekyll = resolve_site(write_tree(tmp_path / "jekyll", {
        "_config.yml": "exclude: [scratch/, '*.tmp.md', docs/old.md]\n"}))
    for rel in ("scratch/a.md", "n.tmp.md", "docs/old.md", "node_modules/p/README.md",
                "vendor/bundle/g/x.md", "Gemfile"):
        assert _page(jekyll, rel) is None, rel
    assert _page(jekyll, "docs/new.md") == "docs/new.html"
    assert _page(jekyll, "a.md", {"published": False}) is None
    assert _page(jekyll, "_posts/2999-01-02-later.md") is None
    assert _page(jekyll, "_posts/2024-01-02-x.md", {"date": "2999-01-01"}) is None

    docusaurus = GENERATORS["docusaurus"].default_site(tmp_path)
    assert _page(docusaurus, "a.md", {"draft": True}) is None
    assert _page(docusaurus, "a.md", {"unlisted": True}) == "docs/a"

    vitepress = resolve_site(write_tree(tmp_path / "vp", {".vitepress/config.ts": (
        "export default { srcExclude: ['**/README.md', './drafts/**', \"x.md\"] }")}))
    for rel in ("README.md", "g/README.md", "drafts/a.md", "x.md", "node_modules/p/a.md"):
        assert _page(vitepress, rel) is None, rel
    assert _page(vitepress, "g/x.md") == "g/x.html"  # a glob without / is anchored


def test_vitepress_rewrites(tmp_path: Path) -> None:
    site = resolve_site(write_tree(tmp_path, {".vitepress/config.ts": (
        "export default defineConfig({ cleanUrls: true,\n  rewrites: {\n"
        "    'en/:rest*': ':rest*',\n    \"packages/:pkg/src/(.*)\": ':pkg/index.md',\n"
        "    'old/:name.md': 'new/:name.md', '((((': 'x.md'\n  }\n})\n")}))
    assert _page(site, "en/guide/x.md") == "guide/x"
    assert _page(site, "en/index.md") == ""
    assert _page(site, "packages/widget/src/a/b.md") == "widget/"
    assert _page(site, "old/page.md") == "new/page"
    assert _page(site, "zh/guide/x.md") == "zh/guide/x"  # no rewrite matches
    fn = resolve_site(write_tree(tmp_path / "fn", {".vitepress/config.ts": (
        "export default { rewrites(id) { return id.replace(/^en\\//, '') } }\n")}))
    assert _page(fn, "en/guide/x.md") == "en/guide/x.html"  # a function cannot be read


def test_jekyll_collections_ials_and_post_dates(tmp_path: Path) -> None:
    site = resolve_site(write_tree(tmp_path, {"_config.yml": (
        "collections:\n  docs:\n    output: true\n  drafts_box: {}\n"
        "timezone: America/Los_Angeles\npermalink: /blog/:year/:title/\n")}))
    assert _page(site, "_docs/a/b.md") == "docs/a/b.html"
    assert _page(site, "_docs/b.md", {"permalink": "/x/:name/"}) == "x/b/"
    assert _page(site, "_drafts_box/b.md") is None  # no output
    assert _page(site, "_posts/2013-01-01-new-year.md",
                 {"date": "2013-01-01 05:00:00 +0100"}) == "blog/2012/new-year/"
    md = ("## Named {#written}\n\nT.\n\n## By IAL\n{: .note #from-ial}\n\nT.\n\n"
          "## Liquid {{ site.x }} here\n\nT.\n\n## Not an IAL\n\n{: #too-far}\n\nT.\n")
    out = with_heading_ids(md, heading_ids(site))
    chunks = chunk_markdown(out, slug_headings=False)
    assert [c.anchor for c in chunks] == ["written", "from-ial", "liquid--here", "not-an-ial"]
    assert "{: .note" not in chunks[1].text


def test_mkdocs_i18n_plugin_settings(tmp_path: Path) -> None:
    site = resolve_site(write_tree(tmp_path, {"mkdocs.yml": (
        "plugins:\n  - search\n  - i18n:\n      languages:\n"
        "        - locale: fr\n        - locale: es\n          build: false\n"
        "        - locale: null\n")}))  # no default marked: the first is
    assert _page(site, "a.md") == "a/" and _page(site, "a.fr.md") == "a/"
    assert _page(site, "a.es.md") is None  # not built
    assert _page(site, "a.de.md") == "a.de/"  # no such language: part of the name
    assert _page(site, "g/README.fr.md") == "g/"
    off = resolve_site(write_tree(tmp_path / "off", {"mkdocs.yml": (
        "plugins:\n  - i18n:\n      enabled: false\n      languages:\n"
        "        - {locale: en, default: true}\n        - {locale: fr}\n")}))
    assert _page(off, "a.fr.md") == "a.fr/"


def test_mkdocs_attribute_lists_and_blog_posts(tmp_path: Path) -> None:
    assert split_attr_list('9.7.6 March 19 { id="9.7.6" }') == ("9.7.6 March 19", "9.7.6")
    assert split_attr_list("Changes { data-search-exclude }") == ("Changes", None)
    assert split_attr_list("T {: #a .b #c }") == ("T", "c")  # the last id wins
    assert split_attr_list("Set {} here") == ("Set {} here", None)
    site = resolve_site(write_tree(tmp_path, {"mkdocs.yml": (
        "plugins:\n  - blog:\n      blog_dir: news\n      post_url_date_format: yyyy/MM\n"
        "      post_url_format: '{categories}/{date}/{slug}'\n"), "docs/x.md": ""}))
    post = {"date": "2024-03-05", "title": "Hello, World!", "categories": ["Release Notes"]}
    assert _page(site, "news/posts/a.md", post) == "news/release-notes/2024/03/hello-world/"
    assert _page(site, "news/posts/a.md", {**post, "slug": "mine"}) == (
        "news/release-notes/2024/03/mine/")
    assert _page(site, "news/posts/a.md", {**post, "draft": True}) is None
    assert _page(site, "news/posts/a.md") == "news/posts/a/"  # not read yet: where it lies


def test_mkdocstrings_and_autorefs_headings(tmp_path: Path) -> None:
    md = ("## Using [`File`][mkdocs.structure.files.File] objects\n\nText.\n\n"
          "#### ::: mkdocs.plugins.event_priority\n\nText.\n\n## [Not a ref] here\n\nT.\n")
    anchors = {}
    for plugins in ("[search]", "[search, mkdocstrings]", "[autorefs]"):
        site = resolve_site(write_tree(tmp_path / plugins.strip("[]").replace(", ", "-"), {
            "mkdocs.yml": f"plugins: {plugins}\n", "docs/x.md": ""}))
        out = with_heading_ids(md, heading_ids(site))
        anchors[plugins] = [c.anchor for c in chunk_markdown(out, slug_headings=False)]
    assert anchors["[search]"] == ["using-filemkdocsstructurefilesfile-objects",
                                   "mkdocspluginsevent_priority", "not-a-ref-here"]
    assert anchors["[search, mkdocstrings]"] == ["using-file-objects",
                                                 "mkdocs.plugins.event_priority",
                                                 "not-a-ref-here"]
    assert anchors["[autorefs]"][0] == "using-file-objects"


def test_a_hostile_mkdocs_exclude_pattern_is_matched_in_bounded_time(tmp_path: Path) -> None:
    """A backtracking matcher would spend forever (holding the GIL) on this pattern and one
    long name: the match runs in a child process that must answer within the deadline."""
    pattern = "*a" * 40 + "b"
    write_tree(tmp_path, {"mkdocs.yml": f"exclude_docs: '{pattern}'\n", "docs/x.md": ""})
    assert _page_in_child(tmp_path, "a" * 240 + ".md") == "a" * 240 + "/"
    site = resolve_site(tmp_path)
    assert _page(site, "a" * 40 + "b") is None  # matched: left out


@pytest.mark.parametrize("extensions", ["0", "true", "'toc'", "{toc: 5}", "[[toc]]"])
def test_markdown_extensions_of_any_shape_are_read_or_ignored(tmp_path: Path,
                                                              extensions: str) -> None:
    write_tree(tmp_path, {"mkdocs.yml": f"site_name: x\nmarkdown_extensions: {extensions}\n",
                          "docs/a.md": "# A\n"})
    assert _page(resolve_site(tmp_path), "a.md") == "a/"


def test_exclude_patterns_that_cannot_compile_are_left_out(tmp_path: Path) -> None:
    write_tree(tmp_path, {"mkdocs.yml": "site_name: x\nexclude_docs: |\n  [z-a]\n  !\n"
                                        "  drafts/\n", "docs/a.md": "# A\n"})
    site = resolve_site(tmp_path)
    assert _page(site, "a.md") == "a/" and _page(site, "drafts/b.md") is None


def test_the_mkdocs_exclude_plugins_globs_are_not_published(tmp_path: Path) -> None:
    """``plugins: [exclude: {glob: …}]`` kept a page out of the site; it was ingested as
    a page, and came first for off-topic questions."""
    write_tree(tmp_path, {"mkdocs.yml": "plugins:\n  - search\n  - exclude:\n      glob:\n"
                                        "        - plugins/*\n        - '*.tmp.md'\n",
                          "docs/a.md": "# A\n"})
    site = resolve_site(tmp_path)
    assert _page(site, "a.md") == "a/"
    assert _page(site, "plugins/devtools_output.md") is None
    assert _page(site, "guide/notes.tmp.md") is None
    assert _page(site, "guide/plugins/x.md") == "guide/plugins/x/"
    hostile = "*a" * 40 + "b"
    write_tree(tmp_path / "h", {"mkdocs.yml": f"plugins:\n  - exclude:\n      glob: '{hostile}'\n",
                                "docs/x.md": ""})
    assert _page_in_child(tmp_path / "h", "a" * 240 + ".md") == "a" * 240 + "/"


def test_a_hostile_vitepress_config_is_read_in_bounded_time(tmp_path: Path) -> None:
    write_tree(tmp_path, {".vitepress/config.ts": "srcExclude: [" * 80_000})  # 1 MB
    assert _page_in_child(tmp_path, "guide/x.md") == "guide/x.html"


def _page_in_child(root: Path, rel: str) -> str:
    """The page of ``rel`` as a child process finds it, which must answer within a
    minute: a backtracking regex holds the GIL, so a thread could not be timed out."""
    script = ("import sys; from pathlib import Path; "
              "from kbctl.generators import page_path, resolve_site; "
              "site = resolve_site(Path(sys.argv[1])); "
              "print(page_path(site, site.content / sys.argv[2]))")
    answer = subprocess.run([sys.executable, "-c", script, str(root), rel],
                            capture_output=True, text=True, timeout=60, check=True)
    return answer.stdout.strip()


def test_docusaurus_versions_settings(tmp_path: Path) -> None:
    current_last = resolve_site(write_tree(tmp_path / "a", {
        "docusaurus.config.js": "module.exports = { presets: [['classic', { docs: { "
                                "lastVersion: 'current' } }]] };",
        "versions.json": '["2.0"]', "docs/x.md": ""}))
    assert current_last.content == (tmp_path / "a").resolve()
    assert _page(current_last, "docs/intro.md") == "docs/intro"
    assert _page(current_last, "versioned_docs/version-2.0/intro.md") == "docs/2.0/intro"
    assert _page(current_last, "versioned_docs/version-1.0/intro.md") is None  # not listed
    assert _page(current_last, "src/pages/about.md") is None  # no docs
    no_current = resolve_site(write_tree(tmp_path / "b", {
        "docusaurus.config.js": "module.exports = { docs: { includeCurrentVersion: false } };",
        "versions.json": '["2.0", "1.0"]', "docs/x.md": ""}))
    assert _page(no_current, "docs/intro.md") is None
    assert _page(no_current, "versioned_docs/version-1.0/a/b.md") == "docs/1.0/a/b"
    for i, listing in enumerate(("not json", '{"a": 1}', "[1, 2]", "")):  # none usable
        site = resolve_site(write_tree(tmp_path / f"c{i}", {
            "docusaurus.config.js": "", "versions.json": listing, "docs/x.md": ""}))
        assert site.content.name == "docs" and _page(site, "intro.md") == "docs/intro"


def test_docusaurus_docs_plugin_instances_are_read_past_comments_and_templates(
        tmp_path: Path) -> None:
    site = resolve_site(write_tree(tmp_path, {"docusaurus.config.js": """
        module.exports = { presets: [['classic', { docs: { path: 'guides' } }]],
          plugins: [
            ['@docusaurus/plugin-content-docs', { id: 'community', // it's {
              path: 'community', routeBasePath: 'people',
              editUrl: ({docPath}) => `https://x/${docPath}`, /* } */ }],
            ["@docusaurus/plugin-content-docs", {id: "api", path: "api-docs",
              routeBasePath: "/reference/"}],
            ['@docusaurus/plugin-content-docs', { id: 'out', path: '../elsewhere' }],
          ] };""", "guides/a.md": ""}))
    assert site.content == tmp_path.resolve()
    assert [(d.id, d.path, d.route) for d in site.settings["docs"]] == [
        ("default", "guides", "docs"), ("community", "community", "people"),
        ("api", "api-docs", "reference")]  # '../elsewhere' is outside: not read
    assert _page(site, "guides/a.md") == "docs/a"  # the preset's route is not a plugin's
    assert _page(site, "community/team/who.md") == "people/team/who"
    assert _page(site, "api-docs/index.md") == "reference"
    assert _page(site, "blog/post.md") is None
    versioned = resolve_site(write_tree(tmp_path / "v", {
        "docusaurus.config.js": "module.exports = { presets: [['classic', {}]], plugins: "
                                "[['@docusaurus/plugin-content-docs', { id: 'api', path: 'api',"
                                " routeBasePath: 'api', lastVersion: 'current' }]] };",
        "api_versions.json": '["2.0"]', "versions.json": '["1.0"]', "docs/a.md": ""}))
    assert _page(versioned, "docs/a.md") == "docs/next/a"  # the preset's lastVersion: 1.0
    assert _page(versioned, "versioned_docs/version-1.0/a.md") == "docs/a"
    assert _page(versioned, "api/a.md") == "api/a"  # the plugin's: current
    assert _page(versioned, "api_versioned_docs/version-2.0/a.md") == "api/2.0/a"
    assert _page(versioned, "api_versioned_docs/version-1.0/a.md") is None


def test_docusaurus_options_are_read_at_their_own_level_and_not_from_comments(
        tmp_path: Path) -> None:
    # the shape of a real site's config: website/ beside docs/ (path: '../docs'), an
    # editUrl function with braces before the path, a blog with its own routeBasePath, a
    # themeConfig with a docs block, settings commented out
    write_tree(tmp_path, {
        ".git/HEAD": "ref: refs/heads/main\n",
        "website/docusaurus.config.js": """
        // routeBasePath: 'old',
        module.exports = {
          themeConfig: { docs: { sidebar: { hideable: true, path: 'no' } } },
          presets: [['classic', {
            blog: { routeBasePath: 'news', path: 'posts' },
            docs: {
              editUrl: ({ versionDocsDirPath, docPath }) => `x/${docPath}`,
              /* lastVersion: 'current', */
              path: '../docs', sidebarPath: require.resolve('./sidebars.json'),
            },
          }]],
        };""",
        "website/versions.json": '["stable"]',
        "website/versioned_docs/version-stable/api.md": "# API\n",
        "website/posts/2024-01-02-a.md": "# A\n",
        "docs/api.md": "# API\n"})
    whole = resolve_site(tmp_path / "website")
    assert whole.content == tmp_path.resolve()
    assert _page(whole, "website/versioned_docs/version-stable/api.md") == "docs/api"
    assert _page(whole, "docs/api.md") == "docs/next/api"  # unreleased: under next/
    assert _page(whole, "website/blog/post.md") is None
    assert _page(whole, "website/posts/2024-01-02-a.md") == "news/2024/01/02/a"
    assert _page(whole, "website/posts/_partial.md") is None
    beside = resolve_site(tmp_path / "docs")  # the docs folder alone, config beside it
    assert beside.generator == "docusaurus"
    assert _page(beside, "docs/api.md") == "docs/next/api"


def test_docusaurus_blog_off_or_named_elsewhere(tmp_path: Path) -> None:
    posts = {"blog/2024-01-02-a.md": "# A\n", "docs/x.md": "# X\n"}
    off = resolve_site(write_tree(tmp_path / "off", {
        **posts, "docusaurus.config.js": "module.exports = { presets: [['classic', "
                                         "{ blog: false, docs: { routeBasePath: 'd' } }]] };"}))
    assert off.settings["blog"] is None and _page(off, "x.md") == "d/x"
    named = resolve_site(write_tree(tmp_path / "named", {
        **posts, "docusaurus.config.js": "const docsOptions = { routeBasePath: 'guide' };\n"
                                         "module.exports = { presets: [['classic', { docs: "
                                         "docsOptions, blog: { routeBasePath: 'news' } }]] };"}))
    assert _page(named, "docs/x.md") == "guide/x"  # not the blog's route
    assert _page(named, "blog/2024-01-02-a.md") == "news/2024/01/02/a"


def test_docusaurus_versions_served_at_their_own_paths(tmp_path: Path) -> None:
    # socket.io's website: the current docs at docs/v4/, 2.x at docs/v2/ (versions.X.path);
    # a ``versions`` block nested deeper (a function's body) is not the plugin's
    site = resolve_site(write_tree(tmp_path / "own", {
        "docusaurus.config.js": """
        module.exports = { i18n: { defaultLocale: 'en', locales: ['en', 'fr'] },
          presets: [['@docusaurus/preset-classic', { docs: {
            editUrl: ({ versionDocsDirPath }) => `x/${versionDocsDirPath}`,
            sidebarItemsGenerator({ defaultSidebarItemsGenerator, ...args }) {
              return defaultSidebarItemsGenerator({ ...args, versions: { current: {
                path: 'no' } } });
            },
            lastVersion: "current",
            versions: {
              current: { label: "4.x", path: "v4" },
              "3.x": { label: "3.x" },  // no path: its name
              '2.x': { label: "2.x", path: "/v2/" },
            },
          } }]] };""",
        "versions.json": '["3.x", "2.x"]', "docs/x.md": ""}))
    assert site.settings["docs"][0].paths == (("current", "v4"), ("2.x", "v2"))
    assert _page(site, "docs/server/install.md") == "docs/v4/server/install"
    assert _page(site, "versioned_docs/version-2.x/internals.md") == "docs/v2/internals"
    assert _page(site, "versioned_docs/version-3.x/internals.md") == "docs/3.x/internals"
    fr = "i18n/fr/docusaurus-plugin-content-docs"
    assert _page(site, f"{fr}/current/a.md") == "fr/docs/v4/a"
    assert _page(site, f"{fr}/version-2.x/a.md") == "fr/docs/v2/a"
    # a plugin's own versions; the unreleased one too, and a path that is the route base
    plugin = resolve_site(write_tree(tmp_path / "plugin", {
        "docusaurus.config.js": "module.exports = { plugins: [['@docusaurus/plugin-content-"
                                "docs', { id: 'api', path: 'api', routeBasePath: 'api', "
                                "versions: { current: { path: 'edge' }, '1.0': { path: "
                                "'stable' }, '0.9': { path: '' } } }]] };",
        "api_versions.json": '["1.0", "0.9"]', "docs/x.md": "", "api/x.md": ""}))
    assert _page(plugin, "api/a.md") == "api/edge/a"
    assert _page(plugin, "api_versioned_docs/version-1.0/a.md") == "api/stable/a"
    assert _page(plugin, "api_versioned_docs/version-0.9/a.md") == "api/a"
    # options named elsewhere (``docs: docsOptions``): the config is read whole
    named = resolve_site(write_tree(tmp_path / "named", {
        "docusaurus.config.js": "const docsOptions = { lastVersion: 'current', versions: "
                                "{ current: { path: 'v9' } } };\nmodule.exports = { "
                                "presets: [['classic', { docs: docsOptions }]] };",
        "versions.json": '["8.0"]', "docs/x.md": ""}))
    assert _page(named, "docs/a.md") == "docs/v9/a"
    assert _page(named, "versioned_docs/version-8.0/a.md") == "docs/8.0/a"


def test_docusaurus_keeps_names_that_start_like_dates_or_versions(tmp_path: Path) -> None:
    # socket.io's docs/changelog/4.7.0.md is served at changelog/4.7.0, not changelog/7.0
    # (where 2.5.0.md and 4.5.0.md both landed)
    names = ("4.7.0", "7.0-foo", "2021-11-notes", "1_2-x", "01-intro", "1.intro", "10 - Name")
    assert [strip_number_prefix(n) for n in names] == [
        "4.7.0", "7.0-foo", "2021-11-notes", "1_2-x", "intro", "intro", "Name"]
    site = resolve_site(write_tree(tmp_path, {"docusaurus.config.js": "", "docs/x.md": ""}))
    assert _page(site, "changelog/4.7.0.md") == "docs/changelog/4.7.0"
    assert _page(site, "changelog/2.5.0.md") != _page(site, "changelog/4.5.0.md")
    assert _page(site, "1.0-beta/02-setup.md") == "docs/1.0-beta/setup"


def test_docusaurus_pages_are_served_from_their_paths(tmp_path: Path) -> None:
    # the classic preset's pages plugin: src/pages/get-started/chat.md at get-started/chat
    fr = "website/i18n/fr/docusaurus-plugin-content-pages"
    site = resolve_site(write_tree(tmp_path / "site", {
        "website/docusaurus.config.js": "module.exports = { i18n: { defaultLocale: 'en', "
                                        "locales: ['en', 'fr'] }, presets: [['classic', "
                                        "{ docs: { path: '../docs' } }]] };",
        "docs/x.md": "", "website/src/pages/index.js": "",
        "website/src/pages/get-started/chat.md": "", f"{fr}/get-started/chat.md": "",
        f"{fr}/only-translated.md": ""}) / "website")
    pages = "website/src/pages"
    assert _page(site, f"{pages}/get-started/chat.md") == "get-started/chat"
    assert _page(site, f"{pages}/how-to/use.mdx") == "how-to/use"
    assert _page(site, f"{pages}/get-started/index.md") == "get-started/"  # as it is linked
    assert _page(site, f"{pages}/index.md") == ""
    for unpublished in ("index.js", "_partial.md", "_drafts/a.md", "notes.txt"):
        assert _page(site, f"{pages}/{unpublished}") is None, unpublished
    assert _page(site, f"{pages}/a.md", {"draft": True}) is None
    assert _page(site, f"{fr}/get-started/chat.md") == "fr/get-started/chat"
    assert _page(site, f"{fr}/only-translated.md") is None  # no page of the site
    assert _page(site, "website/i18n/de/docusaurus-plugin-content-pages/get-started/chat.md"
                 ) is None  # no locale of the site
    assert _page(site, "docs/x.md") == "docs/x"
    slashes = {"true": ("get-started/chat/", "get-started/"),
               "false": ("get-started/chat", "get-started")}
    for option, (chat, index) in slashes.items():
        slashed = resolve_site(write_tree(tmp_path / option, {
            "docusaurus.config.js": f"module.exports = {{ trailingSlash: {option} }};",
            "src/pages/get-started/chat.md": ""}))
        assert _page(slashed, "src/pages/get-started/chat.md") == chat
        assert _page(slashed, "src/pages/get-started/index.md") == index
        assert _page(slashed, "src/pages/index.md") == ""
    moved = resolve_site(write_tree(tmp_path / "moved", {
        "docusaurus.config.js": "module.exports = { presets: [['classic', { pages: { path: "
                                "'pages', routeBasePath: '/extra/' } }]] };",
        "pages/a.md": "", "src/pages/b.md": ""}))
    assert _page(moved, "pages/a.md") == "extra/a" and _page(moved, "src/pages/b.md") is None
    off = resolve_site(write_tree(tmp_path / "off", {
        "docusaurus.config.js": "module.exports = { presets: [['classic', { pages: false, "
                                "blog: false }]] };",
        "src/pages/b.md": "", "docs/x.md": ""}))
    assert off.settings["pages"] is None and off.content.name == "docs"


def test_a_hostile_docusaurus_config_is_read_to_a_bound(tmp_path: Path) -> None:
    # 9,000 docs plugins and 100,000 versions made every page cost a scan of them all
    # (2,000 pages: 61 s); real sites have a handful of each
    blocks = "".join(f"['@docusaurus/plugin-content-docs', {{ id: 'p{i}', path: 'p{i}' }}],"
                     for i in range(9000))
    site = resolve_site(write_tree(tmp_path, {
        "docusaurus.config.js": f"module.exports = {{ plugins: [{blocks}] }};",
        "versions.json": "[" + ",".join(f'"{i}.0"' for i in range(100_000)) + "]",
        "docs/a.md": ""}))
    docs = site.settings["docs"]
    assert len(docs) == 1 + MAX_DOCS_PLUGINS and len(docs[0].versions) == MAX_VERSIONS
    assert _page(site, "docs/a.md") == "docs/next/a"
    assert _page(site, "p5/a.md") == "docs/a" and _page(site, "p40/a.md") is None


@pytest.mark.timeout(60)
def test_nested_option_blocks_are_read_a_bounded_way_each(tmp_path: Path) -> None:
    # each "docs: {" or "blog: {" opens a block reaching to the end of a near-megabyte
    # config: scanned whole, every one looked at cost a pass over it all
    for key in ("docs", "blog"):
        site = resolve_site(write_tree(tmp_path / key, {
            "docusaurus.config.js": "module.exports = {" + f"{key}: {{" * 110_000,
            "blog/2024-01-02-a.md": "# A\n", "docs/a.md": "# A\n"}))
        assert site.generator == "docusaurus" and _page(site, "docs/a.md") == "docs/a"


def test_docusaurus_h1_takes_its_slug_but_is_cited_as_the_page(tmp_path: Path) -> None:
    md = "# Install\n\nIntro.\n\n## Install\n\nSteps.\n\n# Later title\n\nMore.\n"
    out = with_heading_ids(md, heading_ids(GENERATORS["docusaurus"].default_site(tmp_path)))
    anchors = [c.anchor for c in chunk_markdown(out, slug_headings=False)]
    assert anchors == [None, "install-1", None]


def test_classic_kramdown_ids_come_from_the_heading_source(tmp_path: Path) -> None:
    md = "## [A link](x.md) here\n\nText.\n\n## *Stress* `code`\n\nText.\n"
    ids = {}
    for input_format in ("GFM", "kramdown"):
        site = GENERATORS["jekyll"].detect(write_tree(tmp_path / input_format, {
            "_config.yml": f"kramdown:\n  input: {input_format}\n"}))
        out = with_heading_ids(md, heading_ids(site))
        ids[input_format] = [c.anchor for c in chunk_markdown(out, slug_headings=False)]
    assert ids == {"GFM": ["a-link-here", "stress-code"],
                   "kramdown": ["a-linkxmd-here", "stress-code"]}


def test_headings_are_rewritten_with_the_generator_ids(tmp_path: Path) -> None:
    md = ("Title\n=====\n\nText.\n\n## Closing hashes ##\n\nText.\n\n"
          "## Custom {#mine}\n\nText.\n\n> ## Quoted\n\n## Quoted\n\nText.\n\n"
          "```\n## not a heading\n```\n")
    site = GENERATORS["mkdocs"].default_site(tmp_path)
    out = with_heading_ids(md, heading_ids(site))
    chunks = chunk_markdown(out)
    assert [c.anchor for c in chunks] == ["title", "closing-hashes", "custom-mine", "quoted_1"]
    assert chunks[1].heading_path == ("Title", "Closing hashes")
    assert "## not a heading" in out  # fences untouched
    # attr_list on its own, or in the bundles that carry it
    for extensions in ("[attr_list]", "[pymdownx.extra]", "[markdown.extensions.extra]",
                       "[{pymdownx.extra: {}}]"):
        with_attr_list = GENERATORS["mkdocs"].detect(write_tree(tmp_path / "p", {
            "mkdocs.yml": f"markdown_extensions: {extensions}\n"}))
        chunks = chunk_markdown(with_heading_ids(md, heading_ids(with_attr_list)))
        assert chunks[2].anchor == "mine", extensions
        assert chunks[2].heading_path[-1] == "Custom", extensions


def test_cli_reports_the_generator_and_cites_its_urls(workdir: Path, cli) -> None:
    write_tree(workdir / "site", {"mkdocs.yml": "site_name: x\n",
                                  "docs/guide/install.md": "# Install\n\n## Step one\n\nDo it.\n",
                                  "README.md": "# Not published\n\nText.\n"})
    report = cli.json("ingest", "files", str(workdir / "site"), "--base-url",
                      "https://d.example/")
    assert report["sources"][0]["generator"] == "mkdocs"
    assert any("mkdocs (detected from" in n for n in report["notes"])
    assert report["added"] == 1
    hit = cli.json("query", "step one")["results"][0]
    assert hit["url"] == "https://d.example/guide/install/"
    assert hit["anchor"] == "step-one"
    assert cli.json("status")["namespaces"][0]["generators"] == ["mkdocs"]
    shown = cli("status")
    assert shown.exit_code == 0 and "mkdocs" in shown.output
    named = cli.json("ingest", "files", str(workdir / "site"), "--base-url",
                     "https://d.example/", "--generator", "mkdocs", "-n", "named")
    assert any("mkdocs (as asked, with the settings of" in n for n in named["notes"])


def test_cli_refuses_an_unknown_generator(workdir: Path, cli) -> None:
    write_tree(workdir / "d", {"a.md": "# A\n"})
    result = cli("ingest", "files", str(workdir / "d"), "--generator", "gitbook")
    assert result.exit_code == 2
    assert "--generator must be auto or mdbook" in result.output
    assert "got 'gitbook'" in result.output


def test_pages_are_relative_paths() -> None:
    for name, generator in GENERATORS.items():
        site = generator.default_site(Path("/site"))
        page = generator.page(site, PurePosixPath("a/b.md"), {})
        assert page is None or not page.startswith("/"), name


def test_a_site_whose_config_sits_beside_its_docs_folder(tmp_path: Path) -> None:
    # website/ holds the Docusaurus config, docs/ beside it the pages (path: '../docs')
    write_tree(tmp_path, {
        ".git/HEAD": "ref: refs/heads/main\n",
        "website/docusaurus.config.js": "module.exports = {presets: [['classic', "
                                        "{docs: {path: '../docs'}}]]}",
        "docs/guide/setup.md": "# Setup\n",
        "other/mkdocs.yml": "site_name: [unclosed\n",  # another project, unreadable: skipped
    })
    for name in (None, "docusaurus"):
        site = resolve_site(tmp_path / "docs", name)
        assert site.generator == "docusaurus"
        assert site.marker == tmp_path / "website" / "docusaurus.config.js"
        assert _page(site, "guide/setup.md") == "docs/guide/setup"
    # a folder no sibling publishes keeps the plain rule
    (tmp_path / "notes").mkdir()
    assert resolve_site(tmp_path / "notes").generator == "plain"
    # outside a repository (a tarball, a `git archive`), only the folders beside it are
    # searched: a home folder's other folders are not
    (tmp_path / ".git" / "HEAD").unlink()
    (tmp_path / ".git").rmdir()
    assert resolve_site(tmp_path / "docs").generator == "docusaurus"
    assert resolve_site(tmp_path / "docs" / "guide").generator == "plain"


def test_conf_py_literals_are_read_statement_by_statement() -> None:
    conf = ("project = 'x'\nprint(f\"{conf['a']}\" if 0 else f'{x!r:>{w}}')\n"
            "exclude_patterns = [\n    '_build',  # output\n    'drafts/**',\n]\n"
            "html_file_suffix = '.htm'; html_theme = 'alabaster'\n"
            "myst_substitutions = base | {'a': 'b'}\n"
            "templates_path = ['unclosed\n")
    assert assigned(conf, "exclude_patterns") == ["_build", "drafts/**"]
    assert assigned(conf, "html_file_suffix") == ".htm"
    assert assigned(conf, "myst_substitutions") is None  # computed when Sphinx runs
    assert assigned(conf, "templates_path") is None and assigned(conf, "missing") is None
    assert assigned("x = " + "[" * 100_000, "x") is None


@pytest.mark.parametrize(("custom_dir", "left_out"), [
    ("docs/overrides", True), ("./docs/overrides/", True), ("overrides", False),
    ("docs", False), ("/srv/theme", False), (5, False)])
def test_a_theme_folder_inside_the_docs_holds_no_pages(tmp_path: Path, custom_dir: object,
                                                       left_out: bool) -> None:
    write_tree(tmp_path, {"mkdocs.yml": f"site_name: x\ntheme:\n  name: material\n"
                                        f"  custom_dir: {custom_dir}\n",
                          "docs/a.md": "# A\n"})
    site = resolve_site(tmp_path)
    assert _page(site, "a.md") == "a/"
    assert (_page(site, "overrides/main.html") is None) is left_out


@pytest.mark.parametrize(("suffix", "pages"), [
    # myst_parser adds .md to the suffixes named (attrs: '.rst' alone, and MyST pages)
    ("'.txt'", {"guide.txt": "guide.html", "notes.md": "notes.html"}),
    ("['.rst', '.md']", {"guide.rst": "guide.html", "notes.md": "notes.html"}),
    ("{'.rst': 'restructuredtext', '.txt': 'restructuredtext', '.md': 'markdown'}",
     {"guide.txt": "guide.html", "guide.rst": "guide.html", "notes.md": "notes.html"}),
    ("5", {"guide.rst": "guide.html", "notes.md": "notes.html"}),  # not read: defaults
])
def test_sphinx_reads_the_sources_its_source_suffix_names(tmp_path: Path, suffix: str,
                                                          pages: dict[str, str]) -> None:
    write_tree(tmp_path, {"conf.py": f"project = 'x'\nextensions = ['myst_parser']\n"
                                     f"source_suffix = {suffix}\n"})
    site = resolve_site(tmp_path)
    for name in ("guide.txt", "guide.rst", "notes.md"):
        assert _page(site, name) == pages.get(name)


def test_without_a_markdown_parser_only_the_named_suffixes_are_sources(tmp_path: Path
                                                                       ) -> None:
    write_tree(tmp_path, {"conf.py": "project = 'x'\nsource_suffix = '.txt'\n"})
    site = resolve_site(tmp_path)
    assert [_page(site, n) for n in ("guide.txt", "guide.rst", "notes.md")] == [
        "guide.html", None, None]


def test_source_suffix_maps_each_suffix_to_how_it_is_read() -> None:
    from kbctl.generators.sphinx import source_formats

    assert source_formats({".rst": "restructuredtext", ".ipynb": "myst-nb",
                           "myst": "myst-nb", ".md": "markdown", ".nb": "jupyter_notebook"}
                          ) == {".rst": "rst", ".ipynb": "notebook", ".myst": "markdown",
                                ".md": "markdown", ".nb": "notebook"}  # nbsphinx's JSON
    assert source_formats([".txt", ".ipynb"]) == {".txt": "rst", ".ipynb": "notebook"}
    assert source_formats({"": "x", 5: "y"}) == source_formats(None) == {}


def test_mkdocstrings_stub_pages_are_named_in_the_report(tmp_path: Path) -> None:
    """35 API pages of `::: pydantic.x` were stored near-empty, and nothing said so."""
    from kbctl.sources.files import _stub_note

    root = write_tree(tmp_path, {"mkdocs.yml": "plugins: [search, mkdocstrings]\n",
                                 "docs/api.md": "# Models\n\n::: pkg.BaseModel\n    options:\n"
                                                "      show_root_heading: true\n\n"
                                                "::: pkg.RootModel\n",
                                 "docs/guide.md": "# Guide\n\n" + "Prose. " * 60
                                                  + "\n\n::: pkg.helper\n"})
    site = resolve_site(root)
    note = _stub_note(Path("docs/api.md"), site, (root / "docs/api.md").read_text())
    assert note.startswith("docs/api.md: its API reference (`::: pkg.BaseModel` and 1 more) "
                           "is rendered by mkdocstrings at build time")
    assert _stub_note(Path("docs/guide.md"), site, (root / "docs/guide.md").read_text()) == ""
    plain = resolve_site(write_tree(tmp_path / "p", {"mkdocs.yml": "site_name: x\n",
                                                     "docs/a.md": ""}))
    assert _stub_note(Path("docs/api.md"), plain, (root / "docs/api.md").read_text()) == ""
