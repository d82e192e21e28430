"""MkDocs: ``mkdocs.yml``; pages under ``docs_dir`` (default ``docs``).

With ``use_directory_urls`` (the default) ``guide/install.md`` → ``guide/install/`` and
``index.md``/``README.md`` → the folder (a README beside an index is left out, as MkDocs
does); without it ``guide/install.html``. Files matching ``exclude_docs`` or
``draft_docs`` (gitignore patterns, after MkDocs' own ``.*`` and ``/templates/``) are not
published by ``mkdocs build``.

Heading ids are Python-Markdown's ``toc`` ids: ``toc.slugify`` (NFKD to ASCII, drop what is not a
word character, space or ``-``, lowercase, runs of spaces and separators → one
separator), made unique with ``_1``, ``_2``…; ``slugify``/``separator`` from the ``toc``
settings (``slugify_unicode`` and ``pymdownx.slugs`` are known), written ids with
``attr_list``. With the ``mkdocstrings`` plugin a ``## ::: package.module.Name`` heading
is that object's id, and with ``autorefs`` (which mkdocstrings brings) a heading's
``[text][identifier]`` cross-reference counts as its text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from .base import IdRules, Site, matches_any, read_config_text
from .yamlfile import Tagged, load_yaml_config

_NOT_WORD = re.compile(r"[^\w\s-]")
_UNIQUE_SUFFIX = re.compile(r"^(.*)_([0-9]+)$")
_PYMDOWNX_INVALID = re.compile(r"[^\w\- ]")
_TAGS = re.compile(r"</?[^>]*>")
_MARKDOWN = (".md", ".markdown", ".mdown", ".mkdn", ".mkd")
# a reference link left unresolved by Markdown: autorefs resolves it, leaving the text
_AUTOREF = re.compile(r"\[([^\[\]]*)\]\[[^\[\]]*\]")
_ALWAYS_EXCLUDED = (".*", "/templates/")


def toc_slugify(value: str, separator: str = "-", unicode: bool = False) -> str:
    """Python-Markdown's ``markdown.extensions.toc.slugify`` (and ``slugify_unicode``)."""
    if not unicode:
        value = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    value = _NOT_WORD.sub("", value).strip().lower()
    return re.sub(rf"[{re.escape(separator)}\s]+", separator, value)


def pymdownx_slugify(case: str = "none", percent_encode: bool = False,
                     normalize: str | None = "NFC") -> Callable[[str, str], str]:
    """``pymdownx.slugs.slugify(**kwds)``: keeps case unless told, Unicode word characters."""
    def slug(text: str, sep: str) -> str:
        if case == "fold":
            text = text.casefold()
        elif case == "lower":
            text = text.lower()
        elif case == "lower-ascii":
            text = re.sub(r"[A-Z]", lambda m: m.group(0).lower(), text)
        if normalize:
            text = unicodedata.normalize(normalize, text)  # type: ignore[arg-type]
        out = _PYMDOWNX_INVALID.sub("", _TAGS.sub("", text).strip()).replace(" ", sep)
        return quote(out.encode("utf-8")) if percent_encode else out
    return slug


def slugify_from(setting: Any) -> Callable[[str, str], str]:
    """The slug function a ``toc: slugify:`` setting names (default ``toc.slugify``)."""
    if isinstance(setting, Tagged):
        name, kwds = setting.name, setting.kwds
        if name.endswith("slugify_unicode"):
            return lambda text, sep: toc_slugify(text, sep, unicode=True)
        if name == "pymdownx.slugs.uslugify":
            return pymdownx_slugify(case="lower")
        if name == "pymdownx.slugs.uslugify_cased":
            return pymdownx_slugify()
        if name == "pymdownx.slugs.slugify":
            return pymdownx_slugify(**{k: v for k, v in kwds.items()
                                       if k in ("case", "percent_encode", "normalize")})
    return toc_slugify


class TocIds(IdRules):
    """Python-Markdown's ids for one page: written ids are reserved first-come, repeats
    become ``x_1``, ``x_2`` (an id already ending in ``_N`` counts on from N)."""

    def __init__(self, slug: Callable[[str], str], honour_explicit: bool) -> None:
        self._slug = slug
        self.honours_explicit = self._honour = honour_explicit
        self._used: set[str] = set()
        self._last: dict[str, str] = {}

    def __call__(self, text: str, explicit: str | None = None) -> str:
        if explicit is not None and self._honour:
            self._used.add(explicit)
            return explicit
        start = candidate = self._slug(text)
        # resume this slug's chain of suffixes where it last stopped (ids are only ever
        # added), so k equal headings cost O(k), not O(k²)
        candidate = self._last.get(start, candidate)
        while candidate in self._used or not candidate:
            m = _UNIQUE_SUFFIX.match(candidate)
            candidate = f"{m.group(1)}_{int(m.group(2)) + 1}" if m else f"{candidate}_1"
        self._last[start] = candidate
        self._used.add(candidate)
        return candidate


