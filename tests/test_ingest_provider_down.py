"""An embedding provider that fails one batch costs that batch's sources; one that keeps
failing stops the run (exit 3) instead of making every later batch wait out the retries."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbctl.errors import EmbedderError
from kbctl.pipeline.ingest import EMBED_BATCH, PROVIDER_FAILURES_TO_STOP, ingest
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore

from .conftest import rows
from .embedders import HashingEmbedder

DOCS = 4 * EMBED_BATCH  # one chunk each: four batches


class Outage(HashingEmbedder):
    """Fails the calls numbered in ``down`` (1-based), or every call from ``down_from``."""

    def __init__(self, down: set[int] = frozenset(), down_from: int | None = None) -> None:
        super().__init__(dimensions=16)
        self.down, self.down_from, self.attempts = down, down_from, 0

    def embed(self, texts, titles=None):
        self.attempts += 1
        if self.attempts in self.down or (self.down_from and self.attempts >= self.down_from):
            raise EmbedderError("model hashing-v1: request failed after 5 attempts")
        return super().embed(texts, titles)


def _specs(folder: Path) -> list:
    """One folder of one-chunk pages: a single definition, embedded in batches."""
    for i in range(DOCS):
        (folder / f"d{i:03d}.md").write_text(f"# Doc {i}\n\nbody number {i}\n")
    return [source_spec("files", str(folder))]


def test_one_failed_batch_fails_its_sources_and_the_run_goes_on(
        store: KnowledgeStore, db_url: str, tmp_path: Path) -> None:
    store.embedder.bind(HashingEmbedder(dimensions=16).identity)
    emb = Outage(down={2})
    report = ingest(store, _specs(tmp_path), namespace="ns", embedder=emb)
    assert emb.attempts == 4
    assert report.failed == EMBED_BATCH and report.added == DOCS - EMBED_BATCH
    assert rows(db_url, "SELECT count(*) FROM sources") == [(DOCS - EMBED_BATCH,)]
    # the provider's failure, not the docs': exit 3 however few pages the batch held
    assert report.provider_failed and report.exit_code == 3


def test_a_provider_that_stays_down_stops_the_run(store: KnowledgeStore, db_url: str,
                                                  tmp_path: Path) -> None:
    store.embedder.bind(HashingEmbedder(dimensions=16).identity)
    emb = Outage(down_from=2)
    with pytest.raises(EmbedderError, match="stopped: 2 batches in a row") as info:
        ingest(store, _specs(tmp_path), namespace="ns", embedder=emb)
    assert info.value.exit_code == 3
    assert emb.attempts == 1 + PROVIDER_FAILURES_TO_STOP  # not one wait per later batch
    assert rows(db_url, "SELECT count(*) FROM sources") == [(EMBED_BATCH,)]  # kept
