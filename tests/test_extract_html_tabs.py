"""Content tabs in built HTML: each panel under its tab's label, the label list not read."""

from __future__ import annotations

import pytest

from kbctl.extract.html import extract_html

DOCUSAURUS = (
    "<div class='tabs-container'><ul role='tablist' class='tabs'>"
    "<li role='tab' aria-selected='true'>npm</li><li role='tab'>yarn</li></ul>"
    "<div class='margin-top--md'><div role='tabpanel'><div class='language-bash'><pre><code>"
    "npm i x</code></pre></div></div><div role='tabpanel' hidden><div class='language-bash'>"
    "<pre><code>yarn add x</code></pre></div></div></div></div>")
MATERIAL = (
    "<div class='tabbed-set tabbed-alternate'><input checked id='t1' name='t' type='radio'>"
    "<input id='t2' name='t' type='radio'><div class='tabbed-labels'><label for='t1'>npm"
    "</label><label for='t2'>yarn</label></div><div class='tabbed-content'>"
    "<div class='tabbed-block'><pre><code class='language-bash'>npm i x</code></pre></div>"
    "<div class='tabbed-block'><pre><code class='language-bash'>yarn add x</code></pre>"
    "</div></div></div>")
VITEPRESS = (
    "<div class='vp-code-group'><div class='tabs'><input type='radio' id='g1' checked>"
    "<label for='g1'>npm</label><input type='radio' id='g2'><label for='g2'>yarn</label>"
    "</div><div class='blocks'><div class='language-bash active'><span class='lang'>bash"
    "</span><pre><code>npm i x</code></pre></div><div class='language-bash'>"
    "<span class='lang'>bash</span><pre><code>yarn add x</code></pre></div></div></div>")
INLINE_TABS = (  # sphinx-inline-tabs (Furo): labels among the panels
    "<div class='tab-set docutils'><input checked class='tab-input' id='a' name='s' "
    "type='radio'><label class='tab-label' for='a'>npm</label><div class='tab-content "
    "docutils'><div class='highlight-bash'><pre>npm i x</pre></div></div><input "
    "class='tab-input' id='b' name='s' type='radio'><label class='tab-label' for='b'>yarn"
    "</label><div class='tab-content docutils'><div class='highlight-bash'><pre>yarn add x"
    "</pre></div></div></div>")
SIBLING_PANELS = (  # a tab list naming no panel, its panels the siblings that follow it
    "<div class='tabs'><div role='tablist'><button role='tab'>npm</button>"
    "<button role='tab'>yarn</button></div><div role='tabpanel'><pre><code "
    "class='language-bash'>npm i x</code></pre></div><div role='tabpanel' hidden><pre><code "
    "class='language-bash'>yarn add x</code></pre></div></div>")
STARLIGHT = (
    "<starlight-tabs><ul role='tablist'><li role='presentation'><a role='tab' "
    "href='#p0' id='t0'>npm</a></li><li role='presentation'><a role='tab' href='#p1' "
    "id='t1'>yarn</a></li></ul><div id='p1' aria-labelledby='t1' role='tabpanel' hidden>"
    "<pre><code>yarn add x</code></pre></div><div id='p0' aria-labelledby='t0' "
    "role='tabpanel'><pre><code>npm i x</code></pre></div></starlight-tabs>")


def _page(body: str) -> str:
    return (f"<html><head><title>Install</title></head><body><main><h1 id='i'>Install</h1>"
            f"<p>Install it:</p>{body}<p>Done.</p></main></body></html>")


@pytest.mark.parametrize("tabs", [DOCUSAURUS, MATERIAL, VITEPRESS, INLINE_TABS,
                                  SIBLING_PANELS])
def test_each_panel_reads_under_its_label(tabs: str) -> None:
    markdown = extract_html(_page(tabs)).markdown
    assert "**npm**\n\n```bash\nnpm i x\n```\n\n**yarn**\n\n```bash\nyarn add x\n```" in markdown
    assert "npmyarn" not in markdown and "- npm" not in markdown


def test_aria_panels_are_matched_by_what_the_tabs_name_not_by_order() -> None:
    markdown = extract_html(_page(STARLIGHT)).markdown
    assert "**yarn**\n\n```\nyarn add x\n```\n\n**npm**\n\n```\nnpm i x\n```" in markdown


def test_a_set_whose_labels_and_panels_do_not_pair_is_read_as_it_stands() -> None:
    lopsided = DOCUSAURUS.replace("<li role='tab'>yarn</li>", "")
    markdown = extract_html(_page(lopsided)).markdown
    assert "**npm**" not in markdown and "npm i x" in markdown and "yarn add x" in markdown


def test_many_tab_sets_end_in_time() -> None:
    page = _page(DOCUSAURUS * 2000)
    markdown = extract_html(page).markdown
    assert markdown.count("npm i x") == 2000
