"""Eval suite files: loading, validation errors (file, case, field, line), paths, scaffold."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from kbctl.errors import InputError, SuiteError
from kbctl.evals import Expect, Suite, load_suite, load_suites, parse_suite, scaffold_suite
from kbctl.evals.scaffold import slug

VALID_YAML = """\
version: 1
defaults: {topK: 5, minScore: 0.2, filter: {lang: en}}
cases:
  - id: install-pnpm
    question: How do I install with pnpm?
    topK: 8
    minScore: 0.1
    expect:
      sourceIncludes: docs.example.com/install
      notSourceIncludes: legacy
      minScore: 0.4
      anchor: pnpm
  - id: config
    question: Where is the config file?
    expect:
      sourceIncludes: [config, settings]
      notSourceIncludes: [v1, old]
  - id: bare
    question: Anything at all
"""

VALID_JSON = """\
{
  "version": 1,
  "defaults": {"topK": 5, "minScore": 0.2, "filter": {"lang": "en"}},
  "cases": [
    {
      "id": "install-pnpm",
      "question": "How do I install with pnpm?",
      "topK": 8,
      "minScore": 0.1,
      "expect": {
        "sourceIncludes": "docs.example.com/install",
        "notSourceIncludes": "legacy",
        "minScore": 0.4,
        "anchor": "pnpm"
      }
    },
    {
      "id": "config",
      "question": "Where is the config file?",
      "expect": {"sourceIncludes": ["config", "settings"], "notSourceIncludes": ["v1", "old"]}
    },
    {"id": "bare", "question": "Anything at all"}
  ]
}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the n-th line containing ``needle``."""
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    return hits[occurrence - 1]


# --- valid files -----------------------------------------------------------------------


def test_yaml_suite_loads_with_defaults_applied_and_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "docs.yaml", VALID_YAML)
    (suite,) = load_suites([path])
    assert suite.path == path.as_posix()
    assert suite.name == "docs"
    first, second, third = suite.cases
    assert (first.id, first.top_k, first.min_score, first.filter) == \
        ("install-pnpm", 8, 0.1, {"lang": "en"})
    assert first.expect == Expect(("docs.example.com/install",), ("legacy",), 0.4, "pnpm")
    assert (second.top_k, second.min_score) == (5, 0.2)
    assert second.expect.source_includes == ("config", "settings")
    assert third.expect == Expect()
    assert third.expect.declared == ()
    assert [c.line for c in suite.cases] == [
        line_of(VALID_YAML, "id: install-pnpm"),
        line_of(VALID_YAML, "id: config"),
        line_of(VALID_YAML, "id: bare"),
    ]
    assert [c.index for c in suite.cases] == [0, 1, 2]
    assert all(c.suite == suite.path for c in suite.cases)


def test_json_and_yaml_load_to_the_same_cases(tmp_path: Path) -> None:
    (from_yaml,) = load_suites([write(tmp_path, "a.yaml", VALID_YAML)])
    (from_json,) = load_suites([write(tmp_path, "a.json", VALID_JSON)])
    assert from_yaml.defaults == from_json.defaults

    def essence(suite: Suite) -> list[tuple[object, ...]]:
        return [(c.index, c.id, c.question, c.top_k, c.min_score, c.filter, c.expect)
                for c in suite.cases]

    assert essence(from_yaml) == essence(from_json)
    assert [c.line for c in from_json.cases] == [
        line_of(VALID_JSON, '"id": "install-pnpm"') - 1,  # the "{" opening the case
        line_of(VALID_JSON, '"id": "config"') - 1,
        line_of(VALID_JSON, '"id": "bare"'),
    ]


def test_defaults_are_optional(tmp_path: Path) -> None:
    suite = parse_suite("version: 1\ncases:\n  - {id: a, question: q}\n", "s.yml")
    (case,) = suite.cases
    assert (case.top_k, case.min_score, case.filter) == (5, None, {})


def test_yaml_merge_keys_and_anchors_are_fine() -> None:
    text = """\
version: 1
common: &common
cases:
  - &base {id: a, question: q, expect: {sourceIncludes: x}}
  - {<<: *base, id: b}
