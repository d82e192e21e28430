"""What Sphinx adds to reStructuredText, as far as reading the text needs it: its roles
as readable text, its directives by kind, and the ids its domains give described objects.

The ids follow Sphinx's Python domain: the full name (current module, enclosing class,
the signature's own prefix) is the id as written, e.g. ``os.path.splitext`` or
``str.join``; ``.. module::`` adds ``module-NAME``; ``envvar`` gives ``envvar-NAME``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

CODE_DIRECTIVES = frozenset({"code-block", "sourcecode", "code", "doctest", "testcode",
                             "testoutput", "productionlist", "code-tab", "code-cell",
                             "ipython", "jupyter-execute", "click:example"})
# content tabs (sphinx-inline-tabs, sphinx-design, sphinx-tabs): a panel under its label
TAB_DIRECTIVES = frozenset({"tab", "tab-item", "group-tab"})
# code directives whose argument is not a language: the language their code is written in
PYTHON_CODE_DIRECTIVES = frozenset({"doctest", "testcode", "ipython", "jupyter-execute",
                                    "click:example"})
_PY_OBJECTS = ("function", "method", "class", "exception", "data", "attribute",
               "decorator", "decoratormethod", "classmethod", "staticmethod", "property",
               "coroutinefunction", "coroutinemethod", "abstractmethod", "type")
PY_DESCRIBE = frozenset(_PY_OBJECTS)
DESCRIBE_DIRECTIVES = frozenset(_PY_OBJECTS) | {
    "envvar", "describe", "object", "option", "cmdoption", "opcode", "pdbcommand",
    "2to3fixer", "macro", "member", "var", "struct", "union", "enum", "enumerator",
    "namespace", "concept", "directive", "role", "confval", "setting"}
IGNORED_DIRECTIVES = frozenset({
    "toctree", "index", "highlight", "highlightlang", "module", "currentmodule",
    "sectionauthor", "moduleauthor", "codeauthor", "tabularcolumns", "literalinclude",
    "autofunction", "automodule", "autoclass", "automethod", "autodata", "autoattribute",
    "autoexception", "autosummary", "testsetup", "testcleanup", "program", "default-domain",
    "raw", "include", "only-html", "ifconfig", "audit-event-table", "limited-api-list",
    "miscnews", "c:namespace", "cpp:namespace", "py:module", "py:currentmodule",
    "inheritance-diagram", "graphviz", "digraph", "graph", "plot", "click:run",
    "changelog_imports"})  # (sphinx-changelog: entries imported for links, not shown)
# directive → (label, whether the argument starts with a version for the label)
LABELLED_DIRECTIVES: dict[str, tuple[str, bool]] = {
    "versionadded": ("Added in version", True),
    "versionchanged": ("Changed in version", True),
    "versionremoved": ("Removed in version", True),
    "deprecated": ("Deprecated since version", True),
    "deprecated-removed": ("Deprecated since version", True),
    "seealso": ("See also", False),
    "impl-detail": ("CPython implementation detail", False),
    "availability": ("Availability", False),
    "audit-event": ("Raises an auditing event", False),
    "versionadded-removed": ("Added in version", True),
}

# (module or class prefix, name), then optional type parameters, arguments and return
# annotation, matched but not captured, in a signature stripped of surrounding space. Each
# run of space belongs to the part after it, so no two runs can take the same characters:
# three runs side by side (as before) made 800 spaces in a hostile signature cost 0.85 s,
# growing with their cube.
_PY_SIG = re.compile(r"([\w.]*\.)?(\w+)(?:\s*\[[^\]]*\])?(?:\s*\(.*\)(?:\s*->.*)?)?",
                     re.DOTALL)


def _signature(signature: str) -> tuple[str, re.Match[str] | None]:
    """The signature without surrounding space, and its parts (None: not a Python one)."""
    stripped = signature.strip()
    return stripped, _PY_SIG.fullmatch(stripped)
_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9._]+")
_ID_ENDS = re.compile(r"^[-0-9._]+|-+$")
_XREF_ROLES = frozenset({
    "func", "meth", "class", "mod", "data", "attr", "exc", "obj", "const", "type",
    "envvar", "option", "program", "token", "keyword", "opcode", "file", "samp", "kbd",
    "command", "makevar", "mailheader", "mimetype", "newsgroup", "regexp", "macro",
    "member", "var", "struct", "union", "enum", "enumerator", "expr", "texpr", "cdata",
    "cfunc", "ctype", "cmacro", "cmember", "code", "pdbcmd", "monitoring-event"})
_CALLABLE_ROLES = frozenset({"func", "meth"})
# The Python domain's roles: a leading dot (search the current module first) is not shown
_PYTHON_ROLES = frozenset({"func", "meth", "class", "mod", "data", "attr", "exc", "obj",
                           "const", "type"})
_PROSE_ROLES = {"pep": "PEP {}", "rfc": "RFC {}", "issue": "issue {}", "gh": "gh-{}",
                "cve": "CVE-{}", "cwe": "CWE-{}"}


@dataclass(frozen=True)
class ProjectRoles:
    """What a project's ``conf.py`` makes of roles: ``default_role`` (what `text` without
    a role is: pytest's ``literal``) and the captions of its ``extlinks`` (``issue`` →
    ``#%s``; None: the link's URL is shown); and the directives its extensions declare as
    crossref types, which show nothing."""

    default_role: str | None = None
    extlinks: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    targets: frozenset[str] = frozenset()  # directives that only mark a link target


def extlink_text(url: str, caption: str | None, target: str) -> str:
    """What Sphinx shows for an extlink role without a title: its caption with the target
    put in (``#%s`` → ``#1427``), or the URL it links to."""
    pattern = caption if caption is not None else url
    return pattern.replace("%s", target) if "%s" in pattern else pattern + target


def role_text(name: str, text: str,
              titled: Callable[[str, str], str | None] | None = None,
              extlinks: Mapping[str, tuple[str, str | None]] | None = None
              ) -> tuple[str, bool]:
    """(what a reader sees for ``:name:`text```, whether it is set as code). ``titled``
    gives the title a ``doc`` or ``ref`` written without one shows (kind, target);
    ``extlinks``, the project's (``ProjectRoles``)."""
    domain_free = name.split(":")[-1]
    title, _, target = text.partition("<")
    explicit_title = bool(target and text.rstrip().endswith(">") and title.strip())
    shown = title.strip() if explicit_title else text.strip()
    if extlinks and name in extlinks:
        return (shown if explicit_title else extlink_text(*extlinks[name], shown)), False
    if domain_free in _PROSE_ROLES and not explicit_title:
        return _PROSE_ROLES[domain_free].format(shown.lstrip("!")), False
    if domain_free == "menuselection":
        return shown.replace("-->", "▸"), False
    if domain_free in ("abbr", "dfn", "term", "ref", "doc", "guilabel", "numref",
                       "download", "source", "sub", "sup", "math", "manpage"):
        if domain_free in ("ref", "doc", "numref", "download") and not explicit_title:
            found = (titled(domain_free, shown) if titled is not None
                     and domain_free in ("ref", "doc") else None)
            shown = found or (shown.lstrip("~!").rsplit("/", 1)[-1].replace("-", " ")
                              .replace("_", " "))
        return shown, False
    if not explicit_title:
        shown = shown.lstrip("!")
        if domain_free in _PYTHON_ROLES and name in (domain_free, f"py:{domain_free}"):
            shown = shown.lstrip(".")  # :func:`.lazyload` shows lazyload()
        if shown.startswith("~"):
            shown = shown[1:].rsplit(".", 1)[-1]
        if (domain_free in _CALLABLE_ROLES and not shown.endswith(")")
                and name.startswith(("py:", "func", "meth"))):
            shown += "()"
    return shown, domain_free in _XREF_ROLES or ":" in name


def api_fullname(directive: str, signature: str, *, module: str | None,
                 enclosing: tuple[str, str] | None) -> str | None:
    """The full name Sphinx gives an object description (its id before escaping); None
    when not derivable. ``enclosing`` is the enclosing class as (name as written, full
    name)."""
    kind = directive.split(":")
    domain = kind[0] if len(kind) > 1 else "py"
    objtype = kind[-1]
    if domain != "py" or objtype not in PY_DESCRIBE:
        if objtype == "envvar" and domain in ("py", "std"):
            return signature.split()[0] if signature.split() else None
        return None
    m = _signature(signature)[1]
    if not m:
        return None
    prefix, name = m.group(1) or "", m.group(2)
    if enclosing:
        written, full = enclosing
        if prefix == written + "." or prefix.startswith(written + "."):
            return f"{full}.{prefix[len(written) + 1:]}{name}"
        return f"{full}.{prefix}{name}"
    written = prefix + name
    return f"{module}.{written}" if module else written


def written_name(signature: str) -> str | None:
    """The object's name as the signature writes it (``Outer.Inner``)."""
    m = _signature(signature)[1]
    return (m.group(1) or "") + m.group(2) if m else None


def api_display(signature: str, fullname: str) -> str:
    """The signature as Sphinx shows it: the object's full name, then its arguments."""
    stripped, m = _signature(signature)
    return fullname + stripped[m.end(2):] if m else signature


def api_id(directive: str, fullname: str, options: Mapping[str, Any]) -> str | None:
    """The id Sphinx puts on the description of ``fullname``."""
    if "noindex" in options or "no-index" in options:
        return None
    objtype = directive.split(":")[-1]
    if objtype == "envvar":
        return _sphinx_make_id(f"envvar-{fullname}")
    return _sphinx_make_id(fullname) or None


def _sphinx_make_id(term: str) -> str:
    """Sphinx's ``_make_id``: docutils' rule, but keeping case, dots and underscores."""
    import unicodedata

    text = unicodedata.normalize("NFKD", term).encode("ascii", "ignore").decode("ascii")
    text = _ID_UNSAFE.sub("-", " ".join(text.split()))
    return _ID_ENDS.sub("", text)


# ``.. only::`` tags true in an HTML build (Sphinx sets the format's and the builder's)
HTML_TAGS = frozenset({"html", "format_html", "builder_html", "builder_dirhtml"})
_ONLY_TOKEN = re.compile(r"\s*(\(|\)|[A-Za-z_][\w.-]*)")
MAX_ONLY_TOKENS = 64


def only_html(expression: str) -> bool:
    """Whether an HTML build shows an ``only`` directive's content: its expression of tags
    with ``and``, ``or``, ``not`` and parentheses, the tags of ``HTML_TAGS`` true and every
    other false (``latex``, ``epub``…). An expression that cannot be read is shown, as
    it is better to keep text than to lose it."""
    tokens: list[str] = []
    rest = expression.strip()
    while rest:
        m = _ONLY_TOKEN.match(rest)
        if m is None or len(tokens) >= MAX_ONLY_TOKENS:
            return True
        tokens.append(m.group(1))
        rest = rest[m.end():].strip()
    try:
        value, used = _or(tokens, 0)
    except (IndexError, ValueError):
        return True
    return value if used == len(tokens) else True


def _or(tokens: list[str], i: int) -> tuple[bool, int]:
    return _chain(tokens, i, "or", _and)


def _and(tokens: list[str], i: int) -> tuple[bool, int]:
    return _chain(tokens, i, "and", _not)


def _chain(tokens: list[str], i: int, word: str,
           operand: Callable[[list[str], int], tuple[bool, int]]) -> tuple[bool, int]:
    """``operand (word operand)…`` from ``tokens[i]``: true, for ``or``, when any operand
    is, for ``and`` when all are; and where it ends."""
    values = []
    value, i = operand(tokens, i)
    values.append(value)
    while i < len(tokens) and tokens[i] == word:
        value, i = operand(tokens, i + 1)
        values.append(value)
    return (any(values) if word == "or" else all(values)), i


def _not(tokens: list[str], i: int) -> tuple[bool, int]:
    if tokens[i] == "not":
        value, i = _not(tokens, i + 1)
        return not value, i
    if tokens[i] == "(":
        value, i = _or(tokens, i + 1)
        if tokens[i] != ")":
            raise ValueError("unclosed parenthesis")
        return value, i + 1
    if tokens[i] in ("and", "or", ")"):
        raise ValueError(f"unexpected {tokens[i]}")
    return tokens[i] in HTML_TAGS, i + 1
