"""VitePress: a ``.vitepress/`` folder; pages under ``srcDir`` (default the project
folder): ``guide/install.md`` → ``guide/install.html`` (``cleanUrls``:
``guide/install``), ``index.md`` → the folder; ``srcExclude`` globs, ``node_modules`` and
``dist`` are not pages. ``rewrites`` written as a map of strings move pages first
(``'en/:rest*': ':rest*'``, ``'packages/:pkg/src/(.*)': ':pkg/index.md'``); a rewrites
function cannot be read and is left alone. Heading ids are ``@mdit-vue``'s slugify
(NFKD, accents and control characters dropped, runs of spaces and punctuation → ``-``,
trimmed, a leading digit prefixed with ``_``, lowercased), repeats ``-1``, ``-2``…;
``{#id}`` is used as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import re2

from ..chunk.anchors import CountingIds
from ..chunk.slug import mdit_vue_slugify
from ..extract import dialects
from ..extract.dialects import PageFile
from ..extract.hero import vitepress_home
from ..jsscan import without_comments
from ..projectfiles import first_config, matches_any
from .base import Generator, Site

# As VitePress looks them up: ``config/index.js``, ``config.js``, ``config/index.ts``…
_CONFIG_NAMES = tuple(name for ext in ("js", "ts", "mjs", "mts")
                      for name in (f"config/index.{ext}", f"config.{ext}"))
_EMOJI = re.compile(r"(?:(?<=\s)|^):[a-z0-9_+-]{2,}:(?=\s|$)")
_CLEAN_URLS = re.compile(r"\bcleanUrls\s*:\s*(true|false)")
_SRC_DIR = re.compile(r"""\bsrcDir\s*:\s*['"]([^'"]+)['"]""")
_SRC_EXCLUDE = re.compile(r"\bsrcExclude\s*:\s*\[([^\[\]]*)\]")  # a [ ends a try: linear
_STRING = re.compile(r"""['"]([^'"\n]+)['"]""")
_REWRITES = re.compile(r"\brewrites\s*:\s*\{([^{}]*)\}")
_PAIR = re.compile(r"""['"]([^'"\n]+)['"]\s*:\s*['"]([^'"\n]+)['"]""")
# path-to-regexp's pieces: a named parameter (``:name``, ``:name*`` any segments,
# ``:name?`` optional), an unnamed group ``(...)``, or literal text
_PIECE = re.compile(r":(\w+)([*+?]?)|\(([^()]*)\)|([^:(]+|[:(])")
_MAX_REWRITES = 200
# VitePress' own ignores; a glob relative to srcDir is a gitignore pattern anchored by "/"
_ALWAYS_EXCLUDED = ("**/node_modules/", "**/dist/")


class VitePress(Generator):
    name = "vitepress"
    markers = (".vitepress",)
    rank = 40

    def detect(self, folder: Path) -> Site | None:
        config_dir = folder / ".vitepress"
        if not config_dir.is_dir():
            return None
        marker, text = first_config(config_dir, _CONFIG_NAMES) or (config_dir, "")
        text = without_comments(text)
        clean = _CLEAN_URLS.search(text)
        src = _SRC_DIR.search(text)
        src_dir = src.group(1) if src else "."
        excluded = _SRC_EXCLUDE.search(text)
        globs = _STRING.findall(excluded.group(1)) if excluded else []
        rewrites = _REWRITES.search(text)
        pairs = _PAIR.findall(rewrites.group(1))[:_MAX_REWRITES] if rewrites else []
        settings = {"cleanUrls": bool(clean and clean.group(1) == "true"), "srcDir": src_dir,
                    "rewrites": tuple(pairs),
                    "exclude": _ALWAYS_EXCLUDED + tuple(
                        "/" + g.removeprefix("./").lstrip("/") for g in globs)}
        return Site(self.name, (folder / src_dir), marker, settings, root=folder)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"cleanUrls": False})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if rel.suffix.lower() != ".md" or any(p.startswith(".") for p in rel.parts):
            return None
        if matches_any(tuple(site.settings.get("exclude", _ALWAYS_EXCLUDED)), rel.as_posix()):
            return None
        rel = _rewritten(rel.as_posix(), site.settings.get("rewrites", ()))
        parent = "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
        if rel.stem == "index":
            return parent
        stem = rel.with_suffix("").as_posix()
        return stem if site.settings.get("cleanUrls") else stem + ".html"

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.vitepress(text, page)

    def landing(self, front_matter: Mapping[str, Any]) -> str:
        return vitepress_home(front_matter)

    def heading_ids(self, site: Site) -> CountingIds:
        return CountingIds(lambda text: mdit_vue_slugify(without_emoji(text)),
                           reserve_explicit=True)


def without_emoji(text: str) -> str:
    """A heading without its emoji shortcodes (``:tada:``): markdown-it's emoji plugin makes
    each an emoji token, and markdown-it-anchor slugs only text and code tokens."""
    return _EMOJI.sub(" ", text)


def _rewritten(path: str, rewrites: tuple[tuple[str, str], ...]) -> PurePosixPath:
    """``path`` moved by the first rewrite whose source pattern matches it whole."""
    for source, target in rewrites:
        compiled = _rewrite_pattern(source)
        m = compiled.match(path) if compiled is not None else None
        if m is None:
            continue
        out = _filled(target, {k: v or "" for k, v in m.groupdict().items()})
        return PurePosixPath(re.sub(r"/{2,}", "/", out).lstrip("/"))
    return PurePosixPath(path)


def _filled(target: str, values: dict[str, str]) -> str:
    """A rewrite target with each ``:name`` replaced by what the source matched there."""
    def one(piece: re.Match[str]) -> str:
        name = piece.group(1)
        return values.get(_group_name(name), piece.group(0)) if name else piece.group(0)
    return _PIECE.sub(one, target)


@lru_cache(maxsize=256)
def _rewrite_pattern(source: str) -> re2._Regexp | None:
    """A path-to-regexp source pattern as an RE2 regex (linear time whatever the config
    says); None when it cannot be read."""
    import re2  # only a site with rewrites needs it

    out, unnamed = [], 0
    for m in _PIECE.finditer(source):
        name, modifier, group, literal = m.groups()
        if name:
            body = "[^/]+" if modifier in ("", "?") else ".+" if modifier == "+" else ".*"
            capture = f"(?P<{_group_name(name)}>{body})"
            out.append(capture + ("?" if modifier == "?" else ""))
        elif group is not None:
            out.append(f"(?P<{_group_name(str(unnamed))}>{group or '.*'})")
            unnamed += 1
        else:
            out.append(re.escape(literal))
    try:
        return re2.compile("^" + "".join(out) + "$")
    except re2.error:
        return None


def _group_name(name: str) -> str:
    """A regex group name for a parameter (``0`` for the first unnamed group)."""
    return f"p_{name}"


GENERATOR = VitePress()