"""
    # "common" is not a suite key: anchors must live inside known keys
    with pytest.raises(SuiteError, match="common"):
        parse_suite(text, "s.yaml")
    text = text.replace("common: &common\n", "")
    suite = parse_suite(text, "s.yaml")
    assert [c.id for c in suite.cases] == ["a", "b"]
    assert suite.cases[1].expect.source_includes == ("x",)


# --- malformed files -------------------------------------------------------------------

BASE = "version: 1\ncases:\n"

MALFORMED = [
    # (name, yaml text, needle on the offending line, fragments the message must contain)
    ("version 2", "version: 2\ncases:\n  - {id: a, question: q}\n", "version: 2",
     ["version", "unsupported version 2"]),
    ("version string", "version: '1'\ncases:\n  - {id: a, question: q}\n", "version:",
     ["version", "unsupported version '1'"]),
    ("unknown top key", BASE + "  - {id: a, question: q}\ncase: []\n", "case: []",
     ["case", "unknown key", "did you mean 'cases'"]),
    ("unknown case key", BASE + "  - id: a\n    question: q\n    topk: 3\n", "topk: 3",
     ["case 'a'", "cases[0]", "topk", "did you mean 'topK'"]),
    ("unknown expect key", BASE + "  - id: a\n    question: q\n    expect:\n"
     "      sourceInclude: x\n", "sourceInclude:",
     ["case 'a'", "expect.sourceInclude", "did you mean 'sourceIncludes'"]),
    ("topK string", BASE + "  - id: a\n    question: q\n    topK: five\n", "topK: five",
     ["case 'a'", "topK", "expected a positive integer, got a string"]),
    ("topK zero", BASE + "  - id: a\n    question: q\n    topK: 0\n", "topK: 0",
     ["case 'a'", "topK", "between 1 and 50, got 0"]),
    ("topK too large", BASE + "  - id: a\n    question: q\n    topK: 51\n", "topK: 51",
     ["case 'a'", "topK", "between 1 and 50, got 51"]),
    ("topK bool", BASE + "  - id: a\n    question: q\n    topK: true\n", "topK: true",
     ["topK", "got a boolean"]),
    ("minScore range", BASE + "  - id: a\n    question: q\n    minScore: 1.5\n", "minScore",
     ["case 'a'", "minScore", "between 0 and 1"]),
    ("expect minScore type", BASE + "  - id: a\n    question: q\n    expect:\n"
     "      minScore: high\n", "minScore: high",
     ["case 'a'", "expect.minScore", "expected a number"]),
    ("pattern item type", BASE + "  - id: a\n    question: q\n    expect:\n"
     "      sourceIncludes: [ok, 3]\n", "sourceIncludes",
     ["case 'a'", "expect.sourceIncludes[1]", "expected a string, got an integer"]),
    ("pattern empty list", BASE + "  - id: a\n    question: q\n    expect:\n"
     "      notSourceIncludes: []\n", "notSourceIncludes",
     ["expect.notSourceIncludes", "empty list"]),
    ("pattern blank", BASE + "  - id: a\n    question: q\n    expect:\n"
     "      sourceIncludes: '  '\n", "sourceIncludes",
     ["expect.sourceIncludes", "must not be empty"]),
    ("anchor type", BASE + "  - id: a\n    question: q\n    expect:\n      anchor: [x]\n",
     "anchor:", ["expect.anchor", "expected a string, got a list"]),
    ("empty question", BASE + "  - id: a\n    question: ''\n", "question: ''",
     ["case 'a'", "question", "must not be empty"]),
    ("blank question", BASE + "  - id: a\n    question: '   '\n", "question:",
     ["case 'a'", "question", "must not be empty"]),
    ("missing question", BASE + "  - id: lonely\n", "id: lonely",
     ["case 'lonely'", "question", "is required"]),
    ("missing id", BASE + "  - {id: a, question: q}\n  - question: who am I\n",
     "question: who am I", ["cases[1]", "id", "is required"]),
    ("id not a string", BASE + "  - id: 123\n    question: q\n", "id: 123",
     ["cases[0]", "id", "expected a string, got an integer (quote it)"]),
    ("id a YAML boolean", BASE + "  - id: no\n    question: q\n", "id: no",
     ["cases[0]", "id", "expected a string, got a boolean (quote it)"]),
    ("duplicate id", BASE + "  - id: twin\n    question: q1\n  - {id: twin, question: q2}\n",
     "q2", ["case 'twin'", "cases[1]", "duplicate id 'twin'", "first used at line 3"]),
    ("case not a mapping", BASE + "  - {id: a, question: q}\n  - just a string\n", "cases:",
     ["cases[1]", "expected a mapping, got a string"]),
    ("cases not a list", "version: 1\ncases: {id: a}\n", "cases:",
     ["cases", "expected a list, got a mapping"]),
    ("cases empty", "version: 1\ncases: []\n", "cases:", ["cases", "at least one case"]),
    ("cases missing", "version: 1\n", "version", ["cases", "is required"]),
    ("version missing", "cases:\n  - {id: a, question: q}\n", "cases:",
     ["version", "is required"]),
    ("defaults not a mapping", "version: 1\ndefaults: 5\ncases:\n  - {id: a, question: q}\n",
     "defaults: 5", ["defaults", "expected a mapping, got an integer"]),
    ("defaults topK", "version: 1\ndefaults: {topK: -1}\ncases:\n  - {id: a, question: q}\n",
     "defaults:", ["defaults.topK", "between 1 and 50"]),
    ("filter value", "version: 1\ndefaults:\n  filter:\n    year: 2024\n"
     "cases:\n  - {id: a, question: q}\n", "year: 2024",
     ["defaults.filter.year", "expected a string, got an integer"]),
    ("duplicate key", BASE + "  - id: a\n    question: q\n    question: again\n",
     "question: again", ["case 'a'", "question", "duplicate key"]),
    ("syntax error", BASE + "  - id: a\n    question: [unclosed\n  - id: b\n", "id: b",
     ["invalid YAML"]),
]


@pytest.mark.parametrize(("text", "needle", "fragments"),
                         [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_yaml_names_file_case_field_and_line(
        tmp_path: Path, text: str, needle: str, fragments: list[str]) -> None:
    path = write(tmp_path, "evals/broken.yaml", text)
    with pytest.raises(SuiteError) as info:
        load_suites([path])
    message = str(info.value)
    assert info.value.exit_code == 2
    assert f"{path.as_posix()}:{line_of(text, needle)}:" in message
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_empty_file_is_refused(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "empty.yaml", text)
    with pytest.raises(SuiteError, match="empty"):
        load_suites([path])


def test_top_level_list_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "list.yaml", "- id: a\n  question: q\n")
    with pytest.raises(SuiteError, match=r"list\.yaml:1: expected a mapping"):
        load_suites([path])


def test_every_problem_is_reported_at_once_in_line_order(tmp_path: Path) -> None:
    text = BASE + ("  - id: a\n    question: ''\n"
                   "  - id: b\n    question: q\n    topK: x\n"
                   "  - id: a\n    question: q\n")
    path = write(tmp_path, "many.yaml", text)
    with pytest.raises(SuiteError) as info:
        load_suites([path])
    message = str(info.value)
    assert message.splitlines()[0] == f"{path.as_posix()}: 3 problems in suite file"
    found = [int(n) for n in re.findall(rf"{re.escape(path.as_posix())}:(\d+):", message)]
    assert found == sorted(found)
    assert found == [line_of(text, "question: ''"), line_of(text, "topK: x"),
                     line_of(text, "id: a", 2)]


def test_json_errors_carry_lines(tmp_path: Path) -> None:
    text = ('{\n  "version": 1,\n  "cases": [\n    {"id": "a", "question": "q"},\n'
            '    {"id": "b",\n     "question": "q",\n     "topK": "many"}\n  ]\n}\n')
    path = write(tmp_path, "s.json", text)
    with pytest.raises(SuiteError) as info:
        load_suites([path])
    assert f"{path.as_posix()}:{line_of(text, 'many')}: case 'b' (cases[1]): topK" \
        in str(info.value)


def test_json_duplicate_keys_and_syntax_errors(tmp_path: Path) -> None:
    text = '{"version": 1,\n "cases": [{"id": "a", "question": "q",\n "id": "b"}]}\n'
    path = write(tmp_path, "dup.json", text)
    with pytest.raises(SuiteError, match=r"dup\.json:3: .*id: duplicate key"):
        load_suites([path])
    bad = write(tmp_path, "bad.json", '{\n  "version": 1,\n  "cases": [,]\n}\n')
    with pytest.raises(SuiteError, match=r"bad\.json:3: invalid JSON"):
        load_suites([bad])


def test_json_nan_score_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "nan.json",
                 '{"version": 1, "cases": [{"id": "a", "question": "q", "minScore": NaN}]}')
    with pytest.raises(SuiteError, match="minScore: must be between 0 and 1"):
        load_suites([path])


def test_non_utf8_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"version: 1\ncases:\n  - {id: caf\xe9, question: q}\n")
    with pytest.raises(SuiteError, match="latin.yaml: the file is not UTF-8"):
        load_suites([path])


# --- paths, globs, several files -------------------------------------------------------


def test_globs_directories_and_repeats(tmp_path: Path) -> None:
    one = write(tmp_path, "evals/b.yaml", VALID_YAML)
    two = write(tmp_path, "evals/a.json", VALID_JSON)
    write(tmp_path, "evals/README.md", "not a suite")
    suites = load_suites([str(tmp_path / "evals" / "*"), one])
    assert [s.path for s in suites] == [two.as_posix(), one.as_posix()]
    assert [s.path for s in load_suites([tmp_path / "evals"])] == \
        [two.as_posix(), one.as_posix()]
    # the same id in two files is fine: cases are identified by (suite, id)
    keys = [c.key for s in suites for c in s.cases]
    assert len(keys) == len(set(keys))
    assert {c.id for c in suites[0].cases} == {c.id for c in suites[1].cases}


@pytest.mark.parametrize(("entry", "fragment"), [
    ("missing.yaml", "suite file not found"),
    ("*.nothing", "no suite file"),
    ("notes.txt", "unsupported suite file type"),
    ("emptydir", "holds no suite file"),
    ("pipe.yaml", "not a regular file"),
])
def test_bad_paths(tmp_path: Path, entry: str, fragment: str) -> None:
    write(tmp_path, "notes.txt", "x")
    (tmp_path / "emptydir").mkdir()
    os.mkfifo(tmp_path / "pipe.yaml")  # never opened: a reader would wait for a writer
    with pytest.raises(SuiteError) as info:
        load_suites([str(tmp_path / entry)])
    assert fragment in str(info.value)
    assert str(tmp_path / entry) in str(info.value)


def test_no_paths() -> None:
    with pytest.raises(SuiteError):
        load_suites([])


def test_single_file_loader_matches_list_loader(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yml", VALID_YAML)
    assert load_suite(path) == load_suites([path])[0]


# --- scaffold --------------------------------------------------------------------------

SECTIONS = [
    ("Installation", "https://docs.example.com/install", "installation"),
    ("Installation!", "https://docs.example.com/install/windows", None),
    ("Configuration: files, env & flags", "https://docs.example.com/config#top", "config"),
    ("  Über  'quoted' \"text\" # not a comment ", "kb://notes/uber", ""),
    ("", "https://docs.example.com/faq/", None),
    ("日本語", "https://docs.example.com/ja", "ja"),
]


def test_scaffold_loads_back_one_case_per_section(tmp_path: Path) -> None:
    text = scaffold_suite(SECTIONS)
    path = write(tmp_path, "starter.yaml", text)
    (suite,) = load_suites([path])
    assert len(suite.cases) == len(SECTIONS)
    ids = [c.id for c in suite.cases]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in ids)
    for case, (heading, url, anchor) in zip(suite.cases, SECTIONS, strict=True):
        assert case.expect.source_includes == (url.split("#")[0],)
        assert case.expect.anchor == (anchor or None)
        if heading.strip():
            assert case.question == " ".join(heading.split())
        else:
            assert url in case.question
    assert ids[0] == slug(SECTIONS[0][0])
    assert ids[1] == f"{slug(SECTIONS[1][0])}-2"


def test_scaffold_leaves_out_cases_that_cannot_fail(tmp_path: Path) -> None:
    root = "https://docs.example.com/book/"
    sections = [("Introduction", root, None), ("Getting started", root + "start", "go"),
                ("Summary", root + "ch1", "summary"), ("Summary", root + "ch2", "summary"),
                ("Overview", root + "ch3#overview", "overview"), ("Preface", root, "preface")]
    data = json.loads(scaffold_suite(sections, fmt="json"))
    assert [(c["question"], c["expect"]) for c in data["cases"]] == [
        ("Getting started", {"sourceIncludes": root + "start", "anchor": "go"}),
        ("Overview", {"sourceIncludes": root + "ch3", "anchor": "overview"}),
        ("Preface", {"anchor": "preface"})]  # the root's url matches every result
    (suite,) = load_suites([write(tmp_path, "s.json", json.dumps(data))])
    assert len(suite.cases) == 3
    # the root stays out with one other page, or a page from another source beside it
    for others in ([("Install", root + "install", "pip")],
                   [("Install", root + "install", "pip"), ("Note", "kb://text/note", None),
                    ("FAQ", root + "faq", None)]):
        data = json.loads(scaffold_suite([("Home", root, None), *others], fmt="json"))
        assert all(c["expect"].get("sourceIncludes") != root for c in data["cases"])


def test_scaffold_is_plain_yaml_with_version_1() -> None:
    data = yaml.safe_load(scaffold_suite(SECTIONS[:1], top_k=7))
    assert data["version"] == 1
    assert data["defaults"] == {"topK": 7}


def test_scaffold_needs_sections() -> None:
    with pytest.raises(InputError):
        scaffold_suite([])


def test_json_suite_round_trip_of_scaffolded_yaml(tmp_path: Path) -> None:
    yaml_path = write(tmp_path, "s.yaml", scaffold_suite(SECTIONS))
    json_path = write(tmp_path, "s.json", json.dumps(yaml.safe_load(yaml_path.read_text())))
    (a,) = load_suites([yaml_path])
    (b,) = load_suites([json_path])
    assert [(c.id, c.question, c.expect) for c in a.cases] == \
        [(c.id, c.question, c.expect) for c in b.cases]


def test_a_suite_over_the_size_limit_is_told_to_split(tmp_path: Path) -> None:
    """`eval init` on a large KB writes a suite past the cap; the refusal said only that."""
    big = write(tmp_path, "big.yaml", "version: 1\ncases: []\n# " + "x" * (5 * 1024 * 1024))
    with pytest.raises(SuiteError) as info:
        load_suites([big])
    assert "byte limit" in info.value.message
    assert info.value.hint is not None and "several files" in info.value.hint
