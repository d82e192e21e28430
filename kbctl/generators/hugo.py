"""Hugo: ``hugo.toml``/``hugo.yaml``/``hugo.json`` (or a ``config.*`` next to a
``content`` folder); pages under ``contentDir`` (default ``content``):
``posts/first.md`` → ``posts/first/`` (``uglyURLs``: ``posts/first.html``),
``posts/_index.md`` → ``posts/``, a bundle's ``index.md`` → its folder; paths are
lowercased. Front matter ``url`` replaces the path, ``slug`` the last segment. Not
published (as ``hugo`` builds by default): drafts, pages dated in the future
(``publishDate``, else ``date``), expired ones (``expiryDate``), headless bundles and
``build.render: never``; ``buildDrafts``, ``buildFuture`` and ``buildExpired`` in the
config turn those back on.

Heading ids are goldmark's ``github`` ids (Hugo's default ``autoHeadingIDType``) of the
heading's text, as Hugo makes them since 0.144 (before, of its source line, so that
``_tests_`` kept its underscores): lowercase letters, digits and ``_`` kept, spaces and
``-`` → ``-``, the rest dropped, ``heading`` when empty; repeats get ``-1``, ``-2``….
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from .base import CountingIds, Site, is_future, is_past, read_config_text
from .tomlfile import load_toml
from .yamlfile import load_yaml_config

_CONFIGS = ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json")
_LEGACY = ("config.toml", "config.yaml", "config.yml", "config.json")
_PAGE_SUFFIXES = (".md", ".markdown", ".html", ".htm")
# the front matter keys Hugo reads each date from, first found wins (its defaults)
_PUBLISH_KEYS = ("publishdate", "pubdate", "published", "date")
_EXPIRY_KEYS = ("expirydate", "unpublishdate")


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
    return load_yaml_config(text)


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


class Hugo:
    name = "hugo"
    markers = _CONFIGS + _LEGACY

    def detect(self, folder: Path) -> Site | None:
        for name in _CONFIGS + _LEGACY:
            marker = folder / name
            if not marker.is_file():
                continue
            config = _config(marker)
            if name in _LEGACY and not ((folder / "content").is_dir() or "contentdir" in config
                                        or "baseurl" in config):
                continue  # a config.toml that is not Hugo's
            content = config.get("contentdir") if isinstance(config.get("contentdir"),
                                                               str) else "content"
            goldmark = ((config.get("markup") or {}).get("goldmark") or {}) if isinstance(
                config.get("markup"), dict) else {}
            parser = goldmark.get("parser") or {} if isinstance(goldmark, dict) else {}
            settings = {
                "contentDir": content,
                "uglyURLs": config.get("uglyurls") is True,
                "disablePathToLower": config.get("disablepathtolower") is True,
                "autoHeadingIDType": (parser.get("autoheadingidtype") or "github")
                if isinstance(parser, dict) else "github",
                **{name: config.get(name.lower()) is True
                   for name in ("buildDrafts", "buildFuture", "buildExpired")},
            }
            return Site(self.name, folder / content, marker, settings)
        return None

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"autoHeadingIDType": "github"})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        front_matter = {str(k).lower(): v for k, v in front_matter.items()}  # as Hugo reads
        if rel.suffix.lower() not in _PAGE_SUFFIXES or not _rendered(site, front_matter):
            return None
        url = front_matter.get("url")
        if isinstance(url, str) and url.strip():
            return url.strip().lstrip("/")
        parent = [] if rel.parent.as_posix() == "." else list(rel.parent.parts)
        stem = rel.stem
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
        out = "/".join(s.replace(" ", "-") for s in segments)
        if not site.settings.get("disablePathToLower"):
            out = out.lower()
        if not out:
            return ""
        if leaf and site.settings.get("uglyURLs"):
            return out + ".html"
        return out + "/"

    def heading_ids(self, site: Site) -> CountingIds:
        kind = site.settings.get("autoHeadingIDType", "github")
        return CountingIds(lambda text: goldmark_id(text, ascii_only=kind == "github-ascii"),
                           empty="heading")


def _rendered(site: Site, front_matter: Mapping[str, Any]) -> bool:
    """Whether ``hugo`` (no flags) renders a page with this front matter."""
    settings = site.settings
    if front_matter.get("draft") is True and not settings.get("buildDrafts"):
        return False
    publish = next((front_matter[k] for k in _PUBLISH_KEYS if k in front_matter), None)
    if is_future(publish) and not settings.get("buildFuture"):
        return False
    expiry = next((front_matter[k] for k in _EXPIRY_KEYS if k in front_matter), None)
    if is_past(expiry) and not settings.get("buildExpired"):
        return False
    if front_matter.get("headless") is True:
        return False
    build = front_matter.get("build", front_matter.get("_build"))
    render = next((v for k, v in build.items() if str(k).lower() == "render"),
                  None) if isinstance(build, dict) else None
    return render not in ("never", "link", False)


GENERATOR = Hugo()
