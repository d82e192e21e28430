"""Docusaurus: ``docusaurus.config.{js,ts,mjs,cjs}``; docs under the docs plugin's
``path`` (default ``docs``) served under ``routeBasePath`` (default ``docs``) with clean
URLs: ``docs/guide/01-install.md`` → ``docs/guide/install`` (number prefixes dropped, but
not a date's or a version's: ``changelog/4.7.0.md`` → ``changelog/4.7.0``),
``index.md``/``README.md`` or a file named like its folder (``guide/guide.md``, whatever
its ``id``) → the folder. Front matter ``slug`` (absolute from the route base, or relative
to the folder) wins, and ``id`` names any other doc;
``draft: true`` docs are left out of production builds.

Versions (a ``versions.json``): the latest release (or ``lastVersion``) is served at
``docs/…``, the others from ``versioned_docs/version-X/`` at ``docs/X/…``, and the docs
folder, the unreleased current version, at ``docs/next/…``; a version's own ``path``
(``versions: { current: { path: 'v4' } }``) replaces that segment. Translations
(``i18n: { defaultLocale, locales }``) from ``i18n/fr/docusaurus-plugin-content-docs/
current/`` (or ``version-X/``) are served under ``fr/``. Further docs plugin instances
(``['@docusaurus/plugin-content-docs', { id, path, routeBasePath }]``) serve their folders
at their route bases, with versions and translations of their own (``DocsInstance``).

The blog (the preset's ``blog``, unless ``false``: folder ``path``, default ``blog``,
served under ``routeBasePath``, default ``blog``): a post's URL is its front matter
``slug``, else its path with a date in it (``2024-05-01-hello.md``,
``2024/05/01/hello/index.md``) turned into ``2024/05/01/hello``, else its path
(``index`` dropped).

Pages (the preset's ``pages``, unless ``false``: folder ``path``, default ``src/pages``,
served under ``routeBasePath``, default the site's root): a markdown page's URL is its path
(``get-started/chat.md`` → ``get-started/chat``), an ``index`` its folder's with a slash
(``get-started/``, as Docusaurus links it); ``_``-named files and folders are none.
Translations in ``i18n/fr/docusaurus-plugin-content-pages/`` of a page the folder holds
are served under ``fr/``.

Heading ids are github-slugger's; ``{#custom-id}`` is used as written; ``h1`` headings get
none on the page (the theme drops it), though each still takes its slug.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ..extract import dialects
from ..extract.dialects import PageFile
from ..jsscan import JsScanner, outer_level, without_comments
from ..projectfiles import first_config, inside, is_folder, is_regular, read_config_json
from .base import Generator, Site
from .plain import GithubIds

_CONFIG_NAMES = ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs",
                 "docusaurus.config.cjs", "docusaurus.config.mts")
_ROUTE_BASE = re.compile(r"""routeBasePath\s*:\s*['"]([^'"]*)['"]""")
_DOCS_BLOCK = re.compile(r"\bdocs\s*:\s*\{")
_TRAILING = re.compile(r"\btrailingSlash\s*:\s*(true|false)")
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?=[^-_.\s])")
# Docusaurus' ignoredPrefixPattern: a date (2021-11-foo) or a version (7.0-foo, 4.7.0) is
# a name, not a number prefix
_NOT_A_PREFIX = re.compile(r"^\d+[-_.]\d+")
_LAST_VERSION = re.compile(r"""\blastVersion\s*:\s*['"]([^'"]+)['"]""")
_NO_CURRENT = re.compile(r"\bincludeCurrentVersion\s*:\s*false\b")
_DEFAULT_LOCALE = re.compile(r"""\bdefaultLocale\s*:\s*['"]([^'"]+)['"]""")
_LOCALES = re.compile(r"\blocales\s*:\s*\[([^\]]*)\]")
_QUOTED = re.compile(r"""['"]([^'"]+)['"]""")
_DOCS_PLUGIN = re.compile(r"""['"]@docusaurus/plugin-content-docs['"]\s*,\s*\{""")
_DOCS_PATH = re.compile(r"""\bpath\s*:\s*['"]([^'"]+)['"]""")
_BLOG_BLOCK = re.compile(r"\bblog\s*:\s*(?:(false)\b|\{)")
_BLOG_KEYS = re.compile(r"\b(?:path|routeBasePath|blogTitle|blogDescription|showReadingTime"
                        r"|editUrl|feedOptions|postsPerPage|blogSidebarTitle|blogSidebarCount"
                        r"|authorsMapPath|onInlineAuthors|onUntruncatedBlogPosts)\s*:")
