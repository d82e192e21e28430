"""The plain rule, for folders no generator claims: ``guide/install.md`` →
``guide/install``, ``guide/index.md`` (or ``README.md``) → ``guide/``, GitHub heading
slugs. It is what GitHub-flavoured hosting and most hand-rolled sites serve. A file no
generator renders (an HTML page, a text file) is served as itself: ``a/b.html`` →
``a/b.html``, which every host serves (pretty-URL hosts redirect it), where ``a/b`` would
miss on a plain static server. In a built site, the host's ``404.html``, Sphinx's
``_sources/`` copies and the markdown copies of its pages are no pages of their own."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import IdRules
from ..chunk.slug import Slugger, slug_plain
from .base import Generator, Site

_INDEX_STEMS = {"index", "readme", "_index"}
_SERVED_AS_IS = {".txt", ".html", ".htm"}
_SERVER_INDEXES = {"index.html", "index.htm"}  # what a web server answers for ``a/``
_HOST_PAGES = {"404.html", "404.htm"}
_MARKDOWN = {".md", ".markdown"}


class GithubIds(IdRules):
    """GitHub slugs, deduplicated; a written ``{#id}`` is used and reserved."""

    def __init__(self) -> None:
        self._slugger = Slugger()

    def __call__(self, text: str, explicit: str | None = None) -> str:
        if explicit is not None:
            self._slugger.reserve(explicit)
            return explicit
        return self._slugger.dedupe(slug_plain(text))


class Plain(Generator):
    name = "plain"
    markers: tuple[str, ...] = ()

    def detect(self, folder: Path) -> Site | None:
        return None

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root)

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]
             ) -> str | None:
        if rel.as_posix().lower() in _HOST_PAGES:
            return None  # the host's not-found page: no docs content
        if rel.parts[0] == "_sources" and (site.content / ".buildinfo").is_file():
            return None  # a built Sphinx site's source copies: its pages say it all
        if rel.suffix.lower() in _MARKDOWN and _has_html_twin(site.content, rel):
            return None  # a built site's markdown copy of a page: the page says it all
        parent = "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
        if rel.suffix.lower() in _SERVED_AS_IS:
            return parent if rel.name.lower() in _SERVER_INDEXES else rel.as_posix()
        if rel.stem.lower() in _INDEX_STEMS:
            return parent
        return rel.with_suffix("").as_posix()

    def heading_ids(self, site: Site) -> GithubIds:
        return GithubIds()


def _has_html_twin(content: Path, rel: PurePosixPath) -> bool:
    """Whether the markdown file at ``rel`` sits beside the HTML page it copies, as built
    sites publish them for language models (Hugo's markdown output, llms.txt's ``.md``
    convention): ``a/b.md`` → ``a/b.html`` or ``a/b/index.html``, ``a/index.md`` →
    ``a/index.html``, ``a/b.html.md`` → ``a/b.html``. A source folder has no such twin."""
    stem = rel.with_suffix("")
    if stem.suffix.lower() in (".html", ".htm"):
        twins = [stem]
    else:
        twins = [stem.with_suffix(".html"), stem / "index.html"]
    return any((content / twin).is_file() for twin in twins)


GENERATOR = Plain()
