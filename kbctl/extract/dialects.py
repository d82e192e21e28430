"""Each docs generator's markdown dialect, read as the text its pages show.

A generator renders syntax of its own before or around markdown (MDX's JSX, Hugo's
shortcodes, Jekyll's Liquid, MkDocs' indented admonitions, ``:::`` containers); kbctl runs
none of it, and reads each as what a reader of the built page sees. A new dialect is one
module and one line here.
"""

from __future__ import annotations

from collections.abc import Callable

from .admonitions import admonitions_to_markdown
from .liquid import liquid_to_markdown
from .mdx import containers_to_markdown, mdx_to_markdown
from .shortcodes import shortcodes_to_markdown

DIALECTS: dict[str, Callable[[str], str]] = {
    "docusaurus": mdx_to_markdown,  # Docusaurus reads .md as MDX too
    "starlight": containers_to_markdown,
    "vitepress": containers_to_markdown,
    "hugo": shortcodes_to_markdown,
    "mkdocs": admonitions_to_markdown,
    "jekyll": liquid_to_markdown,
}


def page_markdown(body: str, *, generator: str, fmt: str) -> str:
    """A markdown page's body as its generator's readers see it; ``.mdx`` is MDX anywhere."""
    if fmt == "mdx":
        return mdx_to_markdown(body)
    read = DIALECTS.get(generator)
    return read(body) if read is not None else body
