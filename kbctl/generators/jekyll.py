"""Jekyll: ``_config.yml``; ``about.md`` → ``about.html`` (``permalink: pretty``:
``about/``), ``index.md`` → the folder, posts ``_posts/2024-01-02-title.md`` →
``2024/01/02/title.html`` (or the ``permalink`` style or template, such as
``/news/:year/:title/``), documents of a collection with ``output: true`` (``_docs/x.md``)
by its ``permalink`` (default ``/:collection/:path:output_ext``); front matter
``permalink`` wins, placeholders and all. Other files and folders starting
with ``_`` or ``.`` are not pages, nor are those the config's ``exclude`` names (with
Jekyll's own: ``Gemfile``, ``node_modules``, ``vendor/bundle/``…), ``published: false``
pages and posts dated in the future (unless ``future: true``).

Jekyll makes a page only of a file with front matter; one without is copied as it is.
GitHub Pages (a ``Gemfile`` naming ``github-pages``, or none at all, as when GitHub builds
the branch) adds two plugins, which a site can also list under ``plugins``:
``jekyll-optional-front-matter`` makes pages of markdown files without front matter (but
README, LICENSE, CONTRIBUTING… stay files), and ``jekyll-readme-index`` makes such a
README the page of its folder when the folder has no index.

Heading ids are kramdown's: with the GFM input (the default) lowercased, characters other
than word characters, ``-``, space and tab dropped, spaces and tabs → ``-``, repeats
``-1``, ``-2``…; with ``input: kramdown`` the classic ASCII ids, made from the heading's
markdown source.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Mapping
from datetime import datetime, timezone, tzinfo
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import IdRules
from ..extract import dialects
from ..extract.dialects import PageFile
from ..extract.liquid import liquid_to_markdown
from ..projectfiles import first_config, read_config_text
from ..yamlfile import load_yaml_config
from .base import NO_FRONT_MATTER, Generator, Site, front_matter_time, is_future

_POST = re.compile(r"^(\d{4})-(\d{2})-(\d{2})-(.+)$")
_NON_WORD = re.compile(r"[^\w\- \t]")
_PAGE_SUFFIXES = (".md", ".markdown", ".html", ".htm")
# always excluded, whatever the config lists (Jekyll 4 adds these to its exclude)
_DEFAULT_EXCLUDE = (".sass-cache", ".jekyll-cache", "gemfiles", "Gemfile", "Gemfile.lock",
                    "node_modules", "vendor/bundle/", "vendor/cache/", "vendor/gems/",
                    "vendor/ruby/")
_MAX_ENTRIES = 1000  # of a config list (exclude, collections) read
# the permalink styles and the default template of a collection's documents
_STYLES = {"date": "/:categories/:year/:month/:day/:title:output_ext",
           "pretty": "/:categories/:year/:month/:day/:title/",
           "ordinal": "/:categories/:year/:y_day/:title:output_ext",
           "none": "/:categories/:title:output_ext"}
_DOCUMENT_DEFAULT = "/:collection/:path:output_ext"
_PLACEHOLDER = re.compile(r":([a-z_]+)")
# Liquid, which Jekyll renders before Markdown: a tag or an output in a heading is no text
# (bounded, so that a heading of unclosed "{%" costs linear time)
_LIQUID = re.compile(r"\{%.{0,1000}?%\}|\{\{.{0,1000}?\}\}")
_NOT_ALNUM = re.compile(r"[\W_]+")  # Ruby's [^[:alnum:]]+
_NOT_PRETTY = re.compile(r"(?:[^\w._~!$&'()+,;=@]|_)+")
_INDEX_NAMES = tuple(f"index{suffix}" for suffix in _PAGE_SUFFIXES)
# what jekyll-optional-front-matter leaves as files (its FILENAME_BLACKLIST, any case)
_KEPT_AS_FILES = frozenset({"README", "LICENSE", "LICENCE", "COPYING", "CODE_OF_CONDUCT",
                            "CONTRIBUTING", "ISSUE_TEMPLATE", "PULL_REQUEST_TEMPLATE"})


def gfm_id(text: str) -> str:
    return _NON_WORD.sub("", text.lower()).replace(" ", "-").replace("\t", "-")


def kramdown_id(text: str) -> str:
    text = re.sub(r"^[^a-zA-Z]+", "", text)
    text = re.sub(r"[^a-zA-Z0-9 -]", "", text)
    return text.replace(" ", "-").lower()


class KramdownIds(IdRules):
    """kramdown's allocator: the n-th repeat of ``x`` is ``x-n`` (no collision search).
    The classic parser slugs the heading's source (``[A link](x.md)`` → ``a-linkxmd``), the
    GFM parser its text."""

    block_attributes = True

    def __init__(self, gfm: bool, prefix: str) -> None:
        self.reads_source = not gfm
        self._gfm = gfm
        self._prefix = prefix
        self._counts: dict[str, int] = {}

    def __call__(self, text: str, explicit: str | None = None) -> str:
        text = _LIQUID.sub("", text).strip() if "{" in text else text
        if explicit is not None:
            return explicit
        base = gfm_id(text) if self._gfm else (kramdown_id(text) or "section")
        seen = self._counts.get(base)
        self._counts[base] = 0 if seen is None else seen + 1
        return self._prefix + (base if seen is None else f"{base}-{seen + 1}")


class Jekyll(Generator):
    name = "jekyll"
    markers = ("_config.yml", "_config.yaml")
    rank = 130

    def detect(self, folder: Path) -> Site | None:
        found = first_config(folder, self.markers)
        if found is None:
            return None
        marker, text = found
        config = load_yaml_config(text)
        kramdown = config.get("kramdown") if isinstance(config.get("kramdown"), dict) else {}
        source = config.get("source") if isinstance(config.get("source"), str) else "."
        plugins = {str(p) for key in ("plugins", "gems")
                   if isinstance(config.get(key), list) for p in config[key]}
        pages = _github_pages(folder)
        readme = config.get("readme_index")
        settings = {
            "permalink": config.get("permalink") if isinstance(
                config.get("permalink"), str) else "date",
            "gfm": str(kramdown.get("input", "GFM")).lower() == "gfm",
            "auto_id_prefix": str(kramdown.get("auto_id_prefix", "")),
            "optional_front_matter": pages or "jekyll-optional-front-matter" in plugins,
            "readme_index": (pages or "jekyll-readme-index" in plugins) and not (
                isinstance(readme, dict) and readme.get("enabled") is False),
            "exclude": _DEFAULT_EXCLUDE + tuple(
                str(e) for e in (config.get("exclude") if isinstance(
                    config.get("exclude"), list) else [])[:_MAX_ENTRIES]),
            "future": config.get("future") is True,
            "collections": _collections(config.get("collections")),
            "collections_dir": str(config.get("collections_dir") or "").strip("/"),
            "timezone": config.get("timezone") if isinstance(
                config.get("timezone"), str) else None,
            "source": source,
            "includes_dir": config.get("includes_dir") if isinstance(
                config.get("includes_dir"), str) else "_includes",
        }
        return Site(self.name, folder / source, marker, settings)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"permalink": "date", "gfm": True})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if rel.suffix.lower() not in _PAGE_SUFFIXES:
            return None
        if _excluded(site, rel.as_posix()) or front_matter.get("published") is False:
            return None
        if front_matter is NO_FRONT_MATTER:
            bare = _bare_page(site, rel)
            if bare is not True:
                return bare
        permalink = front_matter.get("permalink")
        written = permalink.strip() if isinstance(permalink, str) and permalink.strip() else None
        collection = _collection_of(site, rel)
        if collection is not None:
            return _document_page(site, rel, front_matter, written, *collection)
        if any(p.startswith(("_", ".")) for p in rel.parts):
            return None
        parent = "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
        if written:
            return _filled(written, {"path": parent.rstrip("/"), "basename": rel.stem,
                                     "output_ext": ".html"})
        style = str(site.settings.get("permalink", "date"))
        if rel.stem == "index":
            return parent
        stem = rel.with_suffix("").as_posix()
        return stem + ("/" if _STYLES.get(style, style).endswith("/") else ".html")

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.jekyll(text, page)

    def template(self, html: str) -> str:
        return liquid_to_markdown(html)  # Liquid first: {% if %}, {{ '/' | relative_url }}

    def heading_ids(self, site: Site) -> KramdownIds:
        return KramdownIds(bool(site.settings.get("gfm", True)),
                           str(site.settings.get("auto_id_prefix", "")))


def _collections(raw: Any) -> dict[str, str | None]:
    """Each collection's permalink template, None when it has no output (the default)."""
    items = raw.items() if isinstance(raw, dict) else ((label, {}) for label in raw) if (
        isinstance(raw, list)) else ()
    out: dict[str, str | None] = {}
    for label, options in itertools.islice(items, _MAX_ENTRIES):
        options = options if isinstance(options, dict) else {}
        permalink = options.get("permalink")
        template = permalink if isinstance(permalink, str) and permalink.strip() else None
        if str(label) == "posts":  # posts always render; this only moves them
            out["posts"] = template
        elif options.get("output") is True:
            out[str(label)] = template or _DOCUMENT_DEFAULT
    return out


