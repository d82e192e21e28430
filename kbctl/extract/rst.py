"""reStructuredText → markdown with Sphinx's ids, for the heading-aware chunker.

docutils parses the file (no raw passthrough, no messages; ``include`` and
``literalinclude`` read the project's files through ``sphinx_includes``, when given); the
tree is written back as markdown: sections as headings carrying their docutils id as an
explicit ``{#id}``, literal and ``code-block`` blocks as fences with their language,
lists, tables, admonitions as labelled text. Sphinx's own roles and directives are not
known to docutils; rather than errors, they become readable text (``:func:`os.getcwd```
→ ```os.getcwd()```), and the Python domain's description directives
(``.. function:: os.path.splitext(path)``) become headings with the id Sphinx gives them
(``os.path.splitext``), so a citation can point at the function itself.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes, statemachine
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Directive, Parser, directives, roles
from docutils.transforms.references import PropagateTargets
from docutils.utils import new_document

from ..errors import ExtractError
from .markdown_escape import literal_line_starts
from .rst_sphinx import (
    IGNORED_DIRECTIVES,
    LABELLED_DIRECTIVES,
    PYTHON_CODE_DIRECTIVES,
    ProjectRoles,
    api_display,
    api_fullname,
    api_id,
    role_text,
    written_name,
)
from .sphinx_includes import SphinxIncludes
from .sphinx_titles import SphinxTitles

_DEFAULT_ROLE_USE = re.compile(r"^[ \t]*\.\.[ \t]+default-role::[ \t]*([\w.:+-]+)[ \t]*$",
                               re.MULTILINE)
_ROLE_USE = re.compile(r"(?<![\w`]):((?:(?!_)\w)+(?:[-.+:](?:(?!_)\w)+)*):`")
_DIRECTIVE_USE = re.compile(r"^[ \t]*\.\.[ \t]+([\w][\w:.+-]*)[ \t]*::", re.MULTILINE)
_AUTO_ID = re.compile(r"id\d+")
_REGISTER_LOCK = threading.Lock()
_BUILTIN_DIRECTIVES = frozenset(directives._directive_registry)  # noqa: SLF001
_BUILTIN_ROLES = frozenset(roles._role_registry) | {"pep", "rfc", "sub", "sup", "t", "title",
                                                   "i", "b", "ab", "ac"}  # noqa: SLF001
MAX_HEADING_LEVEL = 6
# docutils gives each level of indentation (a quote, a list, a directive's body) a copy of
# the lines it holds, so a file's cost grows with its text times its depth: 5 MiB nested
# a hundred levels deep took 0.9 GB. Real pages average under 3 levels a character (the
# Python, Sphinx and pytest docs: at most 2.9); past this average a file is refused.
MAX_MEAN_DEPTH = 12


@dataclass(frozen=True)
class RstDocument:
    title: str | None
    markdown: str


# --- nodes the lenient handlers produce ---------------------------------------------------


class api_description(nodes.General, nodes.Element):  # noqa: N801 - docutils node naming
    """An object description (``.. function::`` …): signatures, an id, a body."""


class labelled(nodes.General, nodes.Element):  # noqa: N801
    """A block that reads as ``Label: text`` (versionadded, seealso, deprecated …)."""


class _AnyOptions(dict):
    """Accepts every option a Sphinx directive may carry, unconverted."""

    def __contains__(self, key: object) -> bool:
        return True

    def __bool__(self) -> bool:  # docutils only looks for options when the spec is truthy
        return True

    def __getitem__(self, key: str):  # type: ignore[override]
        return directives.unchanged


class _Lenient(Directive):
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def _body(self) -> list[nodes.Node]:
        if not self.content:
            return []
        holder = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, holder)
        return list(holder.children)


class _Code(_Lenient):
    """``code-block``, ``sourcecode``, ``code``, ``doctest`` …: a fence with its language."""

    def run(self) -> list[nodes.Node]:
        words = self.arguments[0].split() if self.arguments else []
        language = "python" if self.name in PYTHON_CODE_DIRECTIVES else (
            words[0] if words else "")
        block = nodes.literal_block("\n".join(self.content), "\n".join(self.content))
        block["language"] = language
        caption = self.options.get("caption")
        if isinstance(caption, str) and caption.strip():  # the file name shown above it
            block["title"] = " ".join(caption.split())
        if self.name == "code-tab":  # sphinx-tabs: ".. code-tab:: py Python", its label
            label = " ".join(words[1:]) or language
            return [_tab_label(label), block] if label else [block]
        return [block]


def _tab_label(label: str) -> nodes.paragraph:
    return nodes.paragraph("", "", nodes.strong(label, label))


class _Tab(_Lenient):
    """A content tab (``.. tab:: Linux``, ``tab-item``, ``group-tab``): its panel under
    its label, as the page shows it."""

    def run(self) -> list[nodes.Node]:
        label = " ".join((self.arguments[0] if self.arguments else "").split())
        return ([_tab_label(label)] if label else []) + self._body()


class _Ignored(_Lenient):
    def run(self) -> list[nodes.Node]:
        if self.name in ("highlight", "highlightlang") and self.arguments:
            self.state.document["kbctl_highlight"] = self.arguments[0].split()[0]
        if self.name in ("module", "currentmodule", "py:module", "py:currentmodule"):
            module = (self.arguments[0].split()[0] if self.arguments else "") or None
            self.state.document["kbctl_module"] = None if module == "None" else module
            if self.name in ("module", "py:module") and module:
                target = nodes.target("", "", ids=[f"module-{module}"])
                return [target]
        return []


class _Only(_Lenient):
    """``.. only:: html``: its content as an HTML build shows it, or nothing (``latex``)."""

    def run(self) -> list[nodes.Node]:
        from .rst_sphinx import only_html

        return self._body() if only_html(self.arguments[0] if self.arguments else "") else []


# The includes of the page being parsed (a files source's Sphinx page); None: none are read.
_PAGE = threading.local()


def _page_includes(directive: Directive) -> tuple[SphinxIncludes, Path] | None:
    """The page's includes and the file the directive is written in (an included file's
    own name, for the includes it makes in turn); None when includes are not read."""
    includes = getattr(_PAGE, "includes", None)
    if includes is None or not directive.arguments:
        return None
    machine = directive.state_machine
    source = machine.input_lines.source(directive.lineno - machine.input_offset - 1)
    return includes, Path(source or directive.state.document["source"])


class _Include(_Lenient):
    """``.. include:: file``: its text parsed in place (``sphinx_includes``), or as code
    with ``:literal:`` or ``:code: lang``."""

    def run(self) -> list[nodes.Node]:
        page = _page_includes(self)
        found = page[0].text(self.arguments[0], page[1], self.options) if page else None
        if found is None:
            return []
        path, text = found
        if "literal" in self.options or "code" in self.options:
            block = nodes.literal_block(text, text)
            block["language"] = (self.options.get("code") or "").strip()
            return [block]
        _check_depth(text, path)
        _register(text)
        self.state_machine.insert_input(
            statemachine.string2lines(text, 8, convert_whitespace=True), str(path))
        return []


class _LiteralInclude(_Lenient):
    """``.. literalinclude:: file``: a fence of the file's code (``sphinx_includes``)."""

    def run(self) -> list[nodes.Node]:
        page = _page_includes(self)
        found = page[0].code(self.arguments[0], page[1], self.options) if page else None
        if found is None:
            return []
        block = nodes.literal_block(found[1], found[1])
        block["language"] = found[0]
        return [block]


