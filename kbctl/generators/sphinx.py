"""Sphinx: ``conf.py`` in the source folder; ``html`` builder: ``guide/install.rst`` →
``guide/install.html``; ``dirhtml`` builder: ``guide/install/`` (``index`` → the folder).
Section ids are docutils ids (``make_id`` of the title; ``id1``, ``id2``… when taken);
reStructuredText files carry their own ids from the parse (see ``extract.rst``); in
markdown (MyST) a ``{#id}`` after a heading is text, as MyST reads it, and with MyST's
``smartquotes`` extension a heading's quotes are typographic ones before its id is made,
which ``make_id`` drops (``Why doesn't it?`` → ``why-doesnt-it``, not ``why-doesn-t-it``).
Notebooks are pages when an extension reads them (MyST-NB, nbsphinx). The ``.rst.txt``
copies Sphinx publishes under ``_sources/`` map to the same pages. Files
matching ``exclude_patterns`` (``*`` within a folder, ``**`` across folders) are not built.
"""

from __future__ import annotations

import ast
import io
import itertools
import os
import re
import tokenize
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from docutils.nodes import make_id

from ..chunk.anchors import IdRules
from ..extract import dialects
from ..extract.dialects import PageFile
from ..projectfiles import matches_any, read_config_text
from .base import Generator, Site

_SOURCE_SUFFIXES = (".rst.txt", ".md.txt", ".rst", ".md", ".ipynb")
# Extensions that make Sphinx read notebooks (MyST-NB reads markdown too)
_NOTEBOOK_READERS = ("myst_nb", "nbsphinx")
_ROLE_NAME = re.compile(r"[A-Za-z][\w.:+-]{0,63}")
# How a suffix named in a list of ``source_suffix`` is read (Sphinx lets the parser an
# extension registered for it decide, MyST's for .md)
_FORMAT_OF = {".md": "markdown", ".markdown": "markdown", ".ipynb": "notebook",
              "restructuredtext": "rst"}
_SPHINX_HINT = re.compile(r"^(?:extensions|project|html_theme|master_doc|root_doc)\s*=",
                          re.MULTILINE)
_MAX_PATTERNS = 1000
_STRAIGHT_QUOTES = re.compile("[\"']")


class DocutilsIds(IdRules):
    """docutils ids for a page: ``make_id`` of the text, else ``id1``, ``id2``…"""

    honours_explicit = False  # MyST leaves a trailing {#id} in the heading's text

    def __init__(self, smartquotes: bool = False) -> None:
        self._used: set[str] = set()
        self._counter = 0
        self._smartquotes = smartquotes

    def __call__(self, text: str, explicit: str | None = None) -> str:
        if self._smartquotes:
            text = _STRAIGHT_QUOTES.sub("", text)
        candidate = explicit if explicit is not None else make_id(text)
        while not candidate or candidate in self._used:
            self._counter += 1
            candidate = f"id{self._counter}"
        self._used.add(candidate)
        return candidate


class NbsphinxIds(DocutilsIds):
    """nbsphinx's ids for a notebook's sections, Jupyter's style: the title with ``-`` for
    each space, case and punctuation kept (``What's-next?``); a title already used keeps
    the docutils id it had (``id1``)."""

    def __init__(self) -> None:
        super().__init__()
        self._jupyter: set[str] = set()

    def __call__(self, text: str, explicit: str | None = None) -> str:
        docutils_id = super().__call__(text)
        jupyter = text.replace(" ", "-").replace('"', "%22")
        if jupyter in self._jupyter:
            return docutils_id
        self._jupyter.add(jupyter)
        return jupyter


def source_stem(rel: PurePosixPath) -> PurePosixPath | None:
    """``a/b.rst`` (or ``a/b.rst.txt``) → ``a/b``; None for files Sphinx does not read."""
    name = rel.name.lower()
    for suffix in _SOURCE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return rel.with_name(rel.name[: -len(suffix)])
    return None


