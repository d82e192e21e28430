"""llms.txt: a site's own curated list of pages for language models (llmstxt.org).

The format is markdown: an H1 title, an optional ``>`` blockquote summary, free text, then
H2 sections of ``- [name](url): notes`` lines. A section named ``Optional`` holds pages
that may be skipped when context is short. The linked pages are usually markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kbctl.net.client import GuardedClient

from ..errors import FetchError, KbctlError, SourceError, Unreachable
from .base import Expansion, Leaf, SourceKind
from .fetchpage import WebHint
from .options import LANG_HELP, VERSION_HELP, boolean, integer, option, version_name
from .web import WebSource
from .webload import run_async
from .webopts import MAX_URLS, WebOptions
from .weburl import host_allowed, html_twin, is_origin_only, normalize_url, origin, site_key

LLMS_CONTENT_TYPES = ("text/plain", "text/markdown", "text/x-markdown")
#: The help of ``llms_txt``, the option of the kinds that read an llms.txt in place of
#: their own listing.
LLMS_TXT_HELP = "Ingest the pages the site's /llms.txt lists instead, when it lists any."



@dataclass(frozen=True)
class LlmsOptions(WebOptions):
    """``skip_optional``: leave out the pages of the ``Optional`` section; ``max_urls``:
    the most pages taken from it (a hostile llms.txt lists hundreds of thousands)."""

    kind: ClassVar[str] = "llms"
    about: ClassVar[str] = """Ingest the pages a site's llms.txt lists.

    Example: `kbctl ingest llms https://docs.example.com/llms.txt --skip-optional`
    """
    target_help: ClassVar[str] = "An llms.txt URL, or a site's origin."
    skip_optional: bool = option(False, boolean, help="Leave out the pages of the "
                                 "'Optional' section.")
    max_urls: int = option(MAX_URLS, integer(1), help="Most pages taken from the llms.txt "
                           "[default: {default}].")
    version: str | None = option(None, version_name, help=VERSION_HELP)
    lang: str | None = option(None, version_name, help=LANG_HELP)


class LlmsSource(WebSource[LlmsOptions]):
    """The pages an llms.txt lists (a site's origin: its ``/llms.txt``)."""

    def listing(self, url: str) -> Expansion:
        return run_async(lambda: self._listing(url))

    async def _listing(self, url: str) -> Expansion:
        target = url + "llms.txt" if is_origin_only(url) else url
        options = self.options
        take = Take(options.max_urls, options.flag("max_urls"), options.version,
                    options.lang, skip_optional=options.skip_optional)
        async with self.client() as client:
            llms = await fetch_llms(client, target)
            if not llms.links(skip_optional=take.skip_optional):
                raise SourceError(f"{target}: the llms.txt lists no pages",
                                  hint="pages are listed as `- [name](url): notes` under H2 "
                                       "sections")
            return await curated_pages(self, client, target, llms, take)


KIND = SourceKind(LlmsOptions, LlmsSource)

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


# --- a curated list in place of another listing --------------------------------------


@dataclass(frozen=True)
class Take:
    """What a source takes from an llms.txt: at most ``most`` pages (``flag`` sets it), one
    version and language of each, the ``Optional`` section unless skipped; a list read in
    place of a sitemap or a crawl counts pages on ``allow_domains`` as the site's own."""

    most: int
    flag: str
    version: str | None = None
    lang: str | None = None
    skip_optional: bool = False
    allow_domains: frozenset[str] = frozenset()


async def curated_pages(source: WebSource[Any], client: GuardedClient, where: str,
                        llms: LlmsTxt, take: Take, *, note: str | None = None,
                        urls: list[str] | None = None) -> Expansion:
    """The pages ``llms`` lists (``urls``: those of them to ingest)."""
    links = [link.url for link in llms.links(skip_optional=take.skip_optional)]
    shaped = await source.shape(client, where, links if urls is None else urls,
                                version=take.version, lang=take.lang)
    kept, notes = shaped.kept, [note] if note else []
    capped = len(kept) > take.most
    if capped:
        notes.append(f"{where}: lists {len(kept):,} pages; only the first {take.most:,} are "
                     f"ingested (see {take.flag})")
        kept = kept[:take.most]
    leaves = [Leaf(ref=u, url=u, hint=WebHint(prefer_markdown=True, twin=html_twin(u)))
              for u in kept]
    skipped = len(llms.links()) - len(links)
    if skipped:
        notes.append(f"{where}: {skipped} pages of the Optional section skipped")
    if urls is not None and len(urls) < len(links):
        notes.append(f"{where}: {len(links) - len(urls)} listed pages on other sites "
                     f"skipped")
    # capped, the listing is partial: a resync deletes no page beyond the cap
    return Expansion(leaves=leaves, complete=not capped, notes=notes + shaped.notes,
                     dropped=shaped.dropped)


async def curated_instead(source: WebSource[Any], client: GuardedClient, url: str,
                          take: Take, *, instead: str, otherwise: str
                          ) -> tuple[Expansion | None, list[str], dict[str, Any]]:
    """The site's curated pages instead of ``instead`` (with no expansion: a note, if
    any, saying why not). A curated list counts for the site only with pages on it
    (its host, or a crawl's allowed domains): an llms.txt listing another host's pages
    (a mirror's copy, a staging build) does not describe this one. The options it
    settles (``Expansion.settled``): ``llms_txt: false`` when the site plainly has none,
    which its recorded definition keeps."""
    none = {"llms_txt": False}
    probe = await probe_llms(client, origin(url))
    if probe.found is None:  # a failed probe says nothing: it is asked again next run
        return None, ([f"the site's llms.txt was not read ({probe.trouble}): {instead} "
                       f"instead"] if probe.trouble else []), {} if probe.trouble else none
    where, llms = probe.found
    listed = [link.url for link in llms.links(skip_optional=take.skip_optional)]
    sites = {site_key(url), site_key(where)}
    own = [u for u in listed if site_key(u) in sites or host_allowed(u, take.allow_domains)]
    if not own:
        return None, [f"{where} lists no page of this site (only of other sites): "
                      f"{instead} instead"] if listed else [], none
    return await curated_pages(source, client, where, llms, take, urls=own, note=(
        f"{where} lists {len(own)} curated pages: ingesting those instead of {instead} "
        f"(pass --no-llms-txt to {otherwise})")), [], {}
