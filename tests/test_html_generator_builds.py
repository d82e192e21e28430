"""HTML ingestion against real builds of generators that write their own page shapes
(Javadoc, Texinfo, Doxygen): each small project is built by the real tool, its HTML read as
the files source reads it, and every citation must open an existing page and an id on it,
with the sections that carry ids cited by them. A tool that is not installed skips."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kbctl.extract.html import extract_html
from tests.sitebuild import (
    BASE_URL,
    build_doxygen,
    build_javadoc,
    build_makeinfo,
    check,
    citations,
    failures,
    tool,
    write_tree,
)


def _cited(out: Path, page: str) -> set[str | None]:
    """The anchors cited on ``page`` once every citation of the build is known to resolve."""
    pairs, _generator, failed = citations(out)
    assert not failed
    result = check(out, pairs)
    assert result.resolved_share == 1.0, "\n".join(failures(result))
    return {anchor for url, anchor in pairs if url == BASE_URL + page}


def _read_by_a_container_rule(file: Path) -> bool:
    return not extract_html(file.read_bytes(), url=BASE_URL).used_fallback


JAVA = """\
package org.tally;

/** Counts events per key. */
public class Counter {
    /** The largest count kept. */
    public static final long LIMIT = 1000L;

    /**
     * Adds {@code delta} to the count of {@code key}.
     * @param key the key
     * @param delta how much to add
     * @return the new count
     */
    public long add(String key, long delta) { return delta; }

    /** Forgets every count. */
    public void reset() { }
}
"""


@pytest.mark.skipif(tool("javadoc") is None, reason="javadoc is not installed")
def test_javadoc_members_are_cited_by_their_own_ids(tmp_path: Path) -> None:
    write_tree(tmp_path, {"src/org/tally/Counter.java": JAVA})
    out = build_javadoc(tmp_path, "org.tally")
    shutil.rmtree(out / "legal", ignore_errors=True)  # license files in markdown, no pages
    page = out / "org" / "tally" / "Counter.html"
    assert _read_by_a_container_rule(page)
    anchors = _cited(out, "org/tally/Counter.html")
    assert {"add(java.lang.String,long)", "reset()", "LIMIT"} <= anchors


TEXI = """\
\\input texinfo
@setfilename kiln.info
@settitle Kiln Manual

@node Top
@top Kiln

Kiln fires clay on a schedule.

@menu
* Schedules::   Firing schedules.
@end menu

@node Schedules
@chapter Firing schedules

A schedule is a list of ramps.

@menu
* Ramps::   One step of a schedule.
@end menu

@node Ramps
@section Ramps

Each ramp climbs at a rate until it reaches its target.

@example
kiln ramp --rate 100 --target 600
@end example

@bye
"""


@pytest.mark.skipif(tool("makeinfo") is None, reason="Texinfo (makeinfo) is not installed")
def test_texinfo_nodes_are_cited_and_navigation_is_dropped(tmp_path: Path) -> None:
    write_tree(tmp_path, {"kiln.texi": TEXI})
    out = build_makeinfo(tmp_path, "kiln.texi")
    page = out / "manual.html"
    assert _read_by_a_container_rule(page)
    markdown = extract_html(page.read_bytes(), url=BASE_URL).markdown
    assert "kiln ramp --rate 100 --target 600" in markdown
    assert "Next:" not in markdown and "Up:" not in markdown
    anchors = _cited(out, "manual.html")
    assert len(anchors - {None}) >= 2  # the chapter and the section each cite their own


DOXYFILE = """\
PROJECT_NAME = Kiln
INPUT = src
OUTPUT_DIRECTORY = .
GENERATE_LATEX = NO
QUIET = YES
WARNINGS = NO
EXTRACT_ALL = YES
"""

HEADER = """\
/** @file kiln.h */

/** @mainpage Kiln
 *
 * @section fire_sec Firing
 * Kiln fires clay on a schedule.
 *
 * @code
 * kiln_fire(600);
 * @endcode
 */

/** Climbs to @p target degrees. */
void kiln_fire(int target);

/** Lets the kiln cool down. */
void kiln_cool(void);
"""


@pytest.mark.skipif(tool("doxygen") is None, reason="Doxygen is not installed")
def test_doxygen_sections_and_members_are_cited(tmp_path: Path) -> None:
    write_tree(tmp_path, {"Doxyfile": DOXYFILE, "src/kiln.h": HEADER})
    out = build_doxygen(tmp_path)
    assert _read_by_a_container_rule(out / "index.html")
    markdown = extract_html((out / "index.html").read_bytes(), url=BASE_URL).markdown
    assert "kiln_fire(600);" in markdown
    assert "fire_sec" in _cited(out, "")  # index.html is the site's root
    member_anchors = _cited(out, "kiln_8h.html") - {None}
    assert len(member_anchors) >= 2  # kiln_fire and kiln_cool
