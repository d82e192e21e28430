"""One recursive pass from an lxml tree to markdown that a heading-aware chunker can cut.

Headings carry the page's real ids as ``{#id}`` so citations resolve; API entries
(``dt`` with an id) become headings one level below their section; code keeps its exact
text in fences long enough never to be closed early. Text is escaped only where it could
change the document's structure (line-leading markers, backticks, asterisks): the output
feeds retrieval, not a renderer, so readability of the raw text matters more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from copy import deepcopy
from functools import lru_cache
from urllib.parse import unquote, urljoin

from lxml import etree

from kbctl.extract.html_container import DROP_TAGS, HEADING_TAGS, empty_marker, is_chrome
from kbctl.extract.html_select import remove_keeping_tail
from kbctl.extract.html_tabs import find_tabs
from kbctl.extract.markdown_escape import literal_line_starts

INLINE_TAGS = frozenset({
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "br", "cite", "code", "data", "del",
    "dfn", "em", "font", "i", "img", "ins", "kbd", "label", "mark", "nobr", "q", "rp", "rt",
    "ruby", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u",
    "var", "wbr",
})
BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "center", "dd", "details", "dir", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
    "h5", "h6", "header", "hgroup", "hr", "li", "main", "menu", "nav", "ol", "p", "pre",
    "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    "caption", "body", "html", "listing", "xmp", "plaintext",
})
_CODE_TAGS = frozenset({"code", "kbd", "samp", "tt"})
_EM_TAGS = frozenset({"em", "i", "cite", "dfn", "var"})
_STRONG_TAGS = frozenset({"strong", "b"})
_HEADERLINK_CLASSES = frozenset({
    "headerlink", "anchor", "hash-link", "header-anchor", "anchor-link", "anchorjs-link",
    "heading-anchor", "td-heading-self-link", "permalink", "plugin-anchor", "header",
    "anchor-heading", "heading-link", "header-link",
})
_HEADERLINK_TEXT = frozenset({"", "¶", "#", "§", "🔗", "⚓", "\uf0c1", "link", "permalink"})

_WS = re.compile(r"[ \t\n\r\f\v]+")
_SPACES = re.compile(r"[ \t\f\v\r]+")
_BACKTICKS = re.compile(r"`+")
_VALID_ID = re.compile(r"[^\s{}]+")
# A tag-like ``<name>`` in a heading is inline HTML to a markdown parser, dropped from the
# heading's title (``-m <module-name>`` would read ``-m``).
_TAG_LIKE = re.compile(r"<(?=[A-Za-z/!?])")
_LIST_BLOCK = re.compile(r"(?:- |\d{1,9}\. )")
_STRUCTURED = re.compile(r"(?:```|~~~|- |\d{1,9}\. |> |>$|\| |#{1,6} )")
# Links that are chrome by their text alone: edit links, and "Read more" after a summary
# of text found elsewhere (rustdoc's trait methods).
_EDIT_LINK = re.compile(
    r"(?:(?:edit (?:this page|on github|on gitlab|page|this file)|improve this page"
    r"|suggest an edit|view page source|show source)\b|read more\W*$)",
    re.I,
)
_TRAILING_MARKS = "¶§🔗⚓\uf0c1 \t\n"
_NO_LANG = frozenset({"none", "default", "text", "plaintext", "plain", "nohighlight", "txt"})
_LANG_PREFIXES = ("language-", "lang-", "highlight-")
_LANG_CHARS = re.compile(r"[^\w+#.-]")
_API_TERMS = etree.XPath("//dt[@id]")
_PRE_SPECIAL = etree.XPath(
    ".//br | .//div | .//p"
    " | .//*[contains(@class, 'lineno') or contains(concat(' ', @class, ' '), ' ln ')]"
)
# Blocks inside a <pre> are lines of their own, as a browser shows them (Expressive Code
# writes each line as a <div class="ec-line">, with no newline between them).
_PRE_LINE_TAGS = frozenset({"div", "p"})


def valid_id(ident: str | None) -> bool:
    """An id the chunker can carry verbatim: no whitespace, no braces."""
    return bool(ident) and _VALID_ID.fullmatch(ident) is not None  # type: ignore[arg-type]


#: Levels between a heading and the element it opens: DocBook nests its headings in
#: ``div.sect2#id > div.titlepage > div > div > h3``; Sphinx and Pandoc write
#: ``section#id > h2``.
SECTION_DEPTH = 4
_SECTION_TAGS = frozenset({"section", "div", "article"})


def section_id(heading: etree._Element) -> str | None:
    """The id of the element ``heading`` opens, when the id sits there and not on the
    heading: an ancestor (a few levels up at most) whose content starts with the heading,
    so that a link to it lands on the heading."""
    node = heading
    for _ in range(SECTION_DEPTH):
        parent = node.getparent()
        if parent is None or parent.tag not in _SECTION_TAGS or _preceded(node, parent):
            return None
        ident = parent.get("id")
        if valid_id(ident):
            return ident
        node = parent
    return None


def _marker_id(el: etree._Element) -> str | None:
    """The fragment an empty marker stands for: its id, or an ``<a>``'s name."""
    if not empty_marker(el):
        return None
    ident = el.get("id") or (el.get("name") if el.tag == "a" else None)
    return ident if valid_id(ident) else None


