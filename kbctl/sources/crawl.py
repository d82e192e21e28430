"""Crawling a site breadth first from a start URL, within its site and robots.txt.

The crawl runs level by level: every page of one depth is fetched concurrently, and the
next level is built from their links in page order, so the same site gives the same set
of pages whatever order responses arrive in. Pages are handed to the pipeline as soon as
each is done. What the crawl covers is only known when it ends, so its ``Expansion``
reports ``complete`` from the crawl's outcome: a page that failed in a way that may hide
links (a server error, a timeout) makes it incomplete, and nothing is then deleted.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import NotAPage, SourceError
from .base import GONE_STATUSES, Expansion, Leaf, Loaded, PreviousMeta, SourceKind
from .fetchpage import Fetched, LoadOnce, PageLoader, WebHint, internal_error
from .links import MAX_LINKS_PER_PAGE
from .llms import LLMS_TXT_HELP, Take, curated_instead
from .options import ROBOTS_HELP, Bad, boolean, integer, option, strings, version_name
from .robots import Robots, fetch_robots
from .versions import Stay
from .web import WebSource
from .webload import Outbox, run_async
from .webopts import WebOptions
from .weburl import host_allowed, is_page_link, origin, site_key

_HOSTS = strings("a list of host names")
NOT_A_PAGE = "not a page"  # the report's reason for a linked file that is no page


def _host_names(value: Any) -> frozenset[str]:
    """Host names, lower case, without a leading dot (``.example.com`` = example.com)."""
    hosts = frozenset(h.strip().lower().lstrip(".") for h in _HOSTS(value))
    if "" in hosts:
        raise Bad("a list of host names")
    return hosts


# The links a crawl keeps for its next layer: this many times the pages it may still read
# (at least MIN_FRONTIER): a prefix of the links in the order found, so the layer it reads
# is the same as with all of them whenever the filters leave enough.
FRONTIER_SLACK = 4
MIN_FRONTIER = 1000


@dataclass(frozen=True)
class CrawlOptions(WebOptions):
    """``allow_domains``: other hosts (and their subdomains) whose links are followed too;
    ``ignore_robots`` is only for sites the operator runs; ``version``/``lang``: the one
    the crawl keeps to (``versions.Stay``; default the start URL's, ``all`` every one)."""

    kind: ClassVar[str] = "crawl"
    about: ClassVar[str] = """Crawl a site breadth first from a URL, staying on its site.

    Example: `kbctl ingest crawl https://docs.example.com/ --max-depth 2`
    """
    target_help: ClassVar[str] = "The page the crawl starts from."
    max_depth: int = option(3, integer(0), help="Links followed from the start page, at "
                            "most [default: {default}].")
    max_pages: int = option(500, integer(1), help="Pages fetched, at most "
                            "[default: {default}].")
    allow_domains: frozenset[str] = option(
        frozenset(), _host_names, flag="--allow-domain", help="Also follow links to this "
        "host and its subdomains (repeatable).")
    ignore_robots: bool = option(False, boolean, help=ROBOTS_HELP)
    version: str | None = option(
        None, version_name, help="Versioned docs: follow no link to another version of a "
        "page known in this one (a name, or all) [default: the start URL's].")
    lang: str | None = option(
        None, version_name, help="Translated docs: the same for languages (en, fr, …, or "
        "all) [default: the start URL's].")
    llms_txt: bool = option(True, boolean, flag="--llms-txt/--no-llms-txt", help=LLMS_TXT_HELP)


@dataclass
class CrawlState:
    finished: bool = False
    hidden_links: bool = False  # a page failed in a way that may hide part of the site
    dropped: dict[str, int] = field(default_factory=dict)  # links left out, by URL rule
    # pages found and left unread (the --max-pages budget was spent): kept by a resync
    unread: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)  # said when the crawl has ended


class CrawlExpansion(Expansion):
    """A crawl's expansion: one start leaf; ``complete`` is known once the crawl ends."""

    def __init__(self, start: Leaf, state: CrawlState, notes: list[str], *,
                 settled: dict[str, Any] | None = None) -> None:
        object.__setattr__(self, "leaves", [start])
        object.__setattr__(self, "notes", notes)
        object.__setattr__(self, "info", {})
        object.__setattr__(self, "state", state)
        object.__setattr__(self, "dropped", state.dropped)  # filled in as the crawl goes
        object.__setattr__(self, "closing_notes", state.notes)
        object.__setattr__(self, "unread", state.unread)
        object.__setattr__(self, "settled", settled or {})

    @property  # type: ignore[override]
    def complete(self) -> bool:
        return self.state.finished and not self.state.hidden_links


