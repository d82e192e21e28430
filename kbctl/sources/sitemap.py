"""Sitemaps: ``urlset`` and ``sitemapindex`` files, gzipped or not, and their discovery.

XML from the web is parsed with no DTD loading, no entity expansion and no network, and a
document that declares entities is refused outright: a billion-laughs file is an error for
that sitemap, never a memory blow-up. Indexes are followed breadth first with a loop guard
(an index that lists one of its own ancestors is an error) and caps on nesting, on sitemap
files and on the total number of URLs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urlsplit

from lxml import etree

from kbctl.net.client import GuardedClient
from kbctl.net.decode import gunzip

from ..errors import ExtractError, KbctlError, SourceError
from ..hygiene import counted, first_few
from .base import Expansion, Leaf, SourceKind
from .fetchpage import WebHint
from .llms import LLMS_TXT_HELP, Take, curated_instead
from .options import (
    LANG_HELP,
    ROBOTS_HELP,
    VERSION_HELP,
    boolean,
    integer,
    option,
    version_name,
)
from .robots import ROBOTS_DROP, Robots, fetch_robots
from .web import Shaped, WebSource
from .webload import run_async
from .webopts import MAX_URLS, WebOptions
from .weburl import is_origin_only, normalize_url, origin

#: Media types a sitemap may be served as (servers are loose about XML and .gz files).
SITEMAP_CONTENT_TYPES = ("application/xml", "text/xml", "application/gzip",
                         "application/x-gzip", "application/octet-stream", "text/plain")
MAX_SITEMAP_FILES = 1_000
# Sitemap files fetched at once: a level of an index is read in batches of this many.
SITEMAP_BATCH = 8
MAX_NESTING = 5



@dataclass(frozen=True)
class SitemapOptions(WebOptions):
    """``llms_txt``: ingest the pages the site's llms.txt lists instead, when it lists any;
    ``ignore_robots`` (only for sites the operator runs): read the pages its robots.txt
    disallows too: a sitemap lists what a site publishes, robots.txt what it lets robots
    fetch."""

    kind: ClassVar[str] = "sitemap"
    about: ClassVar[str] = """Ingest every page a sitemap lists; later runs skip pages that did not
    change.

    Example: `kbctl ingest sitemap https://docs.example.com/sitemap.xml --exclude '/blog/*'`
    """
    target_help: ClassVar[str] = ("A sitemap (.xml, .xml.gz, or an index), or a site's "
                                  "origin to find its sitemaps from robots.txt or "
                                  "/sitemap.xml.")
    llms_txt: bool = option(True, boolean, flag="--llms-txt/--no-llms-txt", help=LLMS_TXT_HELP)
    max_urls: int = option(MAX_URLS, integer(1), help="Most pages taken from the sitemaps "
                           "[default: {default}].")
    ignore_robots: bool = option(False, boolean, help=ROBOTS_HELP)
    version: str | None = option(None, version_name, help=VERSION_HELP)
    lang: str | None = option(None, version_name, help=LANG_HELP)

_ENTITY_DECL = re.compile(rb"<!ENTITY", re.IGNORECASE)
_DOCTYPE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)


@dataclass(frozen=True)
class SitemapEntry:
    loc: str
    lastmod: str | None = None


@dataclass(frozen=True)
class ParsedSitemap:
    kind: str  # "urlset" or "sitemapindex"
    entries: list[SitemapEntry]
    invalid: int = 0  # entries whose <loc> is not an http(s) URL
    cut: bool = False  # a urlset read only up to the pages wanted


@dataclass
class SitemapListing:
    """Every page the sitemaps list (URL → lastmod, in document order) and what failed."""

    pages: dict[str, str | None] = field(default_factory=dict)
    failures: list[tuple[str, KbctlError]] = field(default_factory=list)
    truncated: bool = False
    files: int = 0
    invalid: int = 0
    # sitemaps an index lists that list no page: emptied by mistake as likely as on
    # purpose, so the pages they listed are not deleted as orphans on their word
    empty: list[str] = field(default_factory=list)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           huge_tree=False, remove_comments=True, remove_pis=True)


def _local(tag: object) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def parse_sitemap(data: bytes, url: str, *, most: int | None = None) -> ParsedSitemap:
    """Parse one sitemap document, a urlset's first ``most`` entries at most (a file of
    180k URLs, for a run that wants 5). Raises ``ExtractError`` naming the URL and the
    problem."""
    if data[:2] == b"\x1f\x8b":
        raise ExtractError(f"{url}: the sitemap is still gzip-compressed")
    if _DOCTYPE.search(data[:4096]) and _ENTITY_DECL.search(data):
        raise ExtractError(f"{url}: the sitemap declares XML entities in a DTD; refused "
                           f"(entities are never expanded)")
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        raise ExtractError(f"{url}: not a well-formed XML sitemap ({exc})") from None
    if root is None:
        raise ExtractError(f"{url}: the sitemap is empty")
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise ExtractError(f"{url}: the sitemap declares XML entities in a DTD; refused")
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise ExtractError(f"{url}: not a sitemap (the root element is <{kind or '?'}>, "
                           f"expected <urlset> or <sitemapindex>)")
    item = "url" if kind == "urlset" else "sitemap"
    entries, invalid = [], 0
    for node in root:
        if _local(node.tag) != item:
            continue
        if most is not None and kind == "urlset" and len(entries) >= most:
            return ParsedSitemap(kind, entries, invalid, cut=True)
        loc = lastmod = None
        for child in node:
            name = _local(child.tag)
            if name == "loc":
                loc = "".join(child.itertext()).strip()
            elif name == "lastmod":
                lastmod = "".join(child.itertext()).strip() or None
        normal = normalize_url(loc, url) if loc else None
        if normal is None:
            invalid += 1
            continue
        entries.append(SitemapEntry(normal, lastmod))
    return ParsedSitemap(kind, entries, invalid)


async def fetch_sitemap(client: GuardedClient, url: str, *, most: int | None = None
                        ) -> ParsedSitemap:
    """Fetch (gunzipping a ``.gz`` file) and parse one sitemap (see ``parse_sitemap``)."""
    result = await client.fetch(url, content_types=SITEMAP_CONTENT_TYPES)
    data = result.content
    if data[:2] == b"\x1f\x8b":
        data = gunzip(data, max_bytes=client.policy.max_bytes, url=result.url)
    return parse_sitemap(data, result.url, most=most)


async def read_sitemaps(client: GuardedClient, roots: list[str], *, max_urls: int = MAX_URLS,
                        max_files: int = MAX_SITEMAP_FILES) -> SitemapListing:
    """Follow sitemaps and indexes breadth first, ``SITEMAP_BATCH`` files at a time, until
    they list ``max_urls`` pages: a hostile index of 40 sitemaps of 180k URLs each cost
    1.5 GB and minutes when a whole level was read before the cap applied."""
    listing = SitemapListing()
    seen: set[str] = set()
    level: list[tuple[str, tuple[str, ...]]] = []  # (sitemap url, its ancestors)
    for root in roots:
        if root not in seen:
            seen.add(root)
            level.append((root, ()))
    depth = 0
    while level:
        if listing.files + len(level) > max_files:
            listing.failures.append((level[0][0], SourceError(
                f"more than {max_files} sitemap files; the rest are not read")))
            listing.truncated = True
            level = level[:max(0, max_files - listing.files)]
        next_level: list[tuple[str, tuple[str, ...]]] = []
        for start in range(0, len(level), SITEMAP_BATCH):
            if len(listing.pages) >= max_urls:
                listing.truncated = True  # sitemaps left unread may list more
                return listing
            batch = level[start:start + SITEMAP_BATCH]
            room = max_urls - len(listing.pages)  # what is left to take, in any file
            outcomes = await asyncio.gather(*(_read_one(client, url, room)
                                              for url, _ in batch))
            listing.files += len(batch)
            for (url, ancestors), outcome in zip(batch, outcomes, strict=True):
                next_level += _take(listing, url, ancestors, outcome, max_urls, depth, seen)
        level = next_level
        depth += 1
    return listing


def _take(listing: SitemapListing, url: str, ancestors: tuple[str, ...],
          outcome: ParsedSitemap | KbctlError, max_urls: int, depth: int, seen: set[str]
          ) -> list[tuple[str, tuple[str, ...]]]:
    """Record one sitemap's outcome in ``listing``; an index's children still to read."""
    if isinstance(outcome, KbctlError):
        listing.failures.append((url, outcome))
        return []
    listing.invalid += outcome.invalid
    if outcome.kind == "urlset":
        if ancestors and not outcome.entries and not outcome.invalid:
            listing.empty.append(url)
        _add_pages(listing, outcome.entries, max_urls)
        listing.truncated |= outcome.cut
        return []
    lineage = (*ancestors, url)
    children = []
    for entry in outcome.entries:
        child = entry.loc
        if child in lineage:
            listing.failures.append((url, SourceError(
                f"sitemap loop: {url} lists {child}, which contains it")))
        elif depth + 1 >= MAX_NESTING:
            listing.failures.append((child, SourceError(
                f"{child}: sitemap indexes nested more than {MAX_NESTING} deep")))
        elif child not in seen:  # listed twice (e.g. robots.txt and an index): once
            seen.add(child)
            children.append((child, lineage))
    return children


def _add_pages(listing: SitemapListing, entries: list[SitemapEntry], max_urls: int) -> None:
    for entry in entries:
        if entry.loc in listing.pages:
            continue
        if len(listing.pages) >= max_urls:
            listing.truncated = True
            return
        listing.pages[entry.loc] = entry.lastmod


async def _read_one(client: GuardedClient, url: str, most: int
                    ) -> ParsedSitemap | KbctlError:
    try:
        return await fetch_sitemap(client, url, most=most)
    except KbctlError as exc:
        return exc


async def discover(client: GuardedClient, site_origin: str) -> list[str]:
    """A site's sitemaps: robots.txt ``Sitemap:`` lines, else ``/sitemap.xml``."""
    robots = await fetch_robots(client, site_origin)
    found = [u for u in (normalize_url(s, site_origin + "/") for s in robots.sitemaps) if u]
    return list(dict.fromkeys(found)) or [site_origin.rstrip("/") + "/sitemap.xml"]


