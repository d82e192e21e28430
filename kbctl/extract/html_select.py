"""Operator-given CSS selectors: the element that holds a page's content, and the parts
inside it to leave out. Selectors are turned into XPath once (cssselect) and cached, so
a source's thousand pages pay for the translation once per process."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from lxml import etree

from kbctl.errors import InputError


@lru_cache(maxsize=256)
def compile_selector(selector: str) -> etree.XPath:
    """An XPath for one CSS selector; a selector that does not parse is bad input."""
    from cssselect import HTMLTranslator, SelectorError

    if not isinstance(selector, str) or not selector.strip():
        raise InputError(f"a CSS selector must be a non-empty string, got {selector!r}")
    try:
        return etree.XPath(HTMLTranslator().css_to_xpath(selector))
    except SelectorError as exc:
        raise InputError(f"CSS selector {selector!r} does not parse: {exc}") from None
    except (etree.XPathSyntaxError, ValueError) as exc:
        raise InputError(f"CSS selector {selector!r} is not supported: {exc}") from None


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
