"""llms.txt: a site's own curated list of pages for language models (llmstxt.org).

The format is markdown: an H1 title, an optional ``>`` blockquote summary, free text, then
H2 sections of ``- [name](url): notes`` lines. A section named ``Optional`` holds pages
that may be skipped when context is short. The linked pages are usually markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from kbctl.net.client import GuardedClient

from ..errors import FetchError, KbctlError, Unreachable
from .base import SourceKind
from .options import boolean, integer, option, version_name
from .sitemap import MAX_URLS
from .webopts import WebOptions, web_adapter
from .weburl import normalize_url

LLMS_CONTENT_TYPES = ("text/plain", "text/markdown", "text/x-markdown")



@dataclass(frozen=True)
class LlmsOptions(WebOptions):
    """``skip_optional``: leave out the pages of the ``Optional`` section; ``max_urls``:
    the most pages taken from it (a hostile llms.txt lists hundreds of thousands)."""

    kind: ClassVar[str] = "llms"
    skip_optional: bool = option(False, boolean)
    max_urls: int = option(MAX_URLS, integer(1))
    version: str | None = option(None, version_name)
    lang: str | None = option(None, version_name)


KIND = SourceKind(LlmsOptions, web_adapter)

# The text after the marker is taken whole and trimmed by ``_heading_text``: a lazy group
# before "\s*#*\s*$" backtracked in cubic time over a run of spaces (a hostile file's
# 4,000 spaces took 50 s).
_H1 = re.compile(r"#[ \t]+(.*\S)?[ \t]*")
_H2 = re.compile(r"##[ \t]+(.*\S)?[ \t]*")
_QUOTE = re.compile(r"^>\s?(.*)$")
_LINK = re.compile(
    r"""^\s*[-*+]\s+\[(?P<name>[^\]]*)\]\(\s*(?P<url><[^>]*>|[^)\s]+)(?:\s+["'][^"']*["'])?\s*\)"""
    r"""\s*(?::\s*(?P<notes>.*))?$""")


@dataclass(frozen=True)
class LlmsLink:
    name: str
    url: str
    notes: str = ""


@dataclass(frozen=True)
class LlmsSection:
    name: str
    links: list[LlmsLink] = field(default_factory=list)

    @property
    def optional(self) -> bool:
        return self.name.strip().lower() == "optional"


@dataclass(frozen=True)
class LlmsTxt:
    title: str | None
    summary: str | None
    sections: list[LlmsSection]

    def links(self, *, skip_optional: bool = False) -> list[LlmsLink]:
        """Every linked page once, in file order (the ``Optional`` section unless skipped)."""
        seen: dict[str, LlmsLink] = {}
        for section in self.sections:
            if skip_optional and section.optional:
                continue
            for link in section.links:
                seen.setdefault(link.url, link)
        return list(seen.values())


def _heading_text(raw: str | None) -> str:
    """An ATX heading's text: a closing run of ``#`` goes when a space precedes it
    (CommonMark), so ``# C#`` keeps its ``#``."""
    text = (raw or "").strip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare.rstrip()
    return text


def parse_llms_txt(text: str, base_url: str) -> LlmsTxt:
    """Parse llms.txt; link URLs are resolved against ``base_url`` and normalised.

    Links that are not http(s) are dropped. Links before the first H2 belong to a section
    with an empty name.
    """
    itself = normalize_url(base_url)
    title = summary = None
    quote: list[str] = []
    sections: list[LlmsSection] = [LlmsSection("")]
    in_fence = False
    for line in text.removeprefix("\ufeff").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if title is None and (m := _H1.fullmatch(line)) and _heading_text(m.group(1)):
            title = _heading_text(m.group(1))
            continue
        if (m := _H2.fullmatch(line)) is not None and _heading_text(m.group(1)):
            sections.append(LlmsSection(_heading_text(m.group(1))))
            continue
        if summary is None and len(sections) == 1 and (m := _QUOTE.match(line)):
            quote.append(m.group(1).strip())
            continue
        if quote and summary is None:
            summary = " ".join(q for q in quote if q) or None
        if (m := _LINK.match(line)) is not None:
            url = normalize_url(m.group("url").strip("<>"), base_url)
            if url and url != itself:  # a list that names itself is no page of the site
                sections[-1].links.append(LlmsLink(m.group("name").strip(), url,
                                                   (m.group("notes") or "").strip()))
    if quote and summary is None:
        summary = " ".join(q for q in quote if q) or None
    return LlmsTxt(title, summary, [s for s in sections if s.name or s.links])


async def fetch_llms(client: GuardedClient, url: str) -> LlmsTxt:
    """Fetch and parse an llms.txt. Raises ``FetchError``/``ExtractError``."""
    result = await client.fetch(url, content_types=LLMS_CONTENT_TYPES)
    return parse_llms_txt(result.text(), result.url)


@dataclass(frozen=True)
class Probe:
    """What looking for a site's llms.txt found: ``found`` (where, what) when it lists a
    page; ``trouble`` when it could not be read for a reason worth saying (a timeout, a
    server error: each costs a run its wait), rather than because there is none."""

    found: tuple[str, LlmsTxt] | None = None
    trouble: str | None = None


async def probe_llms(client: GuardedClient, site_origin: str) -> Probe:
    """``origin/llms.txt`` when it exists and lists at least one page.

    Any failure (missing file, an HTML error page, a blocked address, a timeout) means "no
    curated list" and the caller goes on as if there were none; the ones that are not "none
    there" are said (``Probe.trouble``).
    """
    url = site_origin.rstrip("/") + "/llms.txt"
    try:
        llms = await fetch_llms(client, url)
    except FetchError as exc:
        if isinstance(exc, Unreachable) or (exc.status or 0) >= 500:
            return Probe(trouble=exc.message)
        return Probe()
    except KbctlError:
        return Probe()
    return Probe(found=(url, llms)) if llms.links() else Probe()