Previous = Callable[[str], "dict[str, Any] | None"]


@dataclass
class Crawler:
    """One crawl's BFS, run on the fetch loop; puts each page's outcome in the outbox."""

    loader: PageLoader
    options: CrawlOptions
    state: CrawlState
    previous: Previous
    on_discovered: Callable[[int], Awaitable[None]] | None = None
    _sites: set[tuple[str, int | None]] = field(default_factory=set)
    _robots: dict[str, asyncio.Task[Robots]] = field(default_factory=dict)
    _emitted: set[str] = field(default_factory=set)
    _copies: dict[str, str] = field(default_factory=dict)  # dropped page -> its canonical
    _targets: LoadOnce = field(default_factory=LoadOnce)  # every page, fetched once

    async def run(self, start: Leaf, outbox: Outbox[Any]) -> None:
        opts = self.options
        self._sites.add(site_key(start.url))
        robots = await self._robots_for(start.url)
        if not robots.allows(start.url):
            why = robots.refuse_all or f"robots.txt of {origin(start.url)} disallows it"
            hint = ("check the address, and that the site is up and reachable from here"
                    if robots.site_down else
                    "pass --ignore-robots to crawl anyway (only for sites you run)")
            async with outbox.slot() as slot:
                slot.put(Loaded(leaf=start, error=SourceError(
                    f"{start.url}: not crawled: {why}", hint=hint)))
            self.state.hidden_links = True
            self.state.finished = True
            return
        stay = Stay.of(start.url, version=opts.version, lang=opts.lang)
        seen = {start.ref}
        frontier = [start]
        budget = opts.max_pages
        for depth in range(opts.max_depth + 1):
            if not frontier or budget <= 0:
                self._leave_unread(frontier)
                break
            self._leave_unread(frontier[budget:])
            layer, frontier = frontier[:budget], []
            budget -= len(layer)
            follow = depth < opts.max_depth
            # The next layer reads at most ``budget`` pages, the first links found that the
            # filters below let through: links past a few times that many are never read.
            # Kept, they grew a crawl of a site whose pages each link to 100,000 new ones
            # by gigabytes (and ``seen`` with them).
            room = max(budget * FRONTIER_SLACK, MIN_FRONTIER)
            if depth == 0:  # the start page may move the crawl (http → https, a new host,
                # a site's root to its default version: /en/stable/)
                first = await self._visit(start, outbox, follow, room, check_site=False)
                if first.loaded.error is not None:  # whatever it answered (even 404), the
                    self.state.hidden_links = True  # site is unknown this run: keep its pages
                if first.final_url:
                    self._sites.add(site_key(first.final_url))
                    stay = Stay.of(first.final_url, version=opts.version, lang=opts.lang)
                results = [first]
            else:
                results = list(await asyncio.gather(*(self._visit(leaf, outbox, follow, room)
                                                      for leaf in layer)))
            if not follow:
                break
            seen.update(f.final_url for f in results if f.final_url)
            cut = any(f.links_cut for f in results)
            candidates: list[str] = []
            for fetched in results:
                for link in fetched.links:
                    if len(candidates) >= room:
                        break
                    if link not in seen and self._in_scope(link):
                        seen.add(link)
                        why = opts.rules.verdict(link)
                        if why is None:
                            candidates.append(link)
                        else:
                            self.state.dropped[why] = self.state.dropped.get(why, 0) + 1
            others = stay.others(candidates, list(seen))  # a version menu's links
            for why in others.values():
                self.state.dropped[why] = self.state.dropped.get(why, 0) + 1
            allowed = await self._allowed([c for c in candidates if c not in others])
            if (len(candidates) >= room or cut) and len(allowed) < budget:
                # the links set aside might have filled the budget: the crawl may miss
                # pages it would have read, so it deletes nothing this run
                self.state.hidden_links = True
            frontier = [Leaf(ref=u, url=u, hint=WebHint()) for u in allowed]
            if self.on_discovered and frontier:
                await self.on_discovered(min(len(frontier), budget))
        await self._store_targets(outbox)
        if self.state.unread:  # a crawl that stops short says so, or 499 pages look whole
            self.state.notes.append(
                f"crawl {start.url}: stopped at --max-pages {opts.max_pages:,}; "
                f"{len(self.state.unread):,}{'+' if self.state.hidden_links else ''} more pages "
                "it found were not read (raise --max-pages to read them)")
        self.state.finished = True

    def _leave_unread(self, leaves: list[Leaf]) -> None:
        """Pages the budget leaves unread: counted in the note, and kept from deletion
        (a page pushed out of the budget by new ones is still on the site)."""
        self.state.unread.update(leaf.ref for leaf in leaves)

    async def _visit(self, leaf: Leaf, outbox: Outbox[Any], follow: bool, room: int, *,
                     check_site: bool = True) -> Fetched:
        """Load one page; of its links, the first ``room`` are kept (a layer's pages are
        all held until the next layer is chosen, and it takes no more than that)."""
        fetched = await self._load(leaf, outbox, follow, check_site=check_site)
        keep = min(room, MAX_LINKS_PER_PAGE)  # find_links gives one more when it stopped
        if len(fetched.links) > keep:
            fetched.links, fetched.links_cut = fetched.links[:keep], True
        return fetched

    async def _load(self, leaf: Leaf, outbox: Outbox[Any], follow: bool, *,
                    check_site: bool = True) -> Fetched:
        async with outbox.slot() as slot:
            prev = await outbox.call(self.previous, leaf.ref)  # a database failure ends the run
            try:
                fetched = await self._targets.get(
                    leaf.ref, lambda: self.loader.load(leaf, prev, want_links=follow))
                self._targets.consumed(leaf.ref)
                fetched = await self._canonical(leaf, prev, follow, fetched, outbox)
            except Exception as exc:
                slot.put(internal_error(leaf, exc))
                return Fetched(internal_error(leaf, exc))
            if fetched.hides_links:
                self.state.hidden_links = True
            final = fetched.final_url
            if check_site and final and not self._in_site(final):
                return Fetched(fetched.loaded)  # redirected off the site: not part of it
            loaded = fetched.loaded
            status = getattr(loaded.error, "status", None)
            if not check_site and status in GONE_STATUSES:  # the start page: the site is unknown
                loaded = Loaded(leaf=loaded.leaf, error=SourceError(
                    f"{loaded.leaf.url}: the crawl's start page answers HTTP {status}, so "
                    "nothing of the site could be crawled", hint="check the start URL (has "
                    "the site moved?); the pages stored from it are kept"))
            if check_site and isinstance(loaded.error, NotAPage):
                # a link that looked like a page and is a file: left out, not a failure
                loaded = Loaded(leaf=loaded.leaf, dropped=NOT_A_PAGE, note=str(loaded.error))
            ref = loaded.leaf.ref
            if ref not in self._emitted:  # two links that redirect to one page: once
                self._emitted.add(ref)
                slot.put(loaded)
            return fetched

    async def _canonical(self, leaf: Leaf, prev: dict[str, Any] | None, follow: bool,
                         fetched: Fetched, outbox: Outbox[Any]) -> Fetched:
        """A page that names another URL of its origin canonical is dropped for it once
        that URL is known to give a page (fetched now, once: its visit as a link, or the
        end of the crawl, stores it); when it gives none (404, refused, noindex…), or
        names this page back, the page is read as itself and kept under its own URL."""
        ref, canonical = fetched.loaded.leaf.ref, fetched.canonical
        if canonical is None:
            return fetched
        if self._copies.get(canonical) == ref:  # the pair's other page was dropped first
            return await self._as_itself(leaf, prev, follow, fetched)
        self._copies[ref] = canonical
        target = await self._target(canonical, follow, outbox)
        loaded = target.loaded
        if target.canonical != ref and (loaded.error is not None or loaded.dropped):
            return await self._as_itself(leaf, prev, follow, fetched, gone=canonical)
        return fetched

    async def _target(self, url: str, follow: bool, outbox: Outbox[Any]) -> Fetched:
        """A canonical URL's page, fetched once whoever asks (``_load`` too), its own
        canonical link set aside (one hop)."""
        async def load() -> Fetched:
            prev = await outbox.call(self.previous, url)
            return await self.loader.load(Leaf(ref=url, url=url, hint=WebHint()), prev,
                                          want_links=follow, honor_canonical=False)
        return await self._targets.get(url, load)

    async def _as_itself(self, leaf: Leaf, prev: dict[str, Any] | None, follow: bool,
                         fetched: Fetched, *, gone: str | None = None) -> Fetched:
        kept = await self.loader.load(leaf, prev, want_links=follow, honor_canonical=False)
        kept = dataclasses.replace(kept, links=kept.links or fetched.links)
        if gone is None:
            return kept
        note = f"{kept.loaded.leaf.ref}: its canonical URL {gone} gives no page; kept here"
        loaded = kept.loaded
        return dataclasses.replace(kept, loaded=dataclasses.replace(
            loaded, note=f"{loaded.note}; {note}" if loaded.note else note))

    async def _store_targets(self, outbox: Outbox[Any]) -> None:
        """Canonical URLs the crawl fetched for a copy but never reached as links (past
        the depth or the page budget): stored now, since their copies were dropped."""
        for fetched in self._targets.unclaimed():
            loaded = fetched.loaded
            ref = loaded.leaf.ref
            if ref in self._emitted or loaded.error is not None or loaded.dropped \
                    or not self._in_site(fetched.final_url or ref):
                continue
            self._emitted.add(ref)
            self.state.unread.discard(ref)
            async with outbox.slot() as slot:
                slot.put(loaded)

    def _in_scope(self, url: str) -> bool:
        return is_page_link(url) and self._in_site(url)

    def _in_site(self, url: str) -> bool:
        return site_key(url) in self._sites or host_allowed(url, self.options.allow_domains)

    async def _allowed(self, urls: list[str]) -> list[str]:
        if self.options.ignore_robots:
            return urls
        verdicts = await asyncio.gather(*(self._robots_for(u) for u in urls))
        return [u for u, robots in zip(urls, verdicts, strict=True) if robots.allows(u)]

    def _robots_for(self, url: str) -> Awaitable[Robots]:
        if self.options.ignore_robots:
            future: asyncio.Future[Robots] = asyncio.get_running_loop().create_future()
            future.set_result(Robots())
            return future
        site = origin(url)
        task = self._robots.get(site)
        if task is None:  # one fetch per origin, shared by everyone who asks meanwhile
            task = asyncio.ensure_future(fetch_robots(self.loader.client, site))
            self._robots[site] = task
        return task


