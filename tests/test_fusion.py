"""Calibrated hybrid fusion on a tiny docs fixture: both scores on one scale, the seed
formula kept, a weight range that does not flip the answer, scores that compare across
questions (a question the KB answers well outscores one it barely touches), and a page
that repeats itself yielding to the next page."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kbctl.config import RetrievalSettings
from kbctl.pipeline.ingest import ingest
from kbctl.pipeline.query import retrieve
from kbctl.sources.registry import source_spec
from kbctl.store import lexical, ranking
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.records import ChunkRecord, ScoredChunk, SourceRecord

from .embedders import HashingEmbedder

PAGES = {
    "os-path": "# os.path\n\n## os.path.splitext\n\nSplit the pathname into a pair "
               "(root, ext) so that ext is the file extension, empty or starting with a "
               "period.",
    "subprocess": "# subprocess\n\n## subprocess.run\n\nRun the command described by args, "
                  "wait for it to complete, and capture its output when asked.",
    "cmdline": "# Command line\n\n## -m module\n\nSearch sys.path for the named module and "
               "execute its contents as the __main__ module.",
    "shutil": "# shutil\n\n## shutil.rmtree\n\nDelete an entire directory tree; path must "
              "point to a directory.",
    "errors": "# Errors\n\n## UnboundLocalError\n\nRaised when a local variable is "
              "referenced before a value has been assigned to it.",
}
# (question, page, anchor): tiny dev questions of the kinds the benchmark asks
QUESTIONS = [
    ("split the file extension from a pathname", "os-path", "ospathsplitext"),
    ("run a command and capture its output", "subprocess", "subprocessrun"),
    ("execute a module as __main__ with -m", "cmdline", "-m-module"),
    ("delete a directory tree", "shutil", "shutilrmtree"),
    ("local variable referenced before assignment", "errors", "unboundlocalerror"),
]


@pytest.fixture
def kb(store: KnowledgeStore) -> tuple[KnowledgeStore, HashingEmbedder]:
    emb = HashingEmbedder(dimensions=64)
    store.embedder.bind(emb.identity)
    ingest(store, [source_spec("text", ref, {"body": body, "title": ref})
                   for ref, body in PAGES.items()], namespace="ns", embedder=emb)
    return store, emb


@pytest.mark.parametrize("weight", [0.3, 0.5, 0.7, 0.9])
def test_tiny_dev_questions_are_answered_first_at_every_weight(kb, weight: float) -> None:
    store, emb = kb
    for question, page, anchor in QUESTIONS:
        result = retrieve(store, question,
                          RetrievalSettings(namespace="ns", k=3, vector_weight=weight),
                          embedder=emb)
        top = result.hits[0]
        assert (top.source_ref, top.anchor) == (f"kb://text/{page}", anchor), question


def test_score_is_the_weighted_sum_of_its_components_in_the_unit_interval(kb) -> None:
    store, emb = kb
    for weight in (0.0, 0.3, 0.7, 1.0):
        for question, _page, _anchor in QUESTIONS:
            for hit in retrieve(store, question,
                                RetrievalSettings(namespace="ns", k=5, vector_weight=weight),
                                embedder=emb).hits:
                assert 0.0 <= hit.text_score <= 1.0 and 0.0 <= hit.vector_score <= 1.0
                assert hit.score == pytest.approx(
                    weight * hit.vector_score + (1 - weight) * hit.text_score, abs=2e-6)
                assert 0.0 <= hit.score <= 1.0


def test_scores_compare_across_questions(kb) -> None:
    """The best match of a question the KB answers outscores that of an off-topic one that
    shares a single word with it: the scale is the question's match strength."""
    store, emb = kb
    good = retrieve(store, "delete an entire directory tree",
                    RetrievalSettings(namespace="ns", k=1), embedder=emb).hits[0]
    weak = retrieve(store, "tree frogs of the rain forest canopy",
                    RetrievalSettings(namespace="ns", k=1), embedder=emb).hits[0]
    assert good.score > 2 * weak.score
    assert good.score > 0.5 > weak.score


def test_rrf_stays_available(kb) -> None:
    store, emb = kb
    result = retrieve(store, "delete a directory tree",
                      RetrievalSettings(namespace="ns", k=2, fusion="rrf"), embedder=emb)
    assert result.mode == "rrf" and result.hits[0].source_ref == "kb://text/shutil"
    weighted = retrieve(store, "delete a directory tree",
                        RetrievalSettings(namespace="ns", k=1), embedder=emb)
    # first on both lists: the question's match strength, as under the weighted fusion
    assert result.hits[0].score == pytest.approx(weighted.hits[0].score)
    weak = retrieve(store, "tree frogs of the rain forest canopy",
                    RetrievalSettings(namespace="ns", k=1, fusion="rrf"), embedder=emb).hits[0]
    assert result.hits[0].score > 0.5 > weak.score  # ranks alone gave both about 1