def preceding_marker(heading: etree._Element) -> str | None:
    """The id of an empty marker element right before ``heading`` (only whitespace between),
    so a link to it lands on the heading."""
    for sibling in heading.itersiblings(preceding=True):
        if sibling.tail and not sibling.tail.isspace():
            return None
        if sibling.tag.__class__ is not str:
            continue  # a comment
        ident = _marker_id(sibling)
        if ident is not None:
            return ident
        return None
    return None


#: DocBook's admonitions: ``div.note > h3.title`` names the box, not a section.
_ADMONITIONS = frozenset({"note", "tip", "warning", "caution", "important"})


def _titles_admonition(heading: etree._Element) -> bool:
    parent = heading.getparent()
    return (parent is not None and parent.tag == "div"
            and not _ADMONITIONS.isdisjoint((parent.get("class") or "").split())
            and not _preceded(heading, parent))


def _preceded(node: etree._Element, parent: etree._Element) -> bool:
    """True when text or a heading comes before ``node`` inside ``parent`` (nearest
    sibling first, so a heading in the middle of a section is told at once)."""
    for sibling in node.itersiblings(preceding=True):
        if (sibling.tail and not sibling.tail.isspace()) or sibling.tag in HEADING_TAGS:
            return True
        tag = sibling.tag
        if tag.__class__ is str and any(not t.isspace() for t in sibling.itertext()) and (
                not _beside_heading(sibling, tag)):
            return True
    return bool(parent.text) and not parent.text.isspace()


def _beside_heading(el: etree._Element, tag: str) -> bool:
    """Chrome of inline content only (rustdoc's version and "source" link, floated right
    of each item's signature) sits on the heading's line: a link to the element both are
    in lands on the heading. A navigation block (Texinfo's Next / Up line) stands above."""
    return is_chrome(el, tag) and not _has_block(el)


def _text(s: str) -> str:
    if s.isspace():
        return " "
    if "\n" in s or "  " in s or "\t" in s or "\r" in s:
        s = _WS.sub(" ", s)
    if "*" in s:
        s = s.replace("*", "\\*")
    if "`" in s:
        s = s.replace("`", "\\`")
    return s


def _normalise_chars(s: str) -> str:
    if "\xa0" in s:
        s = s.replace("\xa0", " ")
    if "\u200b" in s:
        s = s.replace("\u200b", "")
    if "\ufeff" in s:
        s = s.replace("\ufeff", "")
    if "\xad" in s:
        s = s.replace("\xad", "")
    return s


def _paragraph(s: str) -> str:
    """Finish a run of inline text: collapse spaces, keep <br> line breaks, escape markers."""
    s = _normalise_chars(s)
    if "\n" in s:
        lines: list[str] = []
        for line in s.split("\n"):
            line = _SPACES.sub(" ", line).strip()
            if line or (lines and lines[-1]):
                lines.append(line)
        while lines and not lines[-1]:
            lines.pop()
        s = "\n".join(lines)
    else:
        if "  " in s or "\t" in s:
            s = _SPACES.sub(" ", s)
        s = s.strip()
    return literal_line_starts(s) if s else s


def _longest_backticks(s: str) -> int:
    if "`" not in s:
        return 0
    return max(len(run) for run in _BACKTICKS.findall(s))


def _code_span(el: etree._Element) -> str:
    s = "".join(el.itertext()) if len(el) else (el.text or "")
    if "\n" in s or "  " in s or "\t" in s or "\r" in s:
        s = _WS.sub(" ", s)
    core = s.strip()
    if not core:
        return " " if s else ""
    fence = "`" * (_longest_backticks(core) + 1)
    pad = " " if core[0] == "`" or core[-1] == "`" else ""
    lead = " " if s[0] == " " else ""
    trail = " " if s[-1] == " " else ""
    return f"{lead}{fence}{pad}{core}{pad}{fence}{trail}"


def _wrap(inner: str, mark: str) -> str:
    core = inner.strip()
    if not core:
        return inner
    lead = " " if inner[0] == " " else ""
    trail = " " if inner[-1] == " " else ""
    return f"{lead}{mark}{core}{mark}{trail}"


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


class _Resolver:
    """urljoin with a per-page cache and fast paths for the two common link shapes
    (same-page ``#x`` and sibling ``page.html#x``), which are most links of a docs page."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.page = base.split("#", 1)[0]
        try:
            self.directory = urljoin(base, "x")[:-1]
        except ValueError:
            self.directory = ""
        self.cache: dict[str, str] = {}

    def __call__(self, href: str) -> str:
        hit = self.cache.get(href)
        if hit is not None:
            return hit
        if href[0] == "#":
            hit = self.page + href
        elif _SCHEME.match(href):
            hit = href
        else:
            hit = self._relative(href)
            if hit is None:
                try:
                    hit = urljoin(self.base, href)
                except ValueError:
                    hit = href
        self.cache[href] = hit
        return hit

    def _relative(self, href: str) -> str | None:
        """``page.html#x``, ``../dir/page.html``: plain path arithmetic, no parsing."""
        directory = self.directory
        if not directory or href[0] in "/?\\":
            return None
        while href.startswith("../"):
            href = href[3:]
            parent = directory.rstrip("/").rfind("/")
            if parent <= directory.find("://") + 2:
                return None  # climbing past the origin: let urljoin apply the rules
            directory = directory[: parent + 1]
        path = href.split("#", 1)[0].split("?", 1)[0]
        if not href or path.startswith(".") or "./" in path or "\\" in path:
            return None
        return directory + href


