"""What a source is, before and after loading.

A source *definition* (``SourceSpec``) is what the user typed: a kind, a target and the
kind's typed options (``options.SourceOptions``); the registry maps each kind to its
``SourceKind`` (options type and adapter factory). Expanding a definition yields
*leaves* (one per document); loading a leaf yields a ``Document`` or an error. Adapters
decide how to load (a folder reads files one by one, a website fetches concurrently); the
ingest pipeline only sees ``Loaded`` outcomes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import DefinitionError, KbctlError
from .options import SourceOptions

#: Source meta: the version of the HTML reading a page was extracted with (absent: 1), so
#: pages read by an older one are read again (``kbctl.extract.HTML_READER``).
READER = "reader"
#: Meta that has a stored page read whole on the next run, whatever its validators say: no
#: reader has this version.
READ_AGAIN = {READER: 0}
#: The largest file a source reads (standard input too): past it, the file is refused.
MAX_FILE_BYTES = 5 * 1024 * 1024
#: Fetch statuses that mean a page is gone for good: a resync deletes it (and says so).
GONE_STATUSES = (404, 410)


@dataclass(frozen=True)
class SourceSpec:
    """A source definition as given on the command line or in kbctl.yaml."""

    kind: str
    target: str
    options: SourceOptions

    @property
    def id(self) -> str:
        """Stable id of the definition: same kind and target, same definition."""
        digest = hashlib.sha1(f"{self.kind}\0{self.target}".encode()).hexdigest()[:12]
        return f"{self.kind}-{digest}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "options": self.options.to_record()}

    def allowing_private_network(self) -> SourceSpec:
        """This definition remembering that it was given ``--allow-private-network`` (a web
        source only: files and text never touch the network)."""
        options = self.options.reaching_private_network()
        return self if options == self.options else dataclasses.replace(self, options=options)


@dataclass(frozen=True)
class BrokenDefinition:
    """A recorded definition that no longer validates: its source fails, the run goes on."""

    id: str
    kind: str
    target: str
    options: dict[str, Any]
    error: DefinitionError

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "options": self.options}


@dataclass(frozen=True)
class Document:
    """A loaded document, ready to be cleaned, hashed and chunked.

    ``format`` routes it: ``markdown`` goes to the heading-aware chunker, ``text`` to the
    plain one. ``meta`` holds extra scalar fields (front matter, fetch validators) that end
    up in the source row and, for front matter, in each chunk's metadata for filtering.
    ``slug_headings`` is False for markdown converted from HTML: its headings carry the
    page's own ids as ``{#id}``, and a slug made up for one without would cite nothing.
    """

    ref: str
    url: str
    kind: str
    title: str
    body: str
    format: str = "markdown"
    meta: dict[str, Any] = field(default_factory=dict)
    filterable: dict[str, Any] = field(default_factory=dict)
    slug_headings: bool = True


@dataclass(frozen=True)
class Leaf:
    """One document a source expands to, not yet loaded."""

    ref: str
    url: str
    hint: Any = None  # adapter-private data (a path, a lastmod)


@dataclass(frozen=True)
class Loaded:
    """The outcome of loading one leaf: a document, an error, 'not modified', or dropped.

    ``dropped`` names why a page the source listed is left out of the knowledge base on
    purpose (``noindex``, ``canonical``: a copy of another page), with ``note`` saying it
    for the report; a dropped page is not part of the source, as if it were not listed.
    """

    leaf: Leaf
    document: Document | None = None
    error: KbctlError | None = None
    not_modified: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    dropped: str | None = None
    note: str = ""
    # includes the page names that could not be resolved and were left out of its text:
    # {"file", "line", "target", "reason"} each, for the report
    unresolved: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Expansion:
    """The leaves of a source. ``complete`` is False when the listing itself was partial
    (a sitemap that failed to parse): then nothing may be deleted as an orphan."""

    leaves: list[Leaf]
    complete: bool = True
    notes: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # listed URLs left out, by rule
    info: dict[str, Any] = field(default_factory=dict)  # shown with the source in reports
    # said once the leaves are loaded: what a crawl learns only as it goes (a cap it hit)
    closing_notes: list[str] = field(default_factory=list)
    # refs found but not read (a crawl's spent --max-pages): not gone, so never deleted
    unread: set[str] = field(default_factory=set)
    # options the listing settled for the recorded definition: a sitemap whose site has no
    # llms.txt keeps reading its sitemap (one published later switched a resync to its
    # handful of pages, and the delete guard failed every run)
    settled: dict[str, Any] = field(default_factory=dict)


PreviousMeta = Callable[[str], "dict[str, Any] | None"]


class SourceAdapter(Protocol):
    """Expands and loads one kind of source."""

    def expand(self, spec: SourceSpec) -> Expansion: ...

    def load(self, leaves: Sequence[Leaf], previous: PreviousMeta) -> Iterator[Loaded]:
        """Load leaves (in any order, possibly concurrently). ``previous`` gives the stored
        meta of a ref (validators such as ETag) so an adapter can skip unchanged ones."""
        ...


@dataclass(frozen=True)
class SourceKind:
    """What the registry knows of a kind: its options type and how to make its adapter
    (``adapter(spec, **context)``; ``context`` carries the run's network policy)."""

    options: type[SourceOptions]
    adapter: Callable[..., SourceAdapter]
