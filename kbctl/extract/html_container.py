"""Where a docs page keeps its content, and which elements inside it are chrome.

Container rules go from generator-specific to generic; the first rule that matches wins, so
a Sphinx page is never mistaken for its theme's outer ``<main>``. Chrome is decided per
element with cheap attribute checks, cached by class string (docs pages repeat a few
hundred class strings thousands of times).
"""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree

HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")


# Container rules, most specific first. Only these tags can be containers, so one C-level
# pass over them (a few dozen per page) replaces a dozen XPath scans of the whole tree.
_CONTAINER_TAGS = ("div", "article", "main", "section")
RULES = (
    "mkdocs-material",  # article.md-content__inner
    "docusaurus",  # .theme-doc-markdown
    "vitepress",  # .vp-doc
    "docsy",  # .td-content
    "gitbook",  # .markdown-section, .page-inner
    "mdbook",  # #content main
    "sphinx",  # div/article[role=main] (classic, Read the Docs, pydata, Furo)
    "sphinx-classic",  # div.body, div.document
    "docbook",  # the outermost div.chapter, div.sect1, div.refentry … that opens a title page
    "doxygen",  # div.contents after div.header
    "node",  # #apicontent (Node.js's API docs)
    "rustdoc",  # section#main-content (its <main> also holds the logo and search bar)
    "main",  # <main>
    "role-main",  # [role=main]
    "article",  # <article>
    "page-body",  # <body> of a page whose generator writes no container (see _BODY_GENERATORS)
)
_RULE = {name: i for i, name in enumerate(RULES)}
# Generators whose content is the whole body (chrome dropped element by element), named by
# the start of their <meta name="generator">: AsciiDoc and Asciidoctor (#header, #content,
# #footer), Texinfo's makeinfo / texi2any (nodes straight in the body).
_BODY_GENERATORS = ("asciidoc", "makeinfo", "texi2any")
# DocBook XSL's division classes; each division starts with its title page (refentry: its
# name block), which tells them from a theme's own div.section or div.chapter.
_DOCBOOK_DIVISIONS = frozenset({
    "book", "part", "chapter", "appendix", "preface", "article", "reference", "refentry",
    "sect1", "sect2", "sect3", "sect4", "sect5", "section", "simplesect", "glossary",
    "bibliography", "index", "colophon", "dedication", "acknowledgements", "set",
    "setindex", "qandaset",
})
_DOCBOOK_OPENERS = frozenset({"titlepage", "refnamediv"})
_CLASS_RULES = {
    "theme-doc-markdown": _RULE["docusaurus"],
    "vp-doc": _RULE["vitepress"],
    "td-content": _RULE["docsy"],
    "markdown-section": _RULE["gitbook"],
    "page-inner": _RULE["gitbook"],
}


def _rules_of(el: etree._Element, tag: str) -> list[int]:
    matched: list[int] = []
    keys = el.keys()
    role = el.get("role") if "role" in keys else None
    tokens = (el.get("class") or "").split() if "class" in keys else ()
    if role == "main":
        if tag in ("div", "article"):
            matched.append(_RULE["sphinx"])
        matched.append(_RULE["role-main"])
    for token in tokens:
        rule = _CLASS_RULES.get(token)
        if rule is not None:
            matched.append(rule)
        elif token == "md-content__inner" and tag == "article":
            matched.append(_RULE["mkdocs-material"])
        elif token in ("body", "document") and tag == "div":
            matched.append(_RULE["sphinx-classic"])
        elif token == "contents" and tag == "div" and _follows_header(el):
            matched.append(_RULE["doxygen"])
    if tag == "div":
        if not _DOCBOOK_DIVISIONS.isdisjoint(tokens) and _opens_title_page(el):
            matched.append(_RULE["docbook"])
        if "id" in keys and el.get("id") == "apicontent":
            matched.append(_RULE["node"])
    elif tag == "section" and "id" in keys and el.get("id") == "main-content" and (
            _in_rustdoc_page(el)):
        matched.append(_RULE["rustdoc"])
    if tag == "main":
        matched.append(_RULE["main"])
        parent = el.getparent()
        while parent is not None:
            if parent.get("id") == "content":
                matched.append(_RULE["mdbook"])
                break
            parent = parent.getparent()
    elif tag == "article":
        matched.append(_RULE["article"])
    return matched