# Docusaurus' DATE_FILENAME_REGEX: the last date in the path, then the post's name
_DATED = re.compile(r"^(?P<folder>.*)(?P<date>\d{4}[-/]\d{1,2}[-/]\d{1,2})[-/]?(?P<text>.*?)"
                    r"(?:/index)?.mdx?$", re.DOTALL)
_PAGES_BLOCK = re.compile(r"\bpages\s*:\s*(?:(false)\b|\{)")
_PAGES_KEYS = re.compile(r"\b(?:path|routeBasePath|include|exclude|mdxPageComponent)\s*:")
_VERSIONS_BLOCK = re.compile(r"\bversions\s*:\s*\{")
_VERSION_PATH = re.compile(r"""\bpath\s*:\s*['"]([^'"]*)['"]""")  # '' is the route base
# a ``key: {`` block's key, read backwards from its brace: ``: 'key'``, ``: "key"``, ``: key``
_KEY_BACKWARDS = re.compile(r"""\s*:\s*(?:'([^'\n]+)'|"([^"\n]+)"|([\w$.-]+)(?![\w$.-]))""")
_KEY_LOOKBACK = 256  # characters before a brace a key is looked for in
# what only a docs plugin's options hold (``themeConfig`` has a ``docs: {…}`` too)
_DOCS_KEYS = re.compile(r"\b(?:path|routeBasePath|sidebarPath|lastVersion|versions|editUrl"
                        r"|includeCurrentVersion|onlyIncludeVersions)\s*:")
_ID = re.compile(r"""\bid\s*:\s*['"]([^'"/]+)['"]""")
_VERSIONED = "versioned_docs"
_I18N_DOCS = "docusaurus-plugin-content-docs"
_I18N_PAGES = "docusaurus-plugin-content-pages"
CURRENT = "current"
DEFAULT_ID = "default"
# More than any real site has; a hostile config is read this far (every page is matched
# against each docs plugin and looked up among the versions).
MAX_DOCS_PLUGINS = 32
MAX_DOCS_BLOCKS = 4  # ``docs: {…}`` blocks looked in for the preset's (themeConfig has one)
MAX_OPTIONS_CHARS = 64 * 1024  # of one such block: a real one is a few hundred characters
MAX_VERSIONS = 1000


def strip_number_prefix(name: str) -> str:
    """``01-intro`` → ``intro`` (Docusaurus' default number prefix parser); a name that
    starts like a date or a version (``4.7.0``, ``2021-11-notes``) is kept whole, so
    ``4.7.0`` and ``2.7.0`` stay two pages."""
    if _NOT_A_PREFIX.match(name):
        return name
    return _NUMBER_PREFIX.sub("", name, count=1)


class DocusaurusIds(GithubIds):
    """github-slugger over every heading, but the theme renders ``h1`` without its id: an
    ``h1`` section is cited as the page itself."""

    idless_levels = frozenset({1})


