"""Docsify: an ``index.html`` that sets ``window.$docsify`` renders the markdown files
beside it in the browser, so there is no build and the pages are routes, not files.

Routes (hash mode, Docsify's default): ``guide.md`` → ``#/guide``, ``README.md`` →
``#/``, ``zh/README.md`` → ``#/zh/`` (``homepage`` names the file served at ``#/``
instead). A heading's link is the route with ``?id=`` its id (``#/guide?id=install``):
``citation_for`` joins anchors that way for any hash route. With ``routerMode:
'history'`` the routes are paths (``guide``). ``basePath`` moves where the markdown lives.
``_sidebar.md``, ``_navbar.md``, ``_coverpage.md`` and ``_404.md`` are chrome, and the
``index.html`` shell is no page.

Heading ids, from Docsify's ``slugify``: ASCII capitals lowered, tags dropped, the
punctuation ``\\'!"#$%&()*+,./:;<=>?@[]^`{|}~`` and U+2000–206F, U+2E00–2E7F dropped,
each whitespace character turned into ``-``, a leading digit prefixed with ``_``; a
repeat gets ``-1``, ``-2``… counted per slug (so a heading "A-1" after two "A"s gets
"a-1" a second time, as Docsify renders it). ``:id=name`` in a heading names it.
Version 4 slugs the heading as marked renders it (``&`` arrives as ``&amp;`` and leaves
``amp``, ``'`` leaves ``39``) and collapses runs of ``-``; version 5 slugs its markdown
source (a link's text only, emoji dropped) and keeps them. The major version comes from
the script's ``docsify@N`` or the version a copy in the project carries; an unversioned
script is the latest, 5.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from lxml import etree

from ..chunk.anchors import IdRules
from ..extract.dialects import PageFile
from ..extract.docsify_marks import COMMENTED_IGNORE, ignore_marks_kept, scripts_in
from ..projectfiles import inside, is_folder, read_config_text
from .base import Generator, Site

CHROME = frozenset({"_sidebar.md", "_navbar.md", "_coverpage.md", "_404.md"})
LATEST_MAJOR = 5
_BUNDLES = frozenset({"docsify.js", "docsify.min.js"})
MAX_SCRIPTS = 32  # Docsify's own and its plugins'; a page with thousands is no shell

_MAJOR = re.compile(r"docsify@\^?~?(\d+)")
_VENDORED = re.compile(r"""docsify\s+v(\d+)\.\d+|\bversion:\s*["'](\d+)\.\d+""", re.I)
_HISTORY = re.compile(r"""\brouterMode\s*:\s*['"]history['"]""")
_HOMEPAGE = re.compile(r"""\bhomepage\s*:\s*['"]([^'"]+\.md)['"]""")
_BASE_PATH = re.compile(r"""\bbasePath\s*:\s*['"]([^'"]*)['"]""")

_PUNCTUATION = re.compile(r"""[\u2000-\u206F\u2E00-\u2E7F\\'!"#$%&()*+,./:;<=>?@\[\]^`{|}~]""")
_CAPITALS = re.compile(r"[A-Z]+")
_TAG = re.compile(r"<[^>]+>")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")
_CONFIG_ITEM = re.compile(r"(?:^|\s):([\w-]+:?)=?([\w\-%]+)?")
# Extended_Pictographic and Emoji_Presentation, which Python's re cannot name: the blocks
# that hold them (U+2000–206F goes with the punctuation anyway).
_EMOJI = re.compile("[\u00a9\u00ae\u2122\u2139\u2194-\u21aa\u231a-\u23ff\u24c2\u25aa-\u27bf"
                    "\u2934\u2935\u2b05-\u2b55\u3030\u303d\u3297\u3299\U0001f000-\U0001faff]")
_IGNORE = re.compile(r"(?:<!--\s*)?\{docsify-ignore(?:-all)?(?::comment)?\}(?:\s*-->)?")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}


def slugify(text: str, major: int = LATEST_MAJOR) -> str:
    """Docsify's ``slugify`` of what it is given (see the module docstring), without the
    repeat count."""
    slug = text.strip()
    if major >= 5:
        slug = unicodedata.normalize("NFC", slug)
        slug = _EMOJI.sub("", _LINK.sub(r"\1", slug).replace("\ufe0f", ""))
    slug = _CAPITALS.sub(lambda m: m.group(0).lower(), slug)
    slug = _PUNCTUATION.sub("", _TAG.sub("", slug))
    slug = re.sub(r"\s", "-", slug)
    if major < 5:
        slug = re.sub(r"-+", "-", slug)
    return re.sub(r"^(\d)", r"_\1", slug)