def source_formats(value: Any) -> dict[str, str]:
    """``source_suffix`` (a suffix, a list, or {suffix: file type}) as {suffix: how kbctl
    reads it}: ``.txt`` → ``rst`` (Django's docs), ``.md`` → ``markdown``."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list | tuple):
        value = {suffix: _FORMAT_OF.get(str(suffix).lower(), "rst") for suffix in value}
    if not isinstance(value, dict):
        return {}
    out: dict[str, str] = {}
    for suffix, kind in list(value.items())[:_MAX_PATTERNS]:
        if not isinstance(suffix, str) or not suffix.strip(".").strip():
            continue
        kind, name = str(kind).lower(), "." + suffix.strip().lstrip(".").lower()
        out[name] = (  # MyST-NB's text notebooks (.md, .myst: 'myst-nb') are MyST markdown
            "notebook" if name == ".ipynb" or "ipynb" in kind or "notebook" in kind else
            "markdown" if "markdown" in kind or "myst" in kind or kind.endswith("nb") else
            _FORMAT_OF.get(kind, "rst"))
    return out


def source_suffix(name: str, formats: Mapping[str, str]) -> str | None:
    """The longest suffix of ``formats`` the file ``name`` ends with (not all of it)."""
    lowered = name.lower()
    matching = [s for s in formats if lowered.endswith(s) and len(lowered) > len(s)]
    return max(matching, key=len) if matching else None


class Sphinx(Generator):
    markers = ("conf.py",)
    rank = 110

    def __init__(self, name: str = "sphinx", directory_urls: bool = False, *,
                 detected: bool = True) -> None:
        self.name = name
        self.directory_urls = directory_urls
        if not detected:  # the same marker as Sphinx's html builder: chosen by name only
            self.rank = None

    def detect(self, folder: Path) -> Site | None:
        for source in (folder, folder / "source"):
            marker = source / "conf.py"
            text = read_config_text(marker) if marker.is_file() else None
            if text is not None and _SPHINX_HINT.search(text):
                suffix = assigned(text, "html_file_suffix")
                settings = {"html_file_suffix": suffix if isinstance(suffix, str) and suffix
                            else ".html",
                            "markdown": any(name in text for name in (
                                "myst_parser", "recommonmark", "myst_nb")),
                            "notebooks": next((name for name in _NOTEBOOK_READERS
                                               if name in text), None),
                            "exclude": _exclude_patterns(text), **_myst_settings(text),
                            # a version or a translation is a build of its own, never a
                            # folder of the sources: a development/ folder is a section
                            "copies_in_folders": False}
                role = assigned(text, "default_role")
                if isinstance(role, str) and _ROLE_NAME.fullmatch(role):
                    settings["default_role"] = role  # what `text` without a role is
                settings["extlinks"] = _extlinks(assigned(text, "extlinks"))
                settings["target_directives"] = crossref_directives(source, text)
                formats = source_formats(assigned(text, "source_suffix"))
                if formats:
                    # the parsers add their suffixes to the configured ones as Sphinx starts
                    # (attrs: source_suffix ".rst" with myst_parser builds its .md pages)
                    if settings["markdown"]:
                        formats.setdefault(".md", "markdown")
                    if settings["notebooks"]:
                        formats.setdefault(".ipynb", "notebook")
                    settings["source_suffix"] = formats
                return Site(self.name, source, marker, settings)
        return None

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"html_file_suffix": ".html"})

    def guess(self, folder: Path) -> Site | None:
        """The project whose ``conf.py`` lies one level down, in ``docs/`` or ``doc/``."""
        for child in ("docs", "doc"):
            site = self.detect(folder / child) if (folder / child).is_dir() else None
            if site is not None:
                return site
        return None

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if site.marker is not None and any(p.startswith(("_", ".")) for p in rel.parts[:-1]):
            return None  # _build, _static, _templates: not sources
        if matches_any(tuple(site.settings.get("exclude", ())), rel.as_posix()):
            return None
        formats = site.settings.get("source_suffix")
        suffix = source_suffix(rel.name, formats) if formats else None
        stem = source_stem(rel) if not formats else (
            rel.with_name(rel.name[:-len(suffix)]) if suffix else None)
        markdown = rel.name.lower().endswith((".md", ".md.txt"))
        if markdown and site.marker is not None and not site.settings.get("markdown"):
            return None  # no markdown parser configured: Sphinx skips .md files
        if stem is None:
            return rel.as_posix() if rel.suffix.lower() in (".html", ".htm") else None
        if self.directory_urls:
            parent = "" if stem.parent.as_posix() == "." else stem.parent.as_posix() + "/"
            return parent if stem.name == "index" else stem.as_posix() + "/"
        return stem.as_posix() + site.settings.get("html_file_suffix", ".html")

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.sphinx(text, page)  # Sphinx reads markdown with MyST

    def heading_ids(self, site: Site) -> DocutilsIds:
        return DocutilsIds(smartquotes=bool(site.settings.get("smartquotes")))


def assigned(conf: str, name: str) -> Any:
    """The literal ``conf.py`` assigns to ``name`` at the top level (a string, a list, a
    dict…); None when it assigns none, or something only Sphinx's run computes. Only that
    statement is read, so a file this Python cannot parse (newer syntax) still gives it."""
    found = re.search(rf"^{re.escape(name)}[ \t]*=[ \t]*", conf, re.MULTILINE)
    if found is None:
        return None
    rest = conf[found.end():]
    try:
        for token in tokenize.generate_tokens(io.StringIO(rest).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or token.string == ";":
                lines = rest.split("\n", token.start[0])[:token.start[0]]
                lines[-1] = lines[-1][:token.start[1]]
                return ast.literal_eval("\n".join(lines).strip())
    except (tokenize.TokenError, SyntaxError, ValueError, TypeError, RecursionError,
            MemoryError, IndentationError):
        return None
    return None


# ``app.add_crossref_type("setting", …)`` or ``(directivename="setting", …)``: a directive
# that only marks the heading after it as a link target (Django's, Celery's, Scrapy's
# ``.. setting:: NAME``); read as text, each one's name leaked into the section before.
_CROSSREF_TYPE = re.compile(
    r"""\.add_crossref_type\(\s*(?:directivename\s*=\s*)?(['"])([A-Za-z][\w:.-]{0,63})\1""")
MAX_EXTENSION_FILES = 64  # local extension modules read for crossref types, at most
_MAX_ENTRIES = 4096  # entries of a folder looked at for them
# folders beside conf.py looked into: a conf.py at the top of a monorepo has thousands
MAX_EXTENSION_FOLDERS = 64


def crossref_directives(source: Path, conf: str) -> list[str]:
    """The directives ``conf.py`` and the project's local extensions (``*.py`` beside it
    and one folder down: ``_ext/``, ``sphinxext/``) declare with ``add_crossref_type``;
    read as text, never run."""
    texts = [conf]
    modules: list[Path] = []
    top, folders = _python_files(source)
    modules += [p for p in top if p.name != "conf.py"]
    for folder in folders[:MAX_EXTENSION_FOLDERS]:
        if len(modules) >= MAX_EXTENSION_FILES:
            break
        modules += _python_files(folder)[0]
    for module in modules[:MAX_EXTENSION_FILES]:
        text = read_config_text(module)
        if text is not None and "add_crossref_type" in text:
            texts.append(text)
    return sorted({m.group(2).lower() for text in texts for m in _CROSSREF_TYPE.finditer(text)})


def _python_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """The ``*.py`` files and the folders in ``folder``, by name, from at most
    ``_MAX_ENTRIES`` of its entries (a ``conf.py`` at the top of a monorepo is not a
    reason to list it all); hidden ones and build output left out."""
    files: list[Path] = []
    folders: list[Path] = []
    try:
        with os.scandir(folder) as entries:
            for entry in itertools.islice(entries, _MAX_ENTRIES):
                if entry.name.startswith((".", "_build")) or entry.name == "node_modules":
                    continue
                if entry.name.endswith(".py") and entry.is_file():
                    files.append(folder / entry.name)
                elif entry.is_dir():
                    folders.append(folder / entry.name)
    except OSError:
        return [], []
    return sorted(files), sorted(folders)


def _extlinks(value: Any) -> dict[str, tuple[str, str | None]]:
    """``extlinks`` ({role: (URL pattern, caption pattern or None)}), what can be read."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, tuple[str, str | None]] = {}
    for name, link in list(value.items())[:_MAX_PATTERNS]:
        if (isinstance(name, str) and _ROLE_NAME.fullmatch(name)
                and isinstance(link, tuple | list) and len(link) == 2
                and isinstance(link[0], str) and isinstance(link[1], str | None)):
            out[name.lower()] = (link[0], link[1])
    return out


def _myst_settings(conf: str) -> dict[str, Any]:
    """What MyST's settings in ``conf.py`` change in the text and ids kbctl reads."""
    extensions = assigned(conf, "myst_enable_extensions")
    return myst_settings(extensions, lambda: assigned(conf, "myst_substitutions"))


def myst_settings(extensions: Any, substitutions: Callable[[], Any]) -> dict[str, Any]:
    """MyST's ``smartquotes``, ``dollarmath`` and ``amsmath`` extensions, and with
    ``substitution`` the substitutions (read only then); for Sphinx's ``conf.py`` and
    Jupyter Book's ``_config.yml`` alike."""
    enabled = {e for e in extensions if isinstance(e, str)} if isinstance(
        extensions, list | tuple | set) else set()
    settings: dict[str, Any] = {"smartquotes": "smartquotes" in enabled,
                                "dollarmath": "dollarmath" in enabled,
                                "amsmath": "amsmath" in enabled}
    if "substitution" in enabled:
        values = substitutions()
        settings["substitutions"] = {str(k): str(v) for k, v in values.items()} if (
            isinstance(values, dict)) else {}
    return settings


def _exclude_patterns(conf: str) -> tuple[str, ...]:
    return exclude_patterns(assigned(conf, "exclude_patterns"))


def exclude_patterns(value: Any) -> tuple[str, ...]:
    """``exclude_patterns`` (a list of strings; anything else excludes nothing) as
    gitignore patterns anchored at the source folder (Sphinx's globs anchor there too:
    ``*`` stays within a folder, ``**`` crosses them, and a matching folder excludes all
    it holds)."""
    if not isinstance(value, list | tuple):
        return ()
    patterns = [p for p in value if isinstance(p, str) and p.strip()][:_MAX_PATTERNS]
    return tuple("/" + re.sub(r"^([!#])", r"\\\1", p.strip().lstrip("/")) for p in patterns)


GENERATOR = Sphinx()
DIRHTML = Sphinx("sphinx-dirhtml", directory_urls=True, detected=False)
