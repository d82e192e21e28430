"""MDX pages read as the text their visitors see."""

from __future__ import annotations

from pathlib import Path

from kbctl.chunk import chunk_markdown
from kbctl.extract.mdx import mdx_to_markdown
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
