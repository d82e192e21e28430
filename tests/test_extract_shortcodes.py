"""Hugo pages read as the text their readers see: shortcode tags go, what they wrap stays."""

from __future__ import annotations

from pathlib import Path

from kbctl.chunk import chunk_markdown
from kbctl.extract.shortcodes import shortcodes_to_markdown
from kbctl.pipeline.ingest import ingest
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore

PAGE = """\
# Configure the cache

{{< note >}}Clear the cache after an upgrade.{{< /note >}}

{{% warning %}}
Never share the **cache folder** between sites.
{{% /warning %}}

{{< figure src="/img/cache.png" alt="a diagram" caption="How a page reaches the \\"cache\\"" >}}

{{< datatable
  "config"
  "caches"
>}}

{{< code-toggle file=hugo config=caches />}}

{{< highlight go "linenos=table" >}}
func main() {}
{{< /highlight >}}

Call it as `{{</* cache-info */>}}` or read [the guide]({{< ref "guide.md" >}}).

```go-html-template
{{</* details summary="More" */>}}
{{ .Title }}
```

Percent {{% 50 %}}, braces {{< and %}} and {{< >}} stay as they are.
"""


def test_tags_go_and_what_readers_see_stays() -> None:
    md = shortcodes_to_markdown(PAGE)
    assert "Clear the cache after an upgrade." in md and "note" not in md
    assert "Never share the **cache folder** between sites." in md and "warning" not in md
    assert 'How a page reaches the "cache"' in md  # the caption shows, src and alt do not
    assert "cache.png" not in md and "a diagram" not in md
    assert "datatable" not in md and "code-toggle" not in md
    assert "```go\nfunc main() {}\n```" in md  # highlight renders a code block
    assert "Call it as `{{< cache-info >}}` or read [the guide]()." in md
    assert '{{< details summary="More" >}}\n{{ .Title }}' in md  # escaped: shown as written
    assert "Percent {{% 50 %}}, braces {{< and %}} and {{< >}} stay as they are." in md


TABS = """\
# Search

{{< tabpane >}}
{{< tab header="Config" lang="yaml" >}}
---
title: Search Results
layout: search
---
{{< /tab >}}
{{< tab header="hugo.toml" >}}
# Add your release versions here
x = "```"
{{< /tab >}}
{{< tab header="Notes" text=true >}}
Some **markdown**.
{{< /tab >}}
{{< /tabpane >}}

{{< tabpane text=true lang=go >}}
{{% tab header="macOS" %}}
Use brew.
{{% /tab %}}
{{< /tabpane >}}
"""


def test_docsy_tabs_are_code_unless_they_say_text() -> None:
    md = shortcodes_to_markdown(TABS)
    assert "```yaml\n---\ntitle: Search Results\nlayout: search\n---\n```" in md
    assert '````\n# Add your release versions here\nx = "```"\n````' in md
    assert "Some **markdown**." in md and "Use brew." in md and "true" not in md
    headings = [c.heading_path for c in chunk_markdown(md)]
    assert all(path == ("Search",) for path in headings), headings  # no YAML or TOML heading


def test_text_without_shortcodes_is_untouched_and_hostile_text_ends() -> None:
    assert shortcodes_to_markdown("no {{ .Title }} template here") == \
        "no {{ .Title }} template here"
    hostile = "{{<" * 100_000 + '"' + "a" * 100_000
    assert shortcodes_to_markdown(hostile) == hostile
    assert shortcodes_to_markdown("{{< x " + "y" * 100_000 + " >}}done") == "done"
    unclosed = shortcodes_to_markdown('{{< x title="' + "a\\" * 100_000 + " >}}")
    assert unclosed.startswith('"a\\a') and len(unclosed) == 200_001  # shown as written


def hugo_site(root: Path, pages: dict[str, str]) -> Path:
    (root / "hugo.toml").write_text('baseURL = "https://site.example/"\n')
    for name, text in pages.items():
        path = root / "content" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_hugo_pages_are_read_without_their_shortcodes(tmp_path: Path) -> None:
    hugo_site(tmp_path, {"cache.md": PAGE})
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(tmp_path),
                                         {"base_url": "https://site.example/"}))
    [loaded] = list(source.load(expansion.leaves, lambda ref: None))
    doc = loaded.document
    assert doc is not None and doc.url == "https://site.example/cache/"
    text = "\n".join(c.text for c in chunk_markdown(doc.body))
    assert "Clear the cache after an upgrade." in text and "{{< note" not in text


def test_only_hugo_pages_lose_their_shortcodes(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text("# Page\n\n{{< note >}}Kept as written.{{< /note >}}\n")
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(tmp_path), {}))
    [loaded] = list(source.load(expansion.leaves, lambda ref: None))
    assert loaded.document is not None
    assert "{{< note >}}Kept as written.{{< /note >}}" in loaded.document.body


def test_boilerplate_pages_front_matter_pages_and_empty_pages(
        store: KnowledgeStore, tmp_path: Path) -> None:
    notice = "{{< deprecated-in 0.156.0 >}}\nSee the release notes.\n{{< /deprecated-in >}}\n"
    hugo_site(tmp_path, {
        "methods/allpages.md": "---\ntitle: AllPages\n---\n" + notice,
        "methods/builddrafts.md": "---\ntitle: BuildDrafts\n---\n" + notice,
        "methods/_index.md": "---\ntitle: Methods\ndescription: What a page can call.\n---\n",
        "methods/next.md": '---\ntitle: Next\n---\n{{% include "/_common/next.md" %}}\n',
    })
    report = ingest(store, [source_spec("files", str(tmp_path),
                                        {"base_url": "https://site.example/"})],
                    namespace="hugo")
    # one body under two titles is two pages; a section of front matter alone is its
    # description; a page whose only content is a shortcode has no text
    assert report.dropped == {"empty": 1}
    assert "https://site.example/methods/next/: no text once extracted, nothing stored" \
        in report.notes
    stored = {s.url: s.title for s in store.documents.stored("hugo")}
    assert stored == {"https://site.example/methods/allpages/": "AllPages",
                      "https://site.example/methods/builddrafts/": "BuildDrafts",
                      "https://site.example/methods/": "Methods"}
    [section] = store.search.rank("hugo", "what can a page call", k=1)
    assert section.source_url == "https://site.example/methods/"
    assert "What a page can call." in section.text