# --- the source kind ------------------------------------------------------------------


class SitemapSource(WebSource[SitemapOptions]):
    """The pages a site's sitemaps list (or its llms.txt, when it lists any)."""

    def listing(self, url: str) -> Expansion:
        return run_async(lambda: self._listing(url))

    async def _listing(self, url: str) -> Expansion:
        options = self.options
        async with self.client() as client:
            curated, probed, settled = None, [], {}
            if options.llms_txt:
                take = Take(options.max_urls, options.flag("max_urls"), options.version,
                            options.lang)
                curated, probed, settled = await curated_instead(
                    self, client, url, take, instead="reading the sitemap",
                    otherwise="read the sitemap")
            if curated is not None:
                return curated
            discovered = is_origin_only(url)
            roots = await discover(client, origin(url)) if discovered else [url]
            listing = await read_sitemaps(client, roots, max_urls=options.max_urls)
            if not listing.pages:
                raise _whole_failure(url, roots, listing, discovered)
            shaped = await self.shape(client, url, list(listing.pages),
                                      version=options.version, lang=options.lang)
            if not options.ignore_robots:
                shaped = await _within_robots(client, url, shaped)
        expansion = self._from_listing(url, listing, shaped)
        expansion.notes[:0] = probed
        return dataclasses.replace(expansion, settled=settled)

    def _from_listing(self, url: str, listing: SitemapListing, shaped: Shaped) -> Expansion:
        leaves = [Leaf(ref=page, url=page, hint=WebHint(lastmod=listing.pages[page]))
                  for page in shaped.kept]
        leaves += [Leaf(ref=where, url=where, hint=WebHint(error=error))
                   for where, error in listing.failures]
        notes = []
        if listing.truncated:
            notes.append(f"{url}: the sitemaps list more than {self.options.max_urls} pages "
                         f"or sitemap files; only the first are ingested (see --max-urls)")
        if listing.invalid:
            notes.append(f"{url}: {listing.invalid} sitemap entries without a valid "
                         f"http(s) <loc> were ignored")
        hosts = {_site_host(page) for page in shaped.kept}
        if len(hosts) == 1 and _site_host(url) not in hosts:
            # a local preview's sitemap names the site it will be published at
            notes.append(f"{url}: every page it lists is on {origin(shaped.kept[0])}, not "
                         f"where the sitemap was served; those are the pages fetched (to "
                         f"ingest the site served here, crawl it: kbctl ingest crawl "
                         f"{origin(url)}/)")
        if listing.empty:
            notes.append(f"{first_few(listing.empty)}: listed by a sitemap index, but list "
                         f"no page; no page is deleted as gone this run")
        complete = not listing.failures and not listing.truncated and not listing.empty
        return Expansion(leaves=leaves, complete=complete, notes=notes + shaped.notes,
                         dropped=shaped.dropped)


