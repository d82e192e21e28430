"""kbctl's own documentation is a docs-as-code site, and kbctl gates it.

The reference lives in ``docs/`` (an MkDocs site); the README is the five-minute door. The
same tests a docs team would run on its site run here: the site builds, every citation
kbctl makes of it lands on a built page and heading, and the questions of
``docs/evals/`` find the pages that answer them.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from .conftest import Cli
from .sitebuild import check, citations, failures, run, tool

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SITE_URL = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["site_url"]
README_LINES = 250  # what a newcomer reads in five minutes


def test_the_readme_is_a_door_and_its_links_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_LINES
    links = re.findall(r"\]\(((?:docs/)[^)#]+)", readme)
    assert len(links) >= 10
    assert not [link for link in links if not (ROOT / link).exists()]


def test_every_page_is_in_the_nav_and_the_nav_names_only_pages() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = {next(iter(item.values())) for item in config["nav"]}
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.glob("*.md")}
    assert in_nav == pages


def test_the_site_builds_and_every_citation_lands_on_its_heading(tmp_path: Path) -> None:
    mkdocs = tool("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (the dev extra has it)")
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    shutil.copytree(DOCS, project / "docs")
    site = tmp_path / "site"
    run([mkdocs, "build", "--strict", "-q", "-f", str(project / "mkdocs.yml"), "-d",
         str(site)], cwd=project)
    pairs, detected, failed = citations(project / "docs", base_url=SITE_URL)
    assert detected == "mkdocs" and not failed
    result = check(site, pairs, base_url=SITE_URL)
    assert result.checked >= 40
    assert result.resolved_share == 1.0, "\n".join(failures(result))


def test_kbctl_answers_questions_about_itself(cli: Cli) -> None:
    """What kbctl's own CI gates: ingest docs/ as a docs team would, run docs/evals/."""
    report = cli.json("ingest", "files", str(DOCS), "--base-url", SITE_URL)
    assert report["failed"] == 0 and report["added"] == len(list(DOCS.glob("*.md")))
    assert any("generator mkdocs" in note for note in report["notes"])
    result = cli("eval", str(DOCS / "evals"), "--json")
    outcome = result.stdout
    assert result.exit_code == 0, outcome
    assert '"passed": true' in outcome
