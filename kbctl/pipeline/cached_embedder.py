"""An Embedder wrapper that asks the KB's embedding cache before the provider.

The key is (embedder identity and its document task, sha256 of the exact input: title and
text), so a text that did not change is never embedded twice, across ingests,
resyncs and re-embeds, nor across machines when the cache travels in a file
(``cache_carry``). A provider that embeds documents for a task (Gemini's task prefix or
``taskType``) says which in ``document_task``; vectors made for another task are not reused. A
resync of a changing site adds vectors every night, so the cache would grow for ever: a
vector not used for ``KEEP_DAYS`` is dropped on the next write (and embedded again if that
text ever comes back).

A text longer than the model's input window (``window``, tokens) is embedded as windows
(``kbctl.embed.windows``), each cached on its own, and its vector is their pooled mean.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..config import Settings
from ..embed import windows
from ..embed.base import Embedder, EmbedderIdentity
from ..store.knowledge import KnowledgeStore
from ..wiring import input_window

KEEP_DAYS = 90.0


def input_hash(text: str, title: str | None) -> bytes:
    h = hashlib.sha256()
    h.update((title or "").encode())
    h.update(b"\0")
    h.update(text.encode())
    return h.digest()


class CachedEmbedder:
    """Same protocol as the wrapped embedder; counts what it really sent (``provider_calls``)."""

    def __init__(self, inner: Embedder, store: KnowledgeStore, *,
                 window: int | None = None) -> None:
        self.inner = inner
        self.store = store
        self.window = window
        self.provider_texts = 0
        self.cache_hits = 0
        self.carried_in = 0  # vectors a cache file brought (``cache_carry.load``)

    @property
    def identity(self) -> EmbedderIdentity:
        return self.inner.identity

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def cache_identity(self) -> str:
        """What the cache files its vectors under: the embedder's identity, and the task
        its documents are embedded for when the provider has one."""
        task = getattr(self.inner, "document_task", "")
        return f"{self.identity}#{task}" if task else str(self.identity)

    def input_keys(self, text: str, title: str | None) -> list[bytes]:
        """The cache keys ``embed`` files a text's vector under: one per window it is read
        in."""
        pieces = windows.split(text, self.window) if self.window else [text]
        return [input_hash(piece, title) for piece in pieces]

    def embed(self, texts: Sequence[str],
              titles: Sequence[str | None] | None = None) -> list[list[float]]:
        titles = list(titles) if titles is not None else [None] * len(texts)
        return windows.embed_read_whole(self._embed_whole, texts, titles, self.window)

    def _embed_whole(self, texts: Sequence[str], titles: Sequence[str | None]
                     ) -> list[list[float]]:
        keys = [input_hash(t, ti) for t, ti in zip(texts, titles, strict=True)]
        ident = self.cache_identity
        found = self.store.caches.embeddings(ident, keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            # one request per distinct input, even when a batch repeats a text
            first: dict[bytes, int] = {}
            for i in missing:
                first.setdefault(keys[i], i)
            order = list(first.values())
            vectors = self.inner.embed([texts[i] for i in order], [titles[i] for i in order])
            fresh = {keys[i]: v for i, v in zip(order, vectors, strict=True)}
            self.store.caches.add_embeddings(ident, fresh)
            self.store.caches.prune("embedding_cache", KEEP_DAYS)
            found.update(fresh)
            self.provider_texts += len(order)
        self.cache_hits += len(keys) - len(missing)
        return [found[k] for k in keys]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def with_cache(embedder: Embedder | None, store: KnowledgeStore,
               settings: Settings) -> CachedEmbedder | None:
    """``embedder`` behind the KB's cache, reading texts in its input window; None stays
    None (a lexical-only KB)."""
    if embedder is None:
        return None
    return CachedEmbedder(embedder, store, window=input_window(settings, embedder))
