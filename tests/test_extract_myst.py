"""MyST pages read as the text their readers see: directives by kind, roles as text."""

from __future__ import annotations

from pathlib import Path

from kbctl.chunk import chunk_markdown
from kbctl.extract.myst import MAX_DEPTH, MAX_SUBSTITUTED_CHARS, myst_to_markdown
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec
from tests.sitebuild import write_tree

PAGE = """\
(install-guide)=
# Install

% an editor's comment

```{note}
Use a virtual environment.
```

````{versionadded} 3.2 The --fast flag.
:class: custom

See {func}`os.path.join` and {ref}`the guide <install-guide>`.

```{code-block} python
:caption: example

import os
```
````

:::{admonition} Custom title
---
class: tip
---
Body here.
:::

```{toctree}
:maxdepth: 2

intro
```

```python
```{note}
not a directive: code
```

Press {kbd}`Ctrl-C`, read {pep}`8`.
"""


def test_directives_by_kind_and_roles_as_text() -> None:
    md = myst_to_markdown(PAGE)
    assert "install-guide)=" not in md and "editor's comment" not in md
    assert "**Note:**\n\nUse a virtual environment." in md
    assert "**Added in version 3.2:** The --fast flag." in md and ":class:" not in md
    assert "See `os.path.join()` and the guide." in md
    assert "```python\n\nimport os\n```" in md and ":caption:" not in md
    assert "**Custom title**\n\nBody here." in md and "class: tip" not in md
    assert "intro" not in md and "maxdepth" not in md
    assert "```python\n```{note}\nnot a directive: code\n```" in md  # plain code stays
    assert "Press `Ctrl-C`, read PEP 8." in md


def test_plain_markdown_is_untouched_and_hostile_nesting_ends() -> None:
    assert myst_to_markdown("# Plain\n\nNo MyST here.") == "# Plain\n\nNo MyST here."
    deep = "".join(f"{'`' * (40 - n)}{{note}}\n" for n in range(MAX_DEPTH + 8)) + "core\n"
    assert "core" in myst_to_markdown(deep)
    unclosed = "```{note}\n" * 50_000
    assert myst_to_markdown(unclosed).count("**Note:**") == MAX_DEPTH


def test_eval_rst_is_read_as_restructured_text() -> None:
    page = """\
# Options

```{eval-rst}
.. click:example::

    @click.command()
    def cli():
        pass

# And how it looks on the command line:

.. click:run::

    invoke(cli, args=['--help'])

See :func:`click.echo`.
```
"""
    md = myst_to_markdown(page)
    assert "```python\n@click.command()\ndef cli():\n    pass\n```" in md
    assert "invoke(cli" not in md  # what click:run shows is its output, not its script
    assert "See `click.echo()`." in md
    # a paragraph that starts with "#" is text, not a section of the page
    assert [c.anchor for c in chunk_markdown(md, max_tokens=2000)] == ["options"]


def test_unreadable_eval_rst_keeps_its_text() -> None:
    assert "plain words" in myst_to_markdown("```{eval-rst}\nplain words\n```\n")


def test_substitutions_inline_as_blocks_and_nested() -> None:
    values = {"product": "Widget", "key1": "I'm a **substitution**",
              "note": "```{note}\n{{ key1 }}\n```", "loop": "{{ loop }}"}
    md = myst_to_markdown("# {{ product }} guide\n\nUse {{product}} and `{{ product }}`.\n\n"
                          "{{ note }}\n\nVersion {{ env.config.version }} and "
                          "{{ '{}'.format(product) }}.\n\n{{ loop }}\n\n"
                          "```\n{{ product }}\n```\n", substitutions=values)
    assert "# Widget guide" in md and "Use Widget and `{{ product }}`." in md
    assert "**Note:**\n\nI'm a **substitution**" in md  # a block value, read as MyST
    assert "Version  and ." in md  # Jinja kbctl does not run shows nothing
    assert "```\n{{ product }}\n```" in md  # code is shown as written
    # without the extension, {{ }} is text
    assert "{{ product }}" in myst_to_markdown("Use {{ product }}.\n")


def test_substitutions_that_multiply_stop_at_the_page_budget() -> None:
    values = {c: ("{{ " + chr(ord(c) + 1) + " }}\n") * 100 for c in "abcd"} | {"e": "z\n" * 100}
    md = myst_to_markdown("{{ a }}\n", substitutions=values)
    assert len(md) < 3 * MAX_SUBSTITUTED_CHARS
    assert myst_to_markdown("{{ " * 100_000, substitutions={}).count("{{") == 100_000


def test_a_sphinx_project_substitutes_from_conf_py_and_front_matter(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "conf.py": "extensions = ['myst_parser']\nmyst_enable_extensions = ['substitution']\n"
                   "myst_substitutions = {'product': 'Widget', 'cli': 'widget-cli'}\n",
        "guide.md": "---\nmyst:\n  substitutions:\n    product: Gadget\n---\n"
                    "# Using {{ product }}\n\nRun {{ cli }}.\n",
    })
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(tmp_path),
                                          {"base_url": "https://d.example/"}))
    [loaded] = list(source.load(expansion.leaves, lambda ref: None))
    assert "Run widget-cli." in loaded.document.body  # conf.py's value
    assert loaded.document.body.startswith("# Using Gadget {#using-gadget}")  # the page's


def test_a_target_whose_label_holds_a_slash_is_no_text() -> None:
    """MyST-Parser's own docs label sections ``(syntax/core)=``: 62 such lines were read
    as text, six chunks holding nothing else."""
    md = myst_to_markdown("(syntax/core)=\n# Core syntax\n\n(a.b:c+d-e)=\nBody.\n")
    assert "(syntax/core)=" not in md and "(a.b:c+d-e)=" not in md
    assert "# Core syntax" in md and "Body." in md


def test_a_heading_inside_a_directive_is_no_section() -> None:
    """Sphinx makes no section inside a directive: MyST-Parser's docs show ``# My nifty
    title`` in an example block, which was cited at an id the page does not have and
    became the heading of the page's next sections."""
    md = myst_to_markdown("# Page\n\n::::{myst-example}\n# Nifty title\n\n```python\n"
                          "# a comment\n```\n::::\n\n```{note}\nFirst.\n\n## Inside\n```\n\n"
                          "## Next\n\ntext\n")
    assert "**Nifty title**" in md and "**Inside**" in md
    assert "# a comment" in md and "## Next" in md
    assert not any(line.startswith("#") and "Nifty" in line for line in md.splitlines())
    assert "## Kept" in myst_to_markdown("```{only} html\n## Kept\n```\n")
    # mystmd does make sections there (its pages are read with directive_sections)
    kept = myst_to_markdown("```{note}\nFirst.\n\n## Inside\n```\n", directive_sections=True)
    assert "## Inside" in kept
