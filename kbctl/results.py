"""Result shapes of retrieval, shared by query, eval, memory tools and the MCP server; they
sit at the top of the package so every user reaches them without climbing into pipeline/."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A dataclass field's metadata that keeps it out of the JSON documents kbctl prints (the
# typed form of a fact the document already states another way).
NOT_IN_JSON = {"json": False}
MIN_K, MAX_K = 1, 50  # how many results a query may ask for
# How hybrid search fuses its two rankings (kbctl.store.ranking.hybrid_query).
FUSIONS = ("weighted", "rrf")
# The longest question retrieval takes: far past any question, and far below what the
# database's text search accepts (a question of a million characters overflows it).
MAX_QUESTION_CHARS = 20_000
# What to do about a namespace that holds nothing, said by query and eval alike.
EMPTY_NAMESPACE_HINT = "ingest first, or name another --namespace or --data-dir"


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk.

    ``url`` is the source's own address (``https://…`` or ``kb://…``); ``citation`` is what a
    reader should open: ``url#anchor`` when the chunk has an anchor and the url has no
    fragment, else ``url``. ``score`` is in 0..1.
    """

    rank: int
    score: float
    title: str
    url: str
    citation: str
    anchor: str | None
    heading_path: tuple[str, ...]
    text: str
    source_ref: str
    namespace: str
    metadata: dict[str, Any] = field(default_factory=dict)
    text_score: float | None = None
    vector_score: float | None = None
    fused_score: float | None = None  # the first-stage score, when a reranker set ``score``


@dataclass(frozen=True)
class QueryResult:
    """Everything ``kbctl query`` renders."""

    question: str
    namespace: str
    hits: list[Hit]
    mode: str  # "lexical" | "hybrid" | "rrf"
    embedder: str  # identity string, "none" for lexical-only
    elapsed_ms: float
    reranker: str = "none"  # identity string of the rerank stage, "none" without one
    # Query words no chunk uses, each matched as the indexed word (a stem) nearest in
    # spelling: typo tolerance (kbctl.store.spelling).
    corrected: dict[str, str] = field(default_factory=dict)
    # Query words no chunk uses that were not corrected, as typed (lower case).
    unmatched: tuple[str, ...] = ()
    # Synonyms the question's words brought into lexical ranking: {words it used: words
    # added} (kbctl.store.thesaurus).
    related: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # False when the question has no word the index keeps (all stop words: "how do I").
    searchable: bool = True
    # The namespace holds no chunks at all: nothing was ingested there, or the wrong
    # namespace or data directory was named. Its words are then not reported as unmatched.
    empty: bool = False
    # What narrowed the search, for saying why nothing was found: the metadata filters,
    # and the score floor with the best score of the results it removed (None: none).
    filters: dict[str, str] = field(default_factory=dict)
    min_score: float | None = None
    best_below_min: float | None = None
