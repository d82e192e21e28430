"""Options every web source kind (``url``, ``sitemap``, ``crawl``, ``llms``) shares.

Each web kind's module subclasses ``WebOptions`` with its own fields; options that apply
to every web kind (URL rules, content selectors…) belong here, once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from kbctl.net.policy import NetPolicy

from ..errors import InputError
from ..extract.html_select import ContentSelectors, compile_selector
from .options import (
    NOINDEX_HELP,
    Bad,
    SourceOptions,
    boolean,
    integer,
    option,
    positive_number,
    strings,
)
from .urlrules import UrlRule, UrlRules, rules_problem
from .weburl import MAX_URL_CHARS, normalize_url

#: The most pages a listing (a sitemap, an llms.txt) yields unless told otherwise.
MAX_URLS = 50_000
_PATTERNS = strings("a list of URL patterns")


def _patterns(action: str) -> Any:
    def check(value: Any) -> tuple[str, ...]:
        patterns = _PATTERNS(value)
        problem = rules_problem(patterns)
        if problem:
            raise Bad(f"a list of URL patterns (this one {problem})")
        for pattern in patterns:
            try:
                UrlRule.parse(action, pattern)
            except InputError as exc:
                raise Bad(f"a list of URL patterns ({exc.message})") from None
        return patterns
    return check


def _selector(value: Any) -> str:
    if not isinstance(value, str):
        raise Bad("a CSS selector")
    try:
        compile_selector(value)
    except InputError as exc:
        raise Bad(f"a CSS selector ({exc.message})") from None
    return value


_SELECTORS = strings("a list of CSS selectors")


def _selectors(value: Any) -> tuple[str, ...]:
    return tuple(_selector(s) for s in _SELECTORS(value))


@dataclass(frozen=True)
class WebOptions(SourceOptions):
    """``timeout`` (seconds per request) and ``max_page_bytes`` default to the network
    policy's limits; ``allow_private_network`` is set on a definition whose ingest was
    given ``--allow-private-network``, so a later resync may reach the same private host."""

    target_name: ClassVar[str] = "url"

    docs_mode: bool = option(
        True, boolean, flag="--docs-mode/--no-docs-mode",
        help="Convert HTML to markdown that keeps headings, anchors and code blocks; "
        "--no-docs-mode extracts plain text.")
    timeout: float | None = option(
        None, positive_number, help="Seconds one request may take, end to end "
        f"[default: {NetPolicy.total_timeout:g}].")
    max_page_bytes: int | None = option(
        None, integer(1), help="Largest page body accepted, after decompression "
        f"[default: {NetPolicy.max_bytes // 2**20} MiB].")
    allow_private_network: bool = option(False, boolean)  # from --allow-private-network
    include: tuple[str, ...] = option(
        (), _patterns("include"), help="Only URLs whose path matches this glob ('/docs/*'), "
        "or regular expression after 're:' (repeatable).")
    exclude: tuple[str, ...] = option(
        (), _patterns("exclude"), help="Leave out URLs whose path matches this glob "
        "('/blog/*') or 're:' expression (repeatable).")
    ignore_noindex: bool = option(False, boolean, help=NOINDEX_HELP)
    content_selector: str | None = option(
        None, _selector, help="CSS selector of the element holding each page's content; "
        "wins over the detected container.")
    exclude_selectors: tuple[str, ...] = option(
        (), _selectors, flag="--exclude-selector", help="CSS selector of parts of the "
        "content to leave out (repeatable), e.g. '.feedback'.")

    @cached_property
    def rules(self) -> UrlRules:
        """The include and exclude rules, compiled (they were checked when parsed)."""
        return UrlRules.parse(self.include, self.exclude)

    @property
    def selectors(self) -> ContentSelectors:
        return ContentSelectors(self.content_selector, self.exclude_selectors)

    @classmethod
    def check_target(cls, target: str) -> None:
        if len(target) > MAX_URL_CHARS:
            raise Bad(f"an http(s) URL of at most {MAX_URL_CHARS:,} characters")
        if "://" not in target or normalize_url(target) is None:
            raise Bad("an http(s) URL",
                      hint="local folders are ingested with `kbctl ingest files`")

    def net_policy(self, base: NetPolicy) -> NetPolicy:
        """``base`` with this source's limits and private-network permission applied."""
        changes: dict[str, Any] = {}
        if self.timeout is not None:
            changes.update(total_timeout=self.timeout,
                           read_timeout=min(base.read_timeout, self.timeout),
                           connect_timeout=min(base.connect_timeout, self.timeout))
        if self.max_page_bytes is not None:
            changes["max_bytes"] = self.max_page_bytes
        if self.allow_private_network:
            changes["allow_private_network"] = True
        return dataclasses.replace(base, **changes) if changes else base


    def reaching_private_network(self) -> WebOptions:
        return dataclasses.replace(self, allow_private_network=True)

