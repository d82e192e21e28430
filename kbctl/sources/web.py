"""Web sources (``url``, ``sitemap``, ``crawl``, ``llms``): expansion and concurrent loading.

Every request goes through the guarded client (``kbctl.net``), so the SSRF rules, size
caps, timeouts and retries hold for pages, sitemaps, robots.txt and llms.txt alike.
Expansion fetches what lists the pages (sitemaps, llms.txt); loading fetches the pages on
an event loop in a worker thread and yields each outcome as it completes, so the
pipeline's chunking and writes overlap with the network. A ``sitemap`` or ``crawl``
source first looks for the site's ``llms.txt`` and, when it lists pages, ingests that
curated list instead (``llms_txt: false`` turns the probe off).

What a listing yields is shaped before anything is fetched: the operator's URL rules
(``urlrules``), then one version and language of each page (``versions``). While loading,
a page marked noindex is dropped, and a page that names another URL of its origin
canonical is dropped in favour of that URL (``directives``), fetched once if the listing
does not have it.

Options: each kind's typed options (``url.UrlOptions``, ``sitemap.SitemapOptions``,
``crawl.CrawlOptions``, ``llms.LlmsOptions``, all ``webopts.WebOptions``).
Context (from the pipeline): allow_private_network, full (ignore sitemap lastmod:
ask the server about every page), on_discovered (called with the number of newly found crawl
pages), extract_processes (worker processes for extraction once a source is large; by
default as many as cores less one when ``extractpool.allow_worker_processes()`` was called,
as the command line does, else none); tests may pass policy, transport and resolver.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from kbctl.net.client import GuardedClient
from kbctl.net.guard import check_url
from kbctl.net.policy import NetPolicy, Resolver

from ..errors import BlockedURL, FetchError, InputError, KbctlError, SourceError
from ..hygiene import counted, first_few
from . import versions
from .base import Expansion, Leaf, Loaded, PreviousMeta, SourceSpec
from .crawl import Crawler, CrawlExpansion, CrawlOptions, CrawlState
from .directives import read_directives
from .extractpool import ExtractExecutor
from .fetchpage import Fetched, LoadOnce, PageLoader, PageOptions, WebHint, internal_error
from .llms import LlmsOptions, LlmsTxt, fetch_llms, probe_llms
from .page import PAGE_CONTENT_TYPES
from .robots import ROBOTS_DROP, Robots, fetch_robots
from .sitemap import SitemapListing, SitemapOptions, discover, read_sitemaps
from .webload import Outbox, run_async, stream
from .webopts import WebOptions
from .weburl import host_allowed, html_twin, is_origin_only, normalize_url, origin, site_key

WEB_KINDS = ("url", "sitemap", "crawl", "llms")


@dataclass(frozen=True)
class _CrawlStart:
    """The hint of a crawl's start leaf: loading it runs the whole crawl."""

    options: CrawlOptions
    state: CrawlState


def adapter(spec: SourceSpec, **context: Any) -> WebSource:
    """The adapter for a web source; ``context`` is described in the module docstring."""
    if spec.kind not in WEB_KINDS:
        raise InputError(f"not a web source kind: {spec.kind}")
    return WebSource(spec, **context)


