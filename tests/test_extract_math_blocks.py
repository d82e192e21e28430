"""Display math kept whole, so its lines never read as headings or lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.chunk import chunk_markdown
from kbctl.extract.math_blocks import math_fenced
from tests.sitebuild import citations, write_tree

MATRIX = "$$\n\\begin{bmatrix}\n-\\lambda & 1\n\\end{bmatrix}\ny\n=\nz\n$$ (eq:first)"


def test_dollar_blocks_and_environments_become_math_code_blocks() -> None:
    text = f"# Page\n\nIntro.\n\n{MATRIX}\n\nAfter $$a$$ inline.\n\n$$ x = 1 $$\n"
    out = math_fenced(text)
    assert "```math\n\\begin{bmatrix}\n-\\lambda & 1\n\\end{bmatrix}\ny\n=\nz\n```" in out
    assert "```math\nx = 1\n```" in out and "After $$a$$ inline." in out
    assert [c.anchor for c in chunk_markdown(out)] == ["page"]  # no heading from "="
    assert math_fenced(text, dollars=False) == text
    env = "Text\n\n\\begin{align*}\na &= b \\\\\n-c &= d\n\\end{align*}\n"
    assert "```math\n\\begin{align*}\na &= b" in math_fenced(env, amsmath=True)
    assert math_fenced(env) == env


@pytest.mark.timeout(60)
def test_code_and_unclosed_blocks_stay_as_written_in_linear_time() -> None:
    code = "```\n$$\n=\n$$\n```\n"
    assert math_fenced(code) == code
    assert math_fenced("$$\nnever closed\n\n# Heading\n") == "$$\nnever closed\n\n# Heading\n"
    math_fenced("$$\n" * 200_000)
    math_fenced("$$ x\n" * 200_000)
    math_fenced("\\begin{align}\n" * 100_000, amsmath=True)


def test_myst_and_arithmatex_projects_read_their_math(tmp_path: Path) -> None:
    sphinx = write_tree(tmp_path / "sphinx", {
        "conf.py": "project = 'm'\nextensions = ['myst_parser']\n"
                   "myst_enable_extensions = ['dollarmath']\n",
        "page.md": f"# Page\n\nIntro.\n\n{MATRIX}\n\n## Later\n\nText.\n"})
    assert [a for _, a in citations(sphinx)[0]] == ["page", "later"]
    mkdocs = write_tree(tmp_path / "mkdocs", {
        "mkdocs.yml": "site_name: m\nmarkdown_extensions:\n  - pymdownx.arithmatex\n",
        "docs/page.md": f"# Page\n\nIntro.\n\n{MATRIX}\n\n## Later\n\nText.\n"})
    assert [a for _, a in citations(mkdocs)[0]] == ["page", "later"]
