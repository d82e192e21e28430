"""Hugo: ``hugo.toml``/``hugo.yaml``/``hugo.json`` (or a ``config.*`` next to a
``content`` folder), with ``config/_default/`` and ``config/production/`` merged over it
(``hugo_config``); pages under ``contentDir`` (default ``content``):
``posts/first.md`` → ``posts/first/`` (``uglyURLs``: ``posts/first.html``),
``posts/_index.md`` → ``posts/``, a bundle's ``index.md`` → its folder; paths are
lowercased. Front matter ``url`` replaces the path, ``slug`` the last segment. Not
published (as ``hugo`` builds by default): drafts, pages dated in the future
(``publishDate``, else ``date``), expired ones (``expiryDate``), headless bundles and
``build.render: never``, also when a section's ``_index.md`` cascades it to the pages
below; ``buildDrafts``, ``buildFuture`` and ``buildExpired`` in the config turn those back
on. A module mount of a folder onto ``content`` (``source = 'content/en'``) is the
content folder.

Languages (``hugo_languages``): other languages than the default are served under
``/LANG/``, the default one too with ``defaultContentLanguageInSubdir``; ``url`` is from the
site's root in every language. ``permalinks`` patterns place pages (``hugo_permalinks``).

Heading ids are goldmark's ``github`` ids (Hugo's default ``autoHeadingIDType``) of the
heading's text, as Hugo makes them since 0.144 (before, of its source line, so that
``_tests_`` kept its underscores): lowercase letters, digits and ``_`` kept, spaces and
``-`` → ``-``, the rest dropped, ``heading`` when empty; repeats get ``-1``, ``-2``….
goldmark's typographer (on unless disabled) has made ``--`` and ``---`` dashes first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import CountingIds
from ..errors import ExtractError
from ..extract import dialects
from ..extract.dialects import PageFile
from ..extract.goldmark_attributes import split_heading_attributes
from ..frontmatter import split_front_matter
from ..projectfiles import read_config_text
from .base import UNREAD, Generator, Site, front_matter_time, is_future
from .hugo_config import MARKERS, project_config
from .hugo_languages import DEFAULT_LANGUAGE, content_dirs, language_of
from .hugo_permalinks import PageFacts, expand, permalinks
from .tomlfile import load_toml

_PAGE_SUFFIXES = (".md", ".markdown", ".html", ".htm")
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


class Hugo(Generator):
    name = "hugo"
    markers = MARKERS
    rank = 100

    def detect(self, folder: Path) -> Site | None:
        found = project_config(folder)
        if found is None:
            return None
        marker, config = found
        goldmark = ((config.get("markup") or {}).get("goldmark") or {}) if isinstance(
            config.get("markup"), dict) else {}
        parser = goldmark.get("parser") or {} if isinstance(goldmark, dict) else {}
        content, languages = content_dirs(folder, config)
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
            "blockAttributes": _block_attributes(parser),
            "definitionTermIds": _definition_term_ids(goldmark, parser),
            "permalinks": permalinks(config),
        }
        return Site(self.name, content, marker, settings)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"autoHeadingIDType": "github"})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        own, front_matter = front_matter, {str(k).lower(): v for k, v in front_matter.items()}
        if rel.suffix.lower() not in _PAGE_SUFFIXES or not _rendered(site, front_matter):
            return None
        placed = language_of(site, rel)
        if placed is None:
            return None
        language, folder, rel, stem = placed
        if _bundle_resource(site.content / folder, rel, stem):
            return None
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

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.hugo(text, page)

    def heading_ids(self, site: Site) -> CountingIds:
        kind = site.settings.get("autoHeadingIDType", "github")
        dashes = site.settings.get("typographer", True)
        attributes = site.settings.get("headingAttributes", True)
        ids = CountingIds(lambda text: goldmark_id(_typeset(text) if dashes else text,
                                                   ascii_only=kind == "github-ascii"),
                          empty="heading", honour_explicit=attributes)
        if attributes:  # "## T {#id .c}": the list is no text
            ids.attribute_lists = split_heading_attributes
        ids.definition_terms = site.settings.get("definitionTermIds", False)
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


def _definition_term_ids(goldmark: Any, parser: Any) -> bool:
    """Whether definition terms get ids (``parser.autoDefinitionTermID``, off by default),
    which needs the definition list extension (on by default)."""
    extensions = goldmark.get("extensions") if isinstance(goldmark, dict) else None
    lists = extensions.get("definitionlist") if isinstance(extensions, dict) else None
    return (isinstance(parser, dict) and parser.get("autodefinitiontermid") is True
            and lists is not False)


def _block_attributes(parser: Any) -> bool:
    """Whether goldmark reads a ``{.class}`` line as the attributes of the block before it
    (``attribute.block``, off unless the config turns it on)."""
    attribute = parser.get("attribute") if isinstance(parser, dict) else None
    return isinstance(attribute, dict) and attribute.get("block") is True


def _bundle_resource(content: Path, rel: PurePosixPath, stem: str) -> bool:
    """Whether ``rel`` lies inside a leaf bundle (a folder with an ``index.md``, or an
    ``index.LANG.md``, at any depth above it): Hugo publishes such a file as no page, only
    as a resource its bundle may include (``{{% readfile "includes/x.md" %}}``). The
    bundle's own ``index.md`` is its page."""
    if stem.lower() == "index":
        if rel.parent.as_posix() == ".":
            return False
        folder = rel.parent.parent
    else:
        folder = rel.parent
    while True:
        if _has_leaf_index(content / folder):
            return True
        if folder.as_posix() == ".":
            return False
        folder = folder.parent


def _has_leaf_index(folder: Path) -> bool:
    try:
        stat = folder.stat()
    except OSError:
        return False
    return _lists_leaf_index(str(folder), stat.st_mtime_ns)


@lru_cache(maxsize=4096)
def _lists_leaf_index(folder: str, mtime_ns: int) -> bool:
    """Whether ``folder`` holds an ``index.*`` page, listed once per version of the folder:
    each of 20,000 sibling pages listing their folder again took 10 ms apiece."""
    try:
        names = [p.name.lower() for p in Path(folder).glob("index.*")]
    except OSError:
        return False
    return any(name.endswith(_PAGE_SUFFIXES) for name in names)


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
