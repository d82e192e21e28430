"""MkDocs: ``mkdocs.yml`` (or Zensical's ``zensical.toml``, its ``[project]`` table, or
``zensical.yml``); pages under ``docs_dir`` (default ``docs``).

With ``use_directory_urls`` (the default) ``guide/install.md`` → ``guide/install/`` and
``index.md``/``README.md`` → the folder (a README beside an index is left out, as MkDocs
does); without it ``guide/install.html``. Files matching ``exclude_docs`` or
``draft_docs`` (gitignore patterns, after MkDocs' own ``.*`` and ``/templates/``) are not
published by ``mkdocs build``. Material's blog plugin moves a post to
``blog/{date}/{slug}/`` (its ``post_url_format``; the slug from ``slug``, else the title),
and leaves drafts out. The ``i18n`` plugin (mkdocs-static-i18n) serves its default
language at the root and the others under ``fr/``…: a file's language is its suffix
(``install.fr.md``) or, with ``docs_structure: folder``, its top folder (``fr/``).

Heading ids are Python-Markdown's ``toc`` ids: ``toc.slugify`` (NFKD to ASCII, drop what
is not a word character, space or ``-``, lowercase, runs of spaces and separators → one
separator), made unique with ``_1``, ``_2``…; ``slugify``/``separator`` from the ``toc``
settings (``slugify_unicode`` and ``pymdownx.slugs`` are known), written ids with
``attr_list`` (any of its forms: ``{#id}``, ``{: #id .cls }``, ``{ id="x" }``), and
``pymdownx.emoji`` shortcodes are no text. With the ``mkdocstrings`` plugin a
``## ::: package.module.Name`` heading is that object's id, and with ``autorefs`` (which
mkdocstrings brings) a heading's ``[text][identifier]`` cross-reference counts as its text.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import unicodedata
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from ..chunk.anchors import IdRules
from ..extract import dialects
from ..extract.dialects import PageFile
from ..extract.mkdocs_inline import split_attr_list
from ..projectfiles import first_config, matches_any
from ..yamlfile import Tagged, load_yaml_config
from .base import UNREAD, Generator, Site, front_matter_time
from .tomlfile import load_toml

_NOT_WORD = re.compile(r"[^\w\s-]")
_UNIQUE_SUFFIX = re.compile(r"^(.*)_([0-9]+)$")
_PYMDOWNX_INVALID = re.compile(r"[^\w\- ]")
_TAGS = re.compile(r"</?[^>]*>")
_MARKDOWN = (".md", ".markdown", ".mdown", ".mkdn", ".mkd")
_MAX_PATTERNS = 1000
# a reference link left unresolved by Markdown: autorefs resolves it, leaving the text
_AUTOREF = re.compile(r"\[([^\[\]]*)\]\[[^\[\]]*\]")
_ALWAYS_EXCLUDED = (".*", "/templates/")
_FIELD = re.compile(r"\{(\w+)\}")  # a str.format field of post_url_format
# a pymdownx.emoji shortcode (:smile:, :material-check:): an icon, no text in the id
_EMOJI = re.compile(r":[a-z][a-z0-9_+-]*:")


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
        if self._honour and explicit is None:  # attr_list's other forms: { id="x" .cls }
            text, explicit = split_attr_list(text)
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


def _enabled(extensions: Mapping[str, Any], name: str) -> bool:
    """Whether an extension is on, by its name or through ``extra`` or ``pymdownx.extra``,
    which bundle ``attr_list`` and ``abbr`` with others."""
    return any(n in extensions for n in (name, "extra", "pymdownx.extra"))


def _extensions(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``markdown_extensions`` as {short name: settings}."""
    out: dict[str, dict[str, Any]] = {}
    raw = config.get("markdown_extensions") or []
    items: list[Any] = (list(raw.items()) if isinstance(raw, dict)
                        else list(raw) if isinstance(raw, list) else [])
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


MAX_NAV_ENTRIES = 10_000


def _nav_titles(nav: Any) -> dict[str, str]:
    """``{page path: title}`` from ``nav:`` entries that name a page (``- Title: path.md``,
    nested in sections at any depth); a bare path or a link elsewhere names none."""
    titles: dict[str, str] = {}
    pending = [nav] if isinstance(nav, list) else []
    while pending and len(titles) < MAX_NAV_ENTRIES:
        items = pending.pop()
        for item in items[:MAX_NAV_ENTRIES] if isinstance(items, list) else ():
            if not isinstance(item, dict) or len(item) != 1:
                continue
            (title, value), = item.items()
            if isinstance(value, list):
                pending.append(value)
            elif isinstance(title, str) and title.strip() and isinstance(value, str) and (
                    "://" not in value):
                titles.setdefault(PurePosixPath(value.strip().lstrip("/")).as_posix(),
                                  title.strip())
    return titles


