"""Operator-given CSS selectors: the element that holds a page's content, and the parts
inside it to leave out. Selectors are turned into XPath once (cssselect) and cached, so
a source's thousand pages pay for the translation once per process.

A selector is operator input bounded like hostile input. Its length, the nesting of its
parentheses and its steps are capped before it is parsed (cssselect and lxml recurse per
step). Combinators are translated right to left, as a test on each element
(``b[ancestor::a]`` for ``a b``), because libxml2 merges the node sets of a left-to-right
path (``a/descendant-or-self::*/b``) in quadratic time: ``div div`` on a page of 20,000
elements took 38 s that way and takes 0.02 s this way. What is left grows with the
page's elements times, per step, the length of the axis it walks (an element's
ancestors: the page's depth; its siblings: the longest run of siblings; its descendants:
the page), and is counted (``match_work``) before the XPath runs: a page past
``MAX_MATCH_WORK`` fails with a message naming the selector instead of holding the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from lxml import etree

from kbctl.errors import ExtractError, InputError

if TYPE_CHECKING:
    from cssselect.xpath import XPathExpr

MAX_SELECTOR_CHARS = 1_000
MAX_SELECTOR_NESTING = 8  # parentheses inside parentheses (``:is(:not(…))``)
MAX_SELECTOR_STEPS = 32  # compound selectors joined by combinators, over the whole selector
#: Element visits one selector may cost on one page (about a second of libxml2's time).
MAX_MATCH_WORK = 300_000_000
# Axes whose length grows with the page (an element's ancestors, its siblings, its
# descendants) rather than staying at one node.
_ANCESTORS = ("ancestor::",)
_SIBLINGS = ("preceding-sibling::", "following-sibling::")
_DESCENDANTS = ("descendant",)
#: Per alternative of a selector (``a, b c``): the ancestor, sibling and descendant axes
#: it walks per element.
Axes = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class CompiledSelector:
    """One selector as an XPath, with the unbounded axes it walks per element."""

    selector: str
    xpath: etree.XPath
    axes: Axes

    def __call__(self, scope: etree._Element) -> list[object]:
        work = match_work(scope, self.axes)
        if work > MAX_MATCH_WORK:
            raise ExtractError(
                f"CSS selector {self.selector!r} would cost about {work:,} element visits "
                f"on this page (at most {MAX_MATCH_WORK:,})",
                hint="use a selector with fewer descendant (' ') or sibling ('~') steps, "
                     "or with '>' where the parent is known")
        return self.xpath(scope)


def match_work(scope: etree._Element, axes: Axes) -> int:
    """Element visits matching costs on ``scope``: for each alternative, its elements
    times the page's depth per ancestor axis, its longest run of siblings per sibling
    axis, and its elements per descendant axis."""
    elements = depth = reach = 0
    stack = [(scope, 1)]
    while stack:
        node, level = stack.pop()
        elements += 1
        depth = max(depth, level)
        children = [c for c in node if isinstance(c.tag, str)]
        reach = max(reach, len(children))
        stack.extend((child, level + 1) for child in children)
    return sum(elements * depth ** up * max(reach, 1) ** side * elements ** down
               for up, side, down in axes)


def _translator() -> object:
    from cssselect import HTMLTranslator

    class RightToLeft(HTMLTranslator):
        """Combinators as conditions on the right-hand element (see the module's doc)."""

        @staticmethod
        def _test(expr: XPathExpr) -> str:
            path = "" if expr.path in ("", "*/") else expr.path
            if path:  # never made by the combinators below; refused rather than misread
                raise ValueError("a selector step this matcher cannot translate")
            return f"{expr.element}[{expr.condition}]" if expr.condition else expr.element

        def _joined(self, left: XPathExpr, right: XPathExpr, condition: str) -> XPathExpr:
            self._test(right)
            right.path = ""
            return right.add_condition(condition)

        def xpath_descendant_combinator(self, left: XPathExpr, right: XPathExpr) -> XPathExpr:
            return self._joined(left, right, f"ancestor::{self._test(left)}")

        def xpath_child_combinator(self, left: XPathExpr, right: XPathExpr) -> XPathExpr:
            return self._joined(left, right, f"parent::{self._test(left)}")

        def xpath_direct_adjacent_combinator(self, left: XPathExpr,
                                             right: XPathExpr) -> XPathExpr:
            return self._joined(left, right,
                                f"preceding-sibling::*[1]/self::{self._test(left)}")

        def xpath_indirect_adjacent_combinator(self, left: XPathExpr,
                                               right: XPathExpr) -> XPathExpr:
            return self._joined(left, right, f"preceding-sibling::{self._test(left)}")

    return RightToLeft()


def _shape_problem(selector: str) -> str | None:
    """Why a selector is too large to parse safely, or None: one pass, no recursion."""
    if len(selector) > MAX_SELECTOR_CHARS:
        return f"is longer than {MAX_SELECTOR_CHARS:,} characters"
    depth = deepest = 0
    quote = ""
    escaped = False
    for char in selector:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth = max(depth - 1, 0)
    if deepest > MAX_SELECTOR_NESTING:
        return f"nests parentheses {deepest} deep (at most {MAX_SELECTOR_NESTING})"
    return None


def _steps(tree: object) -> int:
    """Compound selectors in a parsed selector, its pseudo-classes' arguments included."""
    from cssselect.parser import CombinedSelector

    count, stack = 0, [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, CombinedSelector):
            count += 1
        for value in vars(node).values() if hasattr(node, "__dict__") else ():
            if isinstance(value, list | tuple):
                stack.extend(v for v in value if hasattr(v, "__dict__"))
            elif hasattr(value, "__dict__"):
                stack.append(value)
    return count + 1


@lru_cache(maxsize=256)
def compile_selector(selector: str) -> CompiledSelector:
    """An XPath for one CSS selector; a selector that does not parse, or is past the
    caps, is bad input."""
    from cssselect import SelectorError, parse

    if not isinstance(selector, str) or not selector.strip():
        raise InputError(f"a CSS selector must be a non-empty string, got {selector!r}")
    shown = selector if len(selector) <= 80 else f"{selector[:60]}…"
    problem = _shape_problem(selector)
    if problem:
        raise InputError(f"CSS selector {shown!r} {problem}")
    try:
        steps = sum(_steps(tree) for tree in parse(selector))
        if steps > MAX_SELECTOR_STEPS:
            raise InputError(f"CSS selector {shown!r} has {steps} steps (at most "
                             f"{MAX_SELECTOR_STEPS})")
        xpath = _translator().css_to_xpath(selector)  # type: ignore[attr-defined]
        compiled = etree.XPath(xpath)
    except SelectorError as exc:
        raise InputError(f"CSS selector {shown!r} does not parse: {exc}") from None
    except (etree.XPathSyntaxError, ValueError) as exc:
        raise InputError(f"CSS selector {shown!r} is not supported: {exc}") from None
    except RecursionError:
        raise InputError(f"CSS selector {shown!r} nests too deeply") from None
    return CompiledSelector(selector, compiled, _axes(xpath))


def _axes(xpath: str) -> Axes:
    """The unbounded axes of each alternative (``a, b c``), the scan of every element
    each alternative starts with left out."""
    def count(part: str, axes: tuple[str, ...]) -> int:
        return sum(part.count(axis) for axis in axes)
    return tuple((count(part, _ANCESTORS), count(part, _SIBLINGS),
                  count(part, _DESCENDANTS) - 1) for part in xpath.split(" | "))


def select_content(root: etree._Element, selector: str) -> etree._Element | None:
    """The first element the selector matches, or None."""
    for node in compile_selector(selector)(root):
        if isinstance(node, etree._Element):
            return node
    return None


def remove_matches(scope: etree._Element, selectors: Sequence[str]) -> int:
    """Take every element matching one of ``selectors`` out of ``scope`` (keeping the
    text that follows it); returns how many were removed."""
    removed = 0
    for selector in selectors:
        for node in compile_selector(selector)(scope):
            if not isinstance(node, etree._Element) or node is scope:
                continue
            if remove_keeping_tail(node):
                removed += 1
    return removed


def remove_keeping_tail(node: etree._Element) -> bool:
    """Take ``node`` out of its parent, the text after it staying in place; False for the
    root, which has no parent to leave."""
    parent = node.getparent()
    if parent is None:
        return False
    tail = node.tail
    if tail:
        previous = node.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(node)
    return True


@dataclass(frozen=True)
class ContentSelectors:
    """A source's ``content_selector`` and ``exclude_selectors``, checked when read."""

    content: str | None = None
    exclude: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.content or self.exclude)

    @property
    def signature(self) -> str | None:
        """What a stored page records of how it was read (None: no selectors)."""
        if not self:
            return None
        return f"{self.content or ''} | exclude {', '.join(self.exclude)}"

    @classmethod
    def parse(cls, content: object, exclude: object, *, where: str) -> ContentSelectors:
        if content is not None and not isinstance(content, str):
            raise InputError(f"{where}: option 'content_selector' must be a CSS selector "
                             f"string")
        if isinstance(exclude, str):
            exclude = [exclude]
        if not isinstance(exclude, list | tuple) or not all(
                isinstance(s, str) for s in exclude):
            raise InputError(f"{where}: option 'exclude_selectors' must be a list of CSS "
                             f"selectors")
        for selector in ([content] if content else []) + list(exclude):
            try:
                compile_selector(selector)
            except InputError as exc:
                raise InputError(f"{where}: {exc.message}") from None
        return cls(content or None, tuple(exclude))