def _collection_of(site: Site, rel: PurePosixPath) -> tuple[str, PurePosixPath] | None:
    """(label, path inside the collection) when ``rel`` is a document of a collection
    Jekyll reads (posts always, also in ``category/_posts/``); None otherwise."""
    parts = rel.parts
    base = tuple(PurePosixPath(str(site.settings.get("collections_dir", ""))).parts)
    inner = parts[len(base):] if base and parts[:len(base)] == base else parts
    if len(parts) > 1 and parts[-2] == "_posts":
        return "posts", PurePosixPath(*parts[:-2], parts[-1])  # categories, then the file
    if len(inner) > 1 and inner[0].startswith("_"):
        label = inner[0][1:]
        if label == "posts" or label in site.settings.get("collections", {}):
            return label, PurePosixPath(*inner[1:])
    return None


def _document_page(site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any],
                   written: str | None, label: str, inside: PurePosixPath) -> str | None:
    """The URL of a collection's document, by Jekyll's placeholders."""
    collections = site.settings.get("collections", {})
    stem = inside.stem
    slug = front_matter.get("slug")
    slug = str(slug) if isinstance(slug, str | int) and str(slug).strip() else None
    values = {"collection": label, "output_ext": ".html",
              "path": inside.with_suffix("").as_posix(), "name": _slugify(stem),
              "title": _slugify(slug or stem, pretty=True, cased=True),
              "slug": _slugify(slug or stem)}
    if label == "posts":
        m = _POST.match(stem)
        if not m:
            return None
        year, month, day, title = m.groups()
        dated = front_matter.get("date", f"{year}-{month}-{day}")
        if is_future(dated) and not site.settings.get("future"):
            return None  # Jekyll leaves a post dated after the build out
        when = _site_time(front_matter.get("date"), site.settings.get("timezone"))
        if when is not None:  # the date in the URL is the site's day of the post's time
            year, month, day = f"{when.year:04d}", f"{when.month:02d}", f"{when.day:02d}"
        categories = list(inside.parent.parts)
        listed = front_matter.get("categories", front_matter.get("category"))
        categories += listed.split() if isinstance(listed, str) else [
            str(c) for c in listed if isinstance(c, str | int)] if isinstance(listed, list) else []
        values |= {"year": year, "month": month, "day": day,
                   "title": _slugify(slug or title, pretty=True, cased=True),
                   "slug": _slugify(slug or title), "categories": "/".join(categories),
                   "i_month": str(int(month)), "i_day": str(int(day)),
                   "short_year": year[2:]}
        style = str(site.settings.get("permalink", "date"))
        template = written or collections.get("posts") or _STYLES.get(style, style)
    else:
        template = written or collections.get(label) or _DOCUMENT_DEFAULT
    return _filled(template, values)