def _row(ref: str, score: float, i: int) -> ScoredChunk:
    return ScoredChunk(id=i, namespace="ns", source_ref=ref, ordinal=i, text="", meta={},
                       score=score, text_score=score, vector_score=score, source_url=ref,
                       source_title=ref)


def test_a_pages_further_chunks_yield_to_other_pages_unless_clearly_better() -> None:
    rows = [_row("a", 1.0, 0), _row("a", 0.98, 1), _row("a", 0.97, 2), _row("b", 0.9, 3),
            _row("a", 0.5, 4), _row("c", 0.6, 5)]
    top = ranking.crowd_pages(rows, k=4, factor=0.9)
    # a's second chunk (0.98 * 0.9 = 0.882) falls below b (0.9); a's third, twice crowded
    # (0.97 * 0.81 = 0.786), still beats c (0.6)
    assert [(r.source_ref, r.ordinal) for r in top] == [("a", 0), ("b", 3), ("a", 1), ("a", 2)]
    assert [round(r.score, 4) for r in top] == [1.0, 0.9, 0.882, 0.7857]
    assert all(r.score == r.text_score == r.vector_score for r in top)
    assert [r.ordinal for r in ranking.crowd_pages(rows, k=6, factor=1.0)] == [0, 1, 2, 3, 5, 4]


