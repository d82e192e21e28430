"""Quarto's markdown (Pandoc's, with Quarto's cells, divs and shortcodes), read as the
rendered page shows it.

- ``{{< include _part.qmd >}}`` alone on a line puts that file there (its front matter
  aside; a path from ``/`` starts at the project), nested ten deep, under ``includes``'
  rules.
- ``{{< var name >}}`` shows the value ``_variables.yml`` gives it (a dotted name goes
  into mappings), ``{{< meta name >}}`` the page's metadata (its front matter, its
  folders' ``_metadata.yml``, ``_quarto.yml``), ``{{< kbd Ctrl-C >}}`` its keys; other
  shortcodes show nothing, and an escaped one (``{{{< var x >}}}``) shows itself.
- A code cell (```` ```{python} ````) is a code block in its language without its ``#|``
  option lines; one with ``echo: false`` or ``include: false`` (knitr's
  ``{r, echo=FALSE}`` too) shows no code, and an unexecuted one (```` ```{{r}} ````)
  shows as written. A raw block (```` ```{=html} ````) shows its HTML as text, one for
  another format nothing; ```` ```{.python} ```` is Python.
- A heading reads as Pandoc reads it, which gives its id: ``---``, ``--`` and ``...``
  typographic, ``<br>`` a space, a shortcode nothing (Quarto resolves it only after the
  id is made).
- An attribute list after a code span, a link or a span (`` `f()`{.python} ``) shows
  nothing.
- A fenced div (``::: {.callout-note}`` … ``:::``) is its content. A callout opens with
  its label and title (``**Note: Title**``; the title from ``title="…"`` or from the
  heading that starts it, which is no section); a tab of a ``.panel-tabset`` reads as its
  heading made a label; ``.content-hidden`` (``.content-visible`` for another format)
  shows nothing.

Every scan is one pass over the lines; divs nest at most ``MAX_DIVS`` deep (deeper fences
are text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..frontmatter import without_front_matter
from ..yamlfile import load_yaml_config
from .goldmark_attributes import (
    pandoc_inline_attributes_removed,
    split_pandoc_attributes,
)
from .includes import IncludedFiles, normalized
from .inline_html import FENCE, code_spans, fence_end

MAX_DEPTH = 10
MAX_DIVS = 64
_VARIABLES = ("_variables.yml", "_variables.yaml")
_INCLUDE = re.compile(r"[ \t]*\{\{<[ \t]*include[ \t]+([^<>{}\n]+)>\}\}[ \t]*")
_SHORTCODE = re.compile(r"(\{?)\{\{<[ \t]*([\w-]+)([^<>{}\n]*)>\}\}(\}?)")
_VERBATIM_CELL = re.compile(r"\{\{[ \t]*([A-Za-z][\w+-]*)[^{}]*\}\}[ \t]*$")
_CELL = re.compile(r"\{[ \t]*([A-Za-z][\w+-]*)[ \t]*,?(.*)\}[ \t]*$")
_CLASS_INFO = re.compile(r"\{[ \t]*\.([A-Za-z][\w+-]*)[^}]*\}[ \t]*$")
_RAW_INFO = re.compile(r"\{[ \t]*=([\w-]+)[ \t]*\}[ \t]*$")
_OPTION = re.compile(r"[ \t]*#\|[ \t]?(.*)")
_KNITR_HIDDEN = re.compile(r"\b(?:echo|include)[ \t]*=[ \t]*(?:FALSE|F|false)\b")
_DIV = re.compile(r" {0,3}:{3,}")
_CLASSES = re.compile(r"(?:^|[\s{])\.?([A-Za-z][\w-]*)")
_TITLE = re.compile(r"\btitle[ \t]*=[ \t]*(?:\"((?:[^\"\\]|\\.)*)\"|'([^']*)')")
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]+|$)")
_CALLOUTS = {"note": "Note", "tip": "Tip", "warning": "Warning", "caution": "Caution",
             "important": "Important"}


def quarto_to_markdown(text: str, *, page: Path | None = None, project: Path | None = None,
                       reads: list[Path] | None = None,
                       variables: Mapping[str, Any] | None = None,
                       front_matter: Mapping[str, Any] | None = None,
                       project_metadata: Mapping[str, Any] | None = None) -> str:
    """The page as its readers see it (see the module docstring); files the page takes
    in are appended to ``reads``. ``{{< meta >}}`` looks in the page's front matter, then
    in the ``_metadata.yml`` of its folder and the folders above it in the project, then
    in ``project_metadata`` (``_quarto.yml``); ``{{< var >}}`` in ``variables``, by
    default the project's ``_variables.yml``. A file read is appended to ``reads``."""
    files = (IncludedFiles(project, [] if reads is None else reads)
             if page is not None and project is not None else None)
    if files is not None and page is not None and project is not None and "include" in text:
        text = _with_includes(text, page, project, files, (normalized(page),))
    if variables is None and files is not None and project is not None and "var" in text:
        variables = next((load_yaml_config(found) for name in _VARIABLES
                          if (found := files.read(project / name)) is not None), {})
    layers: list[Mapping[str, Any]] = [front_matter or {}]
    if files is not None and page is not None and project is not None and "meta" in text:
        layers.extend(_folder_metadata(page, project, files))
    layers.append(project_metadata or {})
    lines = _cells(text.split("\n"))
    return "\n".join(_divs(lines, variables or {}, layers))