class _Labelled(_Lenient):
    """``versionadded 3.6 <text>``, ``seealso <text>``…: the label, then the text (Sphinx
    reads the argument's later lines as the directive's text)."""

    def run(self) -> list[nodes.Node]:
        label, takes_version = LABELLED_DIRECTIVES[self.name]
        argument = (self.arguments[0] if self.arguments else "").strip()
        if takes_version and argument:
            version, _, argument = argument.partition("\n") if "\n" in argument else (
                argument.partition(" ") if self.name != "deprecated-removed" else (
                    " ".join(argument.split()[:2]), "", " ".join(argument.split()[2:])))
            label = f"{label} {version.strip()}"
        node = labelled()
        node["label"] = label
        if argument.strip():
            inline, _ = self.state.inline_text(" ".join(argument.split()), self.lineno)
            node += nodes.paragraph("", "", *inline)
        node.extend(self._body())
        return [node]


def _marks_a_target(directive: Directive) -> bool:
    """Whether the project declared this directive a crossref type: it shows nothing."""
    return directive.name in getattr(_PAGE, "targets", frozenset())


class _Generic(_Lenient):
    """Any other directive: its argument as a paragraph, its content parsed."""

    def run(self) -> list[nodes.Node]:
        if _marks_a_target(self):
            return []
        out: list[nodes.Node] = []
        if self.arguments and self.arguments[0].strip():
            argument = self.arguments[0].strip()
            out.append(nodes.paragraph(argument, argument))
        return out + self._body()


