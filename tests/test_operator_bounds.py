"""Operator input bounded like hostile input: URL rules on RE2 with caps on their number
and size, CSS selectors with caps on their shape and a counted matching cost per page.
Every refusal is exit 2 naming the flag or kbctl.yaml's line; nothing here is timed."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import html
from lxml.cssselect import CSSSelector

from kbctl.errors import ExtractError, InputError
from kbctl.extract.html_select import (
    MAX_MATCH_WORK,
    MAX_SELECTOR_STEPS,
    compile_selector,
    match_work,
)
from kbctl.sources.urlrules import MAX_RULES, MAX_RULES_CHARS, UrlRule, UrlRules
from tests.conftest import Cli

NESTED_498 = "re:" + "(" * 498 + "a" + ")" * 498


# --- URL rules ------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_catastrophic_regex_runs_in_linear_time_on_re2() -> None:
    rule = UrlRule.parse("exclude", "re:^/(a+)+$")
    assert type(rule._regex).__module__.startswith("re2")
    assert not rule.matches("/" + "a" * 200_000 + "!")  # exponential on a backtracking engine
    assert rule.matches("/" + "a" * 200_000)


@pytest.mark.parametrize(("pattern", "needle"), [
    ("re:a{4294967296}", "repeats {4294967296} times (at most 1,000)"),
    ("re:a{2,5000}", "repeats {2,5000} times"),
    (NESTED_498, "nests groups 498 deep (at most 32)"),
    ("re:(a)\\1", "not a valid regular expression"),
    ("re:(?=a)b", "not a valid regular expression"),
])
def test_regex_rules_re2_cannot_run_are_input_errors(pattern: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        UrlRules.parse(include=[pattern], where="crawl source https://x.test/")
    assert needle in info.value.message
    assert info.value.message.startswith("crawl source https://x.test/: --include")
    assert len(info.value.message) < 300  # a long pattern is shortened, not echoed


def test_bracketed_parentheses_and_escapes_are_not_groups() -> None:
    rule = UrlRule.parse("include", "re:^/[(]" + "\\(" * 40 + "x")
    assert rule.matches("/(" + "(" * 40 + "x")


def test_rule_count_and_size_are_capped() -> None:
    with pytest.raises(InputError, match=f"at most {MAX_RULES:,}"):
        UrlRules.parse(include=[f"/p{i}/*" for i in range(MAX_RULES + 1)])
    big = ["/" + "a" * 999] * 65
    assert sum(map(len, big)) > MAX_RULES_CHARS
    with pytest.raises(InputError, match="characters"):
        UrlRules.parse(exclude=big)
    UrlRules.parse(include=[f"/p{i}/*" for i in range(MAX_RULES)])  # the cap itself passes


@pytest.mark.parametrize(("args", "needle"), [
    (["--include", "re:a{4294967296}"], "--include must be a list of URL patterns"),
    (["--exclude", NESTED_498], "nests groups 498 deep"),
    (["--content-selector", "a " * 2000], "--content-selector must be a CSS selector"),
    (["--content-selector", ":is(" * 1000 + "a" + ")" * 1000], "longer than 1,000"),
    (["--exclude-selector", ":is(" * 12 + "a" + ")" * 12], "nests parentheses 12 deep"),
    (["--exclude-selector", " > ".join(["div"] * 40)], "has 40 steps"),
])
def test_a_flag_past_a_cap_is_exit_2_naming_it(cli: Cli, args: list[str], needle: str) -> None:
    result = cli("ingest", "crawl", "http://127.0.0.1:9/", *args)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr
    assert "Traceback" not in result.output


def test_too_many_rules_in_kbctl_yaml_name_the_file_and_line(cli: Cli, workdir: Path) -> None:
    globs = "".join(f"      - /p{i}/*\n" for i in range(MAX_RULES + 5))
    (workdir / "kbctl.yaml").write_text(
        "namespace: site\nsources:\n  - kind: sitemap\n    target: https://x.test/s.xml\n"
        f"    include:\n{globs}")
    result = cli("ingest")
    assert result.exit_code == 2, result.output
    assert "kbctl.yaml:5: sources[0].include" in result.stderr
    assert f"at most {MAX_RULES:,}" in result.stderr


# --- CSS selectors ----------------------------------------------------------------------

DOC = ("<html><body><article><h1>t</h1><p>one</p><div class='content'><pre>x</pre>"
       "<p>two</p></div><ul><li>a</li><li>b</li><li>c</li></ul><p>three</p></article>"
       "<footer><p>four</p></footer></body></html>")


@pytest.mark.parametrize("selector", [
    "article p", "div > p", "h1 + p", "h1 ~ p", "* * *", "article .content pre",
    "li:nth-child(2)", "p:first-child", "div p:first-of-type", ":is(h1, pre)", "body p",
    "article > ul li + li", "p:not(.x)", "a, footer p", "ul ~ p", "body > * > p",
])
def test_right_to_left_matching_finds_what_lxml_finds(selector: str) -> None:
    root = html.fromstring(DOC)
    ours = [(e.tag, e.text) for e in compile_selector(selector)(root)]
    theirs = [(e.tag, e.text) for e in CSSSelector(selector)(root)]
    assert ours == theirs


def _deep_page(depth: int, width: int) -> html.HtmlElement:
    inner = "<div>" * depth + "x" + "</div>" * depth
    return html.fromstring("<html><body>" + f"<section>{inner}</section>" * width
                           + "</body></html>")


def test_matching_work_is_counted_and_a_costly_selector_fails_the_page() -> None:
    root = _deep_page(200, 200)  # ~40,000 elements, 200 deep
    elements = sum(1 for _ in root.iter())
    assert match_work(root, ((0, 0, 0),)) == elements
    assert match_work(root, ((1, 0, 0),)) == elements * 203  # html, body, section, 200 divs
    assert match_work(root, ((2, 0, 0),)) > MAX_MATCH_WORK
    with pytest.raises(ExtractError) as info:
        compile_selector("* * *")(root)
    assert "'* * *'" in info.value.message and "element visits" in info.value.message
    assert len(compile_selector("section > div")(root)) == 200  # a bounded one still runs
    assert len(compile_selector("section div")(root)) == 200 * 200


def test_a_long_run_of_siblings_does_not_make_an_ancestor_step_costly() -> None:
    root = html.fromstring("<html><body><main>" + "<p>x</p>" * 40_000 + "</main></body></html>")
    assert len(compile_selector("main p")(root)) == 40_000
    with pytest.raises(ExtractError, match="element visits"):
        compile_selector("p ~ p")(root)  # each paragraph's 40,000 siblings: quadratic


def test_a_costly_exclude_selector_fails_one_page_with_its_name() -> None:
    from kbctl.extract.html import extract_html

    page = ("<html><body><main><h1>T</h1>" + "<div>" * 200 + "text" + "</div>" * 200
            + "<p>x</p>" * 20_000 + "</main></body></html>")
    with pytest.raises(ExtractError, match="'\\* \\* \\*'"):
        extract_html(page, url="https://x.test/", exclude_selectors=["* * *"])
    assert "text" in extract_html(page, url="https://x.test/",
                                  exclude_selectors=["main > h1"]).markdown


def test_selector_steps_are_capped_including_pseudo_class_arguments() -> None:
    inside = " ".join(["a"] * (MAX_SELECTOR_STEPS + 1))
    with pytest.raises(InputError, match="steps"):
        compile_selector(f"p:not({inside})")