_MARKER_TAGS = frozenset({"a", "span"})


def empty_marker(el: etree._Element) -> bool:
    """An empty ``<a>`` or ``<span>``: it marks a place (Texinfo's ``<span id>`` before a
    heading, gtk-doc's and Doxygen's ``<a name>``) and holds nothing to read."""
    return el.tag in _MARKER_TAGS and not len(el) and not (el.text or "").strip()


def _opens_title_page(el: etree._Element) -> bool:
    """True when the first child, after empty markers (gtk-doc's ``<a name>``), is a title
    page or a reference entry's name block."""
    for child in el.iterchildren(tag=etree.Element):
        if empty_marker(child):
            continue
        return not _DOCBOOK_OPENERS.isdisjoint((child.get("class") or "").split())
    return False


def _follows_header(el: etree._Element) -> bool:
    """Doxygen's shape: ``div.header`` (the title) right before ``div.contents``."""
    previous = el.getprevious()
    while previous is not None and previous.tag.__class__ is not str:
        previous = previous.getprevious()  # a comment such as <!--header-->
    return previous is not None and previous.tag == "div" and (
        "header" in (previous.get("class") or "").split())


def _in_rustdoc_page(el: etree._Element) -> bool:
    """rustdoc marks its pages ``<body class="rustdoc …">``; on other sites
    ``#main-content`` is a skip link's target and may hold the whole layout."""
    body = el.getroottree().getroot().find("body")
    return body is not None and "rustdoc" in (body.get("class") or "").split()


def _generated_body(root: etree._Element) -> etree._Element | None:
    """The body, when the page's generator is one that writes its content straight in it."""
    head = root.find("head")
    body = root.find("body")
    if head is None or body is None:
        return None
    for meta in head.iterchildren("meta"):
        if (meta.get("name") or "").lower() == "generator" and (
                meta.get("content") or "").lower().startswith(_BODY_GENERATORS):
            return body
    return None


def _inside(el: etree._Element, ancestor: etree._Element) -> bool:
    parent = el.getparent()
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.getparent()
    return False


def find_container(root: etree._Element) -> tuple[etree._Element | None, str | None]:
    """Return (container, rule name), or (None, None) when no rule matches.

    Within the best rule the first match wins, or the innermost match nested in it
    (pydata-sphinx-theme nests ``article[role=main]`` in ``main[role=main]``); a DocBook
    page is its outermost division, which holds the others; plain articles: ``_articles``.
    """
    found: dict[int, list[etree._Element]] = {}
    for el in root.iter(*_CONTAINER_TAGS):
        for rule in _rules_of(el, el.tag):
            found.setdefault(rule, []).append(el)
    if not found:
        body = _generated_body(root)
        return (body, "page-body") if body is not None else (None, None)
    rule = min(found)
    matches = found[rule]
    if RULES[rule] == "article":
        return _articles(matches), "article"
    best = matches[0]
    for candidate in matches[1:] if RULES[rule] != "docbook" else ():
        if _inside(candidate, best):
            best = candidate
    return best, RULES[rule]


# What stands between the steps of a breadcrumb trail: "Docs / Guide", "Docs › Guide"…
_TRAIL_SEPARATORS = frozenset({"/", ">", "›", "»", "|", "·", "•", "→", "\\", ":", "-", "–"})


def drop_breadcrumb_trail(container: etree._Element) -> None:
    """Remove what comes before the page's first ``<h1>`` and holds nothing but links, the
    page's own title and separators: a breadcrumb trail (or "back to…" links) that a theme
    marks with no class or role, only utility classes (Hextra's Tailwind). Text written
    before the title stays."""
    h1 = next(container.iter("h1"), None)
    if h1 is None:
        return
    title = " ".join("".join(h1.itertext()).split())
    node = h1
    while node is not container:
        parent = node.getparent()
        if parent is None:
            return
        for sibling in list(node.itersiblings(preceding=True)):
            if isinstance(sibling.tag, str) and _is_trail(sibling, title):
                _remove_keeping_tail(sibling)
        node = parent


def _is_trail(el: etree._Element, title: str) -> bool:
    linked = False
    for part, in_link in _texts(el):
        words = " ".join(part.split())
        if not words:
            continue
        if in_link:
            linked = True
        elif words != title and words not in _TRAIL_SEPARATORS:
            return False
    return linked


