"""Each docs generator's markdown dialect, read as the text its pages show.

A generator renders syntax of its own before or around markdown (MDX's JSX, Hugo's and
Quarto's shortcodes, Jekyll's Liquid, MkDocs' admonitions, ``:::`` containers and Pandoc's
divs, MyST's directives and roles) and takes other files in (mdBook's and Sphinx's
includes, MkDocs' snippets and include-markdown, VitePress' inclusions, MDX partials,
Jekyll's and Quarto's includes, all read under ``includes``' rules); kbctl runs none of
its templates, and reads each as what a reader of the built page sees. Here are the
readings that combine several pieces; a generator names its dialect in its ``markdown``
(``generators/base.Generator``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .abbreviations import abbreviations_removed
from .admonitions import admonitions_to_markdown
from .attribute_lines import without_attribute_lines
from .brace_includes import BraceIncludes, expand_brace_includes, expand_include_variants
from .inline_html import html_to_text
from .jekyll_includes import liquid_with_includes
from .liquid import liquid_to_markdown
from .math_blocks import math_fenced
from .mdbook_links import expand_links
from .mdx import containers_to_markdown, mdx_to_markdown
from .mdx_imports import expand_partials
from .mkdocs_includes import expand_include_markdown
from .mkdocs_inline import inline_marks_removed
from .myst import myst_to_markdown
from .mystmd import mystmd_headings
from .quarto import quarto_to_markdown
from .shortcodes import shortcodes_to_markdown
from .snippets import expand_snippets
from .sphinx_includes import SphinxIncludes
from .vitepress_includes import expand_includes


@dataclass(frozen=True)
class PageFile:
    """Where a page's file lies, the project folder a dialect may read files from, the
    generator's settings for the project, the files the dialect read (the page must be
    read again when one of them changes), and the page's front matter."""

    path: Path
    project: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    reads: list[Path] = field(default_factory=list)
    front_matter: Mapping[str, Any] = field(default_factory=dict)


# A dialect reads a page's markdown; the page's file is None for a page fetched from the web.
Dialect = Callable[[str, PageFile | None], str]


def jekyll(text: str, page: PageFile | None) -> str:
    """Liquid, with the files it includes in place; kramdown's attribute lines."""
    if page is None:
        return without_attribute_lines(liquid_to_markdown(text), kramdown=True)
    source = page.project / page.settings.get("source", ".")
    return without_attribute_lines(liquid_with_includes(
        text, page=page.path, project=page.project, reads=page.reads,
        includes_dir=source / page.settings.get("includes_dir", "_includes")), kramdown=True)


def hugo(text: str, page: PageFile | None) -> str:
    """Shortcodes; goldmark's block attribute lines where the site turns them on."""
    text = shortcodes_to_markdown(text)
    if page is not None and page.settings.get("blockAttributes"):
        text = without_attribute_lines(text, kramdown=False)
    return text


def sphinx(text: str, page: PageFile | None) -> str:
    """MyST, with the files its include directives name (the source folder is the
    project's, where ``conf.py`` is), display math kept whole (``dollarmath``,
    ``amsmath``) and, with its substitution extension, the values of
    ``conf.py``'s ``myst_substitutions`` and the page's own (front matter
    ``myst: substitutions:``, or ``substitutions:`` as older MyST reads it)."""
    if page is None:
        return myst_to_markdown(text)
    text = myst_to_markdown(text, path=page.path, includes=SphinxIncludes(
        source_dir=page.project, project=page.project, reads=page.reads),
        substitutions=_myst_substitutions(page))
    if page.settings.get("dollarmath") or page.settings.get("amsmath"):
        text = math_fenced(text, dollars=bool(page.settings.get("dollarmath")),
                           amsmath=bool(page.settings.get("amsmath")))
    return text


