"""The check every include dialect shares: a page is read again when a file it took in
changes, though the page's own file did not."""

from __future__ import annotations

import os
from pathlib import Path

from kbctl.pipeline.ingest import ingest
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore

BEFORE = "Turn the widget.\n"
AFTER = "Spin the gadget.\n"


def assert_read_again_when_changed(store: KnowledgeStore, root: Path, included: Path,
                                   namespace: str = "includes") -> None:
    """``root`` holds a page that includes ``included``, which holds ``BEFORE``."""
    spec = source_spec("files", str(root), {"base_url": "https://docs.example.com/"})
    ingest(store, [spec], namespace=namespace)
    [hit] = store.search.rank(namespace, "widget", k=1)
    assert BEFORE.strip() in hit.text
    assert ingest(store, [spec], namespace=namespace).not_modified >= 1
    included.write_text(AFTER)
    os.utime(included, ns=(1, 1))  # a new size and time, whatever the clock's resolution
    assert ingest(store, [spec], namespace=namespace).updated == 1
    [hit] = store.search.rank(namespace, "gadget", k=1)
    assert AFTER.strip() in hit.text
