"""Pages an ingest leaves out on purpose are counted, the first few named in the notes,
and the rest summed up once, without claiming more than were left out."""

from __future__ import annotations

from kbctl.pipeline.ingest import DROP_NOTES, ingest
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore


def test_drops_past_the_named_few_are_summed_up(store: KnowledgeStore) -> None:
    copies = DROP_NOTES + 3
    specs = [source_spec("text", f"t{i}", {"body": "# Same\n\nThe same body.", "title": "t"})
             for i in range(copies + 1)]
    report = ingest(store, specs, namespace="ns")
    assert report.dropped == {"duplicate": copies}
    named = [n for n in report.notes if "same content as kb://text/t0" in n]
    assert len(named) == DROP_NOTES
    assert report.notes[-1] == "… and 3 more pages dropped (duplicate)"