class _Describe(_Lenient):
    """An object description: ``.. function::``, ``.. class::``, ``.. envvar::`` …"""

    def run(self) -> list[nodes.Node]:
        if _marks_a_target(self):
            return []
        document = self.state.document
        argument = re.sub(r"\\\n", "", self.arguments[0] if self.arguments else "")
        signatures = [s.strip() for s in argument.split("\n") if s.strip()]
        node = api_description()
        node["signatures"] = signatures
        node["objtype"] = self.name
        ids: list[str] = []
        module = (self.options["module"].strip() or None) if "module" in self.options else (
            document.get("kbctl_module"))
        classes: list[tuple[str, str]] = document.setdefault("kbctl_classes", [])
        fullname = None
        shown = []
        for signature in signatures:
            fullname = api_fullname(self.name, signature, module=module,
                                    enclosing=classes[-1] if classes else None)
            anchor = api_id(self.name, fullname, self.options) if fullname else None
            shown.append(api_display(signature, fullname) if fullname else signature)
            if anchor and anchor not in document.ids and anchor not in ids:
                ids.append(anchor)
        node["ids"] = ids
        node["signatures"] = shown
        for anchor in ids:
            document.ids[anchor] = node
        written = written_name(signatures[-1]) if signatures else None
        nests = self.name.split(":")[-1] in ("class", "exception") and fullname and written
        if nests:
            classes.append((written, fullname))
        try:
            node.extend(self._body())
        finally:
            if nests:
                classes.pop()
        return [node]


def _register(text: str, extlinks: tuple[str, ...] = ()) -> None:
    """Give every role and directive the file uses a handler, so nothing is an error; a
    project's ``extlinks`` roles are ours even where docutils has one of that name."""
    from .rst_sphinx import CODE_DIRECTIVES, DESCRIBE_DIRECTIVES, TAB_DIRECTIVES

    wanted_roles = {m.group(1).lower() for m in _ROLE_USE.finditer(text)} | {
        m.group(1).lower() for m in _DEFAULT_ROLE_USE.finditer(text)}
    wanted_directives = {m.group(1).lower() for m in _DIRECTIVE_USE.finditer(text)}
    with _REGISTER_LOCK:
        for name in wanted_roles - _BUILTIN_ROLES:
            if name not in roles._roles or name in extlinks:  # noqa: SLF001
                roles.register_local_role(name, _sphinx_role)
        directives.register_directive("include", _Include)
        directives.register_directive("only", _Only)
        directives.register_directive("literalinclude", _LiteralInclude)
        for name in wanted_directives | CODE_DIRECTIVES:
            if name in directives._directives and name not in ("code",):  # noqa: SLF001
                continue
            if name in CODE_DIRECTIVES:
                directives.register_directive(name, _Code)
            elif name in DESCRIBE_DIRECTIVES or name.split(":")[-1] in DESCRIBE_DIRECTIVES:
                directives.register_directive(name, _Describe)
            elif name in LABELLED_DIRECTIVES:
                directives.register_directive(name, _Labelled)
            elif name in TAB_DIRECTIVES:
                directives.register_directive(name, _Tab)
            elif name in IGNORED_DIRECTIVES or name.split(":")[-1] in IGNORED_DIRECTIVES:
                directives.register_directive(name, _Ignored)
            elif name not in _BUILTIN_DIRECTIVES:
                directives.register_directive(name, _Generic)


