"""Loading one web page: skip it, ask the server whether it changed, or fetch and extract.

Three ways a resync stays cheap, cheapest first:
1. the sitemap's ``lastmod`` is not newer than our last fetch, made within the week or
   two ``LASTMOD_TRUST`` allows: no request at all;
2. the stored ``ETag``/``Last-Modified`` make the request conditional: a 304, no body;
3. the body hashes to what we extracted last time: no extraction.
Each yields ``not_modified``. ``full`` (resync --full) turns off the first two: every page
is fetched whole, so a server whose validators lie (the same ETag for a new page) cannot
keep a stale copy for ever; the content hash still spares unchanged pages extraction.

What is stored on the source row (``Loaded.meta``): ``etag``, ``last_modified``,
``lastmod`` (from the sitemap), ``fetched_at`` (ISO 8601, UTC, the last real fetch),
``body_sha256``, ``selectors`` (the content selectors the page was read with, if any: a
page stored with other selectors is fetched and extracted again) and, for a crawl,
``links`` (see ``LINKS``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from kbctl.net.client import GuardedClient
from kbctl.net.policy import FetchResult

from ..errors import BlockedURL, ExtractError, KbctlError, SourceError
from ..extract import HTML_READER
from ..extract.html_select import ContentSelectors
from .base import READER, Leaf, Loaded
from .directives import read_directives
from .extractpool import ExtractJob, ExtractOutcome, run_job
from .page import HTML_TYPES, PAGE_CONTENT_TYPES
from .weburl import is_page_link, normalize_url, origin

#: Source meta: the content selectors a page was extracted with (absent: none).
SELECTORS = "selectors"
#: Source meta: the HTML page a markdown copy was read from instead (absent: the copy).
SERVED_FROM = "served_from"
#: Source meta: a crawled page's links (those of its own origin as paths). A crawl needs a
#: page's links to go on from it, and a 304 has no body to find them in: with them stored,
#: a crawl's resync asks whether each page changed, as a sitemap's does, instead of
#: fetching every page whole each night. A page stored without them is fetched whole once.
LINKS = "links"
#: A page with more links than this keeps none (null): it is fetched whole on every crawl,
#: and the stored rows stay small (a docs page has a few dozen; an index a few hundred).
MAX_STORED_LINKS = 2_000
#: Markdown copies whose HTML page is missing, with none found, before a source stops
#: asking for the pages (a site that serves only the copies pays no more for them).
TWIN_MISSES = 3
#: How long after a page's last real fetch its sitemap ``lastmod`` is taken at its word.
#: Many sites never bump it when a page changes (a front-matter date nobody edits), and a
#: page it hid would stay stale for good; past this the page is asked for again, with its
#: validators (a 304 costs no body). Each URL's window is stretched by up to as much again,
#: by its hash, so a site's pages do not all come due on the same night.
LASTMOD_TRUST = timedelta(days=7)


@dataclass(frozen=True)
class WebHint:
    """What a web leaf carries besides its URL."""

    lastmod: str | None = None
    prefer_markdown: bool = False  # llms.txt links: text/plain bodies are markdown
    error: KbctlError | None = None  # a listing failure reported as this leaf's outcome
    twin: str | None = None  # the HTML page a listed markdown copy was made from


@dataclass(frozen=True)
class PageOptions:
    kind: str
    docs_mode: bool = True
    full: bool = False
    ignore_noindex: bool = False
    selectors: ContentSelectors = ContentSelectors()


@dataclass
class Fetched:
    """One page's outcome, plus what a crawl needs to go on from it."""

    loaded: Loaded
    final_url: str | None = None
    links: list[str] = field(default_factory=list)
    hides_links: bool = False  # failed in a way that may hide links (5xx, timeout, network)
    canonical: str | None = None  # the page names this other URL of its origin canonical
    links_cut: bool = False  # a crawl kept only the first of its links


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def parse_time(value: str | None) -> datetime | None:
    """An aware datetime for a W3C datetime or an ISO timestamp; None when unusable.

    A bare date (``2024-05-01``) stands for the END of that day: a page changed that
    afternoon must not look older than a fetch made that morning.
    """
    if not value:
        return None
    value = value.strip()
    try:
        if len(value) == 10:
            day = datetime.fromisoformat(value).replace(tzinfo=timezone.utc)
            return day + timedelta(days=1)
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def unchanged_since(lastmod: str | None, prev: dict[str, Any] | None, url: str,
                    now: datetime | None = None) -> bool:
    """True when the sitemap says the page has not changed since we last fetched it, and
    that fetch is recent enough to take its word for it (``LASTMOD_TRUST``). A fetch dated
    in the future (the clock was wrong then) is not recent: it would be trusted until the
    clock caught up with it."""
    if not prev:
        return False
    changed, fetched = parse_time(lastmod), parse_time(prev.get("fetched_at"))
    if changed is None or fetched is None or changed > fetched:
        return False
    spread = int.from_bytes(hashlib.sha256(url.encode()).digest()[:4], "big") / 2**32
    age = (now or datetime.now(timezone.utc)) - fetched
    return timedelta(0) <= age < LASTMOD_TRUST * (1 + spread)


