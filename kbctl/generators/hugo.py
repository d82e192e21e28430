"""Hugo: ``hugo.toml``/``hugo.yaml``/``hugo.json`` (or a ``config.*`` next to a
``content`` folder), and the files of ``config/_default/`` and ``config/production/``
merged over it as ``hugo`` builds; pages under ``contentDir`` (default ``content``):
``posts/first.md`` → ``posts/first/`` (``uglyURLs``: ``posts/first.html``),
``posts/_index.md`` → ``posts/``, a bundle's ``index.md`` → its folder; paths are
lowercased. Front matter ``url`` replaces the path, ``slug`` the last segment. Not
published (as ``hugo`` builds by default): drafts, pages dated in the future
(``publishDate``, else ``date``), expired ones (``expiryDate``), headless bundles and
``build.render: never``, also when a section's ``_index.md`` cascades it to the pages
below; ``buildDrafts``, ``buildFuture`` and ``buildExpired`` in the config turn those back
on. A module mount of a folder onto ``content`` (``source = 'content/en'``) is the
content folder.

Languages: a page is in the default language (``defaultContentLanguage``, ``en``) unless
its folder is another language's ``contentDir`` (or mount) or its name ends in a
configured language (``about.fr.md``); other languages are served under ``/LANG/``, the
default one too with ``defaultContentLanguageInSubdir``. ``url`` is from the site's root in
every language.

Heading ids are goldmark's ``github`` ids (Hugo's default ``autoHeadingIDType``) of the
heading's text, as Hugo makes them since 0.144 (before, of its source line, so that
``_tests_`` kept its underscores): lowercase letters, digits and ``_`` kept, spaces and
``-`` → ``-``, the rest dropped, ``heading`` when empty; repeats get ``-1``, ``-2``….
goldmark's typographer (on unless disabled) has made ``--`` and ``---`` dashes first.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import unicodedata
from collections.abc import Mapping
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import ExtractError
from ..frontmatter import split_front_matter
from ..projectfiles import read_config_text
from .base import UNREAD, CountingIds, Site, front_matter_time, is_future
from .hugo_permalinks import PageFacts, expand, permalinks
from .tomlfile import load_toml
from .yamlfile import load_yaml_config

_CONFIGS = ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json")
_LEGACY = ("config.toml", "config.yaml", "config.yml", "config.json")
_PAGE_SUFFIXES = (".md", ".markdown", ".html", ".htm")
_CONFIG_DIR = "config"
_CONFIG_EXTENSIONS = (".toml", ".yaml", ".yml", ".json")
_ENVIRONMENT = "production"  # what ``hugo`` builds with (``hugo server``: development)
_MAX_CONFIG_FILES = 200  # a config folder holds a handful; a hostile one is read this far
DEFAULT_LANGUAGE = "en"
# the front matter keys Hugo reads each date from, first found wins (its defaults)
_PUBLISH_KEYS = ("publishdate", "pubdate", "published", "date")
_EXPIRY_KEYS = ("expirydate", "unpublishdate")
_SECTION_PAGES = ("_index.md", "_index.markdown", "_index.html")
_TOML_FRONT_MATTER = re.compile(r"\+\+\+[ \t]*\r?\n(.*?)^\+\+\+[ \t]*$", re.DOTALL | re.MULTILINE)


def goldmark_id(text: str, ascii_only: bool = False) -> str:
    """goldmark's ``github`` (or ``github-ascii``) auto id of a heading's text."""
    if ascii_only:
        text = "".join(ch for ch in unicodedata.normalize("NFD", text)
                       if unicodedata.category(ch) != "Mn")
    out = []
    for ch in text.strip():
        if ascii_only and ord(ch) > 127:
            continue
        if ch in "- ":
            out.append("-")
        elif ch == "_" or ch.isalpha() or unicodedata.category(ch) == "Nd":
            out.append(ch.lower())
    return "".join(out)


def _load(path: Path) -> dict[str, Any]:
    text = read_config_text(path) or ""
    if path.suffix == ".toml":
        return load_toml(text)
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return {}
        return data if isinstance(data, dict) else {}
    return load_yaml_config(text, yaml_1_2=True)


def _lower_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).lower(): _lower_keys(v) for k, v in value.items()}
    return value


def _config(path: Path) -> dict[str, Any]:
    """The config at ``path`` with its keys lower-cased (Hugo's keys are case-insensitive);
    one nested too deeply to walk counts as empty, like one that does not parse."""
    try:
        return _lower_keys(_load(path))
    except RecursionError:
        return {}



def _project_config(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    """The project's config as ``hugo`` merges it, with the file that marks the project:
    the first config file in ``folder``, then the files of ``config/_default/`` and of
    ``config/production/`` (the environment ``hugo`` builds with), each over the last.
    None when there is none, or only a ``config.*`` that is not Hugo's."""
    root = next((folder / name for name in _CONFIGS + _LEGACY if (folder / name).is_file()),
                None)
    config = _config(root) if root is not None else {}
    files = _config_dir_files(folder, config.get("configdir"))
    if root is None and not files:
        return None
    for path in files:
        config = _merged(config, _config_dir_entry(path))
    marker = root or next((p for p in files if p.stem in ("hugo", "config")), files[0])
    if ((root is None or root.name in _LEGACY) and not (
            (folder / "content").is_dir() or "contentdir" in config or "baseurl" in config)):
        return None  # a config.toml or config/ folder that is not Hugo's
    return marker, config


def _config_dir_files(folder: Path, config_dir: Any) -> list[Path]:
    """The config files under ``configDir`` (default ``config``) that ``hugo`` reads, least
    specific first; a folder outside the project is not read."""
    top = folder / (config_dir if isinstance(config_dir, str) and config_dir.strip()
                    else _CONFIG_DIR)
    try:
        if not top.resolve().is_relative_to(folder.resolve()):
            return []
    except (OSError, RuntimeError, ValueError):
        return []
    found: list[Path] = []
    for environment in ("_default", _ENVIRONMENT):
        for dirpath, dirnames, filenames in os.walk(top / environment):
            dirnames.sort()
            found.extend(Path(dirpath) / name for name in sorted(filenames)
                         if Path(name).suffix.lower() in _CONFIG_EXTENSIONS)
            if len(found) >= _MAX_CONFIG_FILES:
                return found[:_MAX_CONFIG_FILES]
    return found


def _config_dir_entry(path: Path) -> dict[str, Any]:
    """One file of the config folder, placed as Hugo places it: ``hugo.*`` and ``config.*``
    at the top, ``KEY.*`` under ``KEY``, ``KEY.LANG.*`` under ``languages.LANG`` (its menus
    and params under their key); a file holding just ``KEY`` is that key's value."""
    item = _config(path)
    name = path.stem
    if name in ("hugo", "config"):
        return item
    name, _, language = name.partition(".")
    key = name.lower()
    value: Any = item.get(key, item) if len(item) == 1 else item
    if not language:
        return {key: value}
    entry = {key: value} if key in ("menu", "menus", "params") else value
    return {"languages": {language.lower(): entry}}


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base``, table by table; ``over`` wins where both set a value."""
    out = dict(base)
    for key, value in over.items():
        below = out.get(key)
        out[key] = (_merged(below, value) if isinstance(below, dict) and isinstance(value, dict)
                    else value)
    return out


def _content_dirs(folder: Path, config: Mapping[str, Any]) -> tuple[Path, dict[str, Any]]:
    """The folder holding every language's content, and the language settings: the content
    folders below it with the language of their files (a language's own ``contentDir`` or
    mount; the site's folder, when some language has none, for the default language), the
    default language, whether it too is served under ``/LANG/``, and the languages a file
    name may end in (``about.fr.md``, which wins over its folder's language)."""
    site_dir = _content_dir(_mounted_content(config)) or _content_dir(
        config.get("contentdir")) or "content"
    default = config.get("defaultcontentlanguage")
    default = default.strip().lower() if isinstance(default, str) and default.strip() else (
        DEFAULT_LANGUAGE)
    languages = config.get("languages") if isinstance(config.get("languages"), dict) else {}
    disabled = config.get("disablelanguages")
    disabled = {str(d).lower() for d in disabled} if isinstance(disabled, list) else set()
    mounted = _mounted_language_content(config)
    enabled = sorted({default, *(str(k).lower() for k in languages)} - disabled) or [default]
    dirs: list[tuple[str, str]] = []  # (language, content folder)
    for language in enabled:
        own = languages.get(language)
        own_dir = mounted.get(language) or _content_dir(
            own.get("contentdir") if isinstance(own, dict) else None)
        if own_dir:
            dirs.append((language, own_dir))
    if len(dirs) < len(enabled):  # some language reads the site's folder: it is mounted,
        dirs.append((default, site_dir))  # its files the default language's unless named
    common = PurePosixPath(os.path.commonpath([d for _, d in dirs]))
    below = sorted(((lang, PurePosixPath(d).relative_to(common).as_posix()) for lang, d in dirs),
                   key=lambda pair: (-len(pair[1]), pair[0]))
    return folder / common, {
        "contentDirs": tuple(below), "defaultLanguage": default,
        "languageInSubdir": config.get("defaultcontentlanguageinsubdir") is True,
        "languages": tuple(enabled), "disabledLanguages": tuple(sorted(disabled))}


def _content_dir(value: Any) -> str | None:
    """A content folder setting as a path inside the project; None when unset or outside."""
    if not isinstance(value, str) or not value.strip("/ "):
        return None
    path = posixpath.normpath(value.strip().strip("/"))
    return None if path == "." or path.startswith("..") else path


def _language_of(site: Site, rel: PurePosixPath
                 ) -> tuple[str, str, PurePosixPath, str] | None:
    """The language of the file at ``rel`` (below ``site.content``), the content folder it
    is in, its path in that folder and its stem without a language suffix; None when no
    language's content holds it or its language is not built."""
    settings = site.settings
    for language, folder in settings.get("contentDirs", ((DEFAULT_LANGUAGE, "."),)):
        if folder != "." and not rel.is_relative_to(folder):
            continue
        inner = rel if folder == "." else rel.relative_to(folder)
        stem = inner.stem
        base, dot, suffix = stem.rpartition(".")
        if dot and base and suffix.lower() in settings.get("languages", (DEFAULT_LANGUAGE,)):
            return suffix.lower(), folder, inner, base
        if dot and base and suffix.lower() in settings.get("disabledLanguages", ()):
            return None
        return language, folder, inner, stem
    return None

class Hugo:
    name = "hugo"
    markers = _CONFIGS + _LEGACY + tuple(f"config/_default/{name}" for name in _CONFIGS)

    def detect(self, folder: Path) -> Site | None:
        found = _project_config(folder)
        if found is None:
            return None
        marker, config = found
        goldmark = ((config.get("markup") or {}).get("goldmark") or {}) if isinstance(
            config.get("markup"), dict) else {}
        parser = goldmark.get("parser") or {} if isinstance(goldmark, dict) else {}
        content, languages = _content_dirs(folder, config)
        settings = {
            **languages,
            "uglyURLs": config.get("uglyurls") is True,
            "disablePathToLower": config.get("disablepathtolower") is True,
            "autoHeadingIDType": (parser.get("autoheadingidtype") or "github")
            if isinstance(parser, dict) else "github",
            **{name: config.get(name.lower()) is True
               for name in ("buildDrafts", "buildFuture", "buildExpired")},
            "typographer": _typographer(goldmark),
            "headingAttributes": _heading_attributes(parser),
            "permalinks": permalinks(config),
        }
        return Site(self.name, content, marker, settings)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"autoHeadingIDType": "github"})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        own, front_matter = front_matter, {str(k).lower(): v for k, v in front_matter.items()}
        if rel.suffix.lower() not in _PAGE_SUFFIXES or not _rendered(site, front_matter):
            return None
        placed = _language_of(site, rel)
        if placed is None:
            return None
        language, folder, rel, stem = placed
        if (own is not UNREAD and "build" not in front_matter and "_build" not in front_matter
                and _cascaded_render(site.content / folder, rel) in ("never", "link", False)):
            return None  # known once read: the page's own build options win
        url = front_matter.get("url")
        if isinstance(url, str) and url.strip():
            return url.strip().lstrip("/")  # from the site's root, in every language
        # a permalink reads the front matter (a date, a title): unread, the file's own
        # path stands in, one per file, so that no two unread files share an address
        linked = None if own is UNREAD else expand(site.settings.get("permalinks", ()), PageFacts(
            site.content / folder, rel, stem, stem.lower() == "_index", front_matter))
        if linked is not None:
            out = linked.strip("/")
            leaf = None if stem.lower() in ("_index", "index") else out.rpartition("/")[2]
        else:
            out, leaf = _content_path(rel, stem, front_matter)
        if not site.settings.get("disablePathToLower"):
            out = out.lower()
        if (language != site.settings.get("defaultLanguage", DEFAULT_LANGUAGE)
                or site.settings.get("languageInSubdir")):
            out = f"{language}/{out}" if out else language
        if not out:
            return ""
        if leaf and site.settings.get("uglyURLs"):
            return out + ".html"
        return out + "/"

    def expires(self, site: Site, front_matter: Mapping[str, Any]) -> datetime | None:
        """When a published page stops being rendered (its ``expiryDate``), if ever."""
        return _expires(site, {str(k).lower(): v for k, v in front_matter.items()})

    def heading_ids(self, site: Site) -> CountingIds:
        kind = site.settings.get("autoHeadingIDType", "github")
        dashes = site.settings.get("typographer", True)
        attributes = site.settings.get("headingAttributes", True)
        ids = CountingIds(lambda text: goldmark_id(_typeset(text) if dashes else text,
                                                   ascii_only=kind == "github-ascii"),
                          empty="heading", honour_explicit=attributes)
        ids.attribute_lists = attributes  # "## T {#id .c}": the list is no text
        return ids


def _content_path(rel: PurePosixPath, stem: str, front_matter: Mapping[str, Any]
                  ) -> tuple[str, str | None]:
    """A page's path from its place in the content folder (``slug`` renaming its last
    segment), and its leaf name (None for a section page or bundle: a folder)."""
    parent = [] if rel.parent.as_posix() == "." else list(rel.parent.parts)
    if stem.lower() in ("_index", "index"):
        path, leaf = parent, None
    else:
        path, leaf = parent, stem
    slug = front_matter.get("slug")
    if isinstance(slug, str) and slug.strip():
        if leaf is None and path:
            path = [*path[:-1], slug.strip()]
        else:
            leaf = slug.strip()
    segments = [*path, leaf] if leaf else path
    return "/".join(s.replace(" ", "-") for s in segments), leaf

def _typeset(text: str) -> str:
    """The dashes goldmark's typographer makes (the rest of what it changes is punctuation
    an id drops anyway)."""
    return text.replace("---", "\u2014").replace("--", "\u2013")


def _typographer(goldmark: Any) -> bool:
    extensions = goldmark.get("extensions") if isinstance(goldmark, dict) else None
    typographer = extensions.get("typographer") if isinstance(extensions, dict) else None
    return not (isinstance(typographer, dict) and typographer.get("disable") is True)


def _heading_attributes(parser: Any) -> bool:
    """Whether goldmark reads ``{#id .class}`` after a heading (``attribute.title``, on
    unless the config turns it off)."""
    attribute = parser.get("attribute") if isinstance(parser, dict) else None
    return not (isinstance(attribute, dict) and attribute.get("title") is False)

def _cascaded_render(content: Path, rel: PurePosixPath) -> Any:
    """``build.render`` that the nearest section cascades to ``rel`` (a section page's
    cascade reaches the page itself too, unless it sets its own ``build``); None when none
    does."""
    folder: PurePosixPath | None = rel.parent
    while folder is not None:
        for name in _SECTION_PAGES:
            render = _cascade_of(content / folder / name)
            if render is not None:
                return render
        folder = folder.parent if folder.as_posix() != "." else None
    return None


def _cascade_of(section_page: Path) -> Any:
    try:
        stat = section_page.stat()
    except OSError:
        return None
    return _cascade_render(str(section_page), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4096)
def _cascade_render(path: str, mtime_ns: int, size: int) -> Any:
    """The untargeted ``cascade`` → ``build.render`` of a section page's front matter
    (YAML or TOML); None when it sets none. Cached per file version."""
    text = read_config_text(Path(path)) or ""
    if text.startswith("+++"):
        found = _TOML_FRONT_MATTER.match(text)
        front_matter = load_toml(found.group(1)) if found else {}
    else:
        try:
            front_matter = split_front_matter(text)[0]
        except ExtractError:
            return None  # the page's own load reports it
    cascade = {str(k).lower(): v for k, v in front_matter.items()}.get("cascade")
    for entry in cascade if isinstance(cascade, list) else [cascade]:
        if not isinstance(entry, dict):
            continue
        entry = {str(k).lower(): v for k, v in entry.items()}
        if "target" in entry or "_target" in entry:
            continue  # only for pages that match: not read here
        build = entry.get("build", entry.get("_build"))
        if isinstance(build, dict):
            for key, value in build.items():
                if str(key).lower() == "render":
                    return value
    return None


def _mounted_content(config: Mapping[str, Any]) -> str | None:
    """The folder a module mount serves as the whole of ``content`` for every language (the
    first, as for the default language), e.g. ``source = 'content/en'``; None without one."""
    return next((source for source, language in _content_mounts(config) if not language), None)


def _mounted_language_content(config: Mapping[str, Any]) -> dict[str, str]:
    """The content folders mounted for one language each (a mount's ``lang``)."""
    out: dict[str, str] = {}
    for source, language in _content_mounts(config):
        if language and _content_dir(source):
            out.setdefault(language, _content_dir(source) or "")
    return out


def _content_mounts(config: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(source, language or None) of each module mount onto ``content``, in order."""
    module = config.get("module")
    mounts = module.get("mounts") if isinstance(module, dict) else None
    out = []
    for mount in mounts if isinstance(mounts, list) else []:
        if (isinstance(mount, dict) and str(mount.get("target", "")).strip("/") == "content"
                and isinstance(mount.get("source"), str) and mount["source"].strip("/")):
            out.append((mount["source"].strip("/"), _mount_language(mount)))
    return out


def _mount_language(mount: Mapping[str, Any]) -> str | None:
    """The one language a mount is for: its ``lang``, or a ``sites.matrix.languages`` of
    one name (Hugo 0.153 and later); None when it is for every language."""
    language = mount.get("lang")
    sites = mount.get("sites")
    matrix = sites.get("matrix") if isinstance(sites, dict) else None
    languages = matrix.get("languages") if isinstance(matrix, dict) else None
    if isinstance(languages, list) and len(languages) == 1:
        language = languages[0]
    return language.lower() if isinstance(language, str) and language.strip("*") else None

def _expires(site: Site, front_matter: Mapping[str, Any]) -> datetime | None:
    expiry = next((front_matter[k] for k in _EXPIRY_KEYS if k in front_matter), None)
    return None if site.settings.get("buildExpired") else front_matter_time(expiry)


def _rendered(site: Site, front_matter: Mapping[str, Any]) -> bool:
    """Whether ``hugo`` (no flags) renders a page with this front matter."""
    settings = site.settings
    if front_matter.get("draft") is True and not settings.get("buildDrafts"):
        return False
    publish = next((front_matter[k] for k in _PUBLISH_KEYS if k in front_matter), None)
    if is_future(publish) and not settings.get("buildFuture"):
        return False
    expires = _expires(site, front_matter)
    if expires is not None and expires <= datetime.now(timezone.utc):
        return False
    if front_matter.get("headless") is True:
        return False
    build = front_matter.get("build", front_matter.get("_build"))
    render = next((v for k, v in build.items() if str(k).lower() == "render"),
                  None) if isinstance(build, dict) else None
    return render not in ("never", "link", False)


GENERATOR = Hugo()