def _titled(kind: str, target: str) -> str | None:
    """The title Sphinx shows for a ``doc`` or ``ref`` of the page being read."""
    titles: SphinxTitles | None = getattr(_PAGE, "titles", None)
    if titles is None:
        return None
    return titles.doc(target, _PAGE.docname) if kind == "doc" else titles.ref(target)


def _sphinx_role(name: str, rawtext: str, text: str, lineno: int, inliner: object,
                 options: dict | None = None, content: list | None = None
                 ) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    shown, literal = role_text(name.lower(), nodes.unescape(text), _titled,
                               getattr(_PAGE, "extlinks", None))
    node: nodes.Node = nodes.literal(rawtext, shown) if literal else nodes.Text(shown)
    return [node], []


_SETTINGS_LOCK = threading.Lock()
_SETTINGS = None


def _settings():  # docutils settings are a plain Values object; built once
    global _SETTINGS
    with _SETTINGS_LOCK:
        if _SETTINGS is None:
            s = get_default_settings(Parser)
            s.report_level = 5
            s.halt_level = 5
            s.warning_stream = io.StringIO()
            s.file_insertion_enabled = False
            s.raw_enabled = False
            s.auto_id_prefix = "id"
            s.syntax_highlight = "none"
            s.tab_width = 8
            s.character_level_inline_markup = False
            _SETTINGS = s
        return _SETTINGS


def rst_to_markdown(text: str, *, source: str = "<rst>",
                    includes: SphinxIncludes | None = None,
                    titles: SphinxTitles | None = None, docname: str = "",
                    project: ProjectRoles | None = None) -> RstDocument:
    """Parse reStructuredText and write it as markdown with explicit heading ids; with
    ``includes``, the page's ``include`` and ``literalinclude`` read their files; with
    ``titles``, a ``:doc:`` or ``:ref:`` without a title of its own shows its target's
    (``docname``: the page's, to resolve relative ``:doc:`` targets). ``project``: what
    the project's ``conf.py`` makes of roles (its ``default_role`` and ``extlinks``).

    Raises ``ExtractError`` when docutils cannot parse the file at all, or it is nested
    deeper than ``MAX_MEAN_DEPTH``.
    """
    _check_depth(text)
    if project and project.default_role:  # as conf.py's does, before the page's own
        text = f".. default-role:: {project.default_role}\n\n{text}"
    _register(text, tuple(project.extlinks) if project else ())
    document = new_document(source, _settings())
    document.reporter.stream = None
    writer = _Writer()
    outer, _PAGE.includes = getattr(_PAGE, "includes", None), includes
    outer_titles = (getattr(_PAGE, "titles", None), getattr(_PAGE, "docname", ""),
                    getattr(_PAGE, "extlinks", None), getattr(_PAGE, "targets", frozenset()))
    _PAGE.titles, _PAGE.docname = titles, docname
    _PAGE.extlinks = project.extlinks if project else None
    _PAGE.targets = project.targets if project else frozenset()
    try:
        Parser().parse(text, document)
        PropagateTargets(document).apply()
        writer.document(document)
    except Exception as exc:  # docutils raises assorted errors (and recursion) on bad input
        raise ExtractError(f"cannot parse reStructuredText: {exc}") from exc
    finally:
        _PAGE.includes = outer
        _PAGE.titles, _PAGE.docname, _PAGE.extlinks, _PAGE.targets = outer_titles
    return RstDocument(title=writer.title, markdown=writer.output())


def _check_depth(text: str, included: Path | None = None) -> None:
    """Refuse text whose mean indentation depth, weighted by the characters at each
    depth, is past ``MAX_MEAN_DEPTH`` (depth: how many indentations enclose a line)."""
    widths = [0]
    weighted = 0
    for line in text.split("\n"):
        body = line.lstrip(" \t")
        if not body:
            continue
        width = len(line[:len(line) - len(body)].expandtabs(8))
        while widths[-1] > width:
            widths.pop()
        if width > widths[-1]:
            widths.append(width)
        weighted += (len(widths) - 1) * len(line)
    if weighted > MAX_MEAN_DEPTH * max(len(text), 4096):
        where = f"{included} (included): " if included else ""
        raise ExtractError(f"{where}nested too deeply to read: its text lies "
                           f"{weighted // len(text)} indentations deep on average (at most "
                           f"{MAX_MEAN_DEPTH} are read)")


