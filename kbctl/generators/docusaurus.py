"""Docusaurus: ``docusaurus.config.{js,ts,mjs,cjs}``; docs under the docs plugin's
``path`` (default ``docs``) served under ``routeBasePath`` (default ``docs``) with clean
URLs: ``docs/guide/01-install.md`` → ``docs/guide/install`` (number prefixes dropped),
``index.md``/``README.md`` or a file named like its folder (``guide/guide.md``, whatever
its ``id``) → the folder. Front matter ``slug`` (absolute from the route base, or relative
to the folder) wins, and ``id`` names any other doc;
``draft: true`` docs are left out of production builds.

Versions (a ``versions.json``): the latest release (or ``lastVersion``) is served at
``docs/…``, the others from ``versioned_docs/version-X/`` at ``docs/X/…``, and the docs
folder, the unreleased current version, at ``docs/next/…``. Translations
(``i18n: { defaultLocale, locales }``) from ``i18n/fr/docusaurus-plugin-content-docs/
current/`` (or ``version-X/``) are served under ``fr/``. Further docs plugin instances
(``['@docusaurus/plugin-content-docs', { id, path, routeBasePath }]``) serve their folders
at their route bases, with versions and translations of their own (``DocsInstance``).

The blog (the preset's ``blog``, unless ``false``: folder ``path``, default ``blog``,
served under ``routeBasePath``, default ``blog``): a post's URL is its front matter
``slug``, else its path with a date in it (``2024-05-01-hello.md``,
``2024/05/01/hello/index.md``) turned into ``2024/05/01/hello``, else its path
(``index`` dropped).

Heading ids are github-slugger's; ``{#custom-id}`` is used as written; ``h1`` headings get
none on the page (the theme drops it), though each still takes its slug.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ..jsscan import JsScanner, outer_level, without_comments
from ..projectfiles import first_config, inside, is_folder, read_config_json
from .base import Site
from .plain import GithubIds

_CONFIG_NAMES = ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs",
                 "docusaurus.config.cjs", "docusaurus.config.mts")
_ROUTE_BASE = re.compile(r"""routeBasePath\s*:\s*['"]([^'"]*)['"]""")
_DOCS_BLOCK = re.compile(r"\bdocs\s*:\s*\{")
_TRAILING = re.compile(r"\btrailingSlash\s*:\s*(true|false)")
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?=[^-_.\s])")
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
# what only a docs plugin's options hold (``themeConfig`` has a ``docs: {…}`` too)
_DOCS_KEYS = re.compile(r"\b(?:path|routeBasePath|sidebarPath|lastVersion|versions|editUrl"
                        r"|includeCurrentVersion|onlyIncludeVersions)\s*:")
_ID = re.compile(r"""\bid\s*:\s*['"]([^'"/]+)['"]""")
_VERSIONED = "versioned_docs"
_I18N_DOCS = "docusaurus-plugin-content-docs"
CURRENT = "current"
DEFAULT_ID = "default"
# More than any real site has; a hostile config is read this far (every page is matched
# against each docs plugin and looked up among the versions).
MAX_DOCS_PLUGINS = 32
MAX_DOCS_BLOCKS = 4  # ``docs: {…}`` blocks looked in for the preset's (themeConfig has one)
MAX_OPTIONS_CHARS = 64 * 1024  # of one such block: a real one is a few hundred characters
MAX_VERSIONS = 1000


def strip_number_prefix(name: str) -> str:
    """``01-intro`` → ``intro`` (Docusaurus' default number prefix parser)."""
    return _NUMBER_PREFIX.sub("", name, count=1)


class DocusaurusIds(GithubIds):
    """github-slugger over every heading, but the theme renders ``h1`` without its id: an
    ``h1`` section is cited as the page itself."""

    idless_levels = frozenset({1})


class Docusaurus:
    name = "docusaurus"
    markers = _CONFIG_NAMES

    def detect(self, folder: Path) -> Site | None:
        found = first_config(folder, _CONFIG_NAMES)
        if found is None:
            return None
        marker, text = found[0], without_comments(found[1])
        blocks, preset_text = _plugin_blocks(text)
        preset = _instance(folder, DEFAULT_ID, _preset_docs(preset_text))
        docs = [preset]
        for block in blocks[:MAX_DOCS_PLUGINS]:  # each page is matched against them all
            options = outer_level(block)
            instance = _instance(folder, _block_id(options), options)
            if instance.id == DEFAULT_ID:
                docs[0] = instance  # the default docs plugin, configured on its own
            elif inside(folder, folder / instance.path):
                docs.append(instance)
        trailing = _TRAILING.search(text)
        blog = _preset_blog(preset_text)
        if blog is not None and not (inside(folder, folder / blog.path)
                                     and is_folder(folder / blog.path)):
            blog = None
        settings = {
            "routeBasePath": docs[0].route, "path": docs[0].path,
            "trailingSlash": trailing.group(1) == "true" if trailing else None,
            "locales": _locales(text), "docs": tuple(docs), "blog": blog,
        }
        spread = (len(docs) > 1 or len(settings["locales"]) > 1
                  or any(d.versions for d in docs) or blog is not None)
        if spread:  # every docs folder, and the versions and translations beside the config
            return _whole_site(folder, marker, settings)
        return Site(self.name, folder / docs[0].path, marker,
                    {**settings, "locales": settings["locales"][:1], "docs": ()})

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"routeBasePath": "docs", "trailingSlash": None})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        settings = site.settings
        locale, route, version = "", settings.get("routeBasePath", "docs"), ""
        blog = settings.get("blog")
        if blog is not None and rel.is_relative_to(blog.path):
            return _post(site, blog, rel.relative_to(blog.path), front_matter)
        if settings.get("docs"):
            placed = _placed(site, rel)
            if placed is None:
                return None  # not docs: the site's pages, blog, build output…
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
    blog = settings.get("blog")
    if blog is not None:  # below the config's folder, so below the content folder too
        blog = replace(blog, path=(config_dir / blog.path).relative_to(content).as_posix())
    return Site(GENERATOR.name, content, marker, {
        **settings, "docs": tuple(docs), "blog": blog,
        "site_dir": "" if site_dir == "." else site_dir})