@lru_cache(maxsize=4096)
def _lang_from_class(cls: str) -> str | None:
    """``None``: the class says nothing; ``""``: it says there is no language."""
    for token in cls.split():
        low = token.lower()
        for prefix in _LANG_PREFIXES:
            if low.startswith(prefix) and len(low) > len(prefix):
                # "language-rust,ignore" (rustdoc's attributes, kept by Docusaurus): rust
                lang = _LANG_CHARS.sub("", low[len(prefix):].split(",")[0])
                return "" if lang in _NO_LANG else lang
    return None


_ADMONITION_TITLE = re.compile(
    r"(?:^|\s)(?:admonition-title|custom-block-title|callout-title|admonitionHeading_\w+)"
    r"(?:\s|$)")
# An admonition's type, as its container's classes name it (Material "admonition warning",
# VitePress "warning custom-block", Docusaurus "theme-admonition-warning"; not Infima's
# "alert--success", which Docusaurus gives a tip).
_ADMONITION_KINDS = frozenset({
    "note", "abstract", "summary", "info", "todo", "tip", "hint", "important", "success",
    "question", "warning", "caution", "attention", "failure", "danger", "error", "bug",
    "example", "quote", "seealso",
})
_KIND_PREFIXES = ("theme-admonition-", "callout-", "admonition-")


def _admonition_kind(title: etree._Element) -> str | None:
    """The type of the admonition whose title is ``title`` (a custom title hides it: a
    "Be careful" warning read as no warning), from its container's classes; None when
    none names one."""
    node = title.getparent()
    for _ in range(3):
        if node is None:
            return None
        for token in (node.get("class") or "").lower().split():
            for prefix in _KIND_PREFIXES:
                if token.startswith(prefix) and token[len(prefix):] in _ADMONITION_KINDS:
                    return token[len(prefix):]
            if token in _ADMONITION_KINDS:
                return token
        node = node.getparent()
    return None


_TITLE_CLASS = re.compile(r"^(?:filename|code-?block-?title|code-title|codeBlockTitle\w*)$",
                          re.IGNORECASE)
MAX_TITLE = 200


def _code_title(wrapper: etree._Element) -> str:
    """The title a code block's wrapper shows above it (Material's ``span.filename``,
    Docusaurus' ``codeBlockTitle``, Sphinx's caption just before it), fit for a fence's
    info string; "" without one."""
    title: etree._Element | None = None
    for node in wrapper.iter():
        if node.tag == "pre":
            break  # a title comes before the code
        if any(_TITLE_CLASS.match(c) for c in (node.get("class") or "").split()):
            title = node
            break
    if title is None:
        title = _sphinx_caption(wrapper)
    if title is None:
        return ""
    text = _WS.sub(" ", "".join(title.itertext())).strip()
    return text.replace("`", "").replace('"', "'")[:MAX_TITLE]


def _sphinx_caption(code: etree._Element) -> etree._Element | None:
    """The ``caption-text`` of the ``code-block-caption`` right before a Sphinx code block
    (both in a ``literal-block-wrapper``), or None."""
    caption = code.getprevious()
    if caption is None or "code-block-caption" not in (caption.get("class") or "").split():
        return None
    return next((n for n in caption.iter() if "caption-text" in (n.get("class") or "").split()),
                None)


def _is_sphinx_caption(el: etree._Element) -> bool:
    """A ``code-block-caption`` whose code block follows: read as that block's title."""
    if "code-block-caption" not in (el.get("class") or "").split():
        return False
    following = el.getnext()
    return following is not None and _lang_from_class(following.get("class") or "") is not None


def _code_lang(pre: etree._Element, fallback: str | None) -> str:
    nodes = [pre]
    code = pre.find("code")
    if code is not None:
        nodes.append(code)
    for node in nodes:
        data_lang = node.get("data-lang") or node.get("data-language")
        if data_lang:
            lang = _LANG_CHARS.sub("", data_lang.lower())
            return "" if lang in _NO_LANG else lang
        cls = node.get("class")
        if cls:
            lang = _lang_from_class(cls)
            if lang is not None:
                return lang
    if fallback is not None:
        return fallback
    parent = pre.getparent()
    for _ in range(3):
        if parent is None:
            break
        cls = parent.get("class")
        if cls:
            lang = _lang_from_class(cls)
            if lang is not None:
                return lang
        parent = parent.getparent()
    return ""


def _pre_text(el: etree._Element) -> str:
    if not len(el):
        return el.text or ""
    if not _PRE_SPECIAL(el):
        return "".join(el.itertext())
    parts: list[str] = []
    _pre_text_into(el, parts)
    return "".join(parts)