# --- the markdown writer -----------------------------------------------------------------


def _joined_descriptions(children: Iterable[nodes.Node]) -> list[nodes.Node]:
    """``children``, with object descriptions written back to back, all but the last
    without a body (``.. method:: Model.save(…)`` then ``.. method:: Model.asave(…)``),
    joined into the one entry a reader sees: every signature, cited at the first. Apart,
    the first was an empty heading and the text went to the last one's."""
    out: list[nodes.Node] = []
    for child in children:
        before = out[-1] if out else None
        if (isinstance(child, api_description) and isinstance(before, api_description)
                and not before.children and before["objtype"] == child["objtype"]):
            child["signatures"] = before["signatures"] + child["signatures"]
            child["ids"] = before["ids"] + [i for i in child["ids"] if i not in before["ids"]]
            out[-1] = child
        else:
            out.append(child)
    return out


def section_anchor(ids: list[str], parent: str | None) -> str | None:
    """The anchor to cite for a section: its title id, or a label on it when the title id
    is a numbered fallback (``id3``: its number depends on everything Sphinx numbers
    before it), or else the enclosing section's."""
    if ids and not _AUTO_ID.fullmatch(ids[0]):
        return ids[0]
    labels = [i for i in ids if not _AUTO_ID.fullmatch(i)]
    return labels[0] if labels else parent