class Docusaurus(Generator):
    name = "docusaurus"
    markers = _CONFIG_NAMES
    rank = 30

    def detect(self, folder: Path) -> Site | None:
        found = first_config(folder, _CONFIG_NAMES)
        if found is None:
            return None
        marker, text = found[0], without_comments(found[1])
        blocks, preset_text = _plugin_blocks(text)
        preset = _instance(folder, DEFAULT_ID, *_preset_docs(preset_text))
        docs = [preset]
        for block in blocks[:MAX_DOCS_PLUGINS]:  # each page is matched against them all
            options = outer_level(block)
            instance = _instance(folder, _block_id(options), options, block)
            if instance.id == DEFAULT_ID:
                docs[0] = instance  # the default docs plugin, configured on its own
            elif inside(folder, folder / instance.path):
                docs.append(instance)
        trailing = _TRAILING.search(text)
        blog = _held(folder, _preset_folder(preset_text, _BLOG_BLOCK, _BLOG_KEYS,
                                            ContentFolder("blog", "blog")))
        pages = _held(folder, _preset_folder(preset_text, _PAGES_BLOCK, _PAGES_KEYS,
                                             ContentFolder("src/pages", "")))
        settings = {
            "routeBasePath": docs[0].route, "path": docs[0].path,
            "trailingSlash": trailing.group(1) == "true" if trailing else None,
            "locales": _locales(text), "docs": tuple(docs), "blog": blog, "pages": pages,
        }
        spread = (len(docs) > 1 or len(settings["locales"]) > 1
                  or any(d.versions for d in docs) or blog is not None or pages is not None)
        if spread:  # every docs folder, and the versions and translations beside the config
            return _whole_site(folder, marker, settings)
        return Site(self.name, folder / docs[0].path, marker,
                    {**settings, "locales": settings["locales"][:1], "docs": (),
                     "pages": None})

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"routeBasePath": "docs", "trailingSlash": None})

    def guess(self, folder: Path) -> Site | None:
        """A ``docs/`` folder beside a ``sidebars`` file, without the site's config."""
        sidebars = next((folder / f"sidebars{ext}" for ext in (".js", ".ts", ".json")
                         if (folder / f"sidebars{ext}").is_file()), None)
        if sidebars is None or not (folder / "docs").is_dir():
            return None
        site = self.default_site(folder)
        return Site(self.name, site.content, None, {
            **site.settings, "guessed": f"{folder / 'docs'} beside {sidebars.name}"})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        settings = site.settings
        locale, route, version = "", settings.get("routeBasePath", "docs"), ""
        blog = settings.get("blog")
        if blog is not None and rel.is_relative_to(blog.path):
            return _post(site, blog, rel.relative_to(blog.path), front_matter)
        if settings.get("docs"):
            placed = _placed(site, rel)
            if placed is None:  # not docs: the site's pages, or build output…
                return _site_page(site, rel, front_matter)
            locale, route, version, rel = placed
        if rel.suffix.lower() not in (".md", ".mdx") or any(
                p.startswith("_") for p in rel.parts):
            return None  # partials and non-docs are not routes
        if front_matter.get("draft") is True:
            return None
        folders = [strip_number_prefix(p) for p in rel.parent.parts]
        slug = front_matter.get("slug")
        if isinstance(slug, str) and slug.strip():
            slug = slug.strip()
            path = slug.strip("/") if slug.startswith("/") else "/".join([*folders, slug])
        elif _is_category_index(rel):
            path = "/".join(folders)
        else:
            doc_id = front_matter.get("id")
            last = str(doc_id) if isinstance(doc_id, str | int) and str(doc_id) else (
                strip_number_prefix(rel.stem))
            path = "/".join([*folders, last])
        full = "/".join(p for p in (locale, route, version, path.strip("/")) if p)
        if site.settings.get("trailingSlash") and full:
            full += "/"
        return full

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.mdx(text, page)  # Docusaurus reads .md as MDX too

    def heading_ids(self, site: Site) -> GithubIds:
        return DocusaurusIds()


def _whole_site(folder: Path, marker: Path, settings: dict[str, Any]) -> Site:
    """A site whose pages are not all in one docs folder. Page paths are relative to the
    folder that holds the config's folder and the default docs folder both: the config's
    own, or the one above it when the docs lie beside it (``path: '../docs'``, the
    config in ``website/`` with ``versioned_docs/`` and ``i18n/``)."""
    config_dir = folder.resolve()
    try:
        content = Path(os.path.commonpath([config_dir, (folder / settings["path"]).resolve()]))
    except (OSError, RuntimeError, ValueError):  # a path no file system can hold
        content = config_dir
    docs = []
    for instance in settings["docs"]:
        docs_dir = (folder / instance.path).resolve()
        if docs_dir.is_relative_to(content):
            docs.append(replace(instance, path=docs_dir.relative_to(content).as_posix()))
    site_dir = config_dir.relative_to(content).as_posix()
    blog, pages = (_moved(settings.get(name), config_dir, content) for name in ("blog", "pages"))
    return Site(GENERATOR.name, content, marker, {
        **settings, "docs": tuple(docs), "blog": blog, "pages": pages,
        "site_dir": "" if site_dir == "." else site_dir})


def _moved(found: ContentFolder | None, config_dir: Path, content: Path
           ) -> ContentFolder | None:
    """The blog or the pages with their folder relative to the content folder (they lie
    below the config's folder, so below the content folder too)."""
    if found is None:
        return None
    return replace(found, path=(config_dir / found.path).relative_to(content).as_posix())