# --- the source kind ------------------------------------------------------------------


@dataclass(frozen=True)
class CrawlStart:
    """The hint of a crawl's start leaf: loading it runs the whole crawl."""

    state: CrawlState


class CrawlSource(WebSource[CrawlOptions]):
    """A site crawled from a start URL (or the pages its llms.txt lists, when it lists
    any): the listing is the start page, and loading it crawls."""

    def listing(self, url: str) -> Expansion:
        probed: list[str] = []
        settled: dict[str, Any] = {}
        if self.options.llms_txt:
            curated, probed, settled = run_async(lambda: self._curated(url))
            if curated is not None:
                return curated
        start = CrawlStart(CrawlState())
        return CrawlExpansion(Leaf(ref=url, url=url, hint=start), start.state, probed,
                              settled=settled)

    async def _curated(self, url: str) -> tuple[Expansion | None, list[str], dict[str, Any]]:
        options = self.options
        take = Take(options.max_pages, options.flag("max_pages"), options.version,
                    options.lang, allow_domains=options.allow_domains)
        async with self.client() as client:
            return await curated_instead(self, client, url, take,
                                         instead="crawling the site", otherwise="crawl it")

    async def load_pages(self, loader: PageLoader, leaves: list[Leaf],
                         previous: PreviousMeta, outbox: Outbox[Loaded]) -> None:
        start = next((leaf for leaf in leaves if isinstance(leaf.hint, CrawlStart)), None)
        if start is None:  # the pages of the site's llms.txt
            await super().load_pages(loader, leaves, previous, outbox)
            return
        on_discovered = self.on_discovered

        async def discovered(n: int) -> None:
            if on_discovered is not None:  # it belongs to the pipeline's thread (progress)
                await outbox.call(on_discovered, n)

        # conditional requests only for pages whose links were kept (fetchpage.LINKS)
        crawler = Crawler(loader, self.options, start.hint.state, previous,
                          on_discovered=discovered)
        plain = Leaf(ref=start.ref, url=start.url, hint=WebHint())
        await crawler.run(plain, outbox)


KIND = SourceKind(CrawlOptions, CrawlSource)