class MkDocs(Generator):
    name = "mkdocs"
    # Zensical builds MkDocs projects: from ``mkdocs.yml``, its own ``zensical.toml`` (the
    # same settings under ``[project]``), or a YAML file of MkDocs' keys passed with ``-f``
    markers = ("mkdocs.yml", "mkdocs.yaml", "zensical.toml", "zensical.yml", "zensical.yaml")
    rank = 20

    def detect(self, folder: Path) -> Site | None:
        found = first_config(folder, self.markers)
        if found is None:
            return None
        marker, text = found
        if marker.suffix == ".toml":
            project = load_toml(text).get("project")
            return self._site(folder, marker, project if isinstance(project, dict) else {})
        return self._site(folder, marker, load_yaml_config(text))

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"use_directory_urls": True})

    def guess(self, folder: Path) -> Site | None:
        """MkDocs' default ``docs/`` with its home page, without ``mkdocs.yml``."""
        docs = folder / "docs"
        if not (docs / "index.md").is_file():
            return None
        return Site(self.name, docs, None, {"use_directory_urls": True,
                                            "guessed": f"{docs / 'index.md'}"})

    def _site(self, folder: Path, marker: Path, config: Mapping[str, Any]) -> Site:
        docs_dir = config.get("docs_dir") if isinstance(config.get("docs_dir"), str) else "docs"
        extensions = _extensions(config)
        plugins = _plugins(config)
        toc = extensions.get("toc", {})
        settings = {
            "docs_dir": docs_dir,
            "use_directory_urls": config.get("use_directory_urls", True) is not False,
            "attr_list": _enabled(extensions, "attr_list"),
            "separator": toc.get("separator") if isinstance(toc.get("separator"), str) else "-",
            "slugify": toc.get("slugify"),
            "permalink": bool(toc.get("permalink", False)),
            "plugins": tuple(plugins),
            "emoji": "pymdownx.emoji" in extensions,
            "math": "pymdownx.arithmatex" in extensions,
            "snippets": (_snippets(extensions["pymdownx.snippets"])
                         if "pymdownx.snippets" in extensions else None),
            # abbreviation definitions (``*[HTML]: Hyper Text…``) show nothing
            "abbr": _enabled(extensions, "abbr"),
            "include_markdown": "include-markdown" in plugins,
            **_jupyter(plugins),
            "brace_includes": _brace_includes(extensions),
            "include_variants": "markdown_include_variants" in extensions,
            # mkdocs-macros (or Zensical's macros extension) renders Jinja over each page
            "macros": "macros" in plugins or any(
                name.split(".")[-1] in ("macros", "mkdocs_macros") for name in extensions),
            "blog": _blog(plugins),
            "i18n": _i18n(plugins),
            "nav_titles": _nav_titles(config.get("nav")),
            "excluded": _exclude_plugin(plugins.get("exclude")),
            "unpublished": _ALWAYS_EXCLUDED + _theme_folder(docs_dir, config) + tuple(
                line for key in ("exclude_docs", "draft_docs")
                if isinstance(config.get(key), str) for line in config[key].splitlines()),
        }
        return Site(self.name, folder / docs_dir, marker, settings)

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if matches_any(tuple(site.settings.get("unpublished", _ALWAYS_EXCLUDED)),
                       rel.as_posix()):
            return None
        excluded = site.settings.get("excluded")
        if excluded and excluded(rel.as_posix()):
            return None
        if rel.suffix == ".ipynb":
            if not _is_notebook_page(site, rel):
                return None  # a download, not a page
            rel = rel.with_suffix(".md")  # mkdocs-jupyter renders it as a page
        elif rel.suffix not in _MARKDOWN:  # as MkDocs compares: X.MD is a static file
            return rel.as_posix()  # static files are copied as they are
        prefix = ""
        i18n = site.settings.get("i18n")
        if i18n:
            placed = _language_of(i18n, rel)
            if placed is None:
                return None  # a language the plugin does not build
            prefix, rel = placed
        blog = site.settings.get("blog")
        if blog and front_matter is not UNREAD and _is_post(blog, rel):
            moved = _post_path(blog, front_matter)
            if moved is None:
                return None  # a draft, or a post the plugin cannot date
            rel = moved
        parent = "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
        name = rel.stem
        if name == "README":  # the index, unless the folder has one
            if any((site.content / rel.parent / f"index{s}").is_file() for s in _MARKDOWN):
                return None
            name = "index"
        if not site.settings.get("use_directory_urls", True):
            return f"{prefix}{parent}{name}.html"
        return prefix + (parent if name == "index" else f"{parent}{name}/")

    def title(self, site: Site, rel: PurePosixPath, written: str | None) -> str | None:
        """The title MkDocs gives the page: its ``nav:`` entry's, else the one it wrote (front
        matter or first H1), else one made from the file name (``base_model`` → "Base
        model"; the home page "Home")."""
        named = site.settings.get("nav_titles", {}).get(rel.as_posix())
        if named or written:
            return named or written
        if rel.as_posix() in ("index.md", "README.md"):
            return "Home"
        name = "index" if rel.stem == "README" else rel.stem
        title = name.replace("-", " ").replace("_", " ")
        return title.capitalize() if title.lower() == title else title

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.mkdocs(text, page)

    def heading_ids(self, site: Site) -> TocIds:
        slug = slugify_from(site.settings.get("slugify"))
        sep = site.settings.get("separator", "-")
        plugins = site.settings.get("plugins", ())
        autodoc = "mkdocstrings" in plugins
        emoji = bool(site.settings.get("emoji"))
        return PluginIds(lambda text: slug(_EMOJI.sub("", text) if emoji else text, sep),
                         bool(site.settings.get("attr_list")),
                         autodoc=autodoc, autorefs=autodoc or "autorefs" in plugins)


