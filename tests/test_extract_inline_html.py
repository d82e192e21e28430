"""Raw HTML in markdown read as a browser shows it; code left as written; linear scans."""

from __future__ import annotations

from kbctl.extract.inline_html import code_spans, html_to_text
from kbctl.extract.mdx import mdx_to_markdown

PAGE = """\
# Title

<!-- an editor's note,
over two lines -->
First paragraph.
<!-- between -->
Second <!-- inline --> paragraph, `<!-- more -->` and `<br>` in code.

<details><summary>Click</summary>

Hidden body, press <kbd>Ctrl</kbd>.

</details>

<script>
var hidden = 1 < 2;
</script>

```html
<!-- a comment in code --><b>bold</b>
```

    <p>indented code</p>

Unclosed <!-- runs to the end
"""


def test_comments_tags_and_scripts_go_and_code_stays() -> None:
    md = html_to_text(PAGE)
    assert "editor's note" not in md and "over two lines" not in md and "between" not in md
    assert "First paragraph.\n\nSecond  paragraph" in md  # blocks stay apart
    assert "`<!-- more -->` and `<br>` in code." in md
    assert "Click" in md and "<summary>" not in md and "Hidden body, press Ctrl." in md
    assert "var hidden" not in md
    assert "<!-- a comment in code --><b>bold</b>" in md
    assert "    <p>indented code</p>" in md
    assert md.rstrip().endswith("Unclosed")
    assert html_to_text("a < b and c > d, <https://x.example> stay") == \
        "a < b and c > d, <https://x.example> stay"


def test_code_spans_pair_runs_of_equal_length() -> None:
    line = "a `x` b ``y ` z`` c ``` d ` e"
    assert [line[s:e] for s, e in code_spans(line)] == ["`x`", "``y ` z``"]


def test_hostile_lines_end() -> None:
    """Each took seconds to hours with the backtracking patterns these scans replace."""
    n = 200_000
    assert html_to_text("x " + "`" * n + "a" * n) == "x " + "`" * n + "a" * n
    assert mdx_to_markdown("x ``" + "a`" * n).startswith("x ``a`")
    assert html_to_text("x " + "<!--" * n) == "x "
    assert html_to_text("x <a" + " " * n) == "x <a" + " " * n
    assert mdx_to_markdown("x " + "{/*" * n) == "x " + "{/*" * n
    assert mdx_to_markdown(":::note a" + " " * n + "b").startswith("**Note: a")


def test_a_tag_holding_backticks_goes_whole_and_html_blocks_read_no_code_spans() -> None:
    inline = 'See <span data-x="`cargo new`">the listing</span> and `<b>`.'
    assert html_to_text(inline) == "See the listing and `<b>`."
    block = '<Listing number="1-2" caption="Contents of `Cargo.toml`">\n\ntext\n\n</Listing>\n'
    assert html_to_text(block).split() == ["Contents", "of", "`Cargo.toml`", "text"]


def test_components_show_their_visible_arguments() -> None:
    md = 'A <TabItem value="n" label="npm">npm i</TabItem>, <abbr title="a tip">x</abbr>, ' \
         '<Badge type="tip" text="beta" />.'
    assert html_to_text(md).split() == ["A", "npm", "npm", "i,", "x,", "beta", "."]


def test_a_tag_over_several_lines_of_an_html_block_goes_whole() -> None:
    md = '# Ownership\n\n<img alt="Three tables:\nthe stack and the heap." src="x.svg"\n' \
         'class="center" />\n\nFigure 4-2: the representation.\n'
    text = html_to_text(md)
    assert "Three tables" not in text and "src=" not in text and "class=" not in text
    assert text.startswith("# Ownership\n") and "\n\nFigure 4-2: the representation." in text


def test_a_heading_shows_no_component_arguments() -> None:
    """Its id comes from its text, which a component's arguments are no part of."""
    md = "## Install <Badge text=\"new\" />\n\nText <Badge text=\"beta\" />.\n"
    assert html_to_text(md).split("\n")[0].rstrip() == "## Install"
    assert mdx_to_markdown(md).split("\n")[0].rstrip() == "## Install"
    assert "beta" in html_to_text(md) and "beta" in mdx_to_markdown(md)
