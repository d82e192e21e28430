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
