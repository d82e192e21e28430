"""MkDocs admonitions, details and tabs read as labelled text, their content dedented."""

from __future__ import annotations

from kbctl.chunk import chunk_markdown
from kbctl.extract.admonitions import MAX_DEPTH, admonitions_to_markdown

PAGE = """\
# Setup

!!! note "Before you start"
    You need **Python**.

    !!! warning
        Nested: not on Python 2.

??? tip "A \\"quoted\\" tip"
    Hidden until opened.

!!! info ""
    A box without a title bar.

!!!danger
    No space after the marker.

=== "pip"

    ```bash
    pip install demo
    ```

=== "uv"

    Run `uv add demo`.

- a list item

    !!! example
        Inside the item.

```markdown
!!! note
    Shown as code.
```

Not a block: !!! note, nor ===, nor !!!
"""


def test_blocks_become_labelled_text_with_their_content_dedented() -> None:
    md = admonitions_to_markdown(PAGE)
    assert "**Note: Before you start**\nYou need **Python**." in md
    assert "**Warning:**\nNested: not on Python 2." in md
    assert '**Tip: A "quoted" tip**\nHidden until opened.' in md
    assert "A box without a title bar." in md and "**Info" not in md
    assert "**Danger:**\nNo space after the marker." in md
    assert "**pip**\n\n```bash\npip install demo\n```" in md
    assert "**uv**\n\nRun `uv add demo`." in md
    assert "    **Example:**\n    Inside the item." in md  # stays inside the list item
    assert "```markdown\n!!! note\n    Shown as code.\n```" in md
    assert "Not a block: !!! note, nor ===, nor !!!" in md


def test_content_is_prose_not_an_indented_code_block() -> None:
    chunks = chunk_markdown(admonitions_to_markdown(PAGE))
    text = "\n".join(c.text for c in chunks)
    assert "    You need" not in text and "You need **Python**." in text


def test_deep_nesting_stops_at_the_limit() -> None:
    deep = "".join("    " * level + "!!! note\n" for level in range(MAX_DEPTH + 5))
    md = admonitions_to_markdown(deep + "    " * (MAX_DEPTH + 5) + "bottom\n")
    assert md.count("**Note:**") == MAX_DEPTH and "bottom" in md
    assert admonitions_to_markdown("no blocks") == "no blocks"


def test_api_blocks_read_as_the_object_name() -> None:
    md = admonitions_to_markdown("Intro.\n\n::: httpx.get\n    :docstring:\n\n"
                                 "::: pkg.Client\n    options:\n      members: [get]\n\nAfter.\n")
    assert md == "Intro.\n\n`httpx.get`\n\n`pkg.Client`\n\nAfter.\n"


FENCED = """\
# Setup

/// note | Before you start
    type: warning
    attrs: {id: start}

You need **Python**.
///

//// tab | pip

```text
///
```

/// details | More
Hidden until opened.
///

////

/// caption
A figure's caption.
///

/// version-added | v2.9
Added in 2.9.
///

/// admonition
No title bar.
///

/// tip
Unclosed: runs to the end.
"""


def test_fenced_blocks_read_as_the_same_labelled_text() -> None:
    md = admonitions_to_markdown(FENCED)
    assert "**Note: Before you start**\n\nYou need **Python**." in md
    assert "type: warning" not in md and "attrs:" not in md
    assert "**pip**\n\n```text\n///\n```" in md  # a fence's content is code, not a closer
    assert "**More**\nHidden until opened." in md
    assert "\nA figure's caption.\n" in md and "Caption" not in md
    assert "**Version added: v2.9**\nAdded in 2.9." in md
    assert "\nNo title bar.\n" in md and "Admonition" not in md
    assert md.endswith("**Tip:**\nUnclosed: runs to the end.\n")
    assert [line for line in md.splitlines() if line.startswith("//")] == ["///"]


def test_a_closing_line_closes_the_innermost_block_of_its_length() -> None:
    md = admonitions_to_markdown("/// note\nouter\n/// tip\ninner\n///\nstill outer\n///\n"
                                 "after\n")
    assert md == "**Note:**\nouter\n**Tip:**\ninner\nstill outer\nafter\n"


def test_hostile_fenced_blocks_stay_linear_and_bounded() -> None:
    opened = "/// note\n" * 20_000
    md = admonitions_to_markdown(opened + "bottom\n" + "////\n" * 20_000)
    assert md.count("**Note:**") == MAX_DEPTH and "bottom" in md


def test_a_fenced_block_in_a_list_item_stays_in_it() -> None:
    md = admonitions_to_markdown("1. Install.\n\n    /// note\n\n    Only for pip.\n\n    ///\n\n"
                                 "    More of the item.\n")
    assert md == "1. Install.\n\n    **Note:**\n\n    Only for pip.\n\n\n    More of the item.\n"


def test_a_fence_shown_as_code_keeps_its_deeper_fences_as_content() -> None:
    page = ("```markdown\n!!! example\n\n    === \"List\"\n\n        ```\n        * item\n"
            "        ```\n```\n\n!!! note\n    Real.\n")
    md = admonitions_to_markdown(page)
    assert md.startswith(page[:page.index("\n\n!!! note")])  # all of the example, as written
    assert md.endswith("**Note:**\nReal.\n")