def _texts(el: etree._Element, in_link: bool = False) -> Iterator[tuple[str, bool]]:
    """The text pieces inside ``el`` (not its tail), each with whether a link holds it;
    what a page never shows (scripts, styles, icons) is skipped."""
    if not isinstance(el.tag, str) or el.tag in ("script", "style", "svg", "template"):
        return
    in_link = in_link or el.tag == "a"
    if el.text:
        yield el.text, in_link
    for child in el:
        yield from _texts(child, in_link)
        if child.tail:
            yield child.tail, in_link


def _remove_keeping_tail(el: etree._Element) -> None:
    """Remove ``el`` but not the text that follows it (lxml keeps it on the element)."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        before = el.getprevious()
        if before is not None:
            before.tail = (before.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _articles(articles: list[etree._Element]) -> etree._Element:
    """The first outermost ``<article>``, or, when articles beside it share its parent (a
    blog's or changelog's listing), that parent: each of them is content. An article
    nested in another is part of it (a comment on a post), never the page."""
    first = articles[0]  # document order: no article comes before the outermost first
    parent = first.getparent()
    siblings = sum(1 for a in articles[1:] if a.getparent() is parent)
    return parent if siblings and parent is not None else first


DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "nav", "footer", "form", "button", "input",
    "select", "textarea", "option", "svg", "iframe", "object", "embed", "canvas", "video",
    "audio", "link", "meta", "head", "title", "dialog", "map", "area", "search", "frame",
    "frameset", "applet",
})

# Exact class tokens (lower-cased) that mark chrome on any element.
DROP_CLASSES = frozenset({
    "toc", "table-of-contents", "tableofcontents", "contents", "local-toc", "toc-wrapper",
    "md-nav", "md-sidebar", "md-footer", "md-source-file", "md-content__button", "md-header",
    "breadcrumb", "breadcrumbs", "headerlink", "header-anchor", "hash-link", "anchor-link",
    "anchorjs-link", "heading-anchor", "td-heading-self-link", "permalink", "plugin-anchor",
    "edit-link", "edit-this-page", "theme-edit-this-page", "edit-page", "page-edit",
    "editlink", "theme-doc-toc-mobile", "theme-doc-toc-desktop", "theme-doc-breadcrumbs",
    "theme-doc-footer", "theme-doc-version-badge", "theme-doc-version-banner",
    "theme-doc-footer-edit-meta-row", "theme-last-updated", "pagination-nav",
    "sphinxsidebar", "related", "footer", "copybutton", "copy-button", "viewcode-link",
    "viewcode-back", "linenos", "linenodiv", "sr-only", "visually-hidden",
    "screen-reader-text", "d-print-none", "no-print", "noprint", "hidden-print",
    "print-hidden", "td-page-meta", "feedback",
    "skip-link", "navbar", "prev-next", "pager", "rst-footer-buttons", "page-nav",
    "vp-doc-footer", "searchbox", "search", "sidebar-toc", "on-this-page", "page-toc",
    "toc-drawer", "toc-container", "toc-list", "toc-tree", "view-this-page", "step-nav",
    # Texinfo's contents and node navigation; Doxygen's code tooltips
    "contents_element", "shortcontents_element", "element-contents",
    "element-shortcontents", "nav-panel", "ttc",
    # Sphinx's general and module indexes (link lists: a page of them stores nothing);
    # mkdocstrings' folded "Source code in …" listings beside the API they document
    "genindextable", "modindextable", "indextable", "genindex-jumpbox", "modindex-jumpbox",
    "mkdocstrings-source",
    # DocBook's back-of-book index (its letter groups) and Texinfo's printed indexes
    "indexdiv", "index-cp", "index-fn", "index-vr", "index-ky", "index-pg", "index-tp",
    "printindex",
    # rustdoc: the version and source link beside each item ("1.0.0 · source · [−]"), the
    # "Expand description" toggle, the playground's "Run" link, notable-traits tooltips
    "out-of-band", "rightside", "srclink", "since", "hideme", "test-arrow", "notable-traits",
    # pydata-sphinx-theme's footer of previous / next links
    "prev-next-area",
})
# Class tokens that mark a header/permalink icon only when they sit on a link.
LINK_DROP_CLASSES = frozenset({"anchor", "anchor-heading", "header-link", "heading-link"})
# Substrings of the lower-cased class attribute (CSS-module names carry hashes).
_DROP_SUBSTRINGS = (
    "breadcrumb", "tableofcontents", "table-of-contents", "edit-this-page", "editthispage",
    "headerlink", "td-page-meta", "paginationnav",
)
DROP_IDS = frozenset({
    "toc", "tableofcontents", "table-of-contents", "breadcrumbs", "breadcrumb", "sidebar",
    "searchbox", "search", "footer", "site-footer", "site-header", "navbar", "edit-this-page",
})
DROP_ROLES = frozenset({
    "navigation", "search", "banner", "contentinfo", "complementary", "toolbar", "menu",
    "menubar", "dialog",
})
# Asides that are content: footnotes, Sphinx 7's topic/sidebar/admonition directives, and
# the callouts themes write as <aside> (Starlight's notes and tips, "callout" blocks).
_ASIDE_KEEP = ("footnote", "citation", "topic", "sidebar", "admonition", "starlight-aside",
               "callout")

_CLASS_CACHE: dict[str, bool] = {}
_LINK_CLASS_CACHE: dict[str, bool] = {}


def _class_is_chrome(is_link: bool, cls: str) -> bool:
    cache = _LINK_CLASS_CACHE if is_link else _CLASS_CACHE
    hit = cache.get(cls)
    if hit is not None:
        return hit
    low = cls.lower()
    result = False
    for token in low.split():
        if (
            token in DROP_CLASSES
            or (is_link and token in LINK_DROP_CLASSES)
            or token.endswith(("-toc", "_toc"))
            or token.endswith("print:hidden")  # Tailwind: what a printout leaves out
        ):
            result = True
            break
    if not result:
        result = any(s in low for s in _DROP_SUBSTRINGS)
    if len(cache) > 20000:  # hashed CSS-module class names must not grow it forever
        cache.clear()
    cache[cls] = result
    return result


_CONDITIONAL_TAGS = frozenset({"aside", "header"})


def is_chrome(el: etree._Element, tag: str) -> bool:
    """True when ``el`` is navigation, widget or decoration rather than page content."""
    if tag in DROP_TAGS:
        # but a button heading a list item names a folder of a file tree (Hextra's)
        return not (tag == "button" and (parent := el.getparent()) is not None
                    and parent.tag == "li")
    if tag in _CONDITIONAL_TAGS:
        if tag == "aside":
            cls = (el.get("class") or "").lower()
            if not any(k in cls for k in _ASIDE_KEEP):
                return True
        elif next(el.iter(*HEADING_TAGS), None) is None:
            # An article's own <header> holds its title (Docusaurus); a site header holds none.
            return True
    keys = el.keys()
    if not keys:
        return False
    get = el.get
    if "class" in keys:
        cls = get("class")
        cache = _LINK_CLASS_CACHE if tag == "a" else _CLASS_CACHE
        hit = cache.get(cls)
        if hit is None:
            hit = _class_is_chrome(tag == "a", cls)
        if hit:
            return True
        if cls == "header" and tag == "div" and el.find(".//a[@accesskey]") is not None:
            return True  # Texinfo's Next / Previous / Up line above each node
        if len(keys) == 1:
            return False
    if "aria-hidden" in keys and get("aria-hidden") == "true":
        return True
    if "role" in keys:
        role = get("role")
        if role in DROP_ROLES:
            return True
        if role == "tabpanel":
            return False  # inactive tab panels are [hidden] but hold real content
    if "hidden" in keys:
        return True
    if "id" in keys:
        return get("id").lower() in DROP_IDS and not _titled_by_its_id(el, tag)
    return False


def _titled_by_its_id(el: etree._Element, tag: str) -> bool:
    """A heading (or term) whose id is its title's slug, or a section it opens: a page's
    "Footer" or "Search" section is content (``#footer`` is its anchor), not the layout
    element of that name, and dropping it cited its text at the section before."""
    if tag in HEADING_TAGS or tag == "dt":
        return True
    if tag == "section" or (tag == "div" and "section" in (el.get("class") or "").split()):
        first = next((child for child in el if isinstance(child.tag, str)), None)
        return first is not None and first.tag in HEADING_TAGS
    return False
