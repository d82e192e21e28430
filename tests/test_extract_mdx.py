"""MDX pages read as the text their visitors see."""

from __future__ import annotations

from pathlib import Path

from kbctl.chunk import chunk_markdown
from kbctl.extract.mdx import containers_to_markdown, mdx_to_markdown
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec

PAGE = """\
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
export const meta = {
  owner: 'docs',
};

# Install <Badge text="new" />

{/* an editor's comment */}

:::note Before you start

You need Python 3.10.

:::

<Tabs>
  <TabItem value="pip" label="pip">

  ```bash
  pip install kbctl
  <NotAComponent />
  ```

  </TabItem>
</Tabs>

Use `<Tabs>` to group, or <Highlight color="red">highlight words</Highlight>.

## Next steps {#next}

Read the guide.
"""


def test_mdx_keeps_text_and_code_drops_esm_and_jsx() -> None:
    md = mdx_to_markdown(PAGE)
    assert "import" not in md and "export" not in md and "owner" not in md
    assert "# Install" in md and "Badge" not in md
    assert "editor's comment" not in md
    assert "**Note: Before you start**" in md and ":::" not in md
    assert "You need Python 3.10." in md
    assert "<Tabs>" not in md.replace("`<Tabs>`", "")
    assert "pip install kbctl\n  <NotAComponent />" in md  # fences are untouched
    assert "Use `<Tabs>` to group, or highlight words." in md


def test_a_tag_over_several_lines_or_with_nested_expressions_goes_whole() -> None:
    page = (
        "Intro\n\n<Badge\n\tslot=\"preview\"\n\ttext=\"Custom\"\n"
        "\tstyle={{ fontStyle: 'italic', size: n > 2 ? 'l' : 's' }}\n/>\n\n"
        "<Tabs\n  groupId=\"os\"\n  values={[{label: 'Linux', value: 'linux'}]}>\n"
        "Text inside.\n</Tabs>\n\n"
        "<Card title=\"Setup\" style={{ a: 1 }} /> and after\n\n"
        "See <https://example.org/> too.\n")
    md = mdx_to_markdown(page)
    assert "slot" not in md and "fontStyle" not in md and "groupId" not in md
    assert "\nCustom\n" in md  # a component's visible argument, as on one line
    assert "Text inside." in md and "Setup and after" in md
    assert "See <https://example.org/> too." in md  # not a tag
    assert md.count("\n") == page.count("\n")  # every line kept its place


def test_an_unclosed_tag_is_read_line_by_line_in_linear_time() -> None:
    md = mdx_to_markdown("<Widget data={\nWords stay.\n")
    assert "Words stay." in md
    hostile = "<A b={\n" * 40_000
    assert mdx_to_markdown(hostile).count("\n") == 40_000


def test_mdx_headings_get_docusaurus_ids(tmp_path: Path) -> None:
    (tmp_path / "docusaurus.config.js").write_text("module.exports = {}")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "install.mdx").write_text(PAGE)
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(tmp_path / "docs"),
                                         {"base_url": "https://d.example/"}))
    [loaded] = list(source.load(expansion.leaves, lambda ref: None))
    doc = loaded.document
    assert doc is not None and doc.url == "https://d.example/docs/install"
    anchors = [c.anchor for c in chunk_markdown(doc.body, slug_headings=doc.slug_headings)]
    assert anchors == [None, "next"]  # the theme renders h1 without its id


CONTAINERS = """\
# Guide

::: tip
Pin the version.
:::

:::caution[Before you upgrade]
Read the changelog.
:::

::: details Show the config
Set `base`.
:::

:::: code-group
```sh [npm]
npm add -D site
```
::::

```md
::: warning
a container, shown as code
:::
```

Keep <Badge text="beta" /> as written.
"""


def test_containers_read_as_labelled_paragraphs_in_plain_markdown() -> None:
    md = containers_to_markdown(CONTAINERS)
    assert "**Tip:**\nPin the version." in md
    assert "**Caution: Before you upgrade**\nRead the changelog." in md
    assert "**Details: Show the config**" in md
    assert "code-group" not in md and "::::" not in md
    assert "```md\n::: warning\na container, shown as code\n:::\n```" in md  # code stays
    assert 'Keep <Badge text="beta" /> as written.' in md  # no JSX rules in plain markdown
    assert containers_to_markdown("no containers here") == "no containers here"


def test_which_generators_read_containers(tmp_path: Path) -> None:
    page = "# Guide\n\n:::tip\nPin the version.\n:::\n\n<Highlight>words</Highlight>\n"
    sites = {"docusaurus": ("docusaurus.config.js", "module.exports = {}", "docs"),
             "vitepress": (".vitepress/config.mts", "export default {}", ""),
             "plain": ("README.txt", "", "")}
    bodies = {}
    for name, (marker, text, folder) in sites.items():
        root = tmp_path / name
        (root / marker).parent.mkdir(parents=True, exist_ok=True)
        (root / marker).write_text(text)
        (root / folder / "guide.md").parent.mkdir(parents=True, exist_ok=True)
        (root / folder / "guide.md").write_text(page)
        source = FilesSource()
        expansion = source.expand(source_spec("files", str(root / folder),
                                             {"base_url": "https://d.example/"}))
        [body] = [x.document.body for x in source.load(expansion.leaves, lambda ref: None)
                  if x.document is not None and "Pin the version." in x.document.body]
        bodies[name] = body
    assert "**Tip:**" in bodies["docusaurus"] and "<Highlight>" not in bodies["docusaurus"]
    assert "**Tip:**" in bodies["vitepress"]
    assert ":::tip" in bodies["plain"]
    # raw HTML reads as the browser shows it, whatever the generator
    assert all("<Highlight>" not in b and "words" in b for b in bodies.values())


def test_a_tab_shows_its_label_or_else_its_value() -> None:
    page = ("<Tabs groupId=\"pm\">\n<TabItem value=\"npm\">\n\n```bash\nnpm i x\n```\n\n"
            "</TabItem>\n<TabItem value=\"yarn\" label=\"Yarn 4\">\n\nRun yarn.\n\n</TabItem>\n"
            "</Tabs>\n")
    md = mdx_to_markdown(page)
    assert [line.strip() for line in md.split("\n") if line.strip()] == [
        "npm", "```bash", "npm i x", "```", "Yarn 4", "Run yarn."]
