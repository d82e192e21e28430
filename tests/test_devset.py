"""The ranking dev set (bench/devset/python-docs.yaml) and its held-out questions are well
formed, and, where the docs site is unpacked on this machine, every page and anchor they
name exists there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

DEVSET = Path(__file__).resolve().parents[1] / "bench" / "devset" / "python-docs.yaml"
HELD_OUT = DEVSET.with_name("python-docs-heldout.yaml")
HELD_OUT_2 = DEVSET.with_name("python-docs-heldout2.yaml")
HELD_OUT_3 = DEVSET.with_name("python-docs-heldout3.yaml")
SETS = [DEVSET, HELD_OUT, HELD_OUT_2, HELD_OUT_3]
SITE = Path.home() / ".cache" / "kbctl-docs-site" / "html"
_ID = re.compile(r'\sid="([^"]+)"')
KINDS = {"howto", "paraphrase", "error", "api", "cli"}


def _cases(path: Path = DEVSET) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]


def test_devset_covers_every_kind_of_question() -> None:
    cases = _cases()
    assert len(cases) >= 80
    assert {c["kind"] for c in cases} == KINDS


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_devset_shape(path: Path) -> None:
    cases = _cases(path)
    assert cases
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    for case in cases:
        assert set(case) == {"id", "kind", "question", "pages", "anchors"}, case["id"]
        assert case["kind"] in KINDS, case["id"]
        assert isinstance(case["question"], str) and case["question"].strip(), case["id"]
        assert case["pages"] and all(p.endswith(".html") and not p.startswith("/")
                                      for p in case["pages"]), case["id"]
        assert case["anchors"] and all(isinstance(a, str) and a and "#" not in a
                                       for a in case["anchors"]), case["id"]


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_devset_pages_and_anchors_exist_on_the_site(path: Path) -> None:
    if not (SITE / "library" / "os.path.html").exists():
        pytest.skip(f"the docs site is not unpacked at {SITE}")
    ids: dict[str, set[str]] = {}
    for case in _cases(path):
        found: set[str] = set()
        for page in case["pages"]:
            path = SITE / page
            assert path.is_file(), f"{case['id']}: no page {page}"
            if page not in ids:
                ids[page] = set(_ID.findall(path.read_text(encoding="utf-8")))
            found |= ids[page]
        missing = [a for a in case["anchors"] if a not in found]
        assert not missing, f"{case['id']}: no element with id {missing} on {case['pages']}"
