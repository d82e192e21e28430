"""Docusaurus: ``docusaurus.config.{js,ts,mjs,cjs}``; docs under the docs plugin's
``path`` (default ``docs``) served under ``routeBasePath`` (default ``docs``) with clean
URLs: ``docs/guide/01-install.md`` → ``docs/guide/install`` (number prefixes dropped),
``index.md``/``README.md`` or a file named like its folder → the folder. Front matter
``slug`` (absolute from the route base, or relative to the folder) and ``id`` win;
``draft: true`` docs are left out of production builds.

Versions (a ``versions.json``): the latest release (or ``lastVersion``) is served at
``docs/…``, the others from ``versioned_docs/version-X/`` at ``docs/X/…``, and the docs
folder, the unreleased current version, at ``docs/next/…``. Translations
(``i18n: { defaultLocale, locales }``) from ``i18n/fr/docusaurus-plugin-content-docs/
current/`` (or ``version-X/``) are served under ``fr/``. Further docs plugin instances
(``['@docusaurus/plugin-content-docs', { path, routeBasePath }]``) serve their folders at
their route bases, in one version and language.

Heading ids are github-slugger's; ``{#custom-id}`` is used as written; ``h1`` headings get
none on the page (the theme drops it), though each still takes its slug.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..projectfiles import first_config, read_config_text
from .base import Site
from .plain import GithubIds

_CONFIG_NAMES = ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs",
                 "docusaurus.config.cjs", "docusaurus.config.mts")
_ROUTE_BASE = re.compile(r"""routeBasePath\s*:\s*['"]([^'"]*)['"]""")
_DOCS_PATH = re.compile(r"""docs\s*:\s*\{[^{}]*?\bpath\s*:\s*['"]([^'"]+)['"]""", re.DOTALL)
_TRAILING = re.compile(r"\btrailingSlash\s*:\s*(true|false)")
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?=[^-_.\s])")
_LAST_VERSION = re.compile(r"""\blastVersion\s*:\s*['"]([^'"]+)['"]""")
_NO_CURRENT = re.compile(r"\bincludeCurrentVersion\s*:\s*false\b")
_DEFAULT_LOCALE = re.compile(r"""\bdefaultLocale\s*:\s*['"]([^'"]+)['"]""")
_LOCALES = re.compile(r"\blocales\s*:\s*\[([^\]]*)\]")
_QUOTED = re.compile(r"""['"]([^'"]+)['"]""")
_DOCS_PLUGIN = re.compile(r"""['"]@docusaurus/plugin-content-docs['"]\s*,\s*\{""")
_DOCS_PATH_IN = re.compile(r"""\bpath\s*:\s*['"]([^'"]+)['"]""")
_VERSIONED = "versioned_docs"
_I18N_DOCS = "docusaurus-plugin-content-docs"
CURRENT = "current"


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
        marker, text = found
        instances, preset = _docs_instances(text)
        route = _ROUTE_BASE.search(preset)
        path = _DOCS_PATH.search(preset)
        trailing = _TRAILING.search(text)
        settings = {
            "routeBasePath": route.group(1).strip("/") if route else "docs",
            "path": path.group(1) if path else "docs",
            "trailingSlash": trailing.group(1) == "true" if trailing else None,
            **_versions_and_locales(folder, text),
        }
        inside = [(p, r) for p, r in instances if _below(folder, p)]
        settings["instances"] = tuple(
            (PurePosixPath(p).as_posix(), r) for p, r in inside if p != settings["path"])
        spread = (settings["versions"] or len(settings["locales"]) > 1
                  or settings["instances"])
        if spread and _below(folder, settings["path"]):
            return Site(self.name, folder, marker, settings)  # every docs folder below it
        return Site(self.name, folder / settings["path"], marker,
                    {**settings, "versions": (), "locales": (), "instances": ()})

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"routeBasePath": "docs", "trailingSlash": None})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        settings = site.settings
        locale, route, version = "", settings.get("routeBasePath", "docs"), ""
        if (settings.get("versions") or len(settings.get("locales", ())) > 1
                or settings.get("instances")):
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
        else:
            doc_id = front_matter.get("id")
            last = str(doc_id) if isinstance(doc_id, str | int) and str(doc_id) else (
                strip_number_prefix(rel.stem))
            is_index = last.lower() in ("index", "readme") or (
                folders and last.lower() == folders[-1].lower() and "id" not in front_matter)
            path = "/".join(folders if is_index else [*folders, last])
        full = "/".join(p for p in (locale, route, version, path.strip("/")) if p)
        if site.settings.get("trailingSlash") and full:
            full += "/"
        return full

    def heading_ids(self, site: Site) -> GithubIds:
        return DocusaurusIds()