def _config_id(text: str) -> tuple[str, str | None]:
    """Docsify's ``getAndRemoveConfig``: the heading without its ``:key=value`` items, and
    the ``:id=`` it names (None without one)."""
    found: dict[str, str] = {}

    def take(m: re.Match[str]) -> str:
        if ":" in m.group(1):
            return m.group(0)
        found.setdefault(m.group(1), m.group(2) or "")
        return ""

    text = re.sub(r"""^['"]|['"]$""", "", text)
    rest = _CONFIG_ITEM.sub(take, text).strip()
    return rest, found.get("id") or None


class DocsifyIds(IdRules):
    """Per page, as one Docsify render: the slug cache counts repeats of each slug."""

    honours_explicit = False  # Docsify has no {#id}: it is text of the heading

    def __init__(self, major: int) -> None:
        self._major = major
        self.reads_source = major >= 5  # 5 slugs the markdown source, 4 the rendered text
        self._count: dict[str, int] = {}

    def __call__(self, text: str, explicit: str | None = None) -> str | None:
        if self._major >= 5:
            named = _config_id(text)[1]
            slug = slugify(named or text.replace(COMMENTED_IGNORE, "<!-- -->"), self._major)
        else:
            rendered = "".join(_ESCAPES.get(ch, ch) for ch in text)
            rest, named = _config_id(rendered)
            slug = slugify(named or _IGNORE.sub("", rest), self._major)
        n = self._count[slug] + 1 if slug in self._count else 0
        self._count[slug] = n
        return f"{slug}-{n}" if n else slug

    def displayed(self, heading: str) -> str:
        """Without its ``:key=value`` items and ``{docsify-ignore}`` marks, as shown."""
        return _IGNORE.sub("", _CONFIG_ITEM.sub(
            lambda m: m.group(0) if ":" in m.group(1) else "", heading)).strip() or heading


class Docsify(Generator):
    name = "docsify"
    markers = ("index.html",)
    rank = 90

    def detect(self, folder: Path) -> Site | None:
        marker = folder / "index.html"
        html = read_config_text(marker) if marker.is_file() else None
        config, sources = _scripts(html) if html is not None else (None, [])
        if config is None:
            return None
        base = _BASE_PATH.search(config)
        content = folder
        if base and "://" not in base.group(1) and base.group(1).strip("/"):
            candidate = folder / base.group(1).strip("/")
            content = candidate if inside(folder, candidate) and is_folder(candidate) else folder
        home = _HOMEPAGE.search(config)
        settings = {"major": _major(folder, sources), "history": bool(_HISTORY.search(config)),
                    "homepage": home.group(1).lstrip("/") if home else "README.md"}
        return Site(self.name, content, marker, settings)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"major": LATEST_MAJOR, "history": False,
                                            "homepage": "README.md"})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if rel.suffix != ".md" or rel.name in CHROME:
            return None
        if rel.as_posix() == site.settings.get("homepage", "README.md"):
            route = ""
        elif rel.name == "README.md" and rel.parent.parts:
            route = rel.parent.as_posix() + "/"
        else:  # a root README.md that is not the homepage is a page of its own
            route = rel.with_suffix("").as_posix()
        return route if site.settings.get("history") else f"#/{route}"

    def markdown(self, text: str, page: PageFile | None) -> str:
        return ignore_marks_kept(text)

    def heading_ids(self, site: Site) -> DocsifyIds:
        major = site.settings.get("major")
        return DocsifyIds(major if isinstance(major, int) else LATEST_MAJOR)


def _scripts(html: str) -> tuple[str | None, list[str]]:
    """The text of the page's script that sets ``$docsify`` (None: no Docsify page; one
    that only shows that line as text is none), and the sources of its scripts whose URL
    names Docsify. Parsed as HTML: patterns over the raw page took quadratic time on a
    hostile one (``<script `` repeated with no ``>``)."""
    parser = etree.HTMLParser(no_network=True, remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(html.encode("utf-8", "replace"), parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None, []
    return scripts_in(root)


def _major(folder: Path, sources: list[str]) -> int:
    """The Docsify major version the page loads: ``docsify@N`` in the script's URL, the
    version a copy kept in the project carries, else the latest."""
    for src in sources[:MAX_SCRIPTS]:
        m = _MAJOR.search(src)
        if m:
            return int(m.group(1))
        local = folder / src.split("?")[0].lstrip("/")
        if ("://" not in src and not src.startswith("//") and local.name in _BUNDLES
                and inside(folder, local)):  # a plugin's own version says nothing
            copy = read_config_text(local)
            stamp = _VENDORED.search(copy) if copy else None
            if stamp:
                return int(stamp.group(1) or stamp.group(2))
    return LATEST_MAJOR


GENERATOR = Docsify()