@dataclass(frozen=True)
class ContentFolder:
    """The preset's blog or pages: its folder and route base."""

    path: str
    route: str


def _preset_folder(config: str, block: re.Pattern[str], keys: re.Pattern[str],
                   default: ContentFolder) -> ContentFolder | None:
    """The preset's blog or pages (``block``, told from other blocks of that name by the
    ``keys`` only its options have), its options read at their own level; None when
    turned off (``blog: false``)."""
    for match in itertools.islice(block.finditer(config), MAX_DOCS_BLOCKS):
        if match.group(1):
            return None
        options = _options(config, match.end() - 1)
        if keys.search(options):
            path, route = _DOCS_PATH.search(options), _ROUTE_BASE.search(options)
            return ContentFolder(
                PurePosixPath(path.group(1).strip("/")).as_posix() if path else default.path,
                route.group(1).strip("/") if route else default.route)
    return default


def _held(folder: Path, found: ContentFolder | None) -> ContentFolder | None:
    """``found`` when the project holds its folder: one outside it is not read."""
    if found is None or not (inside(folder, folder / found.path)
                             and is_folder(folder / found.path)):
        return None
    return found


def _site_page(site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
    """Where the pages plugin serves ``rel`` (a path below the site folder): a file of the
    pages folder, or its translation; None for any other file."""
    pages = site.settings.get("pages")
    if pages is None:
        return None
    locale, inner = "", None
    if rel.is_relative_to(pages.path):
        inner = rel.relative_to(pages.path)
    else:
        site_dir = site.settings.get("site_dir", "")
        parts = rel.relative_to(site_dir).parts if rel.is_relative_to(site_dir) else ()
        if (len(parts) > 3 and parts[0] == "i18n" and parts[2] == _I18N_PAGES
                and parts[1] in site.settings.get("locales", ())[1:]):
            locale, inner = parts[1], PurePosixPath(*parts[3:])
            if not is_regular(site.content / pages.path / inner):
                return None  # Docusaurus serves the translations of its pages only
    if inner is None or inner.suffix.lower() not in (".md", ".mdx") or any(
            p.startswith("_") for p in inner.parts):
        return None  # React pages, partials, files of no page
    if front_matter.get("draft") is True:
        return None
    return _page_route(site, locale, pages.route, inner)


def _page_route(site: Site, locale: str, route: str, inner: PurePosixPath) -> str:
    """Docusaurus' ``fileToPath``: ``a/b.md`` → ``a/b``, ``a/index.md`` → ``a/`` (the
    slash kept unless ``trailingSlash: false``; never on the site's root)."""
    index = inner.stem.lower() == "index"
    path = inner.parent if index else inner.with_suffix("")
    full = "/".join(p for p in (locale, route, *path.parts) if p)
    if full and (site.settings.get("trailingSlash") or (
            index and site.settings.get("trailingSlash") is not False)):
        full += "/"
    return full


def _post(site: Site, blog: ContentFolder, rel: PurePosixPath,
          front_matter: Mapping[str, Any]) -> str | None:
    """Where a blog post is served (``rel``: its path in the blog folder)."""
    if rel.suffix.lower() not in (".md", ".mdx") or any(p.startswith("_") for p in rel.parts):
        return None  # partials, authors.yml, images
    if front_matter.get("draft") is True:
        return None
    slug = front_matter.get("slug")
    if not (isinstance(slug, str) and slug.strip()):
        dated = _DATED.match(rel.as_posix())
        slug = (f"{dated['date'].replace('-', '/')}/{dated['folder']}{dated['text']}" if dated
                else re.sub(r"(?:/index)?\.mdx?$", "", rel.as_posix()))
    full = "/".join(p for p in (blog.route, slug.strip().strip("/")) if p)
    if site.settings.get("trailingSlash") and full:
        full += "/"
    return full


def _is_category_index(rel: PurePosixPath) -> bool:
    """Whether a doc is its folder's index: named ``index``, ``README`` or like its folder,
    as the file is named (number prefix and all), whatever ``id`` its front matter gives."""
    name = rel.stem.lower()
    return name in ("index", "readme") or bool(rel.parent.parts) and (
        name == rel.parent.parts[-1].lower())


@dataclass(frozen=True)
class DocsInstance:
    """One docs plugin: its id, folder and route base, its released versions (newest
    first), the one served at the route base, and whether its folder (the unreleased
    current version) is built. Another plugin than the default keeps its versions in
    ``ID_versions.json`` and ``ID_versioned_docs/``, its translations in
    ``i18n/LOCALE/docusaurus-plugin-content-docs-ID/``."""

    id: str
    path: str
    route: str
    versions: tuple[str, ...] = ()
    last: str = CURRENT
    current: bool = True
    paths: tuple[tuple[str, str], ...] = ()  # (version, its ``versions.X.path`` option)

    def segment(self, version: str) -> str:
        """The version's place below the route base (Docusaurus' ``getVersionPathPart``):
        its own ``path``, else none for the last version, ``next`` for the current one,
        its name for the others."""
        for name, path in self.paths:
            if name == version:
                return path
        if version == self.last:
            return ""
        return "next" if version == CURRENT else version

    @property
    def prefix(self) -> str:
        return "" if self.id == DEFAULT_ID else f"{self.id}_"

    @property
    def i18n_folder(self) -> str:
        return _I18N_DOCS if self.id == DEFAULT_ID else f"{_I18N_DOCS}-{self.id}"


def _preset_docs(config: str) -> tuple[str, str]:
    """The preset's docs options (``presets: [['classic', { docs: {…} }]]``) at their own
    level and as written, from the config without the other docs plugins' blocks: empty
    when its docs block sets none. A config that names its options elsewhere (``docs:
    docsOptions``) is read whole, but for its blog's block (and, for the options, its
    versions' block: a version's ``path`` is not the docs folder)."""
    blocks = list(itertools.islice(_DOCS_BLOCK.finditer(config), MAX_DOCS_BLOCKS))
    for match in blocks:
        written = _written(config, match.end() - 1)
        options = outer_level(written)
        if _DOCS_KEYS.search(options):
            return options, written
    if blocks:
        return "", ""
    whole = _without(config, _BLOG_BLOCK)
    return _without(whole, _VERSIONS_BLOCK), whole


def _without(config: str, block: re.Pattern[str]) -> str:
    """``config`` without the ``{…}`` blocks ``block`` opens (``blog: false`` stays)."""
    rest, at = [], 0
    for match in itertools.islice(block.finditer(config), MAX_DOCS_BLOCKS):
        if match.group(0).endswith("{") and match.start() >= at:
            rest.append(config[at:match.start()])
            at = _block_end(config, match.end() - 1)
    return "".join(rest) + config[at:]


def _written(config: str, brace: int) -> str:
    """The ``{…}`` block opening at ``config[brace]`` as written, read as far as
    ``MAX_OPTIONS_CHARS``: a hostile config of nested blocks costs a bounded scan each."""
    segment = config[brace:brace + MAX_OPTIONS_CHARS]
    return segment[:_block_end(segment, 0)]


def _options(config: str, brace: int) -> str:
    """The ``{…}`` block opening at ``config[brace]`` at its own level (see ``_written``)."""
    return outer_level(_written(config, brace))


def _inner_blocks(block: str) -> Iterator[tuple[str, str]]:
    """The ``key: {…}`` blocks directly inside the ``{…}`` block ``block`` (as written),
    with their keys, quotes taken off; at most ``MAX_VERSIONS``. Each character is
    scanned once: the next brace at the block's own level, then that block's end."""
    at = 1
    for _ in range(MAX_VERSIONS):
        brace = JsScanner().find(block, "{}", at)
        if brace < 0 or block[brace] == "}":
            return
        end = _block_end(block, brace)
        key = _KEY_BACKWARDS.match(block[max(at, brace - _KEY_LOOKBACK):brace][::-1])
        if key:  # not ``({ docPath }) =>`` nor ``[{ … }]``
            written = next(k for k in key.groups() if k is not None)
            yield written[::-1], block[brace:end]
        at = end


def _version_paths(written: str) -> tuple[tuple[str, str], ...]:
    """Each version's ``path`` option (``versions: { current: { path: 'v4' } }``) from a
    docs plugin's options as written; a config read whole gives its first such block."""
    if written.startswith("{"):
        versions = next((inner for key, inner in _inner_blocks(written)
                         if key == "versions"), "")
    else:
        found = _VERSIONS_BLOCK.search(written)
        versions = _written(written, found.end() - 1) if found else ""
    paths = []
    for name, options in _inner_blocks(versions):
        path = _VERSION_PATH.search(outer_level(options))
        if path:
            paths.append((name, path.group(1).strip("/")))
    return tuple(paths)


def _instance(folder: Path, plugin_id: str, options: str, written: str) -> DocsInstance:
    """A docs plugin from its options (at their own level, and as ``written`` for the
    versions' options nested in them), and its ``versions.json``."""
    path = _DOCS_PATH.search(options)
    route = _ROUTE_BASE.search(options)
    last = _LAST_VERSION.search(options)
    prefix = "" if plugin_id == DEFAULT_ID else f"{plugin_id}_"
    listed = read_config_json(folder / f"{prefix}versions.json")
    versions = tuple(v for v in listed[:MAX_VERSIONS] if isinstance(v, str) and v.strip()
                     and "/" not in v) if isinstance(listed, list) else ()
    return DocsInstance(
        plugin_id, PurePosixPath(path.group(1).strip("/") if path else "docs").as_posix(),
        route.group(1).strip("/") if route else "docs", versions,
        last.group(1) if last else (versions[0] if versions else CURRENT),
        _NO_CURRENT.search(options) is None, _version_paths(written))


def _locales(config: str) -> tuple[str, ...]:
    """The site's locales, the default first."""
    default = _DEFAULT_LOCALE.search(config)
    listed = _LOCALES.search(config)
    locales = _QUOTED.findall(listed.group(1)) if listed else []
    first = default.group(1) if default else (locales[0] if locales else "en")
    return (first, *(loc for loc in locales if loc != first))


def _placed(site: Site, rel: PurePosixPath) -> tuple[str, str, str, PurePosixPath] | None:
    """Where a file below the site folder is served: its locale (empty for the default),
    its docs instance's route base, its version segment (empty for the version served at
    the route base) and its path in its docs folder; None for a file in no docs folder, or
    in a version the site does not build."""
    locales = site.settings.get("locales", ())
    site_dir = site.settings.get("site_dir", "")
    # versioned copies and translations lie in the config's folder
    parts = (rel.parts if not site_dir else rel.relative_to(site_dir).parts
             if rel.is_relative_to(site_dir) else ())
    for docs in sorted(site.settings.get("docs", ()), key=lambda d: -len(d.path)):
        locale, version, inner = "", CURRENT, None
        if rel.is_relative_to(docs.path):
            inner = rel.relative_to(docs.path)
        elif (len(parts) > 2 and parts[0] == f"{docs.prefix}{_VERSIONED}"
              and parts[1].startswith("version-")):
            version, inner = parts[1].removeprefix("version-"), PurePosixPath(*parts[2:])
        elif (len(parts) > 4 and parts[0] == "i18n" and parts[1] in locales[1:]
              and parts[2] == docs.i18n_folder):
            locale = parts[1]
            version = CURRENT if parts[3] == CURRENT else parts[3].removeprefix("version-")
            inner = PurePosixPath(*parts[4:])
        if inner is None:
            continue
        if (version == CURRENT and not docs.current) or (
                version != CURRENT and version not in docs.versions):
            return None  # a version the site does not build
        return locale, docs.route, docs.segment(version), inner
    return None


def _plugin_blocks(config: str) -> tuple[list[str], str]:
    """The option blocks of the docs plugins configured beside the preset, and the config
    without them (so the preset's settings are not read from them)."""
    blocks: list[str] = []
    rest: list[str] = []
    at = 0
    for match in _DOCS_PLUGIN.finditer(config):
        if match.start() < at:
            continue
        end = _block_end(config, match.end() - 1)
        blocks.append(config[match.end() - 1:end])
        rest.append(config[at:match.start()])
        at = end
    rest.append(config[at:])
    return blocks, "".join(rest)


def _block_id(block: str) -> str:
    found = _ID.search(block)
    return found.group(1) if found else DEFAULT_ID


def _block_end(text: str, start: int) -> int:
    """The end of the ``{…}`` opening at ``text[start]``: braces counted, quoted strings
    and comments skipped; the text's end when it never closes."""
    close = JsScanner().find(text, "}", start + 1)
    return len(text) if close < 0 else close + 1


GENERATOR = Docusaurus()
