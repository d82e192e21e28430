"""The JavaScript scanner: where a construct ends, with strings and comments skipped."""

from __future__ import annotations

from kbctl.jsscan import JsScanner, outer_level, without_comments


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


def test_comments_are_left_out_and_strings_kept() -> None:
    code = ("a = 1; // b = 2\nc = '// not one', d = \"/* nor this */\", e = `x // y`;\n"
            "/* f = 3,\n g = 4 */ h = 'it\\'s // kept', i = 6 / 2 /* j */;")
    assert without_comments(code) == (
        "a = 1;  \nc = '// not one', d = \"/* nor this */\", e = `x // y`;\n"
        "  h = 'it\\'s // kept', i = 6 / 2  ;")
    assert without_comments("x // never ends") == "x  "
    assert without_comments("x /* never closes") == "x  "


def test_the_outer_level_of_a_block() -> None:
    block = "{ edit: ({ a, b }) => `${a}`, // path: 'no'\n path: '../docs', s: { path: 'x' } }"
    assert outer_level(block) == "{ edit: ({}) => `${a}`, \n path: '../docs', s: {} }"
    assert outer_level("{ a: '}', b: 1 }") == "{ a: '}', b: 1 }"