def _myst_substitutions(page: PageFile) -> dict[str, str] | None:
    values = page.settings.get("substitutions")
    if values is None:
        return None  # the extension is off: {{ }} is text
    myst = page.front_matter.get("myst")
    own = myst.get("substitutions") if isinstance(myst, Mapping) else None
    if not isinstance(own, Mapping):
        own = page.front_matter.get("substitutions")
    if isinstance(own, Mapping):
        values = {**values, **{str(k): str(v) for k, v in own.items()}}
    return dict(values)


def mdx(text: str, page: PageFile | None) -> str:
    """MDX, with the partials it imports in place."""
    if page is not None:
        text = expand_partials(text, page=page.path, project=page.project, reads=page.reads)
    return mdx_to_markdown(text)


def mkdocs(text: str, page: PageFile | None) -> str:
    """In the order MkDocs renders them: the include-markdown plugin's includes, the Jinja
    the macros plugin renders over the page (which reads as Liquid does), the brace
    includes (``{* … *}`` listings, then ``{! … !}``), the snippets it takes in,
    arithmatex's display math, abbreviations, blocks, then icons and attribute lists."""
    settings = page.settings if page is not None else {}
    if page is not None and settings.get("include_markdown"):
        text = expand_include_markdown(text, page=page.path, project=page.project,
                                       reads=page.reads)
    if settings.get("macros"):
        text = liquid_to_markdown(text)
    if page is not None and settings.get("include_variants"):
        text = expand_include_variants(text, project=page.project, reads=page.reads,
                                       page=page.path)
    if page is not None and (braces := settings.get("brace_includes")):
        text = expand_brace_includes(text, project=page.project, reads=page.reads,
                                     settings=BraceIncludes(**braces), page=page.path)
    if page is not None and (snippets := settings.get("snippets")):
        text = expand_snippets(text, project=page.project, reads=page.reads,
                               page=page.path, **snippets)
    if settings.get("math"):
        text = math_fenced(text, amsmath=True)
    if settings.get("abbr"):
        text = abbreviations_removed(text)
    return inline_marks_removed(admonitions_to_markdown(text),
                                icons=bool(settings.get("emoji")),
                                attr_lists=bool(settings.get("attr_list")))


def vitepress(text: str, page: PageFile | None) -> str:
    """Its inclusions, then its containers."""
    if page is not None:
        text = expand_includes(text, page=page.path, project=page.project, reads=page.reads,
                               source_root=page.project / page.settings.get("srcDir", "."))
    return containers_to_markdown(text)


def mystmd(text: str, page: PageFile | None) -> str:
    """Its headings as mystmd reads them (the title, labels), then MyST as Sphinx's, its
    includes relative to the page."""
    text = mystmd_headings(text, title=page.front_matter.get("title") if page else None)
    if page is not None:
        text = myst_to_markdown(text, path=page.path, includes=SphinxIncludes(
            source_dir=page.project, project=page.project, reads=page.reads),
            directive_sections=True)
    else:
        text = myst_to_markdown(text, directive_sections=True)
    return math_fenced(text, dollars=True, amsmath=True)


def quarto(text: str, page: PageFile | None) -> str:
    """Its includes, cells, divs and shortcodes, then Pandoc's display math."""
    if page is None:
        text = quarto_to_markdown(text)
    else:
        text = quarto_to_markdown(text, page=page.path, project=page.project,
                                  reads=page.reads, front_matter=page.front_matter,
                                  project_metadata=page.settings.get("metadata"))
    return math_fenced(text)


def mdbook(text: str, page: PageFile | None) -> str:
    """Its include links, with the files they name in place."""
    return text if page is None else expand_links(text, page=page.path, project=page.project,
                                                  reads=page.reads)


def page_markdown(body: str, *, fmt: str, dialect: Dialect | None = None,
                  page: PageFile | None = None) -> str:
    """A markdown page's body as its readers see it: read in ``dialect`` (the generator's,
    ``Generator.markdown``); ``.mdx`` is MDX anywhere, and raw HTML reads as a browser
    shows it whatever the generator."""
    if fmt == "mdx":
        return html_to_text(mdx(body, page))
    return html_to_text(dialect(body, page) if dialect is not None else body)