def _folder_metadata(page: Path, project: Path, files: IncludedFiles
                     ) -> list[Mapping[str, Any]]:
    """The ``_metadata.yml`` mappings Quarto merges into a page's, nearest folder first."""
    found: list[Mapping[str, Any]] = []
    folder = page.parent
    for _ in range(MAX_DEPTH * 4):
        if not folder.is_relative_to(project):
            break
        text = files.read(folder / "_metadata.yml")
        if text is not None:
            found.append(load_yaml_config(text))
        if folder == project:
            break
        folder = folder.parent
    return found


def _with_includes(text: str, file: Path, project: Path, files: IncludedFiles,
                   within: tuple[Path, ...]) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence:
            end = fence_end(lines, i + 1, fence.group(1), len(lines[i]) - len(lines[i].lstrip()))
            out.extend(lines[i:end + 1])
            i = end + 1
            continue
        m = _INCLUDE.fullmatch(lines[i])
        if m is None:
            out.append(lines[i])
        else:
            written = m.group(1).strip().strip("'\"").strip()
            path = normalized(project / written.lstrip("/") if written.startswith("/")
                              else file.parent / written)
            taken = (files.read(path) if path not in within and len(within) <= MAX_DEPTH
                     else None)
            if taken is not None:
                out.append(_with_includes(without_front_matter(taken), path, project, files,
                                          (*within, path)))
        i += 1
    return "\n".join(out)


def _cells(lines: list[str]) -> list[str]:
    """Code cells and raw blocks as the page shows them; other lines as they are."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            out.append(lines[i])
            i += 1
            continue
        marker = fence.group(1)
        end = fence_end(lines, i + 1, marker, len(lines[i]) - len(lines[i].lstrip()))
        info = lines[i][fence.end():].strip()
        body = lines[i + 1:end]
        closing = lines[end:end + 1]
        opening = lines[i][:fence.end()]
        i = end + 1
        if (raw := _RAW_INFO.match(info)) is not None:
            if raw.group(1).lower() == "html":
                out.extend([opening + "html", *body, *closing])
            continue
        if (verbatim := _VERBATIM_CELL.match(info)) is not None:  # shown as written
            out.extend([opening + verbatim.group(1).lower(), *body, *closing])
            continue
        if (cls := _CLASS_INFO.match(info)) is not None:
            out.extend([opening + cls.group(1), *body, *closing])
            continue
        cell = _CELL.match(info)
        if cell is None:
            out.extend([opening + info, *body, *closing])
            continue
        options = []
        first = 0
        while first < len(body) and (option := _OPTION.match(body[first])) is not None:
            options.append(option.group(1).strip().lower())
            first += 1
        body = body[first:]
        if _KNITR_HIDDEN.search(cell.group(2)) or any(
                o.replace(" ", "") in ("echo:false", "include:false") for o in options):
            continue
        out.extend([opening + cell.group(1).lower(), *body, *closing])
    return out


def _divs(lines: list[str], variables: Mapping[str, Any],
          metadata: list[Mapping[str, Any]]) -> list[str]:
    """Fenced divs as their content (labelled callouts, tabs as labels, hidden content
    left out) and shortcodes as what they show; code blocks as they are."""
    out: list[str] = []
    stack: list[str] = []  # each open div's kind: "callout", "tabset", "hidden" or ""
    hidden = 0  # open divs whose content shows nothing
    pending: tuple[int, str] | None = None  # a callout's label line waiting for its title

    def settle(title: str = "") -> None:
        nonlocal pending
        if pending is not None:
            at, label = pending
            out[at] = f"**{label}: {title}**" if title else f"**{label}:**"
            pending = None

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            end = fence_end(lines, i + 1, fence.group(1), len(line) - len(line.lstrip()))
            if not hidden:
                settle()
                out.extend(lines[i:end + 1])
            i = end + 1
            continue
        i += 1
        div = _div(line)
        if div is not None and div and len(stack) < MAX_DIVS:
            kind, label = _div_kind(div)
            stack.append(kind)
            if kind == "hidden":
                hidden += 1
            elif not hidden and kind == "callout":
                settle()
                title = _TITLE.search(div)
                out.append("")
                pending = (len(out) - 1, label)
                if title is not None:
                    settle(title.group(1) or title.group(2) or "")
            continue
        if div is not None and not div and stack:
            if stack.pop() == "hidden":
                hidden -= 1
            settle()
            out.append("")
            continue
        if hidden:
            continue
        line = pandoc_inline_attributes_removed(line)
        heading = _heading_text(line)
        if heading is not None:
            line = _as_pandoc_reads_heading(line)
            heading = _heading_text(line)
        if pending is not None and line.strip():
            settle(heading or "")
            if heading is not None:
                continue
        if heading is not None and stack and stack[-1] == "tabset":
            out.append(f"**{heading}**")
            continue
        out.append(line if heading is not None or "{{<" not in line
                   else _shortcodes(line, variables, metadata))
    settle()
    return out


_SMART = (("---", "\u2014"), ("--", "\u2013"), ("...", "\u2026"))
_BREAK = re.compile(r"<br[ \t]*/?>", re.IGNORECASE)


def _as_pandoc_reads_heading(line: str) -> str:
    """A heading line as Pandoc reads it, which gives its id: dashes and ellipses made
    typographic (``smart``), a ``<br>`` a space, and a shortcode nothing (Quarto reads
    it as an empty span; its value shows only later); code spans as they are."""
    out: list[str] = []
    pos = 0
    for start, end in [*code_spans(line), (len(line), len(line))]:
        text = _SHORTCODE.sub(lambda m: m.group(0)[1:-1] if m.group(1) and m.group(4)
                              else m.group(1) + m.group(4), line[pos:start])
        for plain, typographic in _SMART:
            text = text.replace(plain, typographic)
        out.append(_BREAK.sub(" ", text))
        out.append(line[start:end])
        pos = end
    return "".join(out)


def _div(line: str) -> str | None:
    """The attributes of a div fence line (``''`` for a closing one); None for other
    lines."""
    m = _DIV.match(line)
    return None if m is None else line[m.end():].strip().rstrip(":").strip()


def _heading_text(line: str) -> str | None:
    """The text of an ATX heading line, its attribute list and closing ``#``s aside."""
    m = _HEADING.match(line)
    if m is None:
        return None
    text = line[m.end():].rstrip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare.rstrip()
    split = split_pandoc_attributes(text)
    return split[0] if split is not None else text