def _pre_text_into(el: etree._Element, parts: list[str]) -> None:
    if el.text:
        parts.append(el.text)
    for child in el:
        tag = child.tag
        if tag == "br":
            parts.append("\n")
        elif tag.__class__ is str and tag not in DROP_TAGS:
            cls = child.get("class") or ""
            if "lineno" not in cls and " ln " not in f" {cls} ":
                if tag in _PRE_LINE_TAGS:
                    _pre_line_into(child, parts)
                else:
                    _pre_text_into(child, parts)
        if child.tail:
            parts.append(child.tail)


def _pre_line_into(el: etree._Element, parts: list[str]) -> None:
    """A block inside a <pre>: it starts on a line of its own and ends one."""
    line: list[str] = []
    _pre_text_into(el, line)
    text = "".join(line)
    if parts and not parts[-1].endswith("\n"):
        parts.append("\n")
    parts.append(text if text.endswith("\n") else text + "\n")


def plain_text(el: etree._Element, line_break: str = " ") -> str:
    """Text without markup or chrome: API signatures and titles read as written; a
    ``<br>`` reads as ``line_break`` (DocBook's terms ``-N<br>--no-sync`` ran together)."""
    parts: list[str] = []
    if el.text:
        parts.append(el.text)
    for child in el:
        tag = child.tag
        if tag == "br":
            parts.append(line_break)
        elif tag.__class__ is str and not is_chrome(child, tag):
            parts.append(plain_text(child, line_break))
        if child.tail:
            parts.append(child.tail)
    return "".join(parts)


def _in_linenos(el: etree._Element, stop: etree._Element) -> bool:
    node = el
    while node is not None and node is not stop:
        cls = node.get("class")
        if cls and "lineno" in cls:
            return True
        node = node.getparent()
    return False


def _has_block(el: etree._Element) -> bool:
    return any(d.tag in BLOCK_TAGS for d in el.iterdescendants())


def _indent(text: str, prefix: str) -> str:
    """Indent every line but the first; blank lines stay blank."""
    if "\n" not in text:
        return text
    lines = text.split("\n")
    return "\n".join([lines[0], *(prefix + line if line else line for line in lines[1:])])


# A code span: a run of backticks, and what lies up to the next run as long (CommonMark).
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)


def _heading_line(level: int, text: str, anchor: str | None) -> str:
    if "<" in text:  # a tag-like "<Name>" would read as HTML; in a code span it is text
        text = _outside_code(text, lambda part: _TAG_LIKE.sub(r"\\<", part))
    if text.endswith("#"):
        text = text[:-1] + "\\#"
    if anchor:
        return f"{'#' * level} {text} {{#{anchor}}}"
    return f"{'#' * level} {text}"


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """``text`` with ``change`` applied to what lies outside its code spans."""
    out: list[str] = []
    last = 0
    for m in _CODE_SPAN.finditer(text):
        out += [change(text[last:m.start()]), m.group()]
        last = m.end()
    out.append(change(text[last:]))
    return "".join(out)


_HEADERLINK_MARKS = _HEADERLINK_TEXT - {"", "link", "permalink"}


def _is_mark_link(link: etree._Element) -> bool:
    return (link.get("href") or "").startswith("#") and _normalise_chars(
        "".join(link.itertext())).strip() in _HEADERLINK_MARKS


_SPACE_BEFORE_PUNCT = re.compile(r" +(?=[(),])|(?<=\() +")
_COMMA = re.compile(r",(?=\S)")


