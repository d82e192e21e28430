"""Carrying the embedding cache between runs in a file (``--embedding-cache FILE``).

Before an ingest the file's vectors join the knowledge base's cache (the database table);
after it the file is replaced by the vectors the namespace's chunks are made of now, one
per chunk. So the file stays the size of the knowledge base, whatever the history
of the site, and a run from a fresh database (a CI runner) sends the provider only the
chunks whose text changed.

A file that cannot be used (another embedder's, damaged, not a cache at all) is a note, not
a failure: the run embeds what it needs and writes a good file.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from pathlib import Path

from ..embed import cache_file
from ..store.knowledge import KnowledgeStore
from .cached_embedder import CachedEmbedder
from .chunk_vectors import page_inputs

# Vectors moved between the file and the database per statement.
BATCH = 2000
# Pages read per statement when the file is written.
PAGES = 200


def load(store: KnowledgeStore, embedder: CachedEmbedder, path: Path) -> str | None:
    """Add the file's vectors to the knowledge base's cache; a note saying what happened
    (None: all was well)."""
    if not path.exists():
        return f"embedding cache {path}: none yet, written after this run"
    want = embedder.cache_identity
    try:
        header = cache_file.read_header(path)
        if header.embedder != want:
            return (f"embedding cache {path} not used: its vectors come from "
                    f"{header.embedder}, this knowledge base embeds with {want}; it is "
                    "written anew after this run")
        for _checked in cache_file.batches(path, header, BATCH):  # whole, before any is used
            pass
        for batch in cache_file.batches(path, header, BATCH):  # bounded memory either way
            store.caches.add_embeddings(want, batch)
    except cache_file.CacheFileError as exc:
        return f"embedding cache {path} not used: {exc}; it is written anew after this run"
    embedder.carried_in = header.count
    return None


def save(store: KnowledgeStore, embedder: CachedEmbedder, path: Path,
         namespaces: Sequence[str]) -> int:
    """Replace the file with the vectors of the namespaces' chunks (those the knowledge
    base's cache holds); how many."""
    ident = embedder.cache_identity
    # held as float32 arrays until written: a KB's vectors as lists of floats took ~8× more
    # memory (24,000 MiniLM vectors: ~300 MB, not ~40)
    vectors: dict[bytes, array[float]] = {}
    for namespace in namespaces:
        after = ("", "")
        while pages := store.documents.page_texts(after, PAGES, namespace=namespace):
            keys = [key for _, _, title, chunks in pages
                    for text in page_inputs([t for _, t in chunks])
                    for key in embedder.input_keys(text, title or None)]
            for at in range(0, len(keys), BATCH):
                found = store.caches.embeddings(ident, keys[at:at + BATCH])
                vectors.update((key, array("f", v)) for key, v in found.items())
            after = pages[-1][:2]
    path.parent.mkdir(parents=True, exist_ok=True)
    cache_file.write(path, ident, embedder.dimensions, vectors)
    return len(vectors)
