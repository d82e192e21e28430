"""The rerank stage in retrieval: the top fused candidates re-scored by a cross-encoder
served on loopback, its scores cached in the KB, and a provider failure an exit-3 error."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from kbctl.config import RetrievalSettings, resolve_settings
from kbctl.errors import InputError, RerankerError
from kbctl.net.retry import RetryPolicy
from kbctl.pipeline.ingest import ingest
from kbctl.pipeline.query import retrieve
from kbctl.rerank.cache import CachedReranker
from kbctl.rerank.registry import create_reranker as create_guarded
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore
from kbctl.store.thesaurus import NONE
from tests.http_server import LocalServer, Request, Response, ok

from .conftest import rows

PAGES = {
    "splitext": "# os.path\n\n## splitext\n\nSplit a path into a root and its extension.",
    "walk": "# os\n\n## walk\n\nWalk a directory tree and yield each path found.",
    "glob": "# glob\n\n## glob\n\nFind path names matching a pattern, such as *.txt in a path.",
    "pathlib": "# pathlib\n\n## suffix\n\nThe final component's extension, e.g. '.txt'.",
}

# the servers here listen on loopback: the opt-in a local reranker needs
create_reranker = partial(create_guarded, allow_private_network=True)


def tei_server(favourite: str, requests: list[dict]):
    """A TEI-style reranker that likes passages mentioning ``favourite`` best."""

    def respond(request: Request) -> Response:
        body = json.loads(request.body)
        requests.append(body)
        scores = [0.95 if favourite in t else 0.05 * (i % 3) for i, t in
                  enumerate(body["texts"])]
        return ok(json.dumps([{"index": i, "score": s} for i, s in enumerate(scores)]),
                  "application/json")

    return respond


@pytest.fixture
def kb(store: KnowledgeStore) -> KnowledgeStore:
    ingest(store, [source_spec("text", ref, {"body": body, "title": ref})
                   for ref, body in PAGES.items()], namespace="ns")
    return store


def test_reranker_reorders_the_top_candidates_and_scores_them(kb: KnowledgeStore) -> None:
    seen: list[dict] = []
    with LocalServer({"/rerank": tei_server("suffix", seen)}) as server:
        rr = create_reranker("tei:test-model", base_url=server.url(), env={})
        # without synonyms: "extension" would find pathlib's "suffix" on its own
        plain = retrieve(kb, "path extension",
                         RetrievalSettings(namespace="ns", k=3, thesaurus=NONE))
        reranked = retrieve(kb, "path extension",
                            RetrievalSettings(namespace="ns", k=3, rerank_top=10, thesaurus=NONE),
                            reranker=rr)
    assert plain.hits[0].source_ref != "kb://text/pathlib"
    top = reranked.hits[0]
    assert top.source_ref == "kb://text/pathlib" and top.score == 0.95
    assert top.fused_score is not None and top.text_score is not None
    assert len(reranked.hits) == 3 and [h.rank for h in reranked.hits] == [1, 2, 3]
    # every lexical candidate (up to rerank_top) went to the reranker, in one request
    assert len(seen) == 1 and seen[0]["query"] == "path extension"
    assert len(seen[0]["texts"]) == len(rows_matching(kb, "path extension"))
    assert plain.hits[0].fused_score is None


def rows_matching(kb: KnowledgeStore, q: str) -> list:
    return kb.search.rank("ns", q, k=10, thesaurus=NONE)


def test_min_score_applies_to_the_rerank_score(kb: KnowledgeStore) -> None:
    with LocalServer({"/rerank": tei_server("suffix", [])}) as server:
        rr = create_reranker("tei:m", base_url=server.url(), env={})
        result = retrieve(kb, "path extension",
                          RetrievalSettings(namespace="ns", k=5, min_score=0.5), reranker=rr)
    assert [h.source_ref for h in result.hits] == ["kb://text/pathlib"]


def test_scores_are_cached_per_reranker_and_pair(kb: KnowledgeStore, db_url: str) -> None:
    seen: list[dict] = []
    with LocalServer({"/rerank": tei_server("suffix", seen)}) as server:
        rr = CachedReranker(create_reranker("tei:m", base_url=server.url(), env={}), kb)
        first = retrieve(kb, "path extension", RetrievalSettings(namespace="ns", k=3), reranker=rr)
        sent = rr.provider_pairs
        again = retrieve(kb, "path extension", RetrievalSettings(namespace="ns", k=3), reranker=rr)
        other = CachedReranker(create_reranker("tei:other", base_url=server.url(),
                                               env={}), kb)
        retrieve(kb, "path extension", RetrievalSettings(namespace="ns", k=3), reranker=other)
    assert sent > 0 and rr.provider_pairs == sent and rr.cache_hits == sent
    assert [(h.source_ref, h.score) for h in again.hits] == \
        [(h.source_ref, h.score) for h in first.hits]
    assert len(seen) == 2  # the second model is another identity: scored afresh
    assert rows(db_url, "SELECT count(DISTINCT identity) FROM rerank_cache") == [(2,)]


def test_old_cached_scores_are_pruned_when_new_ones_are_written(
        kb: KnowledgeStore, db_url: str) -> None:
    seen: list[dict] = []
    with LocalServer({"/rerank": tei_server("suffix", seen)}) as server:
        rr = CachedReranker(create_reranker("tei:m", base_url=server.url(), env={}), kb)
        retrieve(kb, "path extension", RetrievalSettings(namespace="ns", k=3), reranker=rr)
        first = rows(db_url, "SELECT count(*) FROM rerank_cache")[0][0]
        kb.conn.execute("UPDATE rerank_cache SET created_at = now() - interval '31 days'")
        retrieve(kb, "path extension",
                 RetrievalSettings(namespace="ns", k=3), reranker=rr)  # all cached
        assert rows(db_url, "SELECT count(*) FROM rerank_cache") == [(first,)]
        retrieve(kb, "walk a tree", RetrievalSettings(namespace="ns", k=3), reranker=rr)
    fresh = rows(db_url, "SELECT count(*), min(created_at) > now() - interval '1 day' "
                         "FROM rerank_cache")
    # only the new question's pairs remain
    assert first > 0 and fresh == [(len(seen[-1]["texts"]), True)]


def test_the_reranker_reads_link_labels_not_urls(kb: KnowledgeStore) -> None:
    body = ("see [the glob module](https://docs.example.com/library/glob.html#module-glob)"
            " for patterns")
    ingest(kb, [source_spec("text", "links", {"body": body, "title": "links"})],
           namespace="links")
    seen: list[dict] = []
    with LocalServer({"/rerank": tei_server("glob", seen)}) as server:
        rr = create_reranker("tei:m", base_url=server.url(), env={})
        retrieve(kb, "glob patterns", RetrievalSettings(namespace="links"), reranker=rr)
    assert seen and all("https://" not in t for t in seen[0]["texts"])
    assert any("the glob module" in t for t in seen[0]["texts"])


def test_provider_failure_is_an_environment_failure(kb: KnowledgeStore) -> None:
    with LocalServer({"/rerank": ok("down", status=503)}) as server:
        rr = create_reranker("tei:m", base_url=server.url(), env={},
                             retry=RetryPolicy(max_retries=1, sleep=lambda _s: None))
        with pytest.raises(RerankerError) as info:
            retrieve(kb, "path extension", RetrievalSettings(namespace="ns"), reranker=rr)
    assert info.value.exit_code == 3


def test_rerank_top_is_bounded(tmp_path: Path) -> None:
    """Checked where the settings are resolved: a retrieval never sees one out of range."""
    with pytest.raises(InputError, match="rerank-top"):
        resolve_settings({"rerank_top": 0}, env={}, cwd=tmp_path)


def test_query_command_takes_a_reranker(kb: KnowledgeStore, cli) -> None:
    with LocalServer({"/rerank": tei_server("suffix", [])}) as server:
        out = cli.json("query", "path extension", "-n", "ns", "-k", "2", "--rerank", "tei:m",
                       "--rerank-base-url", server.url(), "--rerank-top", "5",
                       "--allow-private-network")
        down = cli("query", "path extension", "-n", "ns", "--rerank", "tei:uncached",
                   "--rerank-base-url", server.url("/nowhere"), "--allow-private-network")
    assert out["reranker"] == "tei/m"
    top = out["results"][0]
    assert top["sourceRef"] == "kb://text/pathlib" and top["score"] == 0.95
    assert top["fusedScore"] is not None
    assert down.exit_code == 3
    bad = cli("query", "path extension", "--rerank", "nosuch:m")
    assert bad.exit_code == 2 and "unknown reranker provider" in bad.output
