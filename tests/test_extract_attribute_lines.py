"""Block attribute lines (kramdown's, goldmark's) show nothing on the page."""

from __future__ import annotations

from pathlib import Path

from kbctl.extract.attribute_lines import without_attribute_lines
from tests.sitebuild import page_bodies, write_tree


def test_kramdown_attribute_lines_go_and_ids_stay() -> None:
    text = ("Intro\n{: .fs-6 .fw-300 }\n\n- a\n- b\n{: .text-delta }\n\n## Heading\n"
            "{: #named .no_toc }\n\n{:toc}\n\n```\n{: .kept-in-code }\n```\n"
            "Text with {: .inline } stays.\n[Start](#go){: .btn .fs-5 } and **Contents**{:.td}"
            " but `{: .code }` and `x`{: .after-code } are written\n")
    assert without_attribute_lines(text, kramdown=True) == (
        "Intro\n\n\n- a\n- b\n\n\n## Heading\n{: #named .no_toc }\n\n\n\n```\n"
        "{: .kept-in-code }\n```\nText with {: .inline } stays.\n[Start](#go) and "
        "**Contents** but `{: .code }` and `x`{: .after-code } are written\n")
    goldmark = "# Title\n{.display-6}\n\nText.\n{class=\"lead\"}\n{#id}\n{not attributes}\n"
    assert without_attribute_lines(goldmark, kramdown=False) == (
        "# Title\n\n\nText.\n\n{#id}\n{not attributes}\n")


def test_a_jekyll_page_reads_without_them_and_hugo_only_when_the_site_turns_them_on(
        tmp_path: Path) -> None:
    jekyll = write_tree(tmp_path / "j", {
        "_config.yml": "title: x\n",
        "docs/page.md": "---\ntitle: Page\n---\n\n# Page\n{: .no_toc }\n\nText.\n"
                        "{: .warning }\n",
        # an HTML page of the site's is a Liquid template too
        "404.html": "---\npermalink: /404\n---\n<h1>Page not found</h1>\n<p>Go to the "
                    "<a href=\"{{ '/' | relative_url }}\">home page</a>{% if site.search %}"
                    " or search{% endif %}.</p>\n"})
    bodies = page_bodies(jekyll)
    body = bodies["https://docs.example.com/docs/page.html"]
    assert "{:" not in body and "Text." in body
    missing = bodies["https://docs.example.com/404"]
    assert "{%" not in missing and "{{" not in missing and "home page" in missing
    for block, shown in (("true", False), ("false", True)):
        hugo = write_tree(tmp_path / f"h{block}", {
            "hugo.toml": f"[markup.goldmark.parser.attribute]\nblock = {block}\n",
            "content/page.md": "---\ntitle: Page\n---\n\n## Lead\n\nBig words.\n"
                               "{.display-6}\n"})
        [body] = page_bodies(hugo / "content").values()
        assert ("{.display-6}" in body) is shown