class CellIds(IdRules):
    """mkdocs-jupyter's ids: each markdown cell is rendered on its own, so a heading
    repeated in a later cell keeps the same id. kbctl sees the page whole: no repeat is
    numbered (one repeated within a cell is, on the page, numbered too)."""

    def __init__(self, page_ids: Callable[[], TocIds]) -> None:
        self._page_ids = page_ids
        self.honours_explicit = page_ids().honours_explicit

    def __call__(self, text: str, explicit: str | None = None) -> str:
        return self._page_ids()(text, explicit)


def notebook_heading_ids(site: Site) -> CellIds:
    """The ids of a notebook page of ``site`` (mkdocs-jupyter)."""
    return CellIds(lambda: GENERATOR.heading_ids(site))


def _jupyter(plugins: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """mkdocs-jupyter's settings: notebooks are pages (those its ``include`` patterns
    match, ``*.ipynb`` by default, and its ``ignore`` patterns do not)."""
    if "mkdocs-jupyter" not in plugins:
        return {}
    options = plugins["mkdocs-jupyter"]
    def patterns(key: str, default: list[str]) -> tuple[str, ...]:
        value = options.get(key, default)
        return tuple(p for p in value[:_MAX_PATTERNS] if isinstance(p, str) and p.strip()
                     ) if isinstance(value, list) else tuple(default)
    return {"notebooks": "mkdocs-jupyter",
            "notebook_patterns": (patterns("include", ["*.ipynb"]), patterns("ignore", []))}


def _is_notebook_page(site: Site, rel: PurePosixPath) -> bool:
    """Whether mkdocs-jupyter renders the notebook at ``rel`` (its patterns match a path
    from the right, as ``PurePath.match`` does)."""
    if site.settings.get("notebooks") != "mkdocs-jupyter":
        return False
    include, ignore = site.settings.get("notebook_patterns", (("*.ipynb",), ()))
    return not any(_match(rel, p) for p in ignore) and any(_match(rel, p) for p in include)


def _match(rel: PurePosixPath, pattern: str) -> bool:
    try:
        return rel.match(pattern)
    except ValueError:  # an empty or absolute pattern
        return False


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


def _blog(plugins: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Material's blog plugin settings that place a post (its defaults where unset); None
    when the plugin is not on."""
    options = plugins.get("blog", plugins.get("material/blog"))
    if options is None or options.get("enabled") is False:
        return None

    def text(key: str, default: str) -> str:
        value = options.get(key)
        return value if isinstance(value, str) and value.strip() else default

    blog_dir = text("blog_dir", "blog").strip("/")
    posts = text("post_dir", "{blog}/posts").replace("{blog}", blog_dir).strip("/")
    limit = options.get("post_url_max_categories")
    return {"dir": blog_dir, "posts": posts,
            "url": text("post_url_format", "{date}/{slug}"),
            "date": text("post_url_date_format", "yyyy/MM/dd"),
            "separator": text("post_slugify_separator", "-"),
            "categories": limit if isinstance(limit, int) and not isinstance(limit, bool)
            else 1, "drafts": options.get("draft") is True}


def _i18n(plugins: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The i18n plugin's (mkdocs-static-i18n) languages: their locales, which is the
    default (served at the root) and which are built, and how files name their language
    (``suffix``: ``page.fr.md``; ``folder``: ``fr/page.md``); None when it is not on."""
    options = plugins.get("i18n")
    languages = options.get("languages") if options is not None else None
    if not isinstance(languages, list) or options.get("enabled") is False:
        return None
    locales = [lang for lang in languages
               if isinstance(lang, dict) and isinstance(lang.get("locale"), str)
               and lang["locale"].strip()]
    if not locales:
        return None
    default = next((lang for lang in locales if lang.get("default") is True), locales[0])
    structure = options.get("docs_structure")
    return {"folder": structure == "folder", "default": default["locale"].strip(),
            "built": tuple(lang["locale"].strip() for lang in locales
                           if lang.get("build") is not False),
            "locales": tuple(lang["locale"].strip() for lang in locales)}


def _language_of(i18n: Mapping[str, Any], rel: PurePosixPath
                 ) -> tuple[str, PurePosixPath] | None:
    """The URL prefix of the language a file is in (``fr/``; none for the default one) and
    its path without the language; None when that language is not built. A file in no
    language (outside the language folders, or without a suffix) is the default's."""
    locales, language = i18n["locales"], i18n["default"]
    if i18n["folder"]:
        if len(rel.parts) > 1 and rel.parts[0] in locales:
            language, rel = rel.parts[0], PurePosixPath(*rel.parts[1:])
    else:
        base, dot, suffix = rel.stem.rpartition(".")
        if dot and base and suffix in locales:
            language, rel = suffix, rel.with_name(base + rel.suffix)
    if language not in i18n["built"]:
        return None
    return ("" if language == i18n["default"] else f"{language}/"), rel


def _is_post(blog: Mapping[str, Any], rel: PurePosixPath) -> bool:
    posts = PurePosixPath(blog["posts"]).parts
    return rel.parts[:len(posts)] == posts and len(rel.parts) > len(posts)


def _post_path(blog: Mapping[str, Any], front_matter: Mapping[str, Any],
               ) -> PurePosixPath | None:
    """Where the blog plugin puts a post: ``post_url_format`` filled with its date, slug
    and categories, under ``blog_dir``; None for a draft or a post without a date."""
    if front_matter.get("draft") is True and not blog["drafts"]:
        return None
    dated = front_matter.get("date")
    if isinstance(dated, dict):
        dated = dated.get("created")
    when = front_matter_time(dated)
    if when is None:
        return None
    slugify = pymdownx_slugify(case="lower")  # the plugin's default post_slugify
    slug = front_matter.get("slug")
    title = front_matter.get("title")
    if not (isinstance(slug, str) and slug.strip()):
        slug = slugify(str(title or ""), blog["separator"])
    names = front_matter.get("categories")
    names = [str(n) for n in names if isinstance(n, str | int)] if isinstance(
        names, list) else []
    categories = [slugify(n, blog["separator"]) for n in names[:blog["categories"]]]
    values = {"date": _babel_date(blog["date"], when), "slug": slug.strip(),
              "categories": "/".join(categories), "file": ""}
    path = _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), blog["url"])
    path = posixpath.normpath(path.strip("/"))
    return PurePosixPath(blog["dir"], f"{path}.md")