def _versions_and_locales(folder: Path, config: str) -> dict[str, Any]:
    """The released versions (``versions.json``, newest first), the one served at the
    route base, whether the docs folder is built too, and the locales (the default first)."""
    raw = read_config_text(folder / "versions.json")
    try:
        listed = json.loads(raw) if raw else []
    except (ValueError, RecursionError):
        listed = []
    versions = tuple(v for v in listed if isinstance(v, str) and v.strip() and "/" not in v
                     ) if isinstance(listed, list) else ()
    last = _LAST_VERSION.search(config)
    default = _DEFAULT_LOCALE.search(config)
    listed_locales = _LOCALES.search(config)
    locales = _QUOTED.findall(listed_locales.group(1)) if listed_locales else []
    first = default.group(1) if default else (locales[0] if locales else "en")
    return {"versions": versions,
            "lastVersion": last.group(1) if last else (versions[0] if versions else CURRENT),
            "current": _NO_CURRENT.search(config) is None,
            "locales": (first, *(loc for loc in locales if loc != first))}


def _placed(site: Site, rel: PurePosixPath) -> tuple[str, str, str, PurePosixPath] | None:
    """Where a file below the site folder is served: its locale (empty for the default),
    its docs instance's route base, its version segment (empty for the version served at
    the route base) and its path in its docs folder; None for a file in no docs folder, or
    in a version the site does not build."""
    settings = site.settings
    for path, route in settings.get("instances", ()):  # the other docs plugins: one version
        if rel.is_relative_to(path):
            return "", route, "", rel.relative_to(path)
    docs = PurePosixPath(settings.get("path", "docs"))
    route = settings.get("routeBasePath", "docs")
    locales = settings.get("locales", ())
    locale, version, inner = "", CURRENT, None
    if rel.is_relative_to(docs):
        inner = rel.relative_to(docs)
    elif len(rel.parts) > 2 and rel.parts[0] == _VERSIONED and rel.parts[1].startswith(
            "version-"):
        version, inner = rel.parts[1].removeprefix("version-"), PurePosixPath(*rel.parts[2:])
    elif (len(rel.parts) > 4 and rel.parts[0] == "i18n" and rel.parts[1] in locales[1:]
          and rel.parts[2] == _I18N_DOCS):
        locale, folder = rel.parts[1], rel.parts[3]
        version = CURRENT if folder == CURRENT else folder.removeprefix("version-")
        inner = PurePosixPath(*rel.parts[4:])
    if inner is None:
        return None
    versions = settings.get("versions", ())
    if version == CURRENT and not settings.get("current", True):
        return None
    if version != CURRENT and version not in versions:
        return None  # a folder versions.json no longer lists: not built
    last = settings.get("lastVersion", CURRENT)
    segment = "" if version == last else ("next" if version == CURRENT else version)
    return locale, route, segment, inner


def _docs_instances(config: str) -> tuple[list[tuple[str, str]], str]:
    """The docs plugins besides the preset's, as (folder, route base), and the config
    without their option blocks (so the preset's ``path`` and ``routeBasePath`` are not
    read from them)."""
    instances: list[tuple[str, str]] = []
    rest: list[str] = []
    at = 0
    for match in _DOCS_PLUGIN.finditer(config):
        if match.start() < at:
            continue
        end = _block_end(config, match.end() - 1)
        block = config[match.end() - 1:end]
        path, route = _DOCS_PATH_IN.search(block), _ROUTE_BASE.search(block)
        instances.append((path.group(1).strip("/") if path else "docs",
                          route.group(1).strip("/") if route else "docs"))
        rest.append(config[at:match.start()])
        at = end
    rest.append(config[at:])
    return instances, "".join(rest)


def _block_end(text: str, start: int) -> int:
    """The end of the ``{…}`` opening at ``text[start]``: braces counted, quoted strings
    and comments skipped; the text's end when it never closes."""
    depth, i, quote = 0, start, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = len(text) if i < 0 else i + 1
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _below(folder: Path, path: str) -> bool:
    try:
        return (folder / path).resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


GENERATOR = Docusaurus()