async def _within_robots(client: GuardedClient, where: str, shaped: Shaped) -> Shaped:
    """``shaped`` without the pages their site's robots.txt disallows (one fetch per site),
    counted under ``ROBOTS_DROP`` and named in a note. A site that does not answer at all
    is left to the pages' own fetches, which say so page by page."""
    sites = list(dict.fromkeys(origin(u) for u in shaped.kept))
    rules = {site: Robots() if robots.site_down else robots for site, robots in zip(
        sites, await asyncio.gather(*(fetch_robots(client, s) for s in sites)), strict=True)}
    kept = [u for u in shaped.kept if rules[origin(u)].allows(u)]
    refused = [u for u in shaped.kept if not rules[origin(u)].allows(u)]
    if not refused:
        return shaped
    why = next((r.refuse_all for r in rules.values() if r.refuse_all), None)
    said = (f"{where}: {counted(len(refused), 'listed page')} not read: "
            + (why if why else "robots.txt disallows it" if len(refused) == 1
               else "robots.txt disallows them")
            + f" ({first_few(refused)}); pass --ignore-robots to read "
            f"{'it' if len(refused) == 1 else 'them'} (only for sites you run)")
    dropped = shaped.dropped | {ROBOTS_DROP: len(refused)}
    return Shaped(kept, dropped, [*shaped.notes, said])


def _site_host(url: str) -> str:
    """A URL's host as a site is known by: ``www.`` and the scheme make no other site."""
    return (urlsplit(url).hostname or "").removeprefix("www.")


def _whole_failure(url: str, roots: list[str], listing: SitemapListing,
                   discovered: bool) -> KbctlError:
    """One error for a sitemap that yielded no page at all."""
    if not listing.failures:
        return SourceError(f"{url}: the sitemap lists no pages")
    _where, first = listing.failures[0]
    more = len(listing.failures) - 1
    if discovered:
        return SourceError(
            f"no usable sitemap for {url} (tried {', '.join(roots)}): {first.message}"
            + (f" (and {more} more errors)" if more else ""),
            hint="pass the sitemap's URL, or use `kbctl ingest crawl`")
    if not more:
        return first
    return SourceError(f"{first.message} (and {more} more errors)", hint=first.hint)


KIND = SourceKind(SitemapOptions, SitemapSource)
