"""mdBook's include links expanded from the project's own files, within bounds."""

from __future__ import annotations

import os
from pathlib import Path

from kbctl.extract.includes import MAX_INCLUDED_CHARS, unresolved_includes
from kbctl.extract.mdbook_links import expand_links
from kbctl.pipeline.ingest import ingest
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore

LISTING = """\
use std::io;
// ANCHOR: here
fn main() {
    // ANCHOR: inner
    let guess = 5;
    // ANCHOR_END: inner
}
// ANCHOR_END: here
"""


def book(tmp_path: Path) -> Path:
    (tmp_path / "book.toml").write_text("[book]\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "listings").mkdir()
    (tmp_path / "listings" / "main.rs").write_text(LISTING)
    return tmp_path


def expand(root: Path, text: str) -> str:
    return expand_links(text, page=root / "src" / "ch01.md", project=root)


def test_whole_files_line_ranges_and_anchors(tmp_path: Path) -> None:
    root = book(tmp_path)
    whole = expand(root, "{{#include ../listings/main.rs}}")
    assert "use std::io;" in whole and "let guess = 5;" in whole and "ANCHOR" not in whole
    assert expand(root, "{{#include ../listings/main.rs:1}}") == "use std::io;"
    assert expand(root, "{{#include ../listings/main.rs::1}}") == "use std::io;"
    assert expand(root, "{{#include ../listings/main.rs:3:3}}") == "fn main() {"
    assert expand(root, "{{#include ../listings/main.rs:7:}}") == "}"
    assert expand(root, "{{#rustdoc_include ../listings/main.rs:inner}}") == "    let guess = 5;"
    assert expand(root, "{{ #playground ../listings/main.rs:here }}") == (
        "```rust\nfn main() {\n    let guess = 5;\n}\n```\n")  # a runnable listing
    assert expand(root, "{{#playground ../listings/main.rs:3:3 editable}}") == (
        "```rust,editable\nfn main() {\n```\n")


def test_titles_escapes_and_links_it_cannot_follow(tmp_path: Path) -> None:
    root = book(tmp_path)
    (tmp_path.parent / "secret.txt").write_text("outside the project")
    (root / "src" / "link.rs").symlink_to(tmp_path.parent / "secret.txt")
    assert expand(root, "{{#title The Guessing Game}}Text") == "Text"
    assert expand(root, "\\{{#include ../listings/main.rs}}") == \
        "{{#include ../listings/main.rs}}"
    assert expand(root, "{{#unknown x}}") == "{{#unknown x}}"  # no include: as written
    with unresolved_includes() as missing:
        for link in ("{{#include ../../secret.txt}}", "{{#include /etc/hostname}}",
                     "{{#include link.rs}}", "{{#include missing.rs}}",
                     "{{#rustdoc_include ../listings/ch09/src/main.rs:here}}",
                     "{{#playground}}"):
            assert expand(root, f"Before\n{link} after") == "Before\n after"
        os.mkfifo(root / "src" / "pipe.md")
        assert expand(root, "{{#include pipe.md}}") == ""
    page = root / "src" / "ch01.md"
    assert [(m.file, m.line, m.target) for m in missing] == [
        (page, 2, "../../secret.txt"), (page, 2, "/etc/hostname"), (page, 2, "link.rs"),
        (page, 2, "missing.rs"), (page, 2, "../listings/ch09/src/main.rs"),
        (page, 2, "{{#playground}}"), (page, 1, "pipe.md")]
    assert missing[3].reason == missing[4].reason == "no such file"
    assert missing[5].reason == "names no file"


def test_nested_includes_are_bounded(tmp_path: Path) -> None:
    root = book(tmp_path)
    (root / "src" / "part.md").write_text("Part: {{#include ../listings/main.rs:inner}}")
    assert expand(root, "{{#include part.md}}") == "Part:     let guess = 5;"
    loop = "x" * 100_000 + "{{#include loop.md}}{{#include loop.md}}"
    (root / "src" / "loop.md").write_text(loop)
    grown = expand(root, "{{#include loop.md}}")
    assert len(grown) <= MAX_INCLUDED_CHARS + len(loop)
    assert grown.count("x" * 100_000) > 1 and "{{#include" not in grown  # ten levels


def test_a_chapter_is_read_again_when_a_file_it_includes_changes(
        store: KnowledgeStore, tmp_path: Path) -> None:
    root = book(tmp_path)
    (root / "src" / "SUMMARY.md").write_text("# Summary\n\n- [Guess](ch01.md)\n")
    (root / "src" / "ch01.md").write_text(
        "# Guess\n\n```rust\n{{#rustdoc_include ../listings/main.rs:inner}}\n```\n")
    spec = source_spec("files", str(root), {"base_url": "https://book.example/"})
    first = ingest(store, [spec], namespace="book")
    assert first.added == 1
    [hit] = store.search.rank("book", "guess", k=1)
    assert "let guess = 5;" in hit.text and "rustdoc_include" not in hit.text

    again = ingest(store, [spec], namespace="book")
    assert again.not_modified == 1 and again.updated == 0

    listing = root / "listings" / "main.rs"
    listing.write_text(LISTING.replace("let guess = 5;", "let guess = 7;"))
    os.utime(listing, ns=(1, 1))  # a new size and time, whatever the clock's resolution
    changed = ingest(store, [spec], namespace="book")
    assert changed.updated == 1
    [hit] = store.search.rank("book", "guess", k=1)
    assert "let guess = 7;" in hit.text


def test_a_file_named_many_times_is_read_once(tmp_path: Path) -> None:
    root = book(tmp_path)
    (root / "src" / "empty.md").write_text("")
    reads: list[Path] = []
    page = "{{#include empty.md}}{{#include ./empty.md}}" * 50_000 + \
        "{{#include ../listings/main.rs:1}}" * 3
    out = expand_links(page, page=root / "src" / "ch01.md", project=root, reads=reads)
    assert out == "use std::io;" * 3
    assert reads == [root / "src" / "empty.md", root / "listings" / "main.rs"]