def _code_line(signature: str) -> str:
    """A signature read from table cells as one code span: ``f(a, b) const``."""
    text = _WS.sub(" ", _normalise_chars(signature)).strip()
    text = _COMMA.sub(", ", _SPACE_BEFORE_PUNCT.sub("", text))
    ticks = "`" * (_longest_backticks(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _ancestors(elements: Iterable[etree._Element]) -> set[etree._Element]:
    """Every element above one of ``elements``; each climb stops where an earlier one
    passed, so the walk is linear in the page."""
    found: set[etree._Element] = set()
    for el in elements:
        parent = el.getparent()
        while parent is not None and parent not in found:
            found.add(parent)
            parent = parent.getparent()
    return found


def _without_mark_links(el: etree._Element) -> etree._Element:
    """``el``, or a copy without the permalinks it holds whose text is only a mark such as
    ``#`` (Node.js's ``a.mark``): a class the chrome rules do not know must not put a stray
    ``#`` into a heading's text."""
    if not any(_is_mark_link(a) for a in el.iter("a")):
        return el
    copy = deepcopy(el)
    for link in [a for a in copy.iter("a") if _is_mark_link(a)]:
        remove_keeping_tail(link)
    return copy


def _clean_heading(text: str) -> str:
    text = _WS.sub(" ", _normalise_chars(text)).strip(_TRAILING_MARKS)
    if text.endswith(" #"):
        text = text[:-2].rstrip()
    return text


class MarkdownWriter:
    """Walks one container; keeps the section level so API entries nest under it."""

    def __init__(self, root: etree._Element, base_url: str | None) -> None:
        self.root = root
        self.base = base_url
        self.level = 0
        self._plain = 0  # > 0 inside a heading: links unwrapped, images as alt text
        self._flat = 0  # > 0 inside a table cell or a term: no headings can live there
        self._ids: frozenset[str] | None = None
        self._heading_holders: set[etree._Element] | None = None
        self._anchor_holders: set[etree._Element] | None = None
        self._resolve = _Resolver(base_url) if base_url else None
        self._tab_labels: dict[etree._Element, str] = {}  # see html_tabs
        self._tab_label_lists: set[etree._Element] = set()

    # -- entry ---------------------------------------------------------------------------

    def render(self, container: etree._Element) -> str:
        out: list[str] = []
        tabs = find_tabs(container)
        self._tab_labels, self._tab_label_lists = tabs.labels, tabs.label_lists
        self._into(container, out)
        return "\n\n".join(out)

    # -- block level ---------------------------------------------------------------------

    def _into(self, el: etree._Element, out: list[str]) -> None:
        # The hot loop of the whole conversion: locals over globals, no helper calls for
        # the common inline case.
        buf: list[str] = []
        inline_tags = INLINE_TAGS
        tab_labels, tab_label_lists = self._tab_labels, self._tab_label_lists
        text = el.text
        if text and not text.isspace():
            buf.append(_text(text))
        for child in el:
            tag = child.tag
            if tag.__class__ is str and not is_chrome(child, tag) and not (
                    tab_label_lists and child in tab_label_lists):
                if tag in inline_tags and not (len(child) and _has_block(child)):
                    piece = self._inline(child, tag)
                    if piece:
                        buf.append(piece)
                else:
                    if buf:
                        para = _paragraph("".join(buf))
                        if para:
                            out.append(para)
                        buf = []
                    if tab_labels and child in tab_labels:  # a tab's panel, under its label
                        out.append(f"**{_text(tab_labels[child]).strip()}**")
                    handler = _HANDLERS.get(tag)
                    if handler is None:
                        self._into(child, out)
                    else:
                        handler(self, child, out)
            tail = child.tail
            if tail and (buf or not tail.isspace()):
                buf.append(_text(tail))
        if buf:
            para = _paragraph("".join(buf))
            if para:
                out.append(para)

    def _blocks(self, el: etree._Element) -> list[str]:
        sub: list[str] = []
        self._into(el, sub)
        return sub

    def _one_line(self, el: etree._Element) -> str:
        self._flat += 1
        try:
            return " ".join(b.replace("\n", " ") for b in self._blocks(el))
        finally:
            self._flat -= 1

    def _heading(self, el: etree._Element, out: list[str]) -> None:
        self._plain += 1
        try:
            text = _clean_heading(self._inline_children(_without_mark_links(el)))
        finally:
            self._plain -= 1
        if not text:
            return
        if self._flat:
            out.append(text)
            return
        if _titles_admonition(el):
            out.append(f"**{text}**")  # not a section: the text after it stays in its own
            return
        level = int(el.tag[1])
        self.level = level
        out.append(_heading_line(level, text, self.heading_anchor(el)))

    def heading_anchor(self, el: etree._Element) -> str | None:
        """The id a link to this heading uses on the page, if it has one: its own, the one
        its permalink names, the element it opens, or an empty marker right before it."""
        ident = el.get("id")
        if valid_id(ident):
            return ident
        for link in el.iter("a"):
            href = link.get("href")
            if href and len(href) > 1 and href[0] == "#" and self._is_header_link(link):
                target = unquote(href[1:])
                if valid_id(target) and target in self._page_ids():
                    return target
        wrapper = section_id(el)
        if wrapper is not None:
            return wrapper
        marker = preceding_marker(el)
        if marker is not None:
            return marker
        for link in el.iter("a"):
            ident = link.get("id") or link.get("name")
            if valid_id(ident) and ident in self._page_ids():
                return ident
        return None

    @staticmethod
    def _is_header_link(link: etree._Element) -> bool:
        cls = link.get("class")
        if cls and not _HEADERLINK_CLASSES.isdisjoint(cls.lower().split()):
            return True
        if link.get("aria-hidden") == "true":
            return True
        text = _normalise_chars("".join(link.itertext())).strip().lower()
        return text in _HEADERLINK_TEXT

    def _page_ids(self) -> frozenset[str]:
        """Every fragment the page answers: element ids and, as browsers still honour them,
        ``<a name>`` (gtk-doc, Doxygen, older Javadoc)."""
        if self._ids is None:
            self._ids = frozenset(self.root.xpath("//@id | //a/@name"))
        return self._ids

    def _holds_headings(self, el: etree._Element) -> bool:
        """Whether a heading sits somewhere inside ``el``. Every element holding one is
        found in one walk up from the page's headings: a subtree search per list, table or
        quote costs the depth of a hostile nesting times the page."""
        if self._heading_holders is None:
            self._heading_holders = _ancestors(self.root.iter(*HEADING_TAGS))
        return el in self._heading_holders

    def _holds_anchors(self, el: etree._Element) -> bool:
        """Whether a heading or an API entry (``dt[@id]``) sits somewhere inside ``el``."""
        if self._anchor_holders is None:
            self._holds_headings(el)
            assert self._heading_holders is not None
            self._anchor_holders = self._heading_holders | _ancestors(_API_TERMS(self.root))
        return el in self._anchor_holders

    def _pre(self, el: etree._Element, out: list[str], lang: str | None = None,
             title: str = "") -> None:
        self._fence(_pre_text(el), el, out, lang, title)

    def _legacy_pre(self, el: etree._Element, out: list[str]) -> None:
        """``<listing>`` and ``<xmp>``: preformatted text, unless they hold blocks (a
        Docusaurus build passes the Rust book's ``<Listing>`` through around each code
        block, whose language was lost inside a fence of the whole)."""
        if any(isinstance(child.tag, str) and child.tag in _LISTING_BLOCKS for child in el):
            self._div(el, out)
        else:
            self._pre(el, out)

    def _fence(self, code: str, el: etree._Element, out: list[str],
               lang: str | None = None, title: str = "") -> None:
        if "\r" in code:
            code = code.replace("\r\n", "\n").replace("\r", "\n")
        if code.startswith("\n"):
            code = code[1:]
        code = code.rstrip("\n")
        fence = "`" * max(3, _longest_backticks(code) + 1)
        info = _code_lang(el, lang)
        if title:  # as the page's source writes it: ```json title="package.json"
            info = f'{info or "text"} title="{title}"'
        out.append(f"{fence}{info}\n{code}\n{fence}")

    def _summary(self, el: etree._Element, out: list[str]) -> None:
        """A collapsible block's summary (Material's ``??? note``) is its title; one holding
        a heading (rustdoc's ``summary > section#method.x > h4``) opens a section, so the
        heading keeps its id and the folded body is that section's text."""
        if not self._flat and self._holds_headings(el):
            self._into(el, out)
            return
        text = self._one_line(el).strip()
        if text:
            out.append(f"**{text}**")

    def _p(self, el: etree._Element, out: list[str]) -> None:
        if not self._admonition_title(el, out):
            self._into(el, out)

    def _admonition_title(self, el: etree._Element, out: list[str]) -> bool:
        """An admonition's title (Sphinx and Material ``p.admonition-title``, VitePress'
        ``custom-block-title``, Docusaurus' heading) as a bold line of its own, as the
        files source reads ``!!! note``: as a plain paragraph, "Warning" ran into the
        text it titles, and Docusaurus' "tip" (capitalised by CSS) read lowercase."""
        cls = el.get("class")
        if not cls or _ADMONITION_TITLE.search(cls) is None:
            return False
        text = self._one_line(el).strip()
        if text:
            text = text[0].upper() + text[1:] if text.islower() else text
            kind = _admonition_kind(el)
            if kind and kind not in text.lower():  # as the files source labels it
                text = f"{kind.capitalize()}: {text}"
            out.append(f"**{text}**")
        return True

    def _div(self, el: etree._Element, out: list[str]) -> None:
        if self._admonition_title(el, out) or _is_sphinx_caption(el):
            return
        cls = el.get("class")
        if cls == "fragment":
            lines = el.findall("div[@class='line']")
            if lines:  # Doxygen's code: one div.line per line, no <pre>
                # (a blank line is a no-break space there)
                self._fence("\n".join(_pre_text(line).rstrip() for line in lines), el, out)
                return
        if cls:
            lang = _lang_from_class(cls)
            if lang is not None:
                # A code wrapper (Sphinx highlight-x, Material/Docusaurus/VitePress language-x):
                # its pre is the content, under the file name its title gives; copy buttons
                # and language labels are not content.
                pres = [p for p in el.iter("pre") if not _in_linenos(p, el)]
                if pres:
                    title = _code_title(el)
                    for pre in pres:
                        self._pre(pre, out, lang, title)
                    return
        self._into(el, out)

    def _list(self, el: etree._Element, out: list[str]) -> None:
        if self._holds_headings(el):
            # A list used as layout around sections (Javadoc's member lists): as items, its
            # headings, and so their anchors, would be lost to the chunker.
            self._into(el, out)
            return
        ordered = el.tag == "ol"
        try:
            number = int(el.get("start") or 1)
        except ValueError:
            number = 1
        items: list[str] = []
        width = 2
        for child in el:
            tag = child.tag
            if tag.__class__ is not str or is_chrome(child, tag):
                continue
            sub: list[str] = []
            if tag in ("ul", "ol"):
                self._list(child, sub)
                if sub and items:
                    # A list nested directly in a list belongs to the item before it.
                    pad = " " * width
                    items[-1] += "\n" + pad + _indent(sub[0], pad)
                    continue
            else:
                self._into(child, sub)
            if not sub:
                if tag == "li":
                    number += 1
                continue
            marker = f"{number}. " if ordered else "- "
            width = len(marker)
            if tag == "li":
                number += 1
            body = sub[0]
            for block in sub[1:]:
                body += ("\n" if _LIST_BLOCK.match(block) else "\n\n") + block
            items.append(marker + _indent(body, " " * width))
        if items:
            out.append("\n".join(items))

    def _quote(self, el: etree._Element, out: list[str]) -> None:
        if self._holds_anchors(el):
            # Sphinx indents API entries with <blockquote>; quoting them would hide their
            # headings (and so their anchors) from a heading-aware chunker.
            self._into(el, out)
            return
        sub = self._blocks(el)
        if sub:
            text = "\n\n".join(sub)
            out.append("\n".join(f"> {line}" if line else ">" for line in text.split("\n")))

    def _dl(self, el: etree._Element, out: list[str]) -> None:
        items: list[etree._Element] = []
        for child in el:
            tag = child.tag
            if tag.__class__ is not str or is_chrome(child, tag):
                continue
            if tag == "div" and any(c.tag in ("dt", "dd") for c in child):
                items.extend(c for c in child if c.tag.__class__ is str)
            else:
                items.append(child)
        if any(i.tag == "dt" and valid_id(i.get("id")) for i in items):
            self._api_entries(items, out)
        else:
            self._definitions(items, out)

    def _api_entries(self, items: list[etree._Element], out: list[str]) -> None:
        base = self.level
        level = min(base + 1, 6)
        headed = False
        starts_entry = True  # a term after a definition starts the next entry
        for item in items:
            tag = item.tag
            if tag == "dt":
                signature = _clean_heading(plain_text(item, ", "))
                ident = item.get("id") if valid_id(item.get("id")) else None
                if signature and (ident or starts_entry) and not self._flat:
                    # an entry without an id is a heading too, cited at the section around
                    # the list: under its neighbour's, DocBook lists whose entries only
                    # sometimes have ids cited REFERENCES at the EXCLUDE entry before it
                    out.append(_heading_line(level, signature, ident))
                    headed = True
                elif signature:  # another name of the entry above (an overload)
                    out.append(_paragraph(_text(signature)))
                starts_entry = False
            elif tag == "dd":
                starts_entry = True
                self.level = level if headed else base
                self._into(item, out)
                self.level = base
            else:
                self._into(item, out)
        self.level = base

    def _definitions(self, items: list[etree._Element], out: list[str]) -> None:
        group: list[str] = []
        has_def = False
        for item in items:
            tag = item.tag
            if tag == "dt":
                term = self._one_line(item)
                if not term:
                    continue
                if has_def:
                    out.append("\n".join(group))
                    group, has_def = [], False
                group.append(term)
            elif tag == "dd":
                if not self._flat and self._holds_anchors(item):
                    # Headings must stay at the margin to be seen as headings.
                    if group:
                        out.append("\n".join(group))
                        group, has_def = [], False
                    self._into(item, out)
                    continue
                sub = self._blocks(item)
                if sub:
                    body = _indent("\n\n".join(sub), "  ")
                    if _STRUCTURED.match(sub[0]):
                        # A fence or list cannot share the ": " line; it starts below it.
                        group.append(":\n  " + body)
                    else:
                        group.append(": " + body)
                    has_def = True
            else:
                if group:
                    out.append("\n".join(group))
                    group, has_def = [], False
                self._into(item, out)
        if group:
            out.append("\n".join(group))

    def _table(self, el: etree._Element, out: list[str]) -> None:
        rows: list[etree._Element] = []
        caption = ""
        for part in el:
            tag = part.tag
            if tag == "tr":
                rows.append(part)
            elif tag in ("thead", "tbody", "tfoot"):
                rows.extend(r for r in part if r.tag == "tr")
            elif tag == "caption":
                caption = self._one_line(part)
        if not rows or el.find(".//pre") is not None or self._holds_headings(el):
            # Layout tables, code tables (line numbers beside code) and tables around a
            # heading (gtk-doc's title block): their blocks, headings included, matter.
            self._into(el, out)
            return
        classes = (el.get("class") or "").split()
        if "memname" in classes:
            # Doxygen's signature, one cell per token: a line of code, not a grid.
            out.append(_code_line(" ".join(plain_text(row) for row in rows)))
            return
        if "mlabels" in classes:  # Doxygen's signature beside its labels (inline, static)
            self._into(el, out)
            return
        shape: list[list[tuple[etree._Element, int]]] = []
        for row in rows:
            cells = []
            for cell in row:
                if cell.tag in ("td", "th"):
                    try:
                        span = max(1, min(int(cell.get("colspan") or 1), 50))
                    except ValueError:
                        span = 1
                    cells.append((cell, span))
            if cells:
                shape.append(cells)
        width = max((sum(span for _, span in r) for r in shape), default=0)
        if width < 2:
            # One column is layout, not data: render it as blocks (decided before any cell
            # is rendered, so nested layout tables are walked once).
            self._into(el, out)
            return
        grid: list[list[str]] = []
        for cells in shape:
            texts: list[str] = []
            for cell, span in cells:
                texts.append(self._one_line(cell).replace("|", "\\|"))
                texts.extend([""] * (span - 1))
            grid.append(texts)
        if not any(any(t for t in r) for r in grid):
            return
        if caption:
            out.append(caption)
        lines = []
        for i, row in enumerate(grid):
            row = row + [""] * (width - len(row))
            lines.append("| " + " | ".join(row) + " |")
            if i == 0:
                lines.append("|" + " --- |" * width)
        out.append("\n".join(lines))

    # -- inline level --------------------------------------------------------------------

    def _inline(self, el: etree._Element, tag: str) -> str:
        if tag in _CODE_TAGS:
            return _code_span(el)
        if tag == "br":
            return "\n"
        if tag == "img":
            return self._image(el)
        inner = self._inline_children(el)
        if tag == "a":
            return self._link(el, inner)
        if tag in _EM_TAGS:
            return _wrap(inner, "*")
        if tag in _STRONG_TAGS:
            return _wrap(inner, "**")
        return inner

    def _inline_children(self, el: etree._Element) -> str:
        parts: list[str] = []
        if el.text:
            parts.append(_text(el.text))
        for child in el:
            tag = child.tag
            if tag.__class__ is str and not is_chrome(child, tag):
                if tag in INLINE_TAGS:
                    piece = self._inline(child, tag)
                else:
                    piece = f" {self._inline_children(child)} "
                if piece:
                    parts.append(piece)
            tail = child.tail
            if tail:
                parts.append(_text(tail))
        return "".join(parts)

    def _link(self, el: etree._Element, inner: str) -> str:
        text = inner.strip()
        if not text:
            return ""
        if self._plain:
            return inner
        if ("dit" in text or "ource" in text or "mprove" in text or "ore" in text) and (
                _EDIT_LINK.match(text)):
            return ""
        href = (el.get("href") or "").strip()
        if not href or href[:11].lower().startswith(("javascript:", "data:", "vbscript:")):
            return inner
        if self._resolve is not None:
            href = self._resolve(href)
        if " " in href or "(" in href or ")" in href or "\n" in href:
            href = (
                href.replace("\n", "").replace(" ", "%20").replace("(", "%28").replace(")", "%29")
            )
        if "\n" in text:
            text = text.replace("\n", " ")
        lead = " " if inner[0] == " " else ""
        trail = " " if inner[-1] == " " else ""
        return f"{lead}[{text}]({href}){trail}"

    def _image(self, el: etree._Element) -> str:
        alt = _WS.sub(" ", el.get("alt") or "").strip().replace("[", "(").replace("]", ")")
        if not alt:
            return ""
        if self._plain or _is_emoji(el):
            return alt
        src = (el.get("src") or "").strip()
        if not src or src.startswith("data:"):
            return alt
        if self._resolve is not None:
            src = self._resolve(src)
        return f"![{alt}]({src.replace(' ', '%20').replace(')', '%29')})"

def _is_emoji(img: etree._Element) -> bool:
    """An emoji drawn as an image (Material's twemoji, jemoji's ``emoji``): its alt text is
    the emoji or its ``:shortcode:``, and reads as text."""
    classes = (img.get("class") or "").lower().split()
    return any(c in ("emoji", "twemoji", "gemoji") or c.startswith("emoji") for c in classes)


_LISTING_BLOCKS = frozenset({"div", "pre", "p", "figure", "table", "ul", "ol", "section"})
_Handler = Callable[[MarkdownWriter, etree._Element, list], None]
_HANDLERS: dict[str, _Handler] = {
    "h1": MarkdownWriter._heading,
    "h2": MarkdownWriter._heading,
    "h3": MarkdownWriter._heading,
    "h4": MarkdownWriter._heading,
    "h5": MarkdownWriter._heading,
    "h6": MarkdownWriter._heading,
    "pre": MarkdownWriter._pre,
    "listing": MarkdownWriter._legacy_pre,
    "xmp": MarkdownWriter._legacy_pre,
    "ul": MarkdownWriter._list,
    "ol": MarkdownWriter._list,
    "menu": MarkdownWriter._list,
    "dir": MarkdownWriter._list,
    "dl": MarkdownWriter._dl,
    "table": MarkdownWriter._table,
    "blockquote": MarkdownWriter._quote,
    "div": MarkdownWriter._div,
    "p": MarkdownWriter._p,
    "summary": MarkdownWriter._summary,
    "hr": lambda _w, _el, _out: None,
}


def heading_key(text: str) -> str:
    """A heading's text reduced to what two renderings of it agree on."""
    return "".join(c for c in text.lower() if c.isalnum())


def page_heading_ids(root: etree._Element) -> dict[str, list[str | None]]:
    """Each heading text of the page (``heading_key``) with the id of every heading of that
    text, in page order (None for one without): how markdown from another converter of
    the same page gets the page's own ids back."""
    writer = MarkdownWriter(root, None)
    ids: dict[str, list[str | None]] = {}
    for heading in root.iter(*HEADING_TAGS):
        key = heading_key(plain_text(heading))
        if key:
            ids.setdefault(key, []).append(writer.heading_anchor(heading))
    return ids


def render_markdown(
    container: etree._Element, root: etree._Element, base_url: str | None
) -> str:
    """Markdown for ``container``; ``root`` is the whole page (ids resolve against it)."""
    return MarkdownWriter(root, base_url).render(container)