class _Writer:
    """Walks a doctree and writes markdown blocks separated by blank lines."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.title: str | None = None
        self.highlight = ""
        self.anchors: list[str | None] = []

    def output(self) -> str:
        return "\n\n".join(b for b in self.blocks if b.strip()) + "\n"

    def document(self, document: nodes.document) -> None:
        self.highlight = document.get("kbctl_highlight", "")
        children = list(document.children)
        first = document.first_child_not_matching_class(nodes.PreBibliographic)
        if first is not None and isinstance(children[first], nodes.field_list):
            del children[first]  # the page's metadata (:orphan:, :tocdepth: 2): not shown
        self.blocks = self.body(children, level=0)

    # Blocks: each returns a list of markdown blocks.

    def body(self, children: Iterable[nodes.Node], level: int) -> list[str]:
        out: list[str] = []
        for child in _joined_descriptions(children):
            out.extend(self.block(child, level))
        return out

    def block(self, node: nodes.Node, level: int) -> list[str]:
        if isinstance(node, nodes.section):
            return self.section(node, level + 1)
        if isinstance(node, api_description):
            return self.description(node, level)
        if isinstance(node, nodes.paragraph):
            return [literal_line_starts(self.inline(node))]
        if isinstance(node, nodes.literal_block | nodes.doctest_block):
            return [self.fence(node)]
        if isinstance(node, nodes.bullet_list | nodes.enumerated_list):
            return [self.list(node, level)]
        if isinstance(node, nodes.definition_list):
            return self.definitions(node, level)
        if isinstance(node, nodes.field_list):
            return [self.fields(node, level)]
        if isinstance(node, nodes.option_list):
            return [self.options(node, level)]
        if isinstance(node, nodes.table):
            return self.table(node, level)
        if isinstance(node, nodes.Admonition | labelled):
            return self.admonition(node, level)
        if isinstance(node, nodes.block_quote):
            inner = self.body(node.children, level)
            return ["\n".join("> " + line if line else ">" for line in
                              "\n\n".join(inner).split("\n"))] if inner else []
        if isinstance(node, nodes.line_block):
            return ["  \n".join(self.inline(line) for line in node.findall(nodes.line)
                                if isinstance(line, nodes.line))]
        if isinstance(node, nodes.rubric):
            return [f"**{self.inline(node)}**"]
        if isinstance(node, nodes.topic | nodes.sidebar):
            title = node.next_node(nodes.title)
            rest = [c for c in node.children if not isinstance(c, nodes.title)]
            head = [f"**{self.inline(title)}**"] if title is not None else []
            return head + self.body(rest, level)
        if isinstance(node, nodes.image):
            alt = node.get("alt", "")
            return [alt] if alt else []
        if isinstance(node, nodes.figure):
            return self.body([c for c in node.children if not isinstance(c, nodes.image)], level)
        if isinstance(node, nodes.caption | nodes.legend | nodes.attribution):
            return [self.inline(node)]
        if isinstance(node, nodes.footnote | nodes.citation):
            label = node.next_node(nodes.label)
            rest = [c for c in node.children if not isinstance(c, nodes.label)]
            parts = self.body(rest, level)
            if label is not None and parts:
                parts[0] = f"[{label.astext()}] {parts[0]}"
            return parts
        if isinstance(node, nodes.math_block):
            return [f"```math\n{node.astext()}\n```"]
        if isinstance(node, nodes.transition):
            return []
        if isinstance(node, nodes.comment | nodes.system_message | nodes.target
                      | nodes.substitution_definition | nodes.raw | nodes.pending
                      | nodes.title | nodes.meta):
            return []
        if isinstance(node, nodes.Text):
            text = node.astext().strip()
            return [text] if text else []
        if isinstance(node, nodes.TextElement):
            text = self.inline(node)
            return [literal_line_starts(text)] if text.strip() else []
        if isinstance(node, nodes.Element):
            return self.body(node.children, level)
        return []

    def section(self, node: nodes.section, level: int, parent_anchor: str | None = None
                ) -> list[str]:
        title = node.next_node(nodes.title)
        heading_text = " ".join(self.inline(title).split()) if title is not None else ""
        if self.title is None and heading_text:
            self.title = " ".join(title.astext().split())
        anchor = section_anchor(node.get("ids") or [], self.anchors[-1] if self.anchors else None)
        depth = min(max(level, 1), MAX_HEADING_LEVEL)
        head = [f"{'#' * depth} {heading_text}" + (f" {{#{anchor}}}" if anchor else "")]
        rest = [c for c in node.children if not isinstance(c, nodes.title)]
        self.anchors.append(anchor)
        try:
            return head + self.body(rest, level)
        finally:
            self.anchors.pop()

    def description(self, node: api_description, level: int) -> list[str]:
        signatures = [" ".join(s.split()) for s in node.get("signatures", [])]
        out: list[str] = []
        ids = node.get("ids") or []
        if ids and signatures:
            depth = min(level + 1, MAX_HEADING_LEVEL)
            shown = signatures[0].replace("`", "")
            out.append(f"{'#' * depth} `{shown}` {{#{ids[0]}}}")
            out.extend(f"`{s.replace('`', '')}`" for s in signatures[1:])
        else:
            out.extend(f"`{s.replace('`', '')}`" for s in signatures)
        return out + self.body(node.children, level + (1 if ids and signatures else 0))

    def fence(self, node: nodes.Element) -> str:
        code = node.astext()
        language = node.get("language")
        if language is None:
            classes = [c for c in node.get("classes", []) if c != "code"]
            language = classes[0] if classes else (
                "pycon" if isinstance(node, nodes.doctest_block) else self.highlight)
        ticks = "```"
        while ticks in code:
            ticks += "`"
        info = language or ""
        title = node.get("title")
        if title:  # as markdown sources write it: ```jinja title="page.txt"
            info = f'{info or "text"} title="{title.replace(chr(34), chr(39))}"'
        return f"{ticks}{info.replace('`', '')}\n{code.rstrip()}\n{ticks}"

    def list(self, node: nodes.Element, level: int) -> str:
        ordered = isinstance(node, nodes.enumerated_list)
        start = int(node.get("start", 1)) if ordered else 1
        items = []
        for n, item in enumerate(c for c in node.children if isinstance(c, nodes.list_item)):
            marker = f"{start + n}." if ordered else "-"
            inner = "\n\n".join(self.body(item.children, level))
            pad = " " * (len(marker) + 1)
            lines = inner.split("\n")
            items.append(marker + " " + lines[0] + "".join(
                "\n" + (pad + line if line else "") for line in lines[1:]))
        return "\n".join(items)

    def definitions(self, node: nodes.definition_list, level: int) -> list[str]:
        out = []
        for item in node.children:
            if not isinstance(item, nodes.definition_list_item):
                continue
            # "term : classifier" reads as Sphinx shows it, the classifiers after colons
            term = " : ".join(self.inline(t) for t in item.children
                              if isinstance(t, nodes.term | nodes.classifier))
            definition = item.next_node(nodes.definition)
            body = self.body(definition.children, level) if definition is not None else []
            out.append(f"**{term}**" + ("\n" + body[0] if body else ""))
            out.extend(body[1:])
        return out

    def fields(self, node: nodes.field_list, level: int) -> str:
        lines = []
        for field in node.children:
            name = field.next_node(nodes.field_name)
            body = field.next_node(nodes.field_body)
            text = " ".join(self.body(body.children, level)) if body is not None else ""
            lines.append(f"- **{name.astext() if name is not None else ''}:** {text}")
        return "\n".join(lines)

    def options(self, node: nodes.option_list, level: int) -> str:
        lines = []
        for item in node.children:
            group = item.next_node(nodes.option_group)
            desc = item.next_node(nodes.description)
            text = " ".join(self.body(desc.children, level)) if desc is not None else ""
            lines.append(f"- `{group.astext() if group is not None else ''}` {text}")
        return "\n".join(lines)

    def table(self, node: nodes.table, level: int) -> list[str]:
        rows: list[list[str]] = []
        header_rows = 0
        spans = False
        for part in node.findall(nodes.thead):
            header_rows += len([r for r in part.children if isinstance(r, nodes.row)])
        for row in node.findall(nodes.row):
            cells = []
            for entry in row.children:
                if entry.get("morecols") or entry.get("morerows"):
                    spans = True
                cells.append(" ".join(" ".join(self.body(entry.children, level)).split()))
            rows.append(cells)
        if not rows:
            return []
        title = node.next_node(nodes.title)
        out = [f"**{self.inline(title)}**"] if title is not None else []
        width = max(len(r) for r in rows)
        if spans or width == 0:
            return out + [" | ".join(r) for r in rows]
        rows = [r + [""] * (width - len(r)) for r in rows]
        head = rows[0] if header_rows else [""] * width
        body = rows[1:] if header_rows else rows
        lines = ["| " + " | ".join(c.replace("|", "\\|") for c in head) + " |",
                 "|" + " --- |" * width]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
        return out + ["\n".join(lines)]

    def admonition(self, node: nodes.Element, level: int) -> list[str]:
        if isinstance(node, labelled):
            label = node["label"]
            children = list(node.children)
        else:
            title = node.next_node(nodes.title)
            label = self.inline(title) if title is not None and title.parent is node else (
                node.tagname.replace("_", " ").capitalize())
            children = [c for c in node.children if not isinstance(c, nodes.title)]
        parts = self.body(children, level)
        if parts and not parts[0].startswith(("```", "|", "- ", "#", ">")):
            parts[0] = f"**{label}:** {parts[0]}"
        else:
            parts.insert(0, f"**{label}:**")
        return parts

    # Inline text.

    def inline(self, node: nodes.Node | None) -> str:
        if node is None:
            return ""
        out: list[str] = []
        self._inline(node, out)
        return "".join(out).strip()

    def _inline(self, node: nodes.Node, out: list[str]) -> None:
        for child in node.children if isinstance(node, nodes.Element) else [node]:
            if isinstance(child, nodes.Text):
                out.append(child.astext().replace("\n", " "))
            elif isinstance(child, nodes.literal):
                text = child.astext().replace("\n", " ")
                ticks = "``" if "`" in text else "`"
                out.append(f"{ticks}{text}{ticks}")
            elif isinstance(child, nodes.strong):
                out.append(f"**{self.inline(child)}**")
            elif isinstance(child, nodes.emphasis | nodes.title_reference):
                out.append(f"*{self.inline(child)}*")
            elif isinstance(child, nodes.footnote_reference | nodes.citation_reference
                            | nodes.system_message | nodes.target | nodes.raw):
                continue
            elif isinstance(child, nodes.problematic):
                out.append(child.astext())
            elif isinstance(child, nodes.image):
                out.append(child.get("alt", ""))
            elif isinstance(child, nodes.substitution_reference):
                out.append(child.astext())
            elif isinstance(child, nodes.math):
                out.append(f"${child.astext()}$")
            elif isinstance(child, nodes.Element):
                self._inline(child, out)