class PageLoader:
    """Fetches and extracts pages on one event loop; extraction runs off the loop."""

    def __init__(self, client: GuardedClient, options: PageOptions, *,
                 executor: Executor) -> None:
        self.client = client
        self.options = options
        self.executor = executor
        self._twins_found = self._twins_missed = 0

    async def load(self, leaf: Leaf, prev: dict[str, Any] | None, *,
                   want_links: bool = False, honor_canonical: bool = True) -> Fetched:
        """Skip, revalidate or fetch and extract one page; ``want_links`` for a crawl
        (which never skips a page, since its links are needed). A page marked noindex, or
        naming another URL of its origin canonical, is dropped without extraction
        (``honor_canonical=False`` for the canonical page itself: one hop, no loops)."""
        hint: WebHint = leaf.hint if isinstance(leaf.hint, WebHint) else WebHint()
        if hint.error is not None:
            return Fetched(Loaded(leaf=leaf, error=hint.error))
        opts = self.options
        reading = opts.selectors.signature
        # a page stored with other selectors, or by an older reader, is read again,
        # whatever the server says
        same_reading = prev is None or (prev.get(SELECTORS) == reading
                                        and prev.get(READER, 1) == HTML_READER)
        if (not opts.full and not want_links and same_reading
                and unchanged_since(hint.lastmod, prev, leaf.ref)):
            return Fetched(Loaded(leaf=leaf, not_modified=True,
                                  meta=_meta(lastmod=hint.lastmod)))
        if hint.twin is not None and not (self._twins_missed >= TWIN_MISSES
                                          and not self._twins_found):
            twin = await self._load_twin(leaf, hint.twin, prev, same_reading)
            if twin is not None:
                return twin
        # a crawl asks whether a page changed only when it kept the page's links; validators
        # the stored page got from its HTML twin are no use for the copy
        known_links = stored_links(prev, leaf.ref) if want_links else None
        conditional = (not opts.full and (not want_links or known_links is not None)
                       and prev is not None
                       and same_reading and SERVED_FROM not in prev)
        try:
            result = await self.client.fetch(
                leaf.url, content_types=PAGE_CONTENT_TYPES,
                etag=prev.get("etag") if conditional and prev else None,
                last_modified=prev.get("last_modified") if conditional and prev else None)
        except KbctlError as exc:
            status = getattr(exc, "status", None)
            return Fetched(Loaded(leaf=leaf, error=exc),
                           hides_links=status not in (404, 410) and not isinstance(exc, BlockedURL))
        requested = leaf.ref
        final = normalize_url(result.url) or leaf.ref
        if final != leaf.ref:
            # the page moved: what was stored for the old URL says nothing of the new one
            # (an identical body "unchanged" there stored nothing at the new address)
            leaf, prev = Leaf(ref=final, url=final, hint=hint), None
        meta = _meta(etag=result.etag, last_modified=result.last_modified,
                     lastmod=hint.lastmod, fetched_at=now_iso(),
                     **{SELECTORS: reading, READER: HTML_READER})
        if result.not_modified:
            return Fetched(Loaded(leaf=leaf, not_modified=True, meta=meta), final,
                           known_links or [])
        # a canonical URL that redirected here names this page (Docusaurus' ``/docs/api``
        # served as ``/docs/api/``): not a copy of another
        drop = self._drop(leaf, result, honor_canonical, requested=requested)
        if drop is not None and not want_links:
            return drop
        digest = self._digest(result, hint)
        meta["body_sha256"] = digest
        out = await self._extract(result, leaf.ref, prefer_markdown=hint.prefer_markdown,
                                  want_links=want_links, skip=drop is not None or (
                                      prev is not None and prev.get("body_sha256") == digest))
        if drop is not None:  # a crawl still follows the links of a dropped page
            links = out.links + ([drop.canonical] if drop.canonical else [])
            return dataclasses.replace(drop, links=links)
        if want_links:
            meta[LINKS] = links_to_store(out.links, leaf.ref)
        if out.error is not None:  # a page that lost its text and its links hides the latter
            error = ExtractError(out.error[0], hint=out.error[1])
            return Fetched(Loaded(leaf=leaf, error=error, meta=meta), final, out.links,
                           hides_links=not out.links)
        if out.document is None:
            return Fetched(Loaded(leaf=leaf, not_modified=True, meta=meta), final, out.links)
        return Fetched(Loaded(leaf=leaf, document=out.document, meta=meta), final, out.links)

    async def _load_twin(self, leaf: Leaf, twin: str, prev: dict[str, Any] | None,
                         same_reading: bool) -> Fetched | None:
        """A listed markdown copy read from the HTML page it was made from, so that its
        citations open the live page at the ids the page really has; the leaf keeps its
        ref (the listing's URL), its document the page's URL. None: no usable page (not
        there, not HTML, noindex, no text), and the copy is read instead."""
        opts = self.options
        # what an earlier run stored from this page (not from the copy, nor read otherwise)
        stored = (prev if prev is not None and same_reading and prev.get(SERVED_FROM) == twin
                  else None)
        validators = stored if stored is not None and not opts.full else {}
        try:
            result = await self.client.fetch(twin, content_types=HTML_TYPES,
                                             etag=validators.get("etag"),
                                             last_modified=validators.get("last_modified"))
        except KbctlError:
            self._twins_missed += 1
            return None
        page = normalize_url(result.url) or twin
        meta = _meta(etag=result.etag, last_modified=result.last_modified,
                     fetched_at=now_iso(), **{SELECTORS: opts.selectors.signature,
                                              READER: HTML_READER, SERVED_FROM: twin})
        if result.not_modified:
            self._twins_found += 1
            return Fetched(Loaded(leaf=leaf, not_modified=True, meta=meta), leaf.ref)
        noindex = read_directives(result).noindex
        if noindex and not opts.ignore_noindex:
            self._twins_missed += 1
            return None
        digest = self._digest(result, WebHint())
        meta["body_sha256"] = digest
        out = await self._extract(result, page, skip=stored is not None
                                  and stored.get("body_sha256") == digest)
        if out.error is not None:
            self._twins_missed += 1
            return None
        self._twins_found += 1
        if out.document is None:
            return Fetched(Loaded(leaf=leaf, not_modified=True, meta=meta), leaf.ref)
        document = dataclasses.replace(out.document, ref=leaf.ref)  # cited at the page
        return Fetched(Loaded(leaf=leaf, document=document, meta=meta), leaf.ref)

    async def _extract(self, result: FetchResult, ref: str, *, prefer_markdown: bool = False,
                       want_links: bool = False, skip: bool = False) -> ExtractOutcome:
        """The page's document (none with ``skip``: its body is unchanged) and links,
        extracted off the event loop."""
        opts = self.options
        job = ExtractJob(result, ref, opts.kind, docs_mode=opts.docs_mode,
                         prefer_markdown=prefer_markdown, want_links=want_links,
                         skip_document=skip, selectors=opts.selectors)
        return await asyncio.get_running_loop().run_in_executor(self.executor, run_job, job)

    def _drop(self, leaf: Leaf, result: FetchResult, honor_canonical: bool, *,
              requested: str | None = None) -> Fetched | None:
        """The outcome of a page left out on its own say-so, or None to extract it.
        ``requested``: the URL asked for, when the server redirected to ``leaf.ref``."""
        directives = read_directives(result)
        if directives.noindex and not self.options.ignore_noindex:
            return Fetched(Loaded(leaf=leaf, dropped="noindex", note=(
                f"{leaf.ref}: skipped: marked noindex ({directives.noindex}; "
                f"--ignore-noindex keeps such pages)")), leaf.ref)
        canonical = directives.canonical
        if (honor_canonical and canonical and canonical not in (leaf.ref, requested)
                and origin(canonical) == origin(leaf.ref)):
            if directives.redirect:
                why, note = "redirect", f"{leaf.ref}: a redirect to {canonical}, stored there"
            else:
                why, note = "canonical", (f"{leaf.ref}: a copy of {canonical} (its canonical "
                                          f"URL), stored there")
            return Fetched(Loaded(leaf=leaf, dropped=why, note=note), leaf.ref,
                           canonical=canonical)
        return None

    def _digest(self, result: FetchResult, hint: WebHint) -> str:
        h = hashlib.sha256()
        # How the body is read is part of what was extracted from it.
        h.update(f"{int(self.options.docs_mode)}{int(hint.prefer_markdown)}{HTML_READER}\0"
                 .encode())
        reading = self.options.selectors.signature
        if reading is not None:  # other selectors, other text
            h.update(f"{reading}\0".encode())
        h.update(result.content)
        return h.hexdigest()


