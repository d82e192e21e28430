"""The one loader of web sources' pages, which each web kind (``url.py``, ``sitemap.py``,
``crawl.py``, ``llms.py``) subclasses with its own listing.

Every request goes through the guarded client (``kbctl.net``), so the SSRF rules, size
caps, timeouts and retries hold for pages, sitemaps, robots.txt and llms.txt alike. A
kind's ``listing`` fetches what lists the pages; loading fetches the pages on an event
loop in a worker thread and yields each outcome as it completes, so the pipeline's
chunking and writes overlap with the network.

What a listing yields is shaped before anything is fetched (``WebSource.shape``): the
operator's URL rules (``urlrules``), then one version and language of each page
(``versions``). While loading, a page marked noindex is dropped, and a page that names
another URL of its origin canonical is dropped in favour of that URL (``directives``),
fetched once if the listing does not have it.

Context (from the pipeline): allow_private_network, full (ignore sitemap lastmod:
ask the server about every page), on_discovered (called with the number of newly found crawl
pages), extract_processes (worker processes for extraction once a source is large; by
default as many as cores less one when ``extractpool.allow_worker_processes()`` was called,
as the command line does, else none); tests may pass policy, transport and resolver.
"""

from __future__ import annotations

import asyncio
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from kbctl.net.client import GuardedClient
from kbctl.net.guard import check_url
from kbctl.net.policy import NetPolicy, Resolver

from ..errors import BlockedURL, FetchError, InputError, KbctlError
from . import versions
from .base import Expansion, Leaf, Loaded, PreviousMeta, SourceSpec
from .directives import read_directives
from .extractpool import ExtractExecutor
from .fetchpage import Fetched, LoadOnce, PageLoader, PageOptions, WebHint, internal_error
from .page import PAGE_CONTENT_TYPES
from .webload import Outbox, stream
from .webopts import WebOptions
from .weburl import normalize_url, origin

O = TypeVar("O", bound=WebOptions)  # noqa: E741


class WebSource(ABC, Generic[O]):
    """Expands and loads one web source definition: a kind supplies ``listing`` (and, for
    a crawl, how its pages load); the checks, the client and the page loading are here."""

    def __init__(self, spec: SourceSpec, *, allow_private_network: bool = False,
                 full: bool = False, policy: NetPolicy | None = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 resolver: Resolver | None = None,
                 on_discovered: Callable[[int], None] | None = None,
                 extract_processes: int | None = None,
                 **_ignored: Any) -> None:
        options: O = spec.options  # type: ignore[assignment]
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

    def client(self) -> GuardedClient:
        """A guarded client under this source's policy."""
        return GuardedClient(self.policy, resolver=self.resolver, transport=self.transport)

    # --- expansion ------------------------------------------------------------------------

    def expand(self, spec: SourceSpec) -> Expansion:
        url = normalize_url(spec.target)
        if url is None or "://" not in spec.target:
            raise InputError(f"{spec.kind} source: {spec.target!r} is not an http(s) URL",
                             hint="local folders are ingested with `kbctl ingest files`")
        self._vet_target(url)
        return self.listing(url)

    @abstractmethod
    def listing(self, url: str) -> Expansion:
        """The pages the source at ``url`` (checked, normalised) lists: the kind's own."""

    async def shape(self, client: GuardedClient, where: str, urls: list[str], *,
                    version: str | None = None, lang: str | None = None) -> Shaped:
        """The operator's URL rules, then one version and language of each page."""
        kept, counts = self.options.rules.split(urls)
        notes = rule_notes(where, counts)
        dropped = nonzero(counts)
        layout = versions.detect(kept) if len(kept) > 1 else versions.Layout()
        if layout.versioned or layout.translated:
            site_version = site_lang = None
            reason = ""
            if version is None or lang is None:
                site_version, site_lang, reason = await _site_choice(client, kept[0])
            selection = versions.select(kept, layout, version=version,
                                        lang=lang, site_version=site_version,
                                        site_lang=site_lang, site_reason=reason)
            kept = selection.kept
            dropped.update({k: v for k, v in selection.dropped.items() if v})
            line = versions.describe(selection)
            if line:
                notes.append(f"{where}: {line}")
        elif version is not None or lang is not None:
            notes.append(versions.nothing_to_choose(where))
        return Shaped(kept, dropped, notes)

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
        executor = ExtractExecutor(processes=self.extract_processes)
        finished = False
        try:
            async with self.client() as client:
                loader = PageLoader(client, self.page_options, executor=executor)
                await self.load_pages(loader, leaves, previous, outbox)
            finished = True
        finally:
            executor.shutdown(wait=finished, cancel_futures=not finished)

    async def load_pages(self, loader: PageLoader, leaves: list[Leaf],
                         previous: PreviousMeta, outbox: Outbox[Loaded]) -> None:
        """The listed pages, all at once, each canonical URL fetched once."""
        state = _Loading(planned={leaf.ref for leaf in leaves})
        await asyncio.gather(*(self._one(loader, leaf, previous, outbox, state)
                               for leaf in leaves))

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


@dataclass
class _Loading:
    """What the pages of one listing share while they load (on one event loop)."""

    planned: set[str]  # listed, or claimed as some page's canonical URL
    emitted: set[str] = field(default_factory=set)
    copies: dict[str, str] = field(default_factory=dict)  # dropped page -> its canonical
    unusable: set[str] = field(default_factory=set)  # canonical URLs that gave no page
    loads: LoadOnce = field(default_factory=LoadOnce)


@dataclass(frozen=True)
class Shaped:
    """A listing after the URL rules and the version choice."""

    kept: list[str]
    dropped: dict[str, int]
    notes: list[str]


def nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


def rule_notes(where: str, dropped: dict[str, int]) -> list[str]:
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
