"""Docusaurus: ``docusaurus.config.{js,ts,mjs,cjs}``; docs under the docs plugin's
``path`` (default ``docs``) served under ``routeBasePath`` (default ``docs``) with clean
URLs: ``docs/guide/01-install.md`` → ``docs/guide/install`` (number prefixes dropped),
``index.md``/``README.md`` or a file named like its folder → the folder. Front matter
``slug`` (absolute from the route base, or relative to the folder) and ``id`` win;
``draft: true`` docs are left out of production builds.
Heading ids are github-slugger's; ``{#custom-id}`` is used as written; ``h1`` headings get
none on the page (the theme drops it), though each still takes its slug.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..projectfiles import first_config
from .base import Site
from .plain import GithubIds

_CONFIG_NAMES = ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs",
                 "docusaurus.config.cjs", "docusaurus.config.mts")
_ROUTE_BASE = re.compile(r"""routeBasePath\s*:\s*['"]([^'"]*)['"]""")
_DOCS_PATH = re.compile(r"""docs\s*:\s*\{[^{}]*?\bpath\s*:\s*['"]([^'"]+)['"]""", re.DOTALL)
_TRAILING = re.compile(r"\btrailingSlash\s*:\s*(true|false)")
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?=[^-_.\s])")


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
        route = _ROUTE_BASE.search(text)
        path = _DOCS_PATH.search(text)
        trailing = _TRAILING.search(text)
        settings = {
            "routeBasePath": route.group(1).strip("/") if route else "docs",
            "path": path.group(1) if path else "docs",
            "trailingSlash": trailing.group(1) == "true" if trailing else None,
        }
        return Site(self.name, folder / settings["path"], marker, settings)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"routeBasePath": "docs", "trailingSlash": None})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
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
        route = site.settings.get("routeBasePath", "docs")
        full = "/".join(p for p in (route, path.strip("/")) if p)
        if site.settings.get("trailingSlash") and full:
            full += "/"
        return full

    def heading_ids(self, site: Site) -> GithubIds:
        return DocusaurusIds()


GENERATOR = Docusaurus()
