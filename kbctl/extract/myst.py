"""MyST markdown (Sphinx's markdown) → what a reader of the built page sees.

MyST writes Sphinx's directives as fences named in braces (```` ```{note} ````, or
``:::{note}`` with ``colon_fence``) and its roles as ``{name}`text```. Read as CommonMark
a directive is a code block and a role literal braces. Here, as the reStructuredText
reader does for the same directives and roles (``rst_sphinx``):

- an admonition or a labelled directive (``{note}``, ``{versionadded} 3.2``,
  ``{seealso}``) becomes a labelled paragraph with its content (an admonition without a
  title takes the heading that opens it, as mystmd does);
- mystmd's ``{myst}`` example shows its source as a code block;
- a code directive (``{code-block} python``) becomes a fence in that language;
- ``{eval-rst}`` shows its content read as reStructuredText (``rst``);
- a directive that shows nothing of its own (``{toctree}``, ``{index}``,
  ``{automodule}``) goes; any other keeps its content;
- given the page's includes (``sphinx_includes``), ``{include}`` puts a file's markdown
  there (read in turn) and ``{literalinclude}`` a file's code; without, they show nothing;
- the directive's options (``:caption: x`` lines, or a ``---`` YAML block) go;
- a role shows its text (``{func}`os.path.join``` → ```os.path.join()```, ``{ref}`the
  guide <guide>``` → ``the guide``);
- ``(label)=`` targets and ``%`` comment lines go.

Plain code fences are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..chunk.headings import normalize_source
from ..errors import ExtractError
from .inline_html import FENCE, code_spans, fence_end, fenced
from .mystmd import TARGET_LINE
from .rst_sphinx import (
    CODE_DIRECTIVES,
    IGNORED_DIRECTIVES,
    LABELLED_DIRECTIVES,
    PYTHON_CODE_DIRECTIVES,
    role_text,
)
from .sphinx_includes import SphinxIncludes

_DIRECTIVE = re.compile(r"([ \t]*)(`{3,}|~{3,}|:{3,})\{([\w:.+-]+)\}[ \t]*(.*)")
_OPTION = re.compile(r"[ \t]*:[\w-]+:(?:[ \t].*)?")
_ROLE = re.compile(r"\{([\w:.+-]+)\}`([^`]+)`")
_ATX = re.compile(r" {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*")
_ADMONITIONS = {"note": "Note", "warning": "Warning", "tip": "Tip", "hint": "Hint",
                "important": "Important", "caution": "Caution", "danger": "Danger",
                "attention": "Attention", "error": "Error", "todo": "To do"}
MAX_DEPTH = 16
MAX_SUBSTITUTION_ROUNDS = 4
MAX_SUBSTITUTED_CHARS = 1 << 20  # per page: values that name each other multiply


@dataclass(frozen=True)
class _File:
    """The file being read and the includes of its page (both None: none are read), and
    the page's substitutions (None: the extension is off, ``{{ }}`` is text)."""

    path: Path | None = None
    includes: SphinxIncludes | None = None
    substitutions: Mapping[str, str] | None = None
    directive_sections: bool = False
    budget: list[int] = field(default_factory=lambda: [MAX_SUBSTITUTED_CHARS])

    def spend(self, chars: int) -> bool:
        """Charge the page's substitution budget (shared with the files it includes);
        False, charging nothing, when it cannot pay."""
        if chars > self.budget[0]:
            return False
        self.budget[0] -= chars
        return True


def myst_to_markdown(text: str, *, path: Path | None = None,
                     includes: SphinxIncludes | None = None,
                     substitutions: Mapping[str, str] | None = None,
                     directive_sections: bool = False) -> str:
    """The page's markdown as its readers see it (see the module docstring); ``path`` is
    the page's file, which its includes are found from; ``substitutions`` the values of
    ``{{ name }}`` when MyST's ``substitution`` extension is on. A heading inside a
    directive is a section only with ``directive_sections`` (mystmd makes one; Sphinx
    does not)."""
    if "{" not in text and "%" not in text and ")=" not in text:
        return text
    reads = path is not None and includes is not None
    file = _File(path if reads else None, includes if reads else None, substitutions,
                 directive_sections)
    return "\n".join(_read(normalize_source(text).split("\n"), 0, file))


