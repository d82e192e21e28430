"""Pages an ingest leaves out on purpose are counted, the first few named in the notes,
and the rest summed up once, without claiming more than were left out."""

from __future__ import annotations

from pathlib import Path

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


def test_empty_pages_are_left_out_and_a_page_that_empties_is_deleted(
        store: KnowledgeStore, tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n\nInstall the widget.\n")
    (tmp_path / "blank.md").write_text("\n \n")
    (tmp_path / "section.md").write_text("---\ntitle: A section\n---\n")
    spec = source_spec("files", str(tmp_path), {})
    report = ingest(store, [spec], namespace="ns")
    assert report.dropped == {"empty": 2}  # not a "duplicate" of one another
    assert not any("same content" in n for n in report.notes)
    assert {n for n in report.notes if "no text once extracted" in n} == {
        f"kb://{tmp_path.name}/{name}.md: no text once extracted, nothing stored"
        for name in ("blank", "section")}
    assert [s.ref for s in store.documents.stored("ns")] == [f"kb://{tmp_path.name}/guide.md"]

    (tmp_path / "guide.md").write_text("")
    again = ingest(store, [spec], namespace="ns")
    assert again.dropped == {"empty": 3} and again.deleted == 1
    assert store.documents.stored("ns") == [] and store.documents.counts("ns") == (0, 0)
