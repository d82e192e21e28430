"""Jekyll's includes put in the page, from the site's own files, within bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.extract.jekyll_includes import liquid_with_includes
from kbctl.store.knowledge import KnowledgeStore
from tests.includes_check import BEFORE, assert_read_again_when_changed
from tests.sitebuild import write_tree


def site(tmp_path: Path) -> Path:
    (tmp_path / "secret.md").write_text("SECRET\n")
    return write_tree(tmp_path / "site", {
        "_config.yml": "title: Demo\n",
        "_includes/note.html": '<div class="note">{{ include.kind | upcase }}: '
                               "{{ include.content }}</div>\n",
        "_includes/nested.md": "Outer {% include inner.md %}\n",
        "_includes/inner.md": "inner {% if x %}text{% endif %}\n",
        "_includes/loop.md": "loop {% include loop.md %}\n",
        "guide/_part.md": "Beside the page.\n",
    })


def read(root: Path, text: str, reads: list[Path] | None = None) -> str:
    return liquid_with_includes(text, page=root / "guide" / "page.md", project=root,
                                includes_dir=root / "_includes", reads=reads)


def test_includes_with_their_parameters_and_relative_includes(tmp_path: Path) -> None:
    root = site(tmp_path)
    reads: list[Path] = []
    md = read(root, '{% include note.html kind="tip" content="Back up first." %}\n'
                    "{% include nested.md %}\n{%- include_relative _part.md -%}\n"
                    "{% raw %}{% include note.html %}{% endraw %}", reads)
    assert md.startswith('<div class="note">tip: Back up first.</div>\n')  # filters aside
    assert "Outer inner text\n" in md and "Beside the page.\n" in md
    assert md.endswith("{% include note.html %}")  # raw: shown as written
    assert reads == [root / "_includes" / "note.html", root / "_includes" / "nested.md",
                     root / "_includes" / "inner.md", root / "guide" / "_part.md"]


def test_what_cannot_be_read_reads_as_the_tag(tmp_path: Path) -> None:
    root = site(tmp_path)
    assert read(root, '{% include missing.html content="Kept." %}') == "Kept."
    assert read(root, "{% include ../../secret.md %}") == ""
    assert read(root, "{% include loop.md %}") == "loop \n"  # not inside itself


@pytest.mark.timeout(60)
def test_hostile_includes_stay_bounded(tmp_path: Path) -> None:
    root = site(tmp_path)
    (root / "_includes" / "big.md").write_text("x" * 600_000 + "{% include big2.md %}" * 2)
    (root / "_includes" / "big2.md").write_text("y" * 600_000 + "{% include big.md %}" * 2)
    grown = read(root, "{% include big.md %}" * 20 + "{% include " * 100_000)
    assert len(grown) < 7 * 1024 * 1024


def test_a_page_is_read_again_when_an_include_changes(store: KnowledgeStore,
                                                      tmp_path: Path) -> None:
    root = write_tree(tmp_path / "site", {
        "_config.yml": "title: Demo\n",
        "_includes/step.md": BEFORE,
        "guide.md": "---\ntitle: Guide\n---\n\n## Steps\n\n{% include step.md %}\n",
    })
    assert_read_again_when_changed(store, root, root / "_includes" / "step.md")
