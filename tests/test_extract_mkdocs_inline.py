"""Material's icons and attr_list lists show no text; abbreviation definitions neither."""

from __future__ import annotations

import pytest

from kbctl.extract.abbreviations import abbreviations_removed
from kbctl.extract.mkdocs_inline import inline_marks_removed

PAGE = """\
## – Default value { #default data-toc-label="Default value" }

[Subscribe](x){ .md-button .md-button--primary } and :octicons-file-code-16: [source](y) :smile:
{ .annotate }

Code `{ .x }` and `:material-check:` stay.

## :material-check: Plain { .big }

```
{ .annotate } :material-check:
```

Not a list: {x} {.} { } {foo bar} a:material-x:b
"""


def test_icons_and_attribute_lists_go_and_a_heading_keeps_its_id() -> None:
    md = inline_marks_removed(PAGE, icons=True, attr_lists=True)
    assert md.startswith("## – Default value {#default}\n")
    assert "[Subscribe](x) and  [source](y) :smile:\n\n" in md  # an emoji shows
    assert "Code `{ .x }` and `:material-check:` stay." in md
    assert "##  Plain\n" in md and "{ .annotate } :material-check:\n```" in md
    assert "Not a list: {x} {.} { } {foo bar} a" in md


def test_only_what_the_settings_render() -> None:
    assert inline_marks_removed(PAGE, icons=False, attr_lists=False) == PAGE
    icons_only = inline_marks_removed(PAGE, icons=True, attr_lists=False)
    assert "{ .md-button .md-button--primary }" in icons_only
    assert ":octicons-file-code-16:" not in icons_only


@pytest.mark.timeout(60)
def test_hostile_lines_cost_linear_time() -> None:
    line = "{ " + "#a " * 100_000 + "x" * 10 + "\n"
    assert inline_marks_removed(line * 5, icons=True, attr_lists=True) == line * 5


def test_abbreviation_definitions_show_nothing() -> None:
    page = "The HTML spec.\n\n*[HTML]: Hyper Text Markup Language\n```\n*[kept]: code\n```\n"
    assert abbreviations_removed(page) == "The HTML spec.\n\n```\n*[kept]: code\n```\n"
    assert abbreviations_removed("no definitions") == "no definitions"
