"""Docs-aware HTML → markdown: fixtures in each generator's style, then the real docs site."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from lxml import etree

from kbctl.chunk.markdown import chunk_markdown
from kbctl.errors import ExtractError
from kbctl.extract.html import ExtractedPage, extract_html, trim_site_suffix
from kbctl.extract.html_container import find_container

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "html"
SITE = Path(
    os.environ.get("KBCTL_DOCS_SITE_HTML", Path.home() / ".cache" / "kbctl-docs-site" / "html")
)

HEADING_ID = re.compile(r"^#{1,6} .*? \{#([^\s{}]+)\}$", re.M)
HEADING = re.compile(r"^(#{1,6}) (.*)$", re.M)
FENCE = re.compile(r"^[ >]*(`{3,}|~{3,})(.*)$")


def load(name: str) -> bytes:
    return (FIXTURES / f"{name}.html").read_bytes()


def tree(data: bytes) -> etree._Element:
    return etree.fromstring(data, etree.HTMLParser(encoding="utf-8"))


def page_ids(data: bytes) -> set[str]:
    """Every fragment a browser scrolls to: element ids and ``<a name>``."""
    return {str(i) for i in tree(data).xpath("//@id | //a/@name")}


def fences(markdown: str) -> list[tuple[str, str]]:
    """(info string, content) of every fenced block, closing fences matched properly."""
    out: list[tuple[str, str]] = []
    opening: tuple[str, str] | None = None
    body: list[str] = []
    for line in markdown.split("\n"):
        match = FENCE.match(line)
        if opening is None:
            if match:
                opening = (match.group(1), match.group(2).strip())
                body = []
        elif match and match.group(1)[0] == opening[0][0] and len(match.group(1)) >= len(
            opening[0]
        ) and not match.group(2).strip():
            out.append((opening[1], "\n".join(body)))
            opening = None
        else:
            body.append(line)
    assert opening is None, "a fence was left open"
    return out


def pre_text(pre: etree._Element) -> str:
    """What a browser shows for a <pre>: its text, <br> as a newline, no first newline."""
    parts: list[str] = []

    def walk(el: etree._Element) -> None:
        parts.append("\n" if el.tag == "br" else el.text or "")
        for child in el:
            if isinstance(child.tag, str):
                walk(child)
            parts.append(child.tail or "")

    walk(pre)
    text = "".join(parts)
    if text.startswith("\n"):
        text = text[1:]
    return text.rstrip("\n")


# --- one table of expectations per generator ------------------------------------------

CASES = {
    "docbook": {  # DocBook XSL: ids on the division around the heading's title page
        "rule": "docbook",
        "anchors": ["ARCHIVE-RETENTION", "ARCHIVE-RETENTION-DAYS", "id-1.4.5.3.4.3"],
        "langs": [""],
        "present": ["**Note**", "Windows shorter than one day", "### Legacy Settings",
                    "Leap seconds are ignored"],
        "absent": ["Prev", "Next", "Home", "4.3. Restoring", "Navigation header",
                   "### Note", "Table of Contents"],
    },
    "sphinx": {
        "rule": "sphinx",
        "anchors": [
            "module-tidyqueue", "quick-start", "reference", "tidyqueue.Queue",
            "tidyqueue.Queue.put", "tidyqueue.drain", "glossary-of-terms",
        ],
        "langs": ["python3", "shell-session"],
        "present": ["Create a queue and feed it:", "Queues are *not* thread-safe"],
        "absent": [
            "Navigation", "Previous topic", "Show Source", "Quick search", "Copyright 2024",
            "Sidebar entry", "Contents", "¶", "must not leak", "reviewer", "doctools",
            "font-family",
        ],
    },
    "mkdocs_material": {
        "rule": "mkdocs-material",
        "anchors": ["configuration", "environment-variables", "options"],
        "langs": ['bash title="env.sh"', "toml", "yaml"],  # a code block's title stays
        "present": ["Values from the environment win over the file."],
        "absent": [
            "Home page of Lanternfish", "On this page", "Edit this page", "Last update",
            "Previous: Installation", "Copyright", "Skip to content", "¶", "__config",
        ],
    },
    "docusaurus": {
        "rule": "docusaurus",
        "anchors": ["install-the-cli", "configure"],
        "langs": ["bash", "bash", 'js title="quill.config.js"'],
        "present": ["# Installation", "yarn global add quillstack", "Run `quill doctor`"],
        "absent": [
            "Crumb:", "Sidebar intro link", "TOC:", "On this page", "Edit this page",
            "Previous", "Copy", "Direct link", "\u200b", "Built with Docusaurus",
            "Skip to main content", "localStorage",
        ],
    },
    "vitepress": {
        "rule": "vitepress",
        "anchors": ["getting-started", "installation", "file-structure"],
        "langs": ["sh"],
        "present": ["Pebblekit requires Node.js version 18 or higher."],
        "absent": [
            "Sidebar:", "Outline:", "On this page", "Edit this page", "Previous page",
            "Pager", "Skip to content", "site title", "Copyright", "\u200b",
        ],
    },
    "mdbook": {
        "rule": "mdbook",
        "anchors": ["ownership-rules", "moving-values", "rules-of-thumb"],
        "langs": ["rust"],
        "present": ["Each value has exactly one *owner*.", "- Use `Rc<T>` for shared ownership."],
        "absent": [
            "Sidebar chapter", "Suggest an edit", "Search this book", "Next chapter",
            "The Crabtrap Guide", "mdBook",
        ],
    },
    "docsy": {
        "rule": "docsy",
        "anchors": ["default-limits", "checking-headers"],
        "langs": ["go"],
        "present": ["# Rate limits", "How many requests Harborline accepts per minute."],
        "absent": [
            "Sidebar:", "TOC:", "Crumb:", "Edit this page", "Feedback", "Was this page helpful",
            "Last modified", "Harborline Authors", "navbar brand",
        ],
    },
    "gitbook": {
        "rule": "gitbook",
        "anchors": ["webhooks", "payload"],
        "langs": ["json"],
        "present": ["Mossgate sends a `POST` for every event."],
        "absent": ["Summary:", "Type to search", "Handbook header", "Previous page"],
    },
    "doxygen": {  # Doxygen: div.contents after div.header, code as div.line, <a id> markers
        "rule": "doxygen",
        "anchors": ["RingbufInstall", "RingbufFirst", "a5d1e0c7b"],
        "langs": [""],
        "code": ["#include <ringbuf/ringbuf.h>\n\nint main() {\n  Ringbuf<float, 8> rb;\n}"],
        "present": ["# A first program", "The buffer starts empty.",
                    "## push() {#a5d1e0c7b}\n\n`void Ringbuf::push(T sample)`\n\n"
                    "Adds a sample, dropping the oldest one"],
        "absent": ["Tooltip text", "Main Page", "Generated by", "Getting started", "\u25c6",
                   "    1", "All", "| void"],
    },
    "texinfo": {  # makeinfo: nodes straight in the body, <span id> before each heading
        "rule": "page-body",
        "anchors": ["Tarpit-1", "Invoking-tarpit", "Delay-options-1"],
        "langs": [""],
        "present": ["Tarpit slows down clients", "`--delay=ms`",
                    "Wait this long before each byte sent back."],
        "absent": ["Next:", "Previous:", "Up:", "Table of Contents", "(dir)", "margin-left"],
    },
    "asciidoc": {  # AsciiDoc: #header (title, NAME), #content of div.sect1, #footer
        "rule": "page-body",
        "anchors": ["header", "_synopsis", "_options"],
        "langs": [""],
        "present": ["## NAME", "knot-tie - Join two rope files into one",
                    "Overwrite a joined file that already exists."],
        "absent": ["Last updated", "font-size", "var asciidoc"],
    },
    "gtkdoc": {  # gtk-doc (DocBook XSL): <a name> before each heading, refentry container
        "rule": "docbook",
        "anchors": ["weft-Spools.top_of_page", "weft-Spools.description",
                    "weft-Spools.functions_details", "weft-spool-wind"],
        "langs": [""],
        "present": ["Spools — Winding thread for a loom",
                    "A spool feeds one thread to a loom at a time.",
                    "Winds the spool until it is full."],
        "absent": ["Generated by GTK-Doc", "Home", "Next", "Top", "| Spools"],
    },
    "javadoc": {  # Javadoc 17: member sections inside <ul class="member-list"> items
        "rule": "main",
        "anchors": ["method-summary", "method-detail", "add(java.lang.String,long)", "reset()"],
        "langs": [],
        "present": ["# Class Tally", "Counts events per key",
                    "Adds `delta` to the count of `key`", "Forgets every count."],
        "absent": ["Overview", "Copyright", "pathtoroot", "- ### add"],
    },
    "node": {  # Node.js's API docs: #apicontent, a "#" permalink inside each heading
        "rule": "node",
        "anchors": ["sockets", "socketsopenport"],
        "langs": ["js"],
        "present": ["## Sockets {#sockets}", "Opens a socket on `port` and returns it."],
        "absent": ["Go back to the home page", "Table of contents", "documentation", "\\#",
                   "apicontent"],
    },
    "rustdoc": {  # rustdoc: items folded in <details>, their headings in the summaries
        "rule": "rustdoc",
        "anchors": ["main-content", "implementations", "impl", "method.new", "examples",
                    "method.wind", "panics", "examples-1", "trait-implementations",
                    "impl-Clone", "method.clone", "impl-Eq", "synthetic-implementations",
                    "impl-Send"],
        "langs": ["", "", "", ""],
        "present": ["A bobbin winds thread for a loom.",
                    "#### pub fn wind(&mut self, turns: usize) {#method.wind}\n\n"
                    "Winds `turns` more turns of thread.",
                    "Returns a copy of the bobbin."],
        "absent": ["logo", "source", "0.2.0", "0.3.0", "0.4.0", "[−]", "Expand description",
                   "Run", "Read more", "Notable traits", "ⓘ", "Copy", "Methods"],
    },
    "plain_main": {
        "rule": "main",
        "anchors": ["café-api", "errors"],
        "langs": [],
        "present": ["## Limits", "At most 5 orders per minute."],
        "absent": [
            "Café API home", "Home", "Contents:", "Hidden promo banner", "Decorative icon row",
            "Café Corp",
        ],
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_container_is_found_for_each_generator(name: str) -> None:
    container, rule = find_container(tree(load(name)))
    assert container is not None
    assert rule == CASES[name]["rule"]
    assert extract_html(load(name)).used_fallback is False


@pytest.mark.parametrize("name", sorted(CASES))
def test_headings_carry_the_pages_real_ids(name: str) -> None:
    data = load(name)
    markdown = extract_html(data).markdown
    anchors = HEADING_ID.findall(markdown)
    assert anchors == CASES[name]["anchors"]
    assert set(anchors) <= page_ids(data)


@pytest.mark.parametrize("name", sorted(CASES))
def test_code_blocks_become_fences_with_language_and_exact_text(name: str) -> None:
    data = load(name)
    blocks = fences(extract_html(data).markdown)
    assert [lang for lang, _ in blocks] == CASES[name]["langs"]
    container, _ = find_container(tree(data))
    assert container is not None
    expected = CASES[name].get("code") or [pre_text(pre) for pre in container.iter("pre")]
    assert [code for _, code in blocks] == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_chrome_is_dropped_and_content_kept(name: str) -> None:
    markdown = extract_html(load(name)).markdown
    for text in CASES[name]["present"]:
        assert text in markdown
    for text in CASES[name]["absent"]:
        assert text not in markdown, f"chrome leaked into {name}: {text!r}"


# --- API entries, definition lists, tables ------------------------------------------------


def test_api_entries_nest_one_level_below_their_section() -> None:
    headings = HEADING.findall(extract_html(load("sphinx")).markdown)
    levels = {text: len(hashes) for hashes, text in headings}
    assert levels["Reference {#reference}"] == 2
    assert levels["class tidyqueue.Queue(maxsize=0) {#tidyqueue.Queue}"] == 3
    assert levels["put(item, *, block=True) {#tidyqueue.Queue.put}"] == 4
    assert levels["tidyqueue.drain(q) {#tidyqueue.drain}"] == 3


def test_second_signature_without_id_is_text_not_heading() -> None:
    markdown = extract_html(load("sphinx")).markdown
    assert "\ntidyqueue.drain(q, limit)\n" in markdown
    assert not re.search(r"^#+ tidyqueue\.drain\(q, limit\)", markdown, re.M)


def test_entries_without_ids_in_a_list_with_ids_are_cited_at_their_section() -> None:
    # DocBook (the PostgreSQL manual) gives only some varlistentries an id: the others
    # were cited at the entry before them, REFERENCES at the EXCLUDE entry
    html = (
        "<main><h2 id='params'>Parameters</h2><dl class='variablelist'>"
        "<dt id='exclude'><span class='term'><code>EXCLUDE</code></span></dt>"
        "<dd><p>An exclusion constraint.</p></dd>"
        "<dt><span class='term'><code>REFERENCES</code> reftable</span></dt>"
        "<dd><p>A foreign key constraint.</p></dd>"
        "<dt><span class='term'><code>DEFERRABLE</code><br><code>NOT DEFERRABLE</code>"
        "</span></dt><dd><p>Whether it can be deferred.</p></dd>"
        "<dt id='unlogged'><span class='term'><code>UNLOGGED</code></span></dt>"
        "<dd><p>Not written to the WAL.</p></dd></dl></main>")
    chunks = chunk_markdown(extract_html(html).markdown, slug_headings=False)
    cited = {c.heading_path[-1]: c.anchor for c in chunks}
    assert cited == {"EXCLUDE": "exclude", "REFERENCES reftable": "params",
                     "DEFERRABLE, NOT DEFERRABLE": "params", "UNLOGGED": "unlogged"}


def test_api_heading_level_is_capped_at_six() -> None:
    html = (
        "<main><h4 id='top'>Top</h4><dl><dt id='a'>a()</dt><dd>"
        "<dl><dt id='b'>b()</dt><dd><dl><dt id='c'>c()</dt><dd><p>deep</p></dd></dl></dd></dl>"
        "</dd></dl></main>"
    )
    headings = HEADING.findall(extract_html(html).markdown)
    assert [len(h) for h, _ in headings] == [4, 5, 6, 6]


def test_definition_lists_without_ids_are_terms_and_definitions() -> None:
    markdown = extract_html(load("sphinx")).markdown
    assert "backpressure\n: Slowing producers down when the queue is full." in markdown
    assert "Parameters:\n: **maxsize** – upper bound; `0` means unbounded." in markdown
    gitbook = extract_html(load("gitbook")).markdown
    assert (
        "retries\n: Failed deliveries are retried three times.\n: The delay doubles each time."
        in gitbook
    )


def test_definition_whose_body_starts_with_code_keeps_the_fence_intact() -> None:
    html = "<main><dl><dt>usage</dt><dd><pre>run --fast\n</pre><p>then wait</p></dd></dl></main>"
    markdown = extract_html(html).markdown
    assert "usage\n:\n  ```\n  run --fast\n  ```\n\n  then wait" in markdown


def test_tables_become_pipe_tables_with_escaped_pipes() -> None:
    sphinx = extract_html(load("sphinx")).markdown
    assert "| Operator | Meaning |\n| --- | --- |\n| `a \\| b` | merge two queues |" in sphinx
    docsy = extract_html(load("docsy")).markdown
    assert "| Plan | Requests/min | Burst |" in docsy
    assert "| Team (shared \\| pooled) |  | 100 |" in docsy


def test_tables_holding_code_keep_their_code_as_fences() -> None:
    html = (
        "<main><div class='highlight-c'><table class='highlighttable'><tr>"
        "<td class='linenos'><div class='linenodiv'><pre>1\n2</pre></div></td>"
        "<td class='code'><div class='highlight'><pre>int a;\nint b;</pre></div></td>"
        "</tr></table></div></main>"
    )
    assert fences(extract_html(html).markdown) == [("c", "int a;\nint b;")]


# --- text, entities, comments, links -------------------------------------------------


def test_escaped_markup_in_text_stays_text() -> None:
    markdown = extract_html(load("sphinx")).markdown
    assert "text such as <script>alert(1)</script> stays plain text & is kept." in markdown
    assert "never evaluates `<script>` tags" in markdown
    assert 'name == "a&b"' in markdown


def test_comments_are_removed_but_their_surroundings_kept() -> None:
    html = "<main><p>alpha<!-- hidden note -->beta</p><!-- <p>commented out</p> --></main>"
    markdown = extract_html(html).markdown
    assert markdown.strip() == "alphabeta"


def test_links_are_made_absolute_when_the_url_is_known() -> None:
    url = "https://docs.example.org/docs/x/page.html"
    markdown = extract_html(load("plain_main"), url=url).markdown
    assert "[orders endpoint](https://docs.example.org/docs/orders.html)" in markdown
    assert f"[top]({url}#café-api)" in markdown
    relative = extract_html(load("plain_main")).markdown
    assert "[orders endpoint](../orders.html)" in relative


def test_base_href_is_honoured() -> None:
    html = (
        "<html><head><base href='/v2/'></head>"
        "<body><main><a href='a.html'>A</a></main></body></html>"
    )
    markdown = extract_html(html, url="https://example.org/x/y.html").markdown
    assert "[A](https://example.org/v2/a.html)" in markdown


def test_inline_markup_is_kept_simply() -> None:
    html = (
        "<main><p>Use <code>a`b</code>, <em>slanted</em> and <strong> bold </strong>"
        " <a href='javascript:void(0)'>not a link</a> *literal*.</p></main>"
    )
    markdown = extract_html(html).markdown.strip()
    assert markdown == "Use ``a`b``, *slanted* and **bold** not a link \\*literal\\*."


def test_line_leading_markers_in_text_are_escaped() -> None:
    html = "<main><p># not a heading</p><p>1. not a list</p><p>- nor this</p></main>"
    markdown = extract_html(html).markdown
    assert not HEADING.search(markdown)
    assert "\\# not a heading" in markdown
    assert "1\\. not a list" in markdown
    assert "\\- nor this" in markdown


def test_a_term_that_looks_like_a_tag_does_not_swallow_later_sections() -> None:
    """``<script>`` at a line's start opens an HTML block running to ``</script>``: every
    later option of a command-line reference would be cut as one section."""
    html = ("<main><h2 id='opts'>Options</h2><dl><dt>&lt;script&gt;</dt><dd><p>Run a file."
            "</p></dd></dl><dl><dt id='cmdoption-u'>-u</dt><dd><p>Unbuffered output.</p>"
            "</dd></dl><dl><dt id='cmdoption-m'>-m &lt;module-name&gt;</dt><dd><p>Run a "
            "module.</p></dd></dl></main>")
    markdown = extract_html(html).markdown
    assert "\\<script>\n: Run a file." in markdown
    chunks = chunk_markdown(markdown)
    assert [(c.anchor, c.heading_path[-1]) for c in chunks] == [
        ("opts", "Options"), ("cmdoption-u", "-u"), ("cmdoption-m", "-m <module-name>")]


def test_nested_and_ordered_lists() -> None:
    markdown = extract_html(load("mkdocs_material")).markdown
    assert (
        "3. First set `mode`.\n"
        "   - either `fast`\n"
        "   - or `safe`\n"
        "     1. the default\n"
        "4. Then restart."
    ) in markdown


def test_blockquotes() -> None:
    markdown = extract_html(load("mkdocs_material")).markdown
    assert "> Configuration is code.\n>\n> Review it like code." in markdown


def test_fence_is_longer_than_any_backtick_run_in_the_code() -> None:
    markdown = extract_html(load("sphinx")).markdown
    assert "````python3\n" in markdown
    html = "<main><pre><code class='language-md'>````\nquad\n````\n```</code></pre></main>"
    blocks = fences(extract_html(html).markdown)
    assert blocks == [("md", "````\nquad\n````\n```")]
    assert "`````md" in extract_html(html).markdown


def test_callouts_written_as_asides_are_content() -> None:
    page = extract_html(
        '<main><h1>T</h1><p>Intro.</p><aside aria-label="Note" class="starlight-aside '
        'starlight-aside--note"><div class="starlight-aside__content"><p>Back up first.</p>'
        '</div></aside><aside class="related-posts"><p>More posts</p></aside></main>')
    assert "Back up first." in page.markdown and "More posts" not in page.markdown


def test_what_a_printout_leaves_out_is_chrome_and_file_tree_folders_are_content() -> None:
    # Tailwind themes (Hextra, Hugo's docs) mark chrome with print:hidden and nothing
    # else; Hextra's file trees name each folder in a button heading its list item
    page = extract_html(
        '<main><h1>T</h1><p>Intro.</p><ul><li><button class="tree-folder"><svg></svg>'
        '<span>content</span></button><ul><li><span>_index.md</span></li></ul></li></ul>'
        '<p><button>Copy</button></p><div class="hx:flex hx:print:hidden"><a href="/a">'
        'Previous</a><a href="/b">Next</a></div><div class="print:hidden">Last updated: '
        'today</div><div class="hidden-print">Edit</div></main>')
    assert "- content\n  - _index.md" in page.markdown
    for chrome in ("Copy", "Previous", "Next", "Last updated", "Edit"):
        assert chrome not in page.markdown


def test_a_section_named_like_a_layout_element_is_content() -> None:
    """A heading with id 'footer' or 'sidebar' (a page documenting a theme's footer) was
    dropped as chrome, and its text cited at the section before it."""
    page = extract_html(
        '<html><body><div id="sidebar"><a href="/x">Nav link</a></div><main><h1 id="t">T</h1>'
        '<p>Intro.</p><h2 id="footer">Footer</h2><p>ftword the footer option.</p>'
        '<section id="search"><h2>Search</h2><p>srword the search box.</p></section>'
        '<dl><dt id="toc">toc</dt><dd>tocword shows the outline.</dd></dl>'
        '<div id="footer">Copyright chrome</div></main></body></html>')
    md = page.markdown
    assert "## Footer {#footer}" in md and "ftword" in md
    assert "## Search {#search}" in md and "srword" in md and "tocword" in md
    assert "Nav link" not in md and "Copyright chrome" not in md
    anchors = {c.anchor for c in chunk_markdown(md) if "word" in c.text}
    assert anchors == {"footer", "search", "toc"}


def test_a_breadcrumb_trail_before_the_title_is_chrome_whatever_its_classes() -> None:
    page = extract_html(
        '<main><div class="flex gap-1"><div><a href="/docs/">Docs</a></div><svg></svg>'
        '<div><a href="/docs/guide/">Guide</a></div> / <div class="font-medium">Install'
        '</div></div>Lead text.<p>Version 2 only</p><div class="content"><h1>Install</h1>'
        '<p>Body.</p></div></main>')
    assert page.markdown.startswith("Lead text.")  # the trail's tail stays
    assert "Docs" not in page.markdown and "Guide" not in page.markdown
    assert "Version 2 only" in page.markdown and "Body." in page.markdown
    # a page without an h1, or written text before it, keeps all
    kept = extract_html('<main><p><a href="/a">A link</a> and words</p><h1>T</h1><p>B.</p>'
                        '</main>')
    assert "A link" in kept.markdown


def test_lines_written_as_blocks_inside_pre_stay_lines() -> None:
    # Expressive Code (Starlight, Astro's docs) writes each line as a block, no newline
    # between them; a browser shows one line per block, and so does the fence.
    lines = ["---", "title: My page", "", "Body follows."]
    code = "".join(f'<div class="ec-line"><div class="code"><span>{line}</span>'
                   f'{"" if line else chr(10)}</div></div>' for line in lines)
    page = extract_html(f'<main><h1>T</h1><p>Before.</p><pre data-language="md"><code>{code}'
                        "</code></pre><p>After.</p></main>")
    assert fences(page.markdown) == [("md", "\n".join(lines))]


def test_language_comes_from_element_or_ancestor_classes() -> None:
    html = (
        "<main><pre class='lang-ruby'>puts 1</pre>"
        "<div class='highlight-none'><div class='highlight'><pre>plain</pre></div></div>"
        "<pre><code class='hljs language-c++'>int x;</code></pre>"
        "<pre>bare</pre>"
        "<pre class='language-rust,ignore'><code>fn main() {}</code></pre>"
        "<listing><div class='language-toml'><pre><code>[package]</code></pre></div>"
        "<p>Listing 1-1</p></listing><xmp>a <b> c</xmp></main>"
    )
    markdown = extract_html(html).markdown
    # not "rustignore" (Docusaurus keeps rustdoc's attributes); a <listing> of blocks (the
    # Rust book's, through Docusaurus) is no code block of its own
    assert [lang for lang, _ in fences(markdown)] == ["ruby", "", "c++", "", "rust", "toml", ""]
    assert "Listing 1-1" in markdown.split("[package]")[1].split("```")[1]


def test_headings_never_get_an_id_with_whitespace_or_braces() -> None:
    html = (
        "<main><h2 id='two words'>A</h2><h2 id='x}y'>B</h2>"
        "<section id='ok-section'><h2>C</h2><h3>D</h3></section></main>"
    )
    markdown = extract_html(html).markdown
    assert HEADING.findall(markdown) == [
        ("##", "A"), ("##", "B"), ("##", "C {#ok-section}"), ("###", "D"),
    ]


def test_a_tag_like_heading_reads_as_text_in_and_out_of_code() -> None:
    # VitePress' "## `<ClientOnly>`": the escape that keeps "<Teleport>" from reading as
    # HTML has no place in a code span, where it would show
    html = ("<main><h1 id='t'>SSR</h1><p>Intro.</p><h2 id='c'><code>&lt;ClientOnly&gt;</code>"
            " vs &lt;Teleport&gt;</h2><p>Use it.</p></main>")
    chunks = chunk_markdown(extract_html(html).markdown, slug_headings=False)
    assert chunks[-1].heading_path == ("SSR", "<ClientOnly> vs <Teleport>")
    assert chunks[-1].anchor == "c"


def test_a_step_by_step_tutorials_step_list_is_navigation() -> None:
    # Jekyll's tutorial pages each carry the list of all ten steps, with Back and Next
    html = ("<main><h1 id='t'>Liquid</h1><p>Liquid is a templating language.</p>"
            "<ol class='step-nav'><li><a href='/01/'>Setup</a></li>"
            "<li><a href='/02/'>Liquid</a></li></ol></main>")
    markdown = extract_html(html).markdown
    assert "templating language" in markdown and "Setup" not in markdown


def test_a_collapsible_blocks_summary_is_its_title() -> None:
    html = ("<main><h1 id='t'>Notes</h1><details class='note'><summary>Read this</summary>"
            "<p>Folded text.</p></details></main>")
    assert "**Read this**\n\nFolded text." in extract_html(html).markdown


def test_a_summary_holding_a_heading_opens_the_section_of_the_details_body() -> None:
    # rustdoc folds each method: its signature heading in the summary, its docs below
    html = ("<main><h2 id='methods'>Methods</h2><details open><summary><section "
            "id='method.spin'><a href='#method.spin' class='anchor'></a><h4>pub fn spin(&amp;"
            "self)</h4></section></summary><div class='docblock'><p>Spins once.</p>"
            "<h5 id='examples'>Examples</h5><pre><code>s.spin();</code></pre></div></details>"
            "<details open><summary><h4 id='method.stop'>pub fn stop(&amp;self)</h4></summary>"
            "<p>Stops the spindle.</p></details></main>")
    markdown = extract_html(html).markdown
    assert "#### pub fn spin(&self) {#method.spin}\n\nSpins once." in markdown
    assert "#### pub fn stop(&self) {#method.stop}\n\nStops the spindle." in markdown
    cited = [c.anchor for c in chunk_markdown(markdown, slug_headings=False)
             if "Stops the spindle." in c.text]
    assert cited == ["method.stop"]


def test_a_source_link_beside_a_heading_leaves_it_the_id_of_its_section() -> None:
    # rustdoc floats each item's version and "source" link right of its heading, written
    # before it in the element that carries the id
    html = ("<main><h2 id='impls'>Trait Implementations</h2><section id='impl-Ord'>"
            "<span class='rightside'><span class='since'>2.1.0</span> · <a class='srclink' "
            "href='/src/knot.rs.html#9'>source</a></span><a href='#impl-Ord' class='anchor'>"
            "</a><h3>impl Ord for Knot</h3></section><div id='tymethod.tie'><div "
            "class='rightside'><a class='srclink' href='/src/knot.rs.html#12'>source</a></div>"
            "<h4>fn tie(&amp;self)</h4></div><p>Ties the knot.</p>"
            # older rustdoc wrote them inside the heading
            "<h4 id='method.untie' class='method'><code>fn untie(&amp;self)</code><span "
            "class='since'>1.2.0</span><a class='srclink' href='/src/knot.rs.html#20'>[src]</a>"
            "</h4></main>")
    markdown = extract_html(html).markdown
    assert HEADING.findall(markdown) == [
        ("##", "Trait Implementations {#impls}"), ("###", "impl Ord for Knot {#impl-Ord}"),
        ("####", "fn tie(&self) {#tymethod.tie}"), ("####", "`fn untie(&self)` {#method.untie}")]
    assert not any(chrome in markdown for chrome in ("source", "src", "2.1.0", "1.2.0"))


def test_read_more_links_are_chrome_and_links_saying_more_are_not() -> None:
    html = ("<main><h1 id='t'>Knot</h1><p>Returns a copy of the knot. <a href='clone.html#c'>"
            "Read more</a></p><p>Ties it. <a href='tie.html'>Read More »</a></p><p>See "
            "<a href='/guide.html'>Read more about knots</a>.</p></main>")
    markdown = extract_html(html, url="https://d.test/knot.html").markdown
    assert "Returns a copy of the knot.\n\nTies it.\n\n" in markdown
    assert "[Read more about knots](https://d.test/guide.html)" in markdown


@pytest.mark.parametrize(("body_class", "rule"), [("rustdoc struct", "rustdoc"), ("", "main")])
def test_rustdocs_content_is_its_main_content_section(body_class: str, rule: str) -> None:
    # rustdoc's <main> also holds its logo and search bar; elsewhere #main-content is only
    # a skip link's target and may be the whole layout
    page = (f"<html><body class='{body_class}'><main><a class='sub-logo-container' href='/'>"
            "<img alt='logo' src='/logo.svg'></a><section id='main-content'><h1>Knot</h1>"
            "<p>Ties things.</p></section></main></body></html>").encode()
    assert find_container(tree(page))[1] == rule
    markdown = extract_html(page).markdown
    assert "Ties things." in markdown
    assert ("logo" in markdown) is (rule == "main")


def test_pydata_themes_previous_and_next_links_are_navigation() -> None:
    html = ("<html><body><main class='bd-content' role='main'><div><section id='install'>"
            "<h1>Installation</h1><p>Use pip.</p></section></div><div class='prev-next-area'>"
            "<a class='left-prev' href='index.html'><div class='prev-next-info'><p "
            "class='prev-next-subtitle'>previous</p><p class='prev-next-title'>Home</p></div>"
            "</a><a class='right-next' href='tutorial.html'><div class='prev-next-info'><p "
            "class='prev-next-subtitle'>next</p><p class='prev-next-title'>Tutorial</p></div>"
            "</a></div></main></body></html>")
    markdown = extract_html(html).markdown
    assert markdown == "# Installation {#install}\n\nUse pip.\n"


def test_an_admonitions_title_is_a_bold_line_of_its_own() -> None:
    html = ("<main><h1 id='t'>Install</h1>"
            "<div class='admonition warning'><p class='admonition-title'>Warning</p>"
            "<p>Back up first.</p></div>"
            "<div class='theme-admonition alert alert--success admonition_xJq3'>"
            "<div class='admonitionHeading_Gvgb'><span class='admonitionIcon_Rf37'><svg></svg>"
            "</span>tip</div><div class='admonitionContent_BuS1'><p>Use npx.</p></div></div>"
            "<div class='info custom-block'><p class='custom-block-title'>INFO</p>"
            "<p>An info box.</p></div>"
            # a custom title keeps the type, as the files source labels it
            "<div class='admonition danger'><p class='admonition-title'>Be careful</p>"
            "<p>Do not.</p></div><div class='theme-admonition theme-admonition-caution "
            "alert alert--warning'><div class='admonitionHeading_x'>Mind the gap</div>"
            "<p>Gap.</p></div></main>")
    markdown = extract_html(html).markdown
    assert "**Warning**\n\nBack up first." in markdown
    assert "**Tip**\n\nUse npx." in markdown
    assert "**INFO**\n\nAn info box." in markdown
    assert "**Danger: Be careful**\n\nDo not." in markdown
    assert "**Caution: Mind the gap**\n\nGap." in markdown


def test_a_code_blocks_title_stays_with_it() -> None:
    html = ("<main><h1 id='t'>Config</h1>"
            "<div class='language-json codeBlockContainer_x theme-code-block'>"
            "<div class='codeBlockTitle_Fmol'>package.json</div><div class='codeBlockContent'>"
            "<pre class='prism-code language-json'><code>{}</code></pre></div></div>"
            "<div class='language-python highlight'><span class=filename>bubble_sort.py</span>"
            "<pre><code>def sort(): ...</code></pre></div>"
            "<div class='highlight-text'><pre>no title</pre></div></main>")
    markdown = extract_html(html).markdown
    assert '```json title="package.json"\n{}\n```' in markdown
    assert '```python title="bubble_sort.py"\ndef sort(): ...\n```' in markdown
    assert "```\nno title\n```" in markdown or "```text\nno title\n```" in markdown
    sphinx = ("<main><h1 id='t'>Templates</h1><div class='literal-block-wrapper docutils "
              "container' id='id20'><div class='code-block-caption'><span class='caption-text'>"
              "<code>page.txt</code></span><a class='headerlink' href='#id20'>¶</a></div>"
              "<div class='highlight-jinja notranslate'><div class='highlight'><pre>{% block %}"
              "</pre></div></div></div></main>")
    assert '```jinja title="page.txt"\n{% block %}\n```' in extract_html(sphinx).markdown
    assert "¶" not in extract_html(sphinx).markdown


def test_an_emoji_drawn_as_an_image_reads_as_its_text() -> None:
    html = ("<main><h1 id='t'>Annotations</h1><p>Ask <img alt='🙋' class='twemoji' "
            "src='https://cdn.example.com/1f64b.svg' title=':raising_hand:'> or "
            "<img class='emoji' alt=':+1:' src='/e/plus1.png'> now, see "
            "<img alt='Diagram' src='/img/d.png'>.</p></main>")
    markdown = extract_html(html, url="https://docs.example.com/a/").markdown
    assert "Ask 🙋 or :+1: now, see ![Diagram](https://docs.example.com/img/d.png)." in markdown


def test_an_id_on_the_element_a_heading_opens_is_the_headings_id() -> None:
    html = (
        "<main><div id='wrap'><span></span><div class='titlepage'><div><h2>Opens</h2>"
        "</div></div><p>x</p></div>"
        "<div id='late'>Lead text.<h2>Inside</h2></div>"
        "<div id='far'><div><div><div><div><h2>Too deep</h2></div></div></div></div></div>"
        "</main>"
    )
    assert HEADING.findall(extract_html(html).markdown) == [
        ("##", "Opens {#wrap}"), ("##", "Inside"), ("##", "Too deep")]


def test_a_docbook_admonition_title_is_not_a_section() -> None:
    html = ("<main><h2 id='a'>A</h2><div class='warning'><h3 class='title'>Warning</h3>"
            "<p>Careful.</p></div><p>Still A.</p></main>")
    markdown = extract_html(html).markdown
    assert HEADING.findall(markdown) == [("##", "A {#a}")]
    assert "**Warning**" in markdown


def test_the_generic_fallback_keeps_the_pages_ids_in_page_order() -> None:
    words = "<p>" + "Ordinary words that make a paragraph worth keeping here. " * 10 + "</p>"
    html = (f"<html><body><div class='post'><h1 id='top'>Guide</h1>{words}"
            f"<h2 id='ex-1'>Example</h2>{words}<h2>Example</h2>{words}"
            f"<div id='ex-3'><h2>Example</h2>{words}</div><h2>Unknown</h2>{words}"
            f"</div></body></html>")
    page = extract_html(html)
    assert page.used_fallback
    assert HEADING.findall(page.markdown) == [
        ("#", "Guide {#top}"), ("##", "Example {#ex-1}"), ("##", "Example"),
        ("##", "Example {#ex-3}"), ("##", "Unknown")]


def test_header_link_target_must_exist_in_the_page() -> None:
    html = (
        "<main><h2>Real<a class='headerlink' href='#real'>¶</a></h2><p id='real'>Body.</p>"
        "<h2>Ghost<a class='headerlink' href='#ghost'>¶</a></h2></main>"
    )
    assert HEADING.findall(extract_html(html).markdown) == [("##", "Real {#real}"), ("##", "Ghost")]


def test_hidden_tab_panels_are_content() -> None:
    markdown = extract_html(load("docusaurus")).markdown
    assert "npm install --global quillstack" in markdown
    assert "yarn global add quillstack" in markdown


# --- fallback, titles, decoding, failures ------------------------------------------------


def test_page_without_container_falls_back_to_trafilatura() -> None:
    page = extract_html(load("blog"), url="https://blog.example.org/2024/cache")
    assert isinstance(page, ExtractedPage)
    assert page.used_fallback is True
    assert "Object storage changed the picture." in page.markdown
    for chrome in ("Sidebar: Tuning", "Archive of all posts", "Powered by", "newsletter"):
        assert chrome not in page.markdown


def _post(n: int, comments: str = "") -> str:
    return (f'<article><h2 id="post-{n}">Release {n}</h2><p>Notes of release {n}.</p>'
            f"{comments}</article>")


def test_a_listing_of_articles_is_read_whole() -> None:
    # A blog's or changelog's index: the posts are sibling <article>s, each of them content.
    listing = ('<html><body><header><a href="/">Site</a></header><div class="posts">'
               + "".join(_post(n) for n in (3, 2, 1))
               + '</div><aside class="sidebar">Archive</aside></body></html>')
    page = extract_html(listing)
    assert HEADING_ID.findall(page.markdown) == ["post-3", "post-2", "post-1"]
    assert "Notes of release 1." in page.markdown and "Archive" not in page.markdown


def test_an_article_nested_in_an_article_is_part_of_it() -> None:
    # A comment is an <article> inside its post: the post is the page, comment and all.
    comment = '<article class="comment"><p>Thanks for the notes.</p></article>'
    post = (f'<html><body>{_post(7, comment)}<aside><article><p>Also read: release 6'
            "</p></article></aside></body></html>")
    container, rule = find_container(tree(post.encode()))
    assert rule == "article" and container is not None and container.get("class") is None
    page = extract_html(post)
    assert "Notes of release 7." in page.markdown and "Thanks for the notes." in page.markdown
    assert "Also read" not in page.markdown


def test_a_bare_fragment_is_all_content() -> None:
    # Go's doc/*.html: a template comment, then the content, with no <html> or <body>.
    fragment = ('<!--{\n "Title": "Memory model"\n}-->\n<h2 id="intro">Introduction</h2>\n'
                "<p>Reads and writes\nare ordered.</p>\n<h3 id='sync'>Synchronization</h3>"
                "<p>Locks order them.</p>")
    page = extract_html(fragment)
    assert page.used_fallback is False
    assert HEADING_ID.findall(page.markdown) == ["intro", "sync"]
    assert "Reads and writes are ordered." in page.markdown
    assert extract_html(f"<html><body>{fragment}</body></html>").used_fallback is True


def test_empty_container_falls_back_to_trafilatura() -> None:
    shell = load("blog").replace(b'<div id="wrapper">', b'<main id="app"></main><div id="wrapper">')
    assert find_container(tree(shell))[1] == "main"
    page = extract_html(shell)
    assert page.used_fallback is True
    assert "Object storage changed the picture." in page.markdown


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        (
            "functools — Higher-order functions — Python 3.11.2 documentation",
            "functools — Higher-order functions",
        ),
        ("Installation | Quillstack", "Installation"),
        ("Ownership Rules - The Crabtrap Guide", "Ownership Rules"),
        ("Webhooks · Mossgate Handbook", "Webhooks"),
        ("Well-formed-title", "Well-formed-title"),
        (" | Only a site", " | Only a site"),
    ],
)
def test_site_suffix_is_trimmed_from_titles(title: str, expected: str) -> None:
    assert trim_site_suffix(title) == expected


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("sphinx", "tidyqueue — Bounded work queues"),
        ("docusaurus", "Installation"),
        ("vitepress", "Getting Started"),
        ("mdbook", "Ownership Rules"),
        ("docsy", "Rate limits"),
        ("gitbook", "Webhooks"),
        ("plain_main", "Café API"),
        ("rustdoc", "Bobbin in spindle"),
        ("blog", "Why we moved our build cache to object storage"),
    ],
)
def test_titles_of_fixtures(name: str, title: str) -> None:
    assert extract_html(load(name)).title == title


def test_title_falls_back_to_og_title_then_first_h1() -> None:
    og = (
        "<html><head><meta property='og:title' content='From OG'></head>"
        "<body><main><h1>H</h1><p>x</p></main></body></html>"
    )
    assert extract_html(og).title == "From OG"
    h1 = "<main><h1>Heading one<a class='headerlink' href='#'>¶</a></h1><p>x</p></main>"
    assert extract_html(h1).title == "Heading one"
    assert extract_html("<main><p>no title</p></main>").title is None


def test_bytes_are_decoded_with_the_declared_charset() -> None:
    latin1 = load("plain_main").decode("ascii").replace("&eacute;", "é").encode("latin-1")
    assert b"\xe9" in latin1
    page = extract_html(latin1)
    assert page.title == "Café API"
    assert "# Café API {#café-api}" in page.markdown


def test_bytes_without_charset_utf8_and_utf16_bom() -> None:
    text = "<main><p>naïve café — ok</p></main>"
    assert "naïve café — ok" in extract_html(text.encode("utf-8")).markdown
    assert "naïve café — ok" in extract_html(text.encode("utf-16")).markdown
    cp1252 = "<main><p>“quoted” café</p></main>".encode("cp1252")
    assert "“quoted” café" in extract_html(cp1252).markdown


def test_a_utf16_declaration_on_ascii_readable_bytes_means_utf8() -> None:
    data = "<meta charset='utf-16'><main><p>café</p></main>".encode()
    assert extract_html(data).markdown.strip() == "café"


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9\x07\x00",
        bytes(range(256)) * 8,
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj",
    ],
)
def test_binary_input_is_refused(data: bytes) -> None:
    with pytest.raises(ExtractError, match="not (HTML )?text"):
        extract_html(data)


def test_a_stray_nul_in_a_long_page_is_dropped() -> None:
    page = b"<main><p>The <code>\x00</code> constant.</p>" + b"<p>More text.</p>" * 100 + b"</main>"
    markdown = extract_html(page).markdown
    assert markdown.startswith("The constant.") and "\x00" not in markdown


@pytest.mark.parametrize(
    "html",
    [
        b"",
        "   \n ",
        "<html><body></body></html>",
        "<html><head><title>T</title></head><body><script>var x = 1;</script></body></html>",
        "<main><nav><a href='/'>Home</a></nav></main>",
    ],
)
def test_pages_without_text_raise(html: str | bytes) -> None:
    with pytest.raises(ExtractError):
        extract_html(html)


def test_broken_html_is_repaired() -> None:
    html = (
        "<main><h2 id=intro>Intro<p>para <b>bold <i>both</b> tail"
        "<ul><li>one<li>two</ul><table><tr><td>a<td>b<tr><td>c</table>"
    )
    markdown = extract_html(html).markdown
    assert "## Intro {#intro}" in markdown
    assert "- one\n- two" in markdown
    assert "| a | b |\n| --- | --- |\n| c |  |" in markdown


@pytest.mark.parametrize(
    ("open_tag", "close_tag"),
    [("<div>", "</div>"), ("<ul><li>", "</li></ul>"), ("<blockquote>", "</blockquote>"),
     ("<span>", "</span>"), ("<dl><dt>t</dt><dd>", "</dd></dl>"),
     ("<table><tr><td>", "</td></tr></table>"),
     ("<table><tr><td>x</td><td>", "</td></tr></table>"),
     ("<pre><div>", "</div></pre>")],
)
def test_deeply_nested_markup_does_not_crash(open_tag: str, close_tag: str) -> None:
    # up to libxml2's depth limit the page converts without overflow; past it, libxml2 stops
    # reading, and the page is refused rather than stored without its end
    depth = 250 // (open_tag.count("<") - 2 * open_tag.count("</"))  # elements per step
    html = ("<main><p>top text</p>" + open_tag * depth + "deep text" + close_tag * depth
            + "</main>")
    assert "top text" in extract_html(html).markdown
    with pytest.raises(ExtractError, match="nested more than 255"):
        extract_html(html.replace(open_tag, open_tag * 2).replace(close_tag, close_tag * 2))


def test_str_and_bytes_give_the_same_result() -> None:
    data = load("sphinx")
    assert extract_html(data) == extract_html(data.decode("utf-8"))


def test_chunker_sees_the_real_anchors() -> None:
    chunking = pytest.importorskip("kbctl.chunk.markdown")
    data = load("sphinx")
    chunks = chunking.chunk_markdown(extract_html(data).markdown)
    anchors = {c.anchor for c in chunks}
    assert anchors <= page_ids(data)
    assert {"tidyqueue.Queue", "tidyqueue.Queue.put", "tidyqueue.drain"} <= anchors


# --- the real Python docs site ------------------------------------------------------------

needs_site = pytest.mark.skipif(
    not (SITE / "library" / "functools.html").is_file(),
    reason=f"docs site not prepared at {SITE} (run shared/scripts/docs-site prepare)",
)


def site_pages() -> list[Path]:
    return sorted(
        p for p in SITE.rglob("*.html")
        if not p.relative_to(SITE).as_posix().startswith(("_static/", "_sources/"))
    )


@needs_site
def test_functools_keeps_every_code_block_as_a_fence() -> None:
    data = (SITE / "library" / "functools.html").read_bytes()
    page = extract_html(data, url="http://127.0.0.1:8765/library/functools.html")
    main = tree(data).xpath("//div[@role='main']")[0]
    pres = [pre_text(p) for p in main.iter("pre")]
    blocks = fences(page.markdown)
    assert len(pres) > 0
    assert len(blocks) == len(pres)
    assert [code for _, code in blocks] == pres


# the site's pages in this many shares, checked side by side by the suite's workers
SITE_SHARES = 4


@needs_site
@pytest.mark.parametrize("share", range(SITE_SHARES))
def test_every_emitted_anchor_exists_in_its_page_across_the_site(share: int) -> None:
    """Each page is extracted once (the slow part) for both checks: every anchor the
    markdown carries is an id of its page and every API entry is a heading with its id;
    and on the library pages whose headings all carry ids, every chunk's anchor is one of
    the page's fragments (pages with id-less headings get slugs, which are not page ids).
    Every page is in one share."""
    missing: list[str] = []
    unmatched: list[str] = []
    chunk_misses: list[tuple[str, list[str]]] = []
    chunk_pages = 0
    pages = site_pages()[share::SITE_SHARES]
    assert pages
    for path in pages:
        data = path.read_bytes()
        markdown = extract_html(data).markdown
        root = tree(data)
        ids = {str(i) for i in root.xpath("//@id")}
        emitted = HEADING_ID.findall(markdown)
        missing.extend(f"{path.name}#{a}" for a in emitted if a not in ids)
        # Completeness: every API entry outside a table is a heading with its id.
        for dt in root.xpath("//div[@role='main']//dt[@id][not(ancestor::table)]"):
            if dt.get("id") not in emitted:
                unmatched.append(f"{path.name}#{dt.get('id')}")
        headings = HEADING.findall(markdown)
        if path.parent == SITE / "library" and headings and all(
                HEADING_ID.match(f"{h} {t}") for h, t in headings):
            fragments = page_ids(data)
            anchors = {c.anchor for c in chunk_markdown(markdown)} - {None}
            if not anchors <= fragments:
                chunk_misses.append((path.name, sorted(anchors - fragments)[:5]))
            chunk_pages += 1
    assert not missing, missing[:20]
    assert not unmatched, unmatched[:20]
    assert not chunk_misses, chunk_misses[:5]
    assert chunk_pages > 0


# --- operator-given content selectors ------------------------------------------------------

UNKNOWN_LAYOUT = """<html><head><title>Widget</title></head><body>
<div class="frame"><div class="menu">Menu chatter</div>
<div class="page-body"><h2 id="setup">Setup</h2><p>Run the setup twice.</p>
<div class="rate-this">Rate this page</div><p>Then <b>restart</b>.</p></div>
<div class="ads">Advert</div></div></body></html>"""


def test_content_selector_wins_over_container_detection() -> None:
    page_html = ("<html><body><main><p>Main chrome text</p>"
                 "<div id='real'><h2 id='a'>Real</h2><p>Real content.</p></div></main>"
                 "</body></html>")
    page = extract_html(page_html, content_selector="#real")
    assert "Real content." in page.markdown and "Main chrome" not in page.markdown
    assert not page.used_fallback


def test_exclude_selectors_remove_parts_and_keep_what_follows() -> None:
    page = extract_html(UNKNOWN_LAYOUT, content_selector="div.page-body",
                        exclude_selectors=(".rate-this",))
    assert "Run the setup twice." in page.markdown
    assert "restart" in page.markdown
    assert "Rate this page" not in page.markdown
    assert "Menu chatter" not in page.markdown and "Advert" not in page.markdown
    assert "{#setup}" in page.markdown or "setup" in page.markdown


def test_a_selector_that_matches_nothing_falls_back_to_detection() -> None:
    page = extract_html("<html><body><main><h1>T</h1><p>Body text.</p>"
                        "<div class='x'>drop me</div></main></body></html>",
                        content_selector=".absent", exclude_selectors=(".x",))
    assert "Body text." in page.markdown and "drop me" not in page.markdown


def test_bad_selectors_are_input_errors_naming_them() -> None:
    from kbctl.errors import InputError
    from kbctl.extract.html_select import ContentSelectors

    with pytest.raises(InputError, match=r"sitemap source x: CSS selector 'div\[\['"):
        ContentSelectors.parse("div[[", [], where="sitemap source x")
    with pytest.raises(InputError, match="must be a list"):
        ContentSelectors.parse(None, 3, where="sitemap source x")


def test_index_tables_and_folded_source_listings_are_no_content() -> None:
    # Sphinx's genindex and py-modindex pages are link lists; mkdocstrings folds the
    # source of each documented object under its docs
    genindex = ("<html><body><div role='main'><h1 id='index'>Index</h1>"
                "<div class='genindex-jumpbox'><a href='#A'>A</a></div>"
                "<h2 id='A'>A</h2><table class='indextable genindextable'><tr><td>"
                "<a href='x.html#f'>abs() (built-in function)</a></td></tr></table>"
                "</div></body></html>")
    assert "abs()" not in extract_html(genindex, url="https://d.test/genindex.html").markdown
    # DocBook's index (PostgreSQL's bookindex.html) and Texinfo's: as many link lists,
    # which ranked among real answers
    docbook = ("<html><body><div class='index'><div class='titlepage'><h1 class='title'>"
               "<a id='BOOKINDEX'></a>Index</h1></div><div class='indexdiv'><h3>R</h3><dl>"
               "<dt>rank, <a href='functions-window.html'>Window Functions</a></dt></dl>"
               "</div></div></body></html>")
    assert "Window Functions" not in extract_html(
        docbook, url="https://d.test/bookindex.html").markdown
    texinfo = ("<html><body><div class='unnumbered' id='Index'><h2>Index</h2>"
               "<table class='index-cp'><tr><td><a href='x.html#index-ln'>ln</a></td></tr>"
               "</table></div></body></html>")
    assert "index-ln" not in extract_html(texinfo, url="https://d.test/Index.html").markdown
    api = ("<html><body><article class='md-content__inner'><h1 id='m'>Model</h1>"
           "<div class='doc doc-object'><h2 id='m.dump'>dump</h2><p>Dump the model, leaving "
           "out None with exclude_none.</p><details class='quote mkdocstrings-source'>"
           "<summary>Source code in <code>m.py</code></summary><pre><code>def dump(self, "
           "exclude_none=False):\n    return {}</code></pre></details></div></article>"
           "</body></html>")
    markdown = extract_html(api, url="https://d.test/api/").markdown
    assert "leaving out None with exclude_none" in markdown
    assert "def dump" not in markdown and "Source code in" not in markdown


def test_html_nested_past_the_parsers_limit_is_an_error_not_a_silent_loss() -> None:
    """libxml2 stops reading 256 elements deep: the page's text from there on was dropped
    without a word, and two such pages were then taken for duplicates of each other."""
    def nested(depth: int) -> str:
        return ("<html><head><title>T</title></head><body><h1>Title</h1>" + "<div>" * depth
                + "deep text" + "</div>" * depth + "<p>after</p></body></html>")

    page = extract_html(nested(200), url="https://x.test/a")
    assert "deep text" in page.markdown and "after" in page.markdown
    with pytest.raises(ExtractError, match="nested more than 255 elements deep"):
        extract_html(nested(300), url="https://x.test/a")
    # the parser's other limit is named as what it is, not as nesting
    with pytest.raises(ExtractError, match="a run of text over the parser's 10 MB limit"):
        extract_html("<html><body><p>" + "a" * 11_000_000 + "</p></body></html>")