def _extensions(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``markdown_extensions`` as {short name: settings}."""
    out: dict[str, dict[str, Any]] = {}
    raw = config.get("markdown_extensions") or []
    items: list[Any] = list(raw.items()) if isinstance(raw, dict) else list(raw)
    for item in items:
        if isinstance(item, tuple):
            name, settings = item
        elif isinstance(item, dict) and len(item) == 1:
            name, settings = next(iter(item.items()))
        else:
            name, settings = item, {}
        if isinstance(name, str):
            short = name.removeprefix("markdown.extensions.")
            out[short] = settings if isinstance(settings, dict) else {}
    return out


class MkDocs:
    name = "mkdocs"
    markers = ("mkdocs.yml", "mkdocs.yaml")

    def detect(self, folder: Path) -> Site | None:
        for marker_name in self.markers:
            marker = folder / marker_name
            if marker.is_file():
                config = load_yaml_config(read_config_text(marker) or "")
                return self._site(folder, marker, config)
        return None

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"use_directory_urls": True})

    def _site(self, folder: Path, marker: Path, config: Mapping[str, Any]) -> Site:
        docs_dir = config.get("docs_dir") if isinstance(config.get("docs_dir"), str) else "docs"
        extensions = _extensions(config)
        toc = extensions.get("toc", {})
        settings = {
            "docs_dir": docs_dir,
            "use_directory_urls": config.get("use_directory_urls", True) is not False,
            "attr_list": "attr_list" in extensions,
            "separator": toc.get("separator") if isinstance(toc.get("separator"), str) else "-",
            "slugify": toc.get("slugify"),
            "permalink": bool(toc.get("permalink", False)),
            "plugins": _plugins(config),
            "unpublished": _ALWAYS_EXCLUDED + tuple(
                line for key in ("exclude_docs", "draft_docs")
                if isinstance(config.get(key), str) for line in config[key].splitlines()),
        }
        return Site(self.name, folder / docs_dir, marker, settings)

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if matches_any(tuple(site.settings.get("unpublished", _ALWAYS_EXCLUDED)),
                       rel.as_posix()):
            return None
        if rel.suffix not in _MARKDOWN:  # as MkDocs compares: X.MD is a static file
            return rel.as_posix()  # static files are copied as they are
        parent = "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
        name = rel.stem
        if name == "README":  # the index, unless the folder has one
            if any((site.content / rel.parent / f"index{s}").is_file() for s in _MARKDOWN):
                return None
            name = "index"
        if not site.settings.get("use_directory_urls", True):
            return f"{parent}{name}.html"
        return parent if name == "index" else f"{parent}{name}/"

    def heading_ids(self, site: Site) -> TocIds:
        slug = slugify_from(site.settings.get("slugify"))
        sep = site.settings.get("separator", "-")
        plugins = site.settings.get("plugins", ())
        autodoc = "mkdocstrings" in plugins
        return PluginIds(lambda text: slug(text, sep), bool(site.settings.get("attr_list")),
                         autodoc=autodoc, autorefs=autodoc or "autorefs" in plugins)


class PluginIds(TocIds):
    """Toc ids as two common plugins change them: mkdocstrings renders ``::: name`` as the
    object ``name`` with that id; autorefs turns ``[text][name]`` into a link."""

    def __init__(self, slug: Callable[[str], str], honour_explicit: bool, *, autodoc: bool,
                 autorefs: bool) -> None:
        super().__init__(slug, honour_explicit)
        self._autodoc, self._autorefs = autodoc, autorefs

    def __call__(self, text: str, explicit: str | None = None) -> str:
        if self._autodoc and text.startswith(":::") and text[3:].strip():
            name = text[3:].strip()
            self._used.add(name)
            return name
        if self._autorefs:
            text = _AUTOREF.sub(r"\1", text)
        return super().__call__(text, explicit)


def _plugins(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The names in ``plugins`` (a list of names or one-key maps, or a map)."""
    raw = config.get("plugins") or []
    items = list(raw) if isinstance(raw, dict | list) else []
    names = [next(iter(i)) if isinstance(i, dict) and len(i) == 1 else i for i in items]
    return tuple(str(n) for n in names if isinstance(n, str))


GENERATOR = MkDocs()
