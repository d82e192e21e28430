"""The line-aware loaders: positions, duplicates, and every input bounded before it grows."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kbctl.linefile import (
    MAX_YAML_NODES,
    LineDict,
    LoadError,
    load_json,
    load_yaml,
    read_capped,
)

# Nine levels of nine aliases: 9**9 strings once expanded, from about 500 bytes.
ALIAS_BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_the_alias_bomb_is_small_text() -> None:
    assert len(ALIAS_BOMB) < 600


def test_json_objects_and_keys_carry_their_lines() -> None:
    text = ('{\n  "version": 1,\n  "cases": [\n    {\n      "id": "a",\n'
            '      "q": "braces { and colons : and \\"quotes\\" stay inside"\n    },\n'
            '    {"id": "b", "nested": {"deep": {"x": 1}}}\n  ]\n}\n')
    data = load_json(text)
    assert isinstance(data, LineDict)
    assert (data.line, data.line_of("version"), data.line_of("cases")) == (1, 2, 3)
    first, second = data["cases"]
    assert (first.line, first.line_of("id"), first.line_of("q")) == (4, 5, 6)
    assert (second.line, second.line_of("nested")) == (8, 8)
    assert second["nested"]["deep"].line == 8
    assert json.loads(text) == data


def test_json_duplicate_keys_are_recorded_with_their_lines() -> None:
    data = load_json('{"a": 1,\n "b": {"x": 1,\n "x": 2},\n "a": 3}')
    assert data.duplicates == [("a", 4)]
    assert data["b"].duplicates == [("x", 3)]
    assert data["a"] == 3


def test_json_syntax_errors_name_the_line() -> None:
    with pytest.raises(LoadError) as err:
        load_json('{\n  "a": 1,\n  "b": \n}')
    assert err.value.line == 4
    assert err.value.message.startswith("invalid JSON")


def test_json_nesting_too_deep_is_an_error() -> None:
    with pytest.raises(LoadError, match="nested too deeply"):
        load_json("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(("text", "line", "what"), [
    ('{\n "q": "a\\u0000b"}', 2, "a NUL byte"),
    ('{\n "q": ["ok", "\\ud800"]}', 2, "a lone surrogate (U+D800)"),
    ('{"ok": 1,\n "bad\\u0000key": 2}', 2, "a NUL byte"),
])
def test_json_strings_with_nul_or_lone_surrogates_are_refused(text: str, line: int,
                                                                 what: str) -> None:
    with pytest.raises(LoadError, match=re.escape(what)) as err:
        load_json(text)
    assert err.value.line == line


@pytest.mark.parametrize(("text", "line", "what"), [
    ('a: 1\nq: "x\\0y"\n', 2, "a NUL byte"),
    ('a: 1\nlist:\n  - "\\x00"\n', 2, "a NUL byte"),
])
def test_yaml_strings_with_nul_are_refused(text: str, line: int, what: str) -> None:
    with pytest.raises(LoadError, match=re.escape(what)) as err:
        load_yaml(text)
    assert err.value.line == line


def test_yaml_keeps_lines_duplicates_and_ordinary_aliases() -> None:
    text = "base: &base\n  k: 1\nfirst:\n  <<: *base\n  j: 2\nfirst: again\n"
    data = load_yaml(text)
    assert (data.line_of("base"), data["first"]) == (1, "again")
    assert data.duplicates == [("first", 6)]
    data = load_yaml("defaults: &d {top_k: 5}\none: *d\ntwo: *d\n")
    assert data["one"] == data["two"] == {"top_k": 5}


def test_a_yaml_alias_bomb_is_refused_before_it_is_built() -> None:
    with pytest.raises(LoadError, match="alias bomb") as err:
        load_yaml(ALIAS_BOMB)
    assert str(MAX_YAML_NODES) in err.value.message
    assert err.value.line is not None


def test_a_yaml_merge_key_bomb_is_refused() -> None:
    lines = ["a0: &a0 {k: v}"]
    for i in range(1, 40):
        lines.append(f"a{i}: &a{i} {{<<: [*a{i - 1}], x{i}: [*a{i - 1}, *a{i - 1}]}}")
    with pytest.raises(LoadError, match="alias bomb"):
        load_yaml("\n".join(lines))


def test_a_self_referring_yaml_alias_is_refused() -> None:
    with pytest.raises(LoadError, match="refers to a node that contains it"):
        load_yaml("a: &a [1, *a]\n")


def test_deep_yaml_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(LoadError):
        load_yaml("[" * 50_000 + "]" * 50_000)


def test_read_capped_refuses_oversized_files_and_streams(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * 1000)
    assert read_capped(big, limit=5000).startswith("a: 1")
    with pytest.raises(LoadError, match="over the 4999 byte limit"):
        read_capped(big, limit=4999)
    (tmp_path / "latin.yaml").write_bytes(b"a: caf\xe9\n")
    with pytest.raises(LoadError, match=r"not UTF-8 text \(byte 6\)"):
        read_capped(tmp_path / "latin.yaml")


def test_read_capped_stops_reading_an_endless_stream() -> None:
    if not os.path.exists("/dev/zero"):  # endless: only limit + 1 bytes may be read
        pytest.skip("no /dev/zero")
    with pytest.raises(LoadError, match="over the 1024 byte limit"):
        read_capped(Path("/dev/zero"), limit=1024)