def _babel_date(pattern: str, when: datetime) -> str:
    """A date in a Babel pattern's ``y``, ``M`` and ``d`` fields (``yyyy/MM/dd``); other
    letters are left as written."""
    def field(m: re.Match[str]) -> str:
        run = m.group(0)
        value = {"y": when.year, "M": when.month, "d": when.day}[run[0]]
        if run[0] == "y":
            return f"{value % 100:02d}" if len(run) == 2 else str(value)
        return f"{value:0{len(run)}d}"
    return re.sub(r"y+|M{1,2}|d{1,2}", field, pattern)


def _snippets(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``pymdownx.snippets`` that change what a page takes in."""
    def names(value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        return tuple(item for item in items if isinstance(item, str))

    return {"base_path": names(config.get("base_path", ".")) or (".",),
            "auto_append": names(config.get("auto_append")),
            "restrict_base_path": config.get("restrict_base_path", True) is not False}


def _theme_folder(docs_dir: str, config: Mapping[str, Any]) -> tuple[str, ...]:
    """The theme's ``custom_dir`` as a pattern of the docs folder, when it lies inside it
    (``docs/overrides``): MkDocs copies its templates along, but they are no pages."""
    theme = config.get("theme")
    custom = theme.get("custom_dir") if isinstance(theme, Mapping) else None
    if not isinstance(custom, str) or not custom.strip() or posixpath.isabs(custom) or (
            posixpath.isabs(docs_dir)):
        return ()
    inside = posixpath.relpath(posixpath.normpath(custom), posixpath.normpath(docs_dir))
    if inside == "." or inside.startswith(".."):
        return ()
    return (f"/{inside}/",)


def _brace_includes(extensions: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The settings of whichever extension reads ``{! path !}`` (the fields of
    ``extract.brace_includes.BraceIncludes``), or None."""
    if "mdx_include" in extensions:
        config = extensions["mdx_include"]
        recursive = config.get("recurs_local", True)
        return {"extension": "mdx_include", "base_path": _text(config.get("base_path"), "."),
                "recursive": recursive if isinstance(recursive, bool) else None,
                "relative_to_file": config.get("recursive_relative_path") is True}
    config = extensions.get("markdown_include.include", extensions.get("markdown_include"))
    if config is None:
        return None
    offset = config.get("headingOffset", 0)
    return {"extension": "markdown_include", "base_path": _text(config.get("base_path"), "."),
            "heading_offset": offset if isinstance(offset, int) and 0 < offset <= 6 else 0,
            "inherit_heading_depth": config.get("inheritHeadingDepth") is True}


def _text(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


# mkdocstrings' directive: the API reference of the object it names, rendered at build time.
_AUTODOC = re.compile(r"^:::[ \t]+([\w.:-]+)", re.MULTILINE)
# A page with less prose than this beside its directives is a stub for the reference.
_STUB_PROSE_CHARS = 300


def autodoc_stub(site: Site, text: str) -> tuple[str, int] | None:
    """The first object and the number of objects a page leaves to mkdocstrings, when the
    page is little else (``::: pydantic.BaseModel`` and its options): the reference it
    publishes is generated from the code at build time, so its source holds almost none
    of the text a reader searches for. None for any other page."""
    if site.generator != "mkdocs" or "mkdocstrings" not in site.settings.get("plugins", ()):
        return None
    names = _AUTODOC.findall(text)
    if not names:
        return None
    prose = sum(len(line) for line in text.splitlines() if line.strip()
                and not line.startswith((":::", " ", "\t", "#", "---")))
    return (names[0], len(names)) if prose < _STUB_PROSE_CHARS else None


# Longest pattern of the exclude plugin read: a path is short, and so is a real pattern.
_MAX_EXCLUDE_PATTERN = 512
_MAX_EXCLUDE_GLOBS = 1000


def _exclude_plugin(options: Mapping[str, Any] | None) -> Callable[[str], bool] | None:
    """The files the ``exclude`` plugin (mkdocs-exclude) keeps out of the build: its
    ``glob`` patterns, as ``fnmatch`` reads them, against the path in the docs folder.
    (Python's ``fnmatch`` matches without backtracking. The plugin's ``regex`` patterns
    are not read: a hostile one could hold a run for ever.)"""
    value = (options or {}).get("glob")
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    globs = [v for v in values if isinstance(v, str) and len(v) <= _MAX_EXCLUDE_PATTERN]
    if not globs:
        return None
    # one expression for them all (at most _MAX_EXCLUDE_GLOBS): a config listing 100,000
    # globs would otherwise be tried one by one on every file
    matcher = re.compile("|".join(fnmatch.translate(g) for g in globs[:_MAX_EXCLUDE_GLOBS]))
    return lambda rel: matcher.match(rel) is not None


def _plugins(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each plugin in ``plugins`` (a list of names or one-key maps, or a map) with its
    options ({} when it has none)."""
    raw = config.get("plugins")
    items = list(raw.items()) if isinstance(raw, dict) else [
        next(iter(i.items())) if isinstance(i, dict) and len(i) == 1 else (i, None)
        for i in raw] if isinstance(raw, list) else []
    return {name: options if isinstance(options, dict) else {}
            for name, options in items if isinstance(name, str)}


GENERATOR = MkDocs()