def links_to_store(links: list[str], url: str) -> list[str] | None:
    """A page's links as stored in its meta: those a crawl may follow, of the page's origin
    as paths (a few dozen bytes each); None for a page with more than
    ``MAX_STORED_LINKS``."""
    pages = [link for link in links if is_page_link(link)]
    if len(pages) > MAX_STORED_LINKS:
        return None
    home = origin(url) + "/"
    return [link[len(home) - 1:] if link.startswith(home) else link for link in pages]


def stored_links(prev: dict[str, Any] | None, url: str) -> list[str] | None:
    """The links ``links_to_store`` kept for the page at ``url``; None when it kept none
    (an older version stored the page, or it had too many)."""
    links = prev.get(LINKS) if prev else None
    if not isinstance(links, list) or not all(isinstance(link, str) for link in links):
        return None
    site = origin(url)
    return [site + link if link.startswith("/") else link for link in links]


def _meta(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def internal_error(leaf: Leaf, exc: Exception) -> Loaded:
    """A bug while loading one page is that page's failure, not the run's."""
    return Loaded(leaf=leaf, error=SourceError(f"{leaf.url}: internal error: {exc!r}"))


@dataclass
class LoadOnce:
    """Pages fetched once whoever asks first: a canonical URL a copy needs to know about
    and the same URL's own visit share one fetch. Once its owner has handed a page on
    (``consumed``), only its outline (no text, no links) is kept for later questions, so
    a listing's documents are not all held until it ends."""

    loads: dict[str, asyncio.Future[Fetched]] = field(default_factory=dict)
    handed: set[str] = field(default_factory=set)

    async def get(self, ref: str, load: Callable[[], Awaitable[Fetched]]) -> Fetched:
        future = self.loads.get(ref)
        if future is None:
            future = self.loads[ref] = asyncio.ensure_future(load())
        return await asyncio.shield(future)

    def unclaimed(self) -> list[Fetched]:
        """Pages loaded and never handed on."""
        return [future.result() for ref, future in self.loads.items()
                if ref not in self.handed and future.done() and not future.cancelled()
                and future.exception() is None]

    def consumed(self, ref: str) -> None:
        self.handed.add(ref)
        future = self.loads.get(ref)
        if future is None or not future.done() or future.cancelled() \
                or future.exception() is not None:
            return
        fetched = future.result()
        outline: asyncio.Future[Fetched] = asyncio.get_running_loop().create_future()
        outline.set_result(dataclasses.replace(
            fetched, links=[], loaded=dataclasses.replace(fetched.loaded, document=None)))
        self.loads[ref] = outline
