"""Jupyter notebooks (``.ipynb``) as the page MyST-NB, nbsphinx or Jupyter Book makes of
them: markdown cells as markdown, code cells as code blocks in the kernel's language, each
followed by the text it printed or returned (a ``text/markdown`` result as markdown).

Outputs the page shows as something else (an image, an HTML table, a widget) or that
repeat an error's traceback are left out; a long output is cut at ``MAX_OUTPUT_CHARS``.
Cells tagged ``remove-cell`` (or ``remove_cell``), and nbsphinx's ``"nbsphinx": "hidden"``
cells, show nothing; ``remove-input`` and ``remove-output`` drop one part. Older notebooks
(nbformat 3: worksheets, ``input``, heading cells) read too.

As Quarto reads them (``reader="quarto"``), a code cell's leading ``#|`` lines are its
options, not its code: ``include: false`` shows nothing of the cell, ``echo: false`` no
code, ``output: false`` no output; a first raw cell holding only a ``---`` YAML block is
the page's front matter. nbdev (``reader="nbdev"``), which hands Quarto its notebooks,
also drops ``#| hide`` cells, reads any raw cell that is only a ``---`` block as front
matter, and makes the first markdown cell with a ``# Title`` line the title (a ``>``
line the description, ``- key: value`` lines more fields), not text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import yaml

from kbctl.errors import ExtractError
from kbctl.yamlfile import load_yaml_config

from .inline_html import fenced

MAX_OUTPUT_CHARS = 10_000
# What a page renders in place of the text of a result, when the result offers it.
_RICH = ("application/vnd.jupyter.widget-view+json", "text/html", "image/svg+xml",
         "image/png", "image/jpeg", "image/gif", "text/latex")
# Terminal colours in printed text: the page shows the colour, not the escape
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RAW_FRONT_MATTER = re.compile(r"---[ \t]*\n(.*?\S.*?)\n---", re.DOTALL)
# nbdev's title cell: "# Title", "> description", "- key: value" lines
_H1 = re.compile(r"^#[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_QUOTE = re.compile(r"^>[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_ITEM = re.compile(r"^-[ \t]+(\S[^\n]*:[^\n]*\S)[ \t]*$", re.MULTILINE)
_MAX_ITEMS = 100


READERS = ("jupyter", "quarto", "nbdev")


def notebook_to_markdown(text: str, *, reader: str = "jupyter") -> str:
    """The markdown of a notebook's JSON text, front matter first when the ``reader``
    (one of ``READERS``) finds some; ExtractError when it is no notebook."""
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ExtractError(f"not a notebook: {exc}") from exc
    if not isinstance(notebook, Mapping):
        raise ExtractError("not a notebook: its JSON is no object")
    cells = notebook.get("cells")
    if cells is None and isinstance(notebook.get("worksheets"), list):  # nbformat 3
        cells = [cell for sheet in notebook["worksheets"] if isinstance(sheet, Mapping)
                 and isinstance(sheet.get("cells"), list) for cell in sheet["cells"]]
    if not isinstance(cells, list):
        raise ExtractError("not a notebook: it has no list of cells")
    language = _language(notebook.get("metadata"))
    front_matter: dict[str, Any] = {}
    parts: list[str] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, Mapping):
            continue
        if reader != "jupyter" and (index == 0 or reader == "nbdev") and _front_matter(
                cell, front_matter, nbdev=reader == "nbdev"):
            continue
        parts.extend(_cell(cell, language, reader != "jupyter"))
    head = (f"---\n{yaml.safe_dump(front_matter, allow_unicode=True)}---\n\n"
            if front_matter else "")
    return head + "\n\n".join(part for part in parts if part.strip()) + "\n"


def _front_matter(cell: Mapping[str, Any], found: dict[str, Any], *, nbdev: bool) -> bool:
    """Whether ``cell`` is front matter (a raw ``---`` block; with ``nbdev``, also the
    first markdown cell with a ``# Title`` line), its fields added to ``found``."""
    kind = cell.get("cell_type")
    source = _text(cell.get("source"))
    if kind == "raw":
        block = _RAW_FRONT_MATTER.fullmatch(source.strip())
        fields = load_yaml_config(block.group(1)) if block else {}
    elif kind == "markdown" and nbdev and "title" not in found:
        fields = _nbdev_title(source)
    else:
        return False
    found.update(fields)
    return bool(fields)


def _nbdev_title(source: str) -> dict[str, Any]:
    title = _H1.search(source)
    if title is None:
        return {}
    fields: dict[str, Any] = {"title": title.group(1)}
    description = _QUOTE.search(source)
    if description is not None:
        fields["description"] = description.group(1)
    items = _ITEM.findall(source)
    if items:
        fields.update(load_yaml_config("\n".join(items[:_MAX_ITEMS])))
    return fields


def _language(metadata: Any) -> str:
    if not isinstance(metadata, Mapping):
        return "python"
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        value = section.get(field) if isinstance(section, Mapping) else None
        if isinstance(value, str) and value.strip() and value.isprintable():
            return value.strip().split()[0].lower()
    return "python"


def _cell(cell: Mapping[str, Any], language: str, cell_options: bool) -> list[str]:
    metadata = cell.get("metadata") if isinstance(cell.get("metadata"), Mapping) else {}
    tags = {str(tag).replace("_", "-") for tag in metadata.get("tags", ())
            if isinstance(tag, str)} if isinstance(metadata.get("tags"), list) else set()
    if "remove-cell" in tags or metadata.get("nbsphinx") == "hidden":
        return []
    kind = cell.get("cell_type")
    source = _text(cell.get("source", cell.get("input")))
    if kind == "markdown":
        return [source]
    if kind == "heading":  # nbformat 3
        level = cell.get("level")
        marks = "#" * (level if isinstance(level, int) and 1 <= level <= 6 else 1)
        return [f"{marks} {' '.join(source.split())}"]
    if kind != "code":
        return []  # raw cells reach only the output format they name
    if cell_options:  # Quarto's "#|" lines (nbdev's "#| hide" among them)
        source, options = _options(source)
        tags |= {f"remove-{part}" for option, part in (
            ("include:false", "cell"), ("hide", "cell"), ("echo:false", "input"),
            ("output:false", "output")) if option in options}
        if "remove-cell" in tags:
            return []
    shown = [] if "remove-input" in tags or not source.strip() else [
        "\n".join(fenced(source.rstrip("\n"), language))]
    outputs = cell.get("outputs")
    if "remove-output" not in tags and isinstance(outputs, list):
        shown.extend(_output(output) for output in outputs if isinstance(output, Mapping))
    return shown


def _options(source: str) -> tuple[str, set[str]]:
    """A Quarto cell's code without its leading ``#|`` lines, and those options with
    their spaces removed (``echo:false``)."""
    lines = source.split("\n")
    first = 0
    while first < len(lines) and lines[first].lstrip().startswith("#|"):
        first += 1
    options = {"".join(line.lstrip()[2:].split()).lower() for line in lines[:first]}
    return "\n".join(lines[first:]), options


def _output(output: Mapping[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream" or kind == "pyout" and "text" in output:  # pyout: nbformat 3
        return _listing(_text(output.get("text")))
    if kind not in ("execute_result", "display_data"):
        return ""  # an error: its traceback is no docs
    data = output.get("data")
    if not isinstance(data, Mapping) or any(key in data for key in _RICH):
        return ""
    if "text/markdown" in data:
        return _cut(_text(data["text/markdown"]))
    return _listing(_text(data.get("text/plain")))


def _listing(text: str) -> str:
    text = _ANSI.sub("", _cut(text)).rstrip("\n")
    return "\n".join(fenced(text)) if text.strip() else ""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "\n…"


def _text(value: Any) -> str:
    """A notebook's multi-line string: one string, or a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(item for item in value if isinstance(item, str))
    return ""
