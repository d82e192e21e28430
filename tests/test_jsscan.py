"""The JavaScript scanner: where a construct ends, with strings and comments skipped."""

from __future__ import annotations

from kbctl.jsscan import JsScanner


def test_braces_strings_and_comments() -> None:
    text = "{a: '}', b: \"{\", c: `}${x}`, // }\n d: /* } */ {e: 1}} tail"
    assert JsScanner().find(text, "}", 1) == text.index("} tail")
    assert JsScanner().find("x => x > 1", ">") == 3  # no braces: the arrow's own ">"
    assert JsScanner().find("{x => x > 1}>", ">") == 12


def test_state_carries_from_piece_to_piece() -> None:
    scanner = JsScanner()
    assert scanner.find("<Tabs values={[{label: 'a\n", ">", 1) == -1
    assert scanner.find("  b'}]}\n", ">") == -1
    assert scanner.find("  // a comment >\n", ">") == -1
    assert scanner.find("  note=\"x > y\">rest\n", ">") == 14
    assert JsScanner().find("never closed {", "}") == -1
