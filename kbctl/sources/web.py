"""Web sources (``url``, ``sitemap``, ``crawl``, ``llms``): expansion and concurrent loading.

Every request goes through the guarded client (``kbctl.net``), so the SSRF rules, size
caps, timeouts and retries hold for pages, sitemaps, robots.txt and llms.txt alike.
Expansion fetches what lists the pages (sitemaps, llms.txt); loading fetches the pages on
an event loop in a worker thread and yields each outcome as it completes, so the
pipeline's chunking and writes overlap with the network. A ``sitemap`` or ``crawl``
source first looks for the site's ``llms.txt`` and, when it lists pages, ingests that
curated list instead (``llms_txt: false`` turns the probe off).

Options (``SourceSpec.options``; the CLI flags set the same keys):
    all       docs_mode (true), timeout (seconds per request), max_page_bytes
    sitemap   llms_txt (true), max_urls (50000)
    crawl     llms_txt (true), max_depth (3), max_pages (500), allow_domains ([]),
              ignore_robots (false)
    llms      skip_optional (false)
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
from dataclasses import dataclass
from typing import Any

import httpx

from ..errors import InputError, KbctlError, SourceError
from ..net import GuardedClient, NetPolicy, Resolver
from .base import Expansion, Leaf, Loaded, PreviousMeta, SourceSpec
from .crawl import Crawler, CrawlExpansion, CrawlOptions, CrawlState
from .extractpool import ExtractExecutor
from .fetchpage import PageLoader, PageOptions, WebHint, internal_error
from .llms import LlmsTxt, fetch_llms, probe_llms
from .sitemap import MAX_URLS, SitemapListing, discover, read_sitemaps
from .webload import Outbox, run_async, stream
from .weburl import is_origin_only, normalize_url, origin

WEB_KINDS = ("url", "sitemap", "crawl", "llms")

_COMMON = {"docs_mode", "timeout", "max_page_bytes"}
_KNOWN = {
    "url": _COMMON,
    "sitemap": _COMMON | {"llms_txt", "max_urls"},
    "crawl": _COMMON | {"llms_txt", "max_depth", "max_pages", "allow_domains",
                        "ignore_robots"},
    "llms": _COMMON | {"skip_optional"},
}


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
        options = _Options(spec)
        base = policy or NetPolicy(allow_private_network=allow_private_network)
        self.policy = options.apply(base)
        self.full = full
        self.transport = transport
        self.resolver = resolver
        self.on_discovered = on_discovered
        self.extract_processes = extract_processes
        self.options = options
        self.page_options = PageOptions(kind=spec.kind, docs_mode=options.docs_mode,
                                        full=full)

    def _client(self) -> GuardedClient:
        return GuardedClient(self.policy, resolver=self.resolver, transport=self.transport)

    # --- expansion ------------------------------------------------------------------------

    def expand(self, spec: SourceSpec) -> Expansion:
        url = normalize_url(spec.target)
        if url is None or "://" not in spec.target:
            raise InputError(f"{spec.kind} source: {spec.target!r} is not an http(s) URL",
                             hint="local folders are ingested with `kbctl ingest files`")
        if spec.kind == "url":
            return Expansion(leaves=[Leaf(ref=url, url=url, hint=WebHint())])
        if spec.kind == "llms":
            return run_async(lambda: self._expand_llms(url))
        if spec.kind == "sitemap":
            return run_async(lambda: self._expand_sitemap(url))
        return run_async(lambda: self._expand_crawl(url))

    async def _expand_llms(self, url: str) -> Expansion:
        target = url + "llms.txt" if is_origin_only(url) else url
        async with self._client() as client:
            llms = await fetch_llms(client, target)
        if not llms.links(skip_optional=self.options.skip_optional):
            raise SourceError(f"{target}: the llms.txt lists no pages",
                              hint="pages are listed as `- [name](url): notes` under H2 "
                                   "sections")
        return self._from_llms(target, llms, note=None)

    def _from_llms(self, where: str, llms: LlmsTxt, note: str | None) -> Expansion:
        links = llms.links(skip_optional=self.options.skip_optional)
        leaves = [Leaf(ref=link.url, url=link.url, hint=WebHint(prefer_markdown=True))
                  for link in links]
        notes = [note] if note else []
        skipped = len(llms.links()) - len(links)
        if skipped:
            notes.append(f"{where}: {skipped} pages of the Optional section skipped")
        return Expansion(leaves=leaves, notes=notes)

    async def _probe(self, client: GuardedClient, url: str, instead: str,
                     otherwise: str) -> Expansion | None:
        if not self.options.llms_txt:
            return None
        found = await probe_llms(client, origin(url))
        if found is None:
            return None
        where, llms = found
        count = len(llms.links(skip_optional=self.options.skip_optional))
        return self._from_llms(where, llms, note=(
            f"{where} lists {count} curated pages: ingesting those instead of {instead} "
            f"(pass --no-llms-txt to {otherwise})"))

    async def _expand_sitemap(self, url: str) -> Expansion:
        async with self._client() as client:
            curated = await self._probe(client, url, "the sitemap", "read the sitemap")
            if curated is not None:
                return curated
            discovered = is_origin_only(url)
            roots = await discover(client, origin(url)) if discovered else [url]
            listing = await read_sitemaps(client, roots, max_urls=self.options.max_urls)
        return self._from_listing(url, roots, listing, discovered)

    def _from_listing(self, url: str, roots: list[str], listing: SitemapListing,
                      discovered: bool) -> Expansion:
        if not listing.pages:
            raise _whole_failure(url, roots, listing, discovered)
        leaves = [Leaf(ref=page, url=page, hint=WebHint(lastmod=lastmod))
                  for page, lastmod in listing.pages.items()]
        leaves += [Leaf(ref=where, url=where, hint=WebHint(error=error))
                   for where, error in listing.failures]
        notes = []
        if listing.truncated:
            notes.append(f"{url}: the sitemaps list more than {self.options.max_urls} pages "
                         f"or sitemap files; only the first are ingested (see --max-urls)")
        if listing.invalid:
            notes.append(f"{url}: {listing.invalid} sitemap entries without a valid "
                         f"http(s) <loc> were ignored")
        complete = not listing.failures and not listing.truncated
        return Expansion(leaves=leaves, complete=complete, notes=notes)

    async def _expand_crawl(self, url: str) -> Expansion:
        async with self._client() as client:
            curated = await self._probe(client, url, "crawling the site", "crawl it")
        if curated is not None:
            return curated
        start = _CrawlStart(self.options.crawl, CrawlState())
        return CrawlExpansion(Leaf(ref=url, url=url, hint=start), start.state, [])

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
                    emitted: set[str] = set()
                    await asyncio.gather(*(self._one(loader, leaf, previous, outbox, emitted)
                                           for leaf in leaves))
            finished = True
        finally:
            executor.shutdown(wait=finished, cancel_futures=not finished)

    async def _one(self, loader: PageLoader, leaf: Leaf, previous: PreviousMeta,
                   outbox: Outbox[Loaded], emitted: set[str]) -> None:
        async with outbox.slot() as slot:
            # a failing look-up is the database's failure, and ends the run: not caught here
            prev = None if isinstance(leaf.hint, WebHint) and leaf.hint.error else (
                await outbox.call(previous, leaf.ref))
            try:
                loaded = (await loader.load(leaf, prev)).loaded
            except Exception as exc:
                loaded = internal_error(leaf, exc)
            ref = loaded.leaf.ref
            if ref in emitted and loaded.error is None:
                return  # two URLs that redirect to one page: that page once
            emitted.add(ref)
            slot.put(loaded)

    async def _crawl(self, start: Leaf, client: GuardedClient, executor: Executor,
                     previous: PreviousMeta, outbox: Outbox[Loaded]) -> None:
        hint: _CrawlStart = start.hint
        options = dataclasses.replace(self.page_options, conditional=False)
        loader = PageLoader(client, options, executor=executor)
        on_discovered = self.on_discovered

        async def discovered(n: int) -> None:
            if on_discovered is not None:  # it belongs to the pipeline's thread (progress)
                await outbox.call(on_discovered, n)

        crawler = Crawler(loader, hint.options, hint.state, previous,
                          on_discovered=discovered)
        plain = Leaf(ref=start.ref, url=start.url, hint=WebHint())
        await crawler.run(plain, outbox)


class _Options:
    """A web source's options, checked: a bad value is bad input (exit 2)."""

    def __init__(self, spec: SourceSpec) -> None:
        opts = dict(spec.options)
        unknown = sorted(set(opts) - _KNOWN[spec.kind])
        if unknown:
            raise InputError(f"{spec.kind} source {spec.target}: unknown option "
                             f"'{unknown[0]}' (known: {', '.join(sorted(_KNOWN[spec.kind]))})")
        self.kind, self.target = spec.kind, spec.target
        self.docs_mode = self._bool(opts, "docs_mode", True)
        self.timeout = self._positive(opts, "timeout")
        max_bytes = self._positive(opts, "max_page_bytes")
        self.max_page_bytes = None if max_bytes is None else int(max_bytes)
        self.llms_txt = self._bool(opts, "llms_txt", True)
        self.max_urls = self._int(opts, "max_urls", MAX_URLS)
        self.skip_optional = self._bool(opts, "skip_optional", False)
        domains = opts.get("allow_domains") or []
        if isinstance(domains, str):
            domains = [domains]
        if not isinstance(domains, list) or not all(isinstance(d, str) for d in domains):
            raise self._bad("allow_domains", "a list of host names")
        cleaned = frozenset(d.strip().lower().lstrip(".") for d in domains if d.strip())
        self.crawl = CrawlOptions(
            max_depth=self._int(opts, "max_depth", 3, minimum=0),
            max_pages=self._int(opts, "max_pages", 500),
            allow_domains=cleaned,
            ignore_robots=self._bool(opts, "ignore_robots", False))

    def apply(self, policy: NetPolicy) -> NetPolicy:
        changes: dict[str, Any] = {}
        if self.timeout is not None:
            changes.update(total_timeout=self.timeout,
                           read_timeout=min(policy.read_timeout, self.timeout),
                           connect_timeout=min(policy.connect_timeout, self.timeout))
        if self.max_page_bytes is not None:
            changes["max_bytes"] = self.max_page_bytes
        return dataclasses.replace(policy, **changes) if changes else policy

    def _bad(self, name: str, what: str) -> InputError:
        return InputError(f"{self.kind} source {self.target}: option '{name}' must be {what}")

    def _bool(self, opts: dict[str, Any], name: str, default: bool) -> bool:
        value = opts.get(name, default)
        if not isinstance(value, bool):
            raise self._bad(name, "true or false")
        return value

    def _int(self, opts: dict[str, Any], name: str, default: int, minimum: int = 1) -> int:
        value = opts.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self._bad(name, f"an integer of at least {minimum}")
        return value

    def _positive(self, opts: dict[str, Any], name: str) -> float | None:
        value = opts.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self._bad(name, "a number greater than 0")
        return float(value)


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
