"""Notebooks in an MkDocs site (mkdocs-jupyter): which are pages, and their ids, which
repeat across cells since the plugin renders each markdown cell on its own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.sitebuild import (
    BASE_URL,
    build_mkdocs,
    check,
    citations,
    failures,
    page_bodies,
    tool,
    write_tree,
)


def _notebook(*cells: str) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {
        "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": c} for c in cells]})


def _site(tmp_path: Path, plugin: str = "  - mkdocs-jupyter\n") -> Path:
    return write_tree(tmp_path / "site", {
        "mkdocs.yml": "site_name: Demo\nplugins:\n" + plugin,
        "docs/index.md": "# Home\n\n## Start here\n\nText.\n",
        "docs/guide/tour.ipynb": _notebook(
            "# Notebook Tour\n\nIntro.\n\n## Load the data!\n\nFirst.",
            "## Load the data!\n\nAgain, in another cell.\n\n### C++ / Rust: 2 languages\n\n"
            "Text.\n\n## Ünïcödé “quotes” — dashes\n\nText."),
        "docs/drafts/skip.ipynb": _notebook("# Skipped\n\n## Not a page\n\nText."),
    })


def test_notebooks_are_pages_only_with_the_plugin(tmp_path: Path) -> None:
    site = _site(tmp_path, "  - mkdocs-jupyter:\n      ignore: ['drafts/*']\n")
    pairs = citations(site / "docs")[0]
    notebook = [(url, a) for url, a in pairs if "tour" in url]
    assert notebook == [(f"{BASE_URL}guide/tour/", "notebook-tour"),
                        (f"{BASE_URL}guide/tour/", "load-the-data"),
                        (f"{BASE_URL}guide/tour/", "load-the-data"),
                        (f"{BASE_URL}guide/tour/", "c-rust-2-languages"),
                        (f"{BASE_URL}guide/tour/", "unicode-quotes-dashes")]
    assert not [url for url, _ in pairs if "skip" in url]
    (site / "mkdocs.yml").write_text("site_name: Demo\n")
    assert set(page_bodies(site / "docs")) == {BASE_URL}


def _plugin_installed() -> bool:
    """Whether the MkDocs found has mkdocs-jupyter beside it (in its own environment)."""
    mkdocs = tool("mkdocs")
    python = Path(mkdocs).parent / "python" if mkdocs else None
    return python is not None and python.is_file() and subprocess.run(
        [str(python), "-c", "import mkdocs_jupyter"], capture_output=True, timeout=60,
        check=False).returncode == 0


@pytest.mark.skipif(not _plugin_installed(), reason="MkDocs with mkdocs-jupyter is not installed")
def test_notebook_citations_against_a_build(tmp_path: Path) -> None:
    site = _site(tmp_path)
    built = build_mkdocs(site)
    pairs, detected, failed = citations(site / "docs")
    assert detected == "mkdocs" and not failed
    result = check(built, pairs)
    assert result.checked >= 7
    assert result.resolved_share == 1.0, "\n".join(failures(result))
