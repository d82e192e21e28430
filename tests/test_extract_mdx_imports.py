"""MDX partials put in the page where it renders them, from the project's own files."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.extract.mdx_imports import expand_partials
from tests.sitebuild import write_tree


def project(tmp_path: Path) -> Path:
    (tmp_path / "secret.mdx").write_text("SECRET\n")
    return write_tree(tmp_path / "site", {
        "docs/_steps.mdx": "---\ntitle: x\n---\nimport Inner from './_inner.md';\n\n"
                           "## Steps\n\n<Inner />\n",
        "docs/_inner.md": "Run **it**.\n",
        "docs/_loop.mdx": "import Loop from './_loop.mdx';\n\n<Loop />\n",
        "src/shared.mdx": "Shared text.\n",
    })


def expand(root: Path, text: str, reads: list[Path] | None = None) -> str:
    return expand_partials(text, page=root / "docs" / "page.mdx", project=root, reads=reads)


def test_partials_render_where_they_are_used(tmp_path: Path) -> None:
    root = project(tmp_path)
    reads: list[Path] = []
    page = ("import Steps from './_steps.mdx'\nimport Shared from \"@site/src/shared.mdx\";\n"
            "import Tabs from '@theme/Tabs';\n\n# Page\n\n- item\n\n  <Steps prop={1} />\n\n"
            "<Shared/>\n\n<Tabs />\n\n```mdx\n<Steps />\n```\n")
    md = expand(root, page, reads)
    assert "- item\n\n\n  ## Steps\n\n  Run **it**.\n" in md and "import Steps" not in md
    assert "title: x" not in md and "\nShared text.\n" in md
    assert "<Tabs />" in md and "```mdx\n<Steps />\n```" in md  # not a partial; code
    assert reads == [root / "docs" / "_steps.mdx", root / "docs" / "_inner.md",
                     root / "src" / "shared.mdx"]


def test_what_cannot_be_read_shows_nothing_and_a_loop_stays_as_written(tmp_path: Path
                                                                       ) -> None:
    root = project(tmp_path)
    assert expand(root, "import S from '../../secret.mdx';\n\n<S />\n") == "\n"
    assert expand(root, "import M from './missing.md';\n<M />") == ""
    looped = expand(root, "import Loop from './_loop.mdx';\n\n<Loop />\n")
    assert looped.count("<Loop />") == 1  # the file inside itself


@pytest.mark.timeout(60)
def test_hostile_pages_cost_linear_time(tmp_path: Path) -> None:
    root = project(tmp_path)
    expand(root, "import A from '" + "x" * 500_000 + "\n<A " + "x " * 200_000)
    many = "import S from './_steps.mdx';\n" + "<S />\n" * 20_000
    assert expand(root, many).count("Run **it**.") == 20_000  # one read, a budget of text