def test_hybrid_results_reach_past_a_page_that_repeats_itself(
        store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """One page with many near-identical sections does not fill the whole top 4 when
    another page matches the question almost as well."""
    emb = HashingEmbedder(dimensions=64)
    store.embedder.bind(emb.identity)
    sections = "".join(f"\n\n## Remove folder variant {i}\n\nRemove a mail folder by name, "
                       f"variant {i}." for i in range(6))
    pages = {"mailbox": "# mailbox" + sections,
             "shutil": "# shutil\n\n## rmtree\n\nRemove a folder tree and every file in it.",
             "json": "# json\n\n## dumps\n\nSerialize an object to a JSON formatted string.",
             "socket": "# socket\n\n## connect\n\nConnect to a remote socket at an address.",
             "math": "# math\n\n## sqrt\n\nReturn the square root of a number."}
    ingest(store, [source_spec("text", ref, {"body": body, "title": ref})
                   for ref, body in pages.items()], namespace="ns", embedder=emb)

    def top_refs(**kwargs: object) -> list[str]:
        return [h.source_ref for h in retrieve(store, "remove a folder",
                                               RetrievalSettings(namespace="ns", k=4),
                                               **kwargs).hits]

    assert top_refs(embedder=emb)[3] == "kb://text/shutil"
    monkeypatch.setattr(ranking, "PAGE_CROWDING", 1.0)
    assert top_refs(embedder=emb) == ["kb://text/mailbox"] * 4


def test_lexical_results_reach_past_a_page_that_repeats_itself(
        store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lexical search crowds a page's further sections too: they share its page's words.
    Here the repeating page holds the question's words in every heading, so its sections
    keep most of the top, but the other page comes in above its sixth."""
    sections = "".join(f"\n\n## Remove folder variant {i}\n\nRemove a mail folder by name, "
                       f"variant {i}." for i in range(6))
    pages = {"mailbox": "# mailbox" + sections,
             "shutil": "# shutil\n\n## rmtree\n\nRemove a folder tree and every file in it.",
             "json": "# json\n\n## dumps\n\nSerialize an object to a JSON formatted string."}
    ingest(store, [source_spec("text", ref, {"body": body, "title": ref})
                   for ref, body in pages.items()], namespace="ns")

    def top_refs() -> list[str]:
        return [h.source_ref for h in retrieve(store, "remove a folder",
                                               RetrievalSettings(namespace="ns", k=6)).hits]

    assert top_refs() == ["kb://text/mailbox"] * 5 + ["kb://text/shutil"]
    monkeypatch.setattr(ranking, "PAGE_CROWDING", 1.0)
    assert top_refs() == ["kb://text/mailbox"] * 6


PASSAGE = "Remove it with the function below."
QUESTION = "remove the folder tree"


def _copies_in_order(store: KnowledgeStore, pages: dict[str, list[str]],
                     monkeypatch: pytest.MonkeyPatch, *, words_only: bool = False,
                     question: str = QUESTION) -> Callable[[], list[str]]:
    """Write ``pages`` (the first gets the smaller ids) embedded by a hashing embedder;
    returns how the pages' copies of PASSAGE rank for ``question`` (by BM25 alone when
    ``words_only``), pages not crowded."""
    emb = HashingEmbedder(dimensions=64)
    store.embedder.bind(emb.identity)
    for ref, texts in pages.items():
        store.documents.replace(
            SourceRecord(namespace="ns", ref=ref, kind="text", url=f"kb://{ref}",
                         title="", content_hash=ref),
            [ChunkRecord(i, t, {}, v)
             for i, (t, v) in enumerate(zip(texts, emb.embed(texts), strict=True))])
    monkeypatch.setattr(ranking, "PAGE_CROWDING", 1.0)

    def copies_in_order() -> list[str]:
        hits = store.search.rank("ns", question, k=10,
                                 query_vector=None if words_only else emb.embed_query(question))
        return [h.source_ref for h in hits if h.text == PASSAGE]

    return copies_in_order


def test_a_chunk_ranks_with_its_page(store: KnowledgeStore,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pages hold the same passage; the one whose other sections are about the
    question ranks its copy first. Without the page's share the copies tie, and the first
    written (the off-topic page) wins."""
    copies_in_order = _copies_in_order(store, {
        "mailbox": [PASSAGE, "Parse a mail message and read its headers."],
        "shutil": [PASSAGE, "Delete a directory tree and every file in the folder."]},
        monkeypatch)
    monkeypatch.setattr(ranking, "PAGE_TEXT_WEIGHT", 0.0)  # the page's words: next test
    assert copies_in_order() == ["shutil", "mailbox"]
    monkeypatch.setattr(ranking, "PAGE_WEIGHT", 0.0)
    assert copies_in_order() == ["mailbox", "shutil"]


def test_a_chunk_ranks_with_its_pages_words(store: KnowledgeStore,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The same passage on two pages, vectors left out of it (a page's share of the
    similarity off): the page whose other sections hold the question's words ranks its copy
    first, by the page's BM25. Without the page's share of the text score the copies tie,
    and the first written (the off-topic page) wins."""
    copies_in_order = _copies_in_order(store, {
        "mailbox": [PASSAGE, "Parse a mail message and read its headers."],
        "shutil": [PASSAGE, "Delete a directory tree and every file in the folder.",
                   "Copy a folder tree to another place."]},
        monkeypatch)
    monkeypatch.setattr(ranking, "PAGE_WEIGHT", 0.0)
    assert copies_in_order() == ["shutil", "mailbox"]
    monkeypatch.setattr(ranking, "PAGE_TEXT_WEIGHT", 0.0)
    assert copies_in_order() == ["mailbox", "shutil"]


def test_a_chunk_ranks_with_its_pages_words_in_lexical_search(
        store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lexical search reads the page's words as hybrid search's text side does: the copy on
    the page about the question ranks first, and every copy scores above 0."""
    copies_in_order = _copies_in_order(store, {
        "mailbox": [PASSAGE, "Parse a mail message and read its headers."],
        "shutil": [PASSAGE, "Delete a directory tree and every file in the folder.",
                   "Copy a folder tree to another place."]},
        monkeypatch, words_only=True)
    assert copies_in_order() == ["shutil", "mailbox"]
    assert all(h.score > 0 for h in store.search.rank("ns", QUESTION, k=5))
    monkeypatch.setattr(ranking, "PAGE_TEXT_WEIGHT", 0.0)
    assert copies_in_order() == ["mailbox", "shutil"]


def test_a_pages_words_are_its_questions_rarest(store: KnowledgeStore,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's BM25 counts only the question's ``PAGE_TERMS`` rarest words, so a long
    question costs a bounded number of lookups per page: counted whole, the six common
    words on one page outweigh the rare one on the other; cut to the two rarest, they
    do not."""
    common = "bolt nut screw washer rivet hinge"
    copies_in_order = _copies_in_order(store, {
        "hardware": [PASSAGE, f"The {common} drawer."],
        "rare": [PASSAGE, "A folder for the zeppelin."],
        **{f"shelf{i}": [f"Shelf {i}: {common}."] for i in range(3)}},
        monkeypatch, words_only=True, question=f"zeppelin {common} remove")
    assert copies_in_order() == ["hardware", "rare"]
    monkeypatch.setattr(lexical, "PAGE_TERMS", 2)  # "zeppelin" and "remove"
    assert copies_in_order() == ["rare", "hardware"]