def _read(lines: list[str], depth: int, file: _File) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _DIRECTIVE.fullmatch(line) if depth < MAX_DEPTH else None
        fence = None if directive else FENCE.match(line)
        if directive is None and fence is None:
            if file.substitutions is not None and "{{" in line:
                block = _block_substitution(line, file)
                if block is not None and depth < MAX_DEPTH:
                    out.extend(_read(block, depth + 1, file))
                    i += 1
                    continue
                line = _substituted(line, file)
            if not TARGET_LINE.fullmatch(line) and not line.lstrip().startswith("%"):
                out.append(_roles(line) if "{" in line else line)
            i += 1
            continue
        opened = directive or fence
        group = 2 if directive else 1
        end = fence_end(lines, i + 1, opened.group(group), opened.start(group))
        if directive is None:
            out.extend(lines[i:end + 1])
        else:
            indent, _, name, argument = directive.groups()
            out.extend(indent + x if x else "" for x in _directive(
                name, argument.strip(), [x[len(indent):] for x in lines[i + 1:end]], depth,
                file))
        i = end + 1
    return out


def _directive(name: str, argument: str, content: list[str], depth: int,
               file: _File) -> list[str]:
    kind = name.split(":")[-1]
    if kind in ("include", "literalinclude") and file.includes is not None:
        return _included(kind, argument, _options(content), depth, file)
    content = _without_options(content)
    if kind == "eval-rst":
        return _rst(content, file)
    if kind in CODE_DIRECTIVES or name in CODE_DIRECTIVES:
        language = "python" if name in PYTHON_CODE_DIRECTIVES or kind in PYTHON_CODE_DIRECTIVES \
            else (argument.split()[0] if argument.split() else "")
        return fenced("\n".join(content), language)  # a fence longer than any inside
    if kind == "myst":  # mystmd's live example: its source, shown as code
        return fenced("\n".join(content), "markdown")
    if name in IGNORED_DIRECTIVES or kind in IGNORED_DIRECTIVES or kind == "image":
        return []
    body = _read(content, depth + 1, file)
    if kind == "only":  # the one directive whose content may hold sections
        return body
    if not argument and (kind == "admonition" or kind in _ADMONITIONS or (
            kind in LABELLED_DIRECTIVES and not LABELLED_DIRECTIVES[kind][1])):
        argument, body = _heading_title(body)
    if kind == "admonition":  # its argument is its title
        body = _sectioned(body, file)
        return [f"**{argument}**", "", *body] if argument else body
    if kind in _ADMONITIONS:
        label = _ADMONITIONS[kind]
        return [f"**{label}: {argument}**" if argument else f"**{label}:**", "",
                *_sectioned(body, file)]
    if kind in LABELLED_DIRECTIVES:
        label, versioned = LABELLED_DIRECTIVES[kind]
        version, _, rest = argument.partition(" ") if versioned else ("", "", argument)
        head = f"{label} {version}".strip() + ":"
        return [f"**{head}**" + (f" {rest}" if rest else ""), "", *_sectioned(body, file)]
    return ([argument, ""] if argument else []) + _sectioned(body, file)


def _sectioned(body: list[str], file: _File) -> list[str]:
    return body if file.directive_sections else _no_sections(body)