def _site_time(value: Any, zone_name: str | None) -> datetime | None:
    """A post's front matter date in the site's ``timezone`` (UTC without one: the zone of
    the machine that builds, which CI's is); None when there is no date to read."""
    zone: tzinfo = timezone.utc
    if zone_name:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only sites that set one

        with contextlib.suppress(ZoneInfoNotFoundError, ValueError, OSError):
            zone = ZoneInfo(zone_name)  # a name it cannot find (or a folder): UTC
    when = front_matter_time(value, zone)
    return when.astimezone(zone) if when is not None else None


def _filled(template: str, values: Mapping[str, str]) -> str:
    """A permalink template with its placeholders replaced, as a path without the
    leading ``/`` (repeated slashes, from an empty ``:categories``, made one)."""
    url = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    return re.sub(r"/{2,}", "/", "/" + url).lstrip("/")


def _slugify(text: str, *, pretty: bool = False, cased: bool = False) -> str:
    """Jekyll's ``Utils.slugify`` (``default`` or ``pretty`` mode)."""
    slug = (_NOT_PRETTY if pretty else _NOT_ALNUM).sub("-", text).strip("-")
    return slug if cased else slug.lower()


def _bare_page(site: Site, rel: PurePosixPath) -> str | None | bool:
    """Where a file without front matter is published: its own path (HTML is copied as
    it is), its folder (a README made the index), None (a copied markdown file: no page),
    or True: a page like any other (jekyll-optional-front-matter)."""
    if rel.suffix.lower() in (".html", ".htm"):
        return rel.as_posix()
    name = rel.stem.upper()
    if name == "README" and site.settings.get("readme_index") and not any(
            (site.content / rel.parent / index).is_file() for index in _INDEX_NAMES):
        return "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
    if name in _KEPT_AS_FILES or not site.settings.get("optional_front_matter"):
        return None
    return True


def _excluded(site: Site, path: str) -> bool:
    """Jekyll's EntryFilter: an entry is excluded when a pattern names it or one of its
    folders, or matches it as ``File.fnmatch?`` does (``*`` crosses ``/``)."""
    for pattern in site.settings.get("exclude", _DEFAULT_EXCLUDE):
        pattern = pattern.strip("/") if pattern.endswith("/") else pattern.lstrip("/")
        if path == pattern or path.startswith(pattern + "/") or fnmatchcase(path, pattern):
            return True
    return False


def _github_pages(folder: Path) -> bool:
    """Whether GitHub Pages builds the site: its Gemfile names ``github-pages``, or there
    is no Gemfile (GitHub builds a branch without one; a local build needs one)."""
    gemfile = folder / "Gemfile"
    if not gemfile.is_file():
        return True
    return "github-pages" in (read_config_text(gemfile) or "")


GENERATOR = Jekyll()