class WebSource:
    """Expands and loads one web source definition."""

    def __init__(self, spec: SourceSpec, *, allow_private_network: bool = False,
                 full: bool = False, policy: NetPolicy | None = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 resolver: Resolver | None = None,
                 on_discovered: Callable[[int], None] | None = None,
                 extract_processes: int | None = None,
                 **_ignored: Any) -> None:
        if not isinstance(spec.options, WebOptions):
            raise InputError(f"not a web source kind: {spec.kind}")
        options = spec.options
        base = policy or NetPolicy(allow_private_network=allow_private_network)
        self.policy = options.net_policy(base)
        self.full = full
        self.transport = transport
        self.resolver = resolver
        self.on_discovered = on_discovered
        self.extract_processes = extract_processes
        self.options = options
        self.page_options = PageOptions(kind=spec.kind, docs_mode=options.docs_mode,
                                        full=full, ignore_noindex=options.ignore_noindex,
                                        selectors=options.selectors)

    @property
    def version(self) -> str | None:
        return getattr(self.options, "version", None)

    @property
    def lang(self) -> str | None:
        return getattr(self.options, "lang", None)

    @property
    def skip_optional(self) -> bool:
        return isinstance(self.options, LlmsOptions) and self.options.skip_optional

    @property
    def _max_urls(self) -> int:
        assert isinstance(self.options, SitemapOptions)
        return self.options.max_urls

    @property
    def _page_cap(self) -> tuple[int | None, str]:
        """The most pages this source takes, whatever lists them (its llms.txt too), and
        the flag that sets it."""
        if isinstance(self.options, CrawlOptions):
            return self.options.max_pages, "--max-pages"
        return getattr(self.options, "max_urls", None), "--max-urls"

    def _client(self) -> GuardedClient:
        return GuardedClient(self.policy, resolver=self.resolver, transport=self.transport)

    # --- expansion ------------------------------------------------------------------------

    def expand(self, spec: SourceSpec) -> Expansion:
        url = normalize_url(spec.target)
        if url is None or "://" not in spec.target:
            raise InputError(f"{spec.kind} source: {spec.target!r} is not an http(s) URL",
                             hint="local folders are ingested with `kbctl ingest files`")
        self._vet_target(url)
        if spec.kind == "url":
            kept, dropped = self.options.rules.split([url])
            return Expansion(leaves=[Leaf(ref=u, url=u, hint=WebHint()) for u in kept],
                             notes=_rule_notes(url, dropped), dropped=_nonzero(dropped))
        if spec.kind == "llms":
            return run_async(lambda: self._expand_llms(url))
        if spec.kind == "sitemap":
            return run_async(lambda: self._expand_sitemap(url))
        return run_async(lambda: self._expand_crawl(url))

    async def _expand_llms(self, url: str) -> Expansion:
        target = url + "llms.txt" if is_origin_only(url) else url
        async with self._client() as client:
            llms = await fetch_llms(client, target)
            if not llms.links(skip_optional=self.skip_optional):
                raise SourceError(f"{target}: the llms.txt lists no pages",
                                  hint="pages are listed as `- [name](url): notes` under H2 "
                                       "sections")
            return await self._from_llms(client, target, llms, note=None)

    async def _from_llms(self, client: GuardedClient, where: str, llms: LlmsTxt,
                         note: str | None, urls: list[str] | None = None) -> Expansion:
        """The pages ``llms`` lists (``urls``: those of them to ingest)."""
        links = [link.url for link in llms.links(skip_optional=self.skip_optional)]
        shaped = await self._shape(client, where, links if urls is None else urls)
        kept, notes = shaped.kept, [note] if note else []
        cap, flag = self._page_cap
        capped = cap is not None and len(kept) > cap
        if capped:
            notes.append(f"{where}: lists {len(kept):,} pages; only the first {cap:,} are "
                         f"ingested (see {flag})")
            kept = kept[:cap]
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

    async def _shape(self, client: GuardedClient, where: str, urls: list[str]) -> _Shaped:
        """The operator's URL rules, then one version and language of each page."""
        kept, counts = self.options.rules.split(urls)
        notes = _rule_notes(where, counts)
        dropped = _nonzero(counts)
        layout = versions.detect(kept) if len(kept) > 1 else versions.Layout()
        if layout.versioned or layout.translated:
            site_version = site_lang = None
            reason = ""
            if self.version is None or self.lang is None:
                site_version, site_lang, reason = await _site_choice(client, kept[0])
            selection = versions.select(kept, layout, version=self.version,
                                        lang=self.lang, site_version=site_version,
                                        site_lang=site_lang, site_reason=reason)
            kept = selection.kept
            dropped.update({k: v for k, v in selection.dropped.items() if v})
            line = versions.describe(selection)
            if line:
                notes.append(f"{where}: {line}")
        elif self.version is not None or self.lang is not None:
            notes.append(versions.nothing_to_choose(where))
        return _Shaped(kept, dropped, notes)

    async def _probe(self, client: GuardedClient, url: str, instead: str,
                     otherwise: str) -> tuple[Expansion | None, list[str], dict[str, Any]]:
        """The site's curated pages instead of ``instead`` (with no expansion: a note, if
        any, saying why not). A curated list counts for the site only with pages on it
        (its host, or a crawl's allowed domains): an llms.txt listing another host's pages
        (a mirror's copy, a staging build) does not describe this one. The options it
        settles (``Expansion.settled``): ``llms_txt: false`` when the site plainly has none,
        which its recorded definition keeps."""
        if not isinstance(self.options, SitemapOptions | CrawlOptions) or (
                not self.options.llms_txt):
            return None, [], {}
        none = {"llms_txt": False}
        probe = await probe_llms(client, origin(url))
        if probe.found is None:  # a failed probe says nothing: it is asked again next run
            return None, ([f"the site's llms.txt was not read ({probe.trouble}): {instead} "
                           f"instead"] if probe.trouble else []), {} if probe.trouble else none
        where, llms = probe.found
        listed = [link.url for link in llms.links(skip_optional=self.skip_optional)]
        sites = {site_key(url), site_key(where)}
        domains = getattr(self.options, "allow_domains", frozenset())
        own = [u for u in listed if site_key(u) in sites or host_allowed(u, domains)]
        if not own:
            return None, [f"{where} lists no page of this site (only of other sites): "
                          f"{instead} instead"] if listed else [], none
        return await self._from_llms(client, where, llms, urls=own, note=(
            f"{where} lists {len(own)} curated pages: ingesting those instead of {instead} "
            f"(pass --no-llms-txt to {otherwise})")), [], {}

    async def _expand_sitemap(self, url: str) -> Expansion:
        async with self._client() as client:
            curated, probed, settled = await self._probe(client, url, "reading the sitemap",
                                                         "read the sitemap")
            if curated is not None:
                return curated
            discovered = is_origin_only(url)
            roots = await discover(client, origin(url)) if discovered else [url]
            listing = await read_sitemaps(client, roots, max_urls=self._max_urls)
            if not listing.pages:
                raise _whole_failure(url, roots, listing, discovered)
            shaped = await self._shape(client, url, list(listing.pages))
            if not getattr(self.options, "ignore_robots", True):
                shaped = await _within_robots(client, url, shaped)
        expansion = self._from_listing(url, listing, shaped)
        expansion.notes[:0] = probed
        return dataclasses.replace(expansion, settled=settled)

    def _from_listing(self, url: str, listing: SitemapListing, shaped: _Shaped) -> Expansion:
        leaves = [Leaf(ref=page, url=page, hint=WebHint(lastmod=listing.pages[page]))
                  for page in shaped.kept]
        leaves += [Leaf(ref=where, url=where, hint=WebHint(error=error))
                   for where, error in listing.failures]
        notes = []
        if listing.truncated:
            notes.append(f"{url}: the sitemaps list more than {self._max_urls} pages "
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

    async def _expand_crawl(self, url: str) -> Expansion:
        async with self._client() as client:
            curated, probed, settled = await self._probe(client, url, "crawling the site",
                                                         "crawl it")
        if curated is not None:
            return curated
        assert isinstance(self.options, CrawlOptions)
        start = _CrawlStart(self.options, CrawlState())
        return CrawlExpansion(Leaf(ref=url, url=url, hint=start), start.state, probed,
                              settled=settled)

    def _vet_target(self, url: str) -> None:
        """Refuse a target the guard blocks before anything is fetched (or recorded); a
        host that does not resolve now is left to the fetch, which reports it."""
        try:
            check_url(url, self.policy, self.resolver)
        except BlockedURL:
            raise
        except FetchError:
            pass

    # --- loading --------------------------------------------------------------------------

    def load(self, leaves: Sequence[Leaf], previous: PreviousMeta) -> Iterator[Loaded]:
        """Fetch concurrently; yield each page's outcome as soon as it is ready."""
        if not leaves:
            return iter(())
        window = self.policy.concurrency * 4
        return stream(lambda outbox: self._produce(list(leaves), previous, outbox),
                      window=window)

    async def _produce(self, leaves: list[Leaf], previous: PreviousMeta,
                       outbox: Outbox[Loaded]) -> None:
        crawl = [leaf for leaf in leaves if isinstance(leaf.hint, _CrawlStart)]
        executor = ExtractExecutor(processes=self.extract_processes)
        finished = False
        try:
            async with self._client() as client:
                if crawl:
                    await self._crawl(crawl[0], client, executor, previous, outbox)
                else:
                    loader = PageLoader(client, self.page_options, executor=executor)
                    state = _Loading(planned={leaf.ref for leaf in leaves})
                    await asyncio.gather(*(self._one(loader, leaf, previous, outbox, state)
                                           for leaf in leaves))
            finished = True
        finally:
            executor.shutdown(wait=finished, cancel_futures=not finished)

    async def _one(self, loader: PageLoader, leaf: Leaf, previous: PreviousMeta,
                   outbox: Outbox[Loaded], state: _Loading) -> None:
        async with outbox.slot() as slot:
            # a failing look-up is the database's failure, and ends the run: not caught here
            prev = None if isinstance(leaf.hint, WebHint) and leaf.hint.error else (
                await outbox.call(previous, leaf.ref))
            try:
                fetched = await state.loads.get(leaf.ref, lambda: loader.load(leaf, prev))
                state.loads.consumed(leaf.ref)
                loaded = fetched.loaded
                if fetched.canonical is not None:
                    loaded = await self._canonical(loader, loaded, fetched.canonical, prev,
                                                   previous, outbox, state)
            except Exception as exc:
                loaded = internal_error(leaf, exc)
            ref = loaded.leaf.ref
            if ref in state.emitted and loaded.error is None:
                return  # two URLs that redirect to one page: that page once
            state.emitted.add(ref)
            slot.put(loaded)

    async def _canonical(self, loader: PageLoader, copy: Loaded, canonical: str,
                         own_prev: dict[str, Any] | None, previous: PreviousMeta,
                         outbox: Outbox[Loaded], state: _Loading) -> Loaded:
        """A page names another URL of its origin canonical: that URL is stored instead,
        fetched (through the same guarded client, once) unless the source lists it
        anyway. Whenever that URL gives no page (404, refused, noindex…), the page is kept
        under its own URL, listed or not: dropped, it was stored nowhere."""
        ref = copy.leaf.ref
        why = self.options.rules.verdict(canonical)
        if why is not None:
            return dataclasses.replace(copy, note=(
                f"{ref}: a copy of {canonical} (its canonical URL), which the rule '{why}' "
                f"leaves out"))
        if state.copies.get(canonical) == ref:
            # the two pages name each other canonical: the one dropped first stands for
            # the other, so this one is kept (read again, its canonical link set aside)
            kept = await loader.load(copy.leaf, own_prev, honor_canonical=False)
            return kept.loaded
        state.copies[ref] = canonical
        if canonical in state.unusable:
            return await self._keep_copy(loader, copy, own_prev, canonical)
        stored_elsewhere = canonical in state.planned  # its own load, or a copy's, stores it
        state.planned.add(canonical)  # claimed: later copies of it wait for this fetch

        async def fetch_canonical() -> Fetched:
            prev = await outbox.call(previous, canonical)
            return await loader.load(Leaf(ref=canonical, url=canonical, hint=WebHint()),
                                     prev, honor_canonical=False)

        fetched = await state.loads.get(canonical, fetch_canonical)
        if fetched.canonical == ref:
            return copy  # it names this page back: the pair's own rule keeps one of them
        if fetched.loaded.error is not None or fetched.loaded.dropped:
            # nothing stands for the page there (404, refused, noindex…): kept where it is
            state.unusable.add(canonical)
            return await self._keep_copy(loader, copy, own_prev, canonical)
        if stored_elsewhere or (fetched.loaded.leaf.ref != canonical
                                and fetched.loaded.leaf.ref in state.emitted):
            return copy  # stored by its own load, or the page it redirects to is stored
        state.loads.consumed(canonical)
        return fetched.loaded

    @staticmethod
    async def _keep_copy(loader: PageLoader, copy: Loaded, own_prev: dict[str, Any] | None,
                         canonical: str) -> Loaded:
        """The page that named ``canonical``, read as itself: its canonical URL stores
        nothing, and dropping it would delete what an earlier run stored."""
        kept = (await loader.load(copy.leaf, own_prev, honor_canonical=False)).loaded
        note = (f"{copy.leaf.ref}: its canonical URL {canonical} gives no page; kept here")
        return dataclasses.replace(kept, note=f"{kept.note}; {note}" if kept.note else note)

    async def _crawl(self, start: Leaf, client: GuardedClient, executor: Executor,
                     previous: PreviousMeta, outbox: Outbox[Loaded]) -> None:
        hint: _CrawlStart = start.hint
        # conditional requests only for pages whose links were kept (fetchpage.LINKS)
        loader = PageLoader(client, self.page_options, executor=executor)
        on_discovered = self.on_discovered

        async def discovered(n: int) -> None:
            if on_discovered is not None:  # it belongs to the pipeline's thread (progress)
                await outbox.call(on_discovered, n)

        crawler = Crawler(loader, hint.options, hint.state, previous,
                          on_discovered=discovered)
        plain = Leaf(ref=start.ref, url=start.url, hint=WebHint())
        await crawler.run(plain, outbox)


@dataclass
class _Loading:
    """What the pages of one listing share while they load (on one event loop)."""

    planned: set[str]  # listed, or claimed as some page's canonical URL
    emitted: set[str] = field(default_factory=set)
    copies: dict[str, str] = field(default_factory=dict)  # dropped page -> its canonical
    unusable: set[str] = field(default_factory=set)  # canonical URLs that gave no page
    loads: LoadOnce = field(default_factory=LoadOnce)


@dataclass(frozen=True)
class _Shaped:
    """A listing after the URL rules and the version choice."""

    kept: list[str]
    dropped: dict[str, int]
    notes: list[str]


async def _within_robots(client: GuardedClient, where: str, shaped: _Shaped) -> _Shaped:
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
    return _Shaped(kept, dropped, [*shaped.notes, said])


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


def _site_host(url: str) -> str:
    """A URL's host as a site is known by: ``www.`` and the scheme make no other site."""
    return (urlsplit(url).hostname or "").removeprefix("www.")


def _rule_notes(where: str, dropped: dict[str, int]) -> list[str]:
    if not dropped:
        return []
    parts = ", ".join(f"'{rule}' {n}" for rule, n in dropped.items())
    return [f"{where}: URL rules dropped {sum(dropped.values())} listed pages ({parts})"]


async def _site_choice(client: GuardedClient, url: str) -> tuple[str | None, str | None, str]:
    """The version and language the site's root points to: where it redirects, or what
    it marks canonical. Nothing when the root cannot be read."""
    root = versions.root_url(url)
    try:
        result = await client.fetch(root, content_types=PAGE_CONTENT_TYPES)
    except KbctlError:
        return None, None, ""
    final = normalize_url(result.url) or root
    version, lang = versions.signal_of(final)
    if final != root and (version or lang):
        return version, lang, f"the site's root redirects to {final}"
    directives = read_directives(result)
    canonical = directives.canonical
    if canonical and origin(canonical) == origin(root):
        version, lang = versions.signal_of(canonical)
        if version or lang:
            said = (f"sends browsers on to {canonical}" if directives.redirect
                    else f"names {canonical} canonical")
            return version, lang, f"the site's root {said}"
    return None, None, ""


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