def _div_kind(attributes: str) -> tuple[str, str]:
    """(kind, callout label) of a div opened with ``attributes``."""
    classes = [c.lower() for c in _CLASSES.findall(attributes)]
    for name in classes:
        if name.startswith("callout-"):
            kind = name.removeprefix("callout-")
            return "callout", _CALLOUTS.get(kind, kind.capitalize())
        if name == "panel-tabset":
            return "tabset", ""
        if name == "content-hidden" and _for_html(attributes, default=True):
            return "hidden", ""
        if name == "content-visible" and not _for_html(attributes, default=True):
            return "hidden", ""
    return "", ""


def _for_html(attributes: str, *, default: bool) -> bool:
    """Whether a ``when-format``/``unless-format`` condition names HTML (the page's
    format); ``default`` when it sets none."""
    when = re.search(r"when-format[ \t]*=[ \t]*[\"']?([\w-]+)", attributes)
    unless = re.search(r"unless-format[ \t]*=[ \t]*[\"']?([\w-]+)", attributes)
    if when is not None:
        return when.group(1).lower() in ("html", "html5", "html:js")
    if unless is not None:
        return unless.group(1).lower() not in ("html", "html5", "html:js")
    return default


def _shortcodes(line: str, variables: Mapping[str, Any],
                metadata: list[Mapping[str, Any]]) -> str:
    def shown(m: re.Match[str]) -> str:
        before, name, args, after = m.groups()
        if before and after:  # {{{< x >}}}: the shortcode itself, as written
            return m.group(0)[1:-1]
        args = args.strip().strip("'\"")
        value: Any = ""
        if name == "var":
            value = _dotted(variables, args)
        elif name == "meta":
            value = next((v for layer in metadata if (v := _dotted(layer, args)) != ""), "")
        elif name == "kbd":
            value = re.sub(r"\b(?:mac|win|linux)[ \t]*=[ \t]*", "", args).strip("'\" ")
        text = value if isinstance(value, str | int | float) and not isinstance(value, bool) \
            else ""
        return before + str(text) + after
    return _SHORTCODE.sub(shown, line)


def _dotted(values: Mapping[str, Any], name: str) -> Any:
    node: Any = values
    for part in name.split(".")[:16]:
        if not isinstance(node, Mapping) or part not in node:
            return ""
        node = node[part]
    return node