@dataclass(frozen=True)
class BlogInstance:
    """The preset's blog: its folder and route base."""

    path: str = "blog"
    route: str = "blog"


def _preset_blog(config: str) -> BlogInstance | None:
    """The preset's blog options at their own level; None for ``blog: false``."""
    for match in itertools.islice(_BLOG_BLOCK.finditer(config), MAX_DOCS_BLOCKS):
        if match.group(1):
            return None
        options = _options(config, match.end() - 1)
        if _BLOG_KEYS.search(options):
            path, route = _DOCS_PATH.search(options), _ROUTE_BASE.search(options)
            return BlogInstance(
                PurePosixPath(path.group(1).strip("/")).as_posix() if path else "blog",
                route.group(1).strip("/") if route else "blog")
    return BlogInstance()


def _post(site: Site, blog: BlogInstance, rel: PurePosixPath,
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

    @property
    def prefix(self) -> str:
        return "" if self.id == DEFAULT_ID else f"{self.id}_"

    @property
    def i18n_folder(self) -> str:
        return _I18N_DOCS if self.id == DEFAULT_ID else f"{_I18N_DOCS}-{self.id}"


def _preset_docs(config: str) -> str:
    """The preset's docs options at their own level (``presets: [['classic', { docs: {…}
    }]]``), from the config without the other docs plugins' blocks: empty when its docs
    block sets none. A config that names its options elsewhere (``docs: docsOptions``) is
    read whole, but for its blog's block."""
    blocks = list(itertools.islice(_DOCS_BLOCK.finditer(config), MAX_DOCS_BLOCKS))
    for match in blocks:
        options = _options(config, match.end() - 1)
        if _DOCS_KEYS.search(options):
            return options
    if blocks:
        return ""
    rest, at = [], 0
    for match in itertools.islice(_BLOG_BLOCK.finditer(config), MAX_DOCS_BLOCKS):
        if match.group(1) is None and match.start() >= at:
            rest.append(config[at:match.start()])
            at = _block_end(config, match.end() - 1)
    return "".join(rest) + config[at:]


def _options(config: str, brace: int) -> str:
    """The ``{…}`` block opening at ``config[brace]`` at its own level, read as far as
    ``MAX_OPTIONS_CHARS``: a hostile config of nested blocks costs a bounded scan each."""
    segment = config[brace:brace + MAX_OPTIONS_CHARS]
    return outer_level(segment[:_block_end(segment, 0)])


def _instance(folder: Path, plugin_id: str, options: str) -> DocsInstance:
    """A docs plugin from its options at their own level, and its ``versions.json``."""
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
        _NO_CURRENT.search(options) is None)


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
        segment = "" if version == docs.last else ("next" if version == CURRENT else version)
        return locale, docs.route, segment, inner
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