def _no_sections(body: list[str]) -> list[str]:
    """A directive's body with its headings as bold lines: Sphinx makes no section inside
    a directive, so a heading there has no id and its page's sections go on around it
    (MyST-Parser's docs show ``# My nifty title`` in example blocks)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        fence = FENCE.match(body[i])
        if fence is not None:  # code: as written, to its closing line
            end = fence_end(body, i + 1, fence.group(1), fence.start(1))
            out.extend(body[i:end + 1])
            i = end + 1
            continue
        heading = _ATX.fullmatch(body[i])
        out.append(f"**{heading.group(1).strip()}**" if heading else body[i])
        i += 1
    return out


def _roles(line: str) -> str:
    """``line`` with each role as its text; braces inside a code span (```{note}```) are
    what the code shows, no role."""
    spans = code_spans(line) if "`" in line else []
    out: list[str] = []
    pos = k = 0
    while (m := _ROLE.search(line, pos)) is not None:
        while k < len(spans) and spans[k][1] <= m.start():
            k += 1
        if k < len(spans) and spans[k][0] <= m.start():
            out.append(line[pos:spans[k][1]])  # a code span: as written, searched past
            pos = spans[k][1]
            continue
        out.append(line[pos:m.start()])
        out.append(_role(m))
        pos = m.end()
    return "".join(out) + line[pos:]


def _heading_title(body: list[str]) -> tuple[str, list[str]]:
    """An admonition's title from the heading that opens its body (as mystmd reads it;
    Sphinx allows no section there), and the body without it."""
    first = next((i for i, line in enumerate(body) if line.strip()), None)
    heading = _ATX.fullmatch(body[first]) if first is not None else None
    if heading is None:
        return "", body
    return heading.group(1).strip(), body[first + 1:]


def _included(kind: str, argument: str, options: dict[str, str], depth: int,
              file: _File) -> list[str]:
    """What ``{include}`` or ``{literalinclude}`` of ``argument`` shows (nothing when
    the file cannot be read)."""
    assert file.includes is not None and file.path is not None
    if kind == "literalinclude":
        code = file.includes.code(argument, file.path, options)
        return fenced(code[1], code[0]) if code else []
    found = file.includes.text(argument, file.path, options)
    if found is None or depth >= MAX_DEPTH:
        return []
    path, text = found
    return _read(normalize_source(text).split("\n"), depth + 1,
                 _File(path, file.includes, file.substitutions, file.budget))


def _rst(content: list[str], file: _File) -> list[str]:
    """What ``{eval-rst}`` shows: its content read as reStructuredText (as it is written,
    when docutils cannot read it)."""
    from .rst import rst_to_markdown  # docutils is loaded only for pages that use it

    text = "\n".join(content)
    try:
        document = rst_to_markdown(
            text, source=str(file.path) if file.path else "<rst>", includes=file.includes)
    except ExtractError:
        return content
    return document.markdown.split("\n")


def _expressions(line: str) -> list[tuple[int, int]]:
    """(start, end) of each ``{{ … }}`` of ``line``, braces inside allowed
    (``{{ '{}'.format(x) }}``); found with ``str.find``, in linear time."""
    found: list[tuple[int, int]] = []
    pos = 0
    while (start := line.find("{{", pos)) >= 0:
        end = line.find("}}", start + 2)
        if end < 0:
            break  # no later "{{" can close either
        found.append((start, end + 2))
        pos = end + 2
    return found


def _block_substitution(line: str, file: _File) -> list[str] | None:
    """The lines of a substitution alone on its line whose value runs over several lines
    (a directive, a list): MyST reads it as blocks there. None for any other line, or
    once the page's substitutions have spent their budget."""
    assert file.substitutions is not None
    stripped = line.strip()
    whole = _expressions(stripped) == [(0, len(stripped))]
    value = file.substitutions.get(stripped[2:-2].strip()) if whole else None
    if value is None or "\n" not in value.strip() or not file.spend(len(value)):
        return None
    indent = line[:len(line) - len(line.lstrip())]
    return [indent + x if x else "" for x in normalize_source(value.strip()).split("\n")]


def _substituted(line: str, file: _File) -> str:
    """``line`` with each ``{{ name }}`` outside code spans as its value (values may name
    others, followed ``MAX_SUBSTITUTION_ROUNDS`` deep); an expression that is not a known
    name (a filter, a method call) shows nothing, as kbctl runs no Jinja. Values that
    name each other over and over stop at the page's budget, left as written."""
    assert file.substitutions is not None
    for _ in range(MAX_SUBSTITUTION_ROUNDS):
        if "{{" not in line:
            break
        spans = code_spans(line) if "`" in line else []
        out: list[str] = []
        pos = k = 0
        for start, end in _expressions(line):
            while k < len(spans) and spans[k][1] <= start:
                k += 1
            if k < len(spans) and spans[k][0] <= start:
                continue  # inside a code span: shown as written
            value = file.substitutions.get(line[start + 2:end - 2].strip(), "")
            out.append(line[pos:start])
            out.append(" ".join(value.split("\n")).strip())
            pos = end
        changed = "".join(out) + line[pos:]
        if changed == line or not file.spend(max(len(changed) - len(line), 0)):
            break
        line = changed
    return line


def _options(content: list[str]) -> dict[str, str]:
    """A directive's options, from its ``:key: value`` lines or its ``---`` block."""
    yaml = bool(content) and content[0].strip() == "---"
    lines = content[1:len(content) - len(_without_options(content)) - 1] if yaml else content
    options: dict[str, str] = {}
    for line in lines:
        stripped = line.strip()
        if not yaml and not _OPTION.fullmatch(line):
            break
        key, _, value = (stripped if yaml else stripped[1:]).partition(":")
        options[key.strip()] = value.strip().strip("\"'")
    return options


def _without_options(content: list[str]) -> list[str]:
    """The content after a directive's options: a ``---`` YAML block or ``:key:`` lines."""
    if content and content[0].strip() == "---":
        for j in range(1, len(content)):
            if content[j].strip() == "---":
                return content[j + 1:]
        return content
    j = 0
    while j < len(content) and _OPTION.fullmatch(content[j]):
        j += 1
    return content[j:]


def _role(match: re.Match[str]) -> str:
    shown, code = role_text(match.group(1), match.group(2))
    return f"`{shown}`" if code else shown
