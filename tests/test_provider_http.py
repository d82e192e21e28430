"""Provider answers are read under a whole-request deadline and a byte cap, against real
loopback servers: one that trickles its answer, one that sends too much, and gzip bombs."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from kbctl.embed.openai import OpenAIEmbedder
from kbctl.errors import EmbedderError, RerankerError
from kbctl.net import api
from kbctl.net.api import post_json
from kbctl.net.retry import RetryPolicy
from kbctl.rerank.registry import create_reranker
from tests.http_server import LocalServer, Response, ok

NO_RETRY = RetryPolicy(max_retries=0, sleep=lambda s: None)


def _embeddings(count: int = 1) -> bytes:
    return json.dumps({"data": [{"index": i, "embedding": [1.0, 0.0]}
                                for i in range(count)]}).encode()


def trickle(body: bytes, pause: float) -> Response:
    """A valid answer sent a few bytes at a time: no single read ever times out."""
    pieces = [body[i:i + 4] for i in range(0, len(body), 4)]
    return ok(pieces, "application/json", chunk_delay=pause)


def _post(server: LocalServer, **limits: float) -> httpx.Response:
    with httpx.Client(timeout=5.0) as client:
        return post_json(client, server.url("/v1/embeddings"), body={"input": ["x"]},
                         headers={}, what="test provider", error=EmbedderError, **limits)


def test_a_plain_answer_is_read_whole() -> None:
    with LocalServer({"/v1/embeddings": ok(_embeddings(), "application/json")}) as server:
        response = _post(server)
    assert response.status_code == 200
    assert response.json()["data"][0]["embedding"] == [1.0, 0.0]


def test_a_gzipped_answer_is_decoded() -> None:
    route = ok(gzip.compress(_embeddings(3)), "application/json",
               headers={"Content-Encoding": "gzip"})
    with LocalServer({"/v1/embeddings": route}) as server:
        response = _post(server)
    assert [d["index"] for d in response.json()["data"]] == [0, 1, 2]


@pytest.mark.timeout(60)
def test_a_trickling_answer_stops_at_the_deadline() -> None:
    # whole, the answer takes minutes: only the deadline ends it
    with LocalServer({"/v1/embeddings": trickle(_embeddings(2000), 0.05)}) as server, \
            pytest.raises(httpx.ReadTimeout, match="still arriving after 0.5 s"):
        _post(server, deadline=0.5)


def test_an_oversized_answer_is_refused_at_the_cap() -> None:
    route = ok(b"[" + b"0," * 50_000 + b"0]", "application/json")
    with LocalServer({"/v1/embeddings": route}) as server, \
            pytest.raises(EmbedderError, match="larger than 1000 bytes"):
        _post(server, max_bytes=1000)


def test_a_gzip_bomb_costs_the_cap_not_its_inflated_size() -> None:
    bomb = gzip.compress(b" " * 50_000_000)  # 50 MB of blanks in ~50 KB
    route = ok(bomb, "application/json", headers={"Content-Encoding": "gzip"})
    with LocalServer({"/v1/embeddings": route}) as server, \
            pytest.raises(EmbedderError, match="larger than 100000 bytes"):
        _post(server, max_bytes=100_000)


def test_a_truncated_gzip_answer_is_an_error() -> None:
    cut = gzip.compress(_embeddings(50))[:-20]
    route = ok(cut, "application/json", headers={"Content-Encoding": "gzip"})
    with LocalServer({"/v1/embeddings": route}) as server, \
            pytest.raises(EmbedderError, match="truncated compressed body"):
        _post(server)


@pytest.mark.timeout(60)
def test_an_embedder_behind_a_trickling_server_fails_within_bounds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "DEADLINE_S", 0.5)
    with LocalServer({"/v1/embeddings": trickle(_embeddings(2000), 0.05)}) as server:
        embedder = OpenAIEmbedder("m", base_url=server.url("/v1"), env={},
                                   allow_private_network=True, retry=NO_RETRY)
        with pytest.raises(EmbedderError, match="request failed after 1 attempts") as failed:
            embedder.embed(["hello"])  # whole, the answer takes minutes
        embedder.close()
    assert "still arriving after 0.5 s" in str(failed.value.__cause__ or failed.value)


def test_a_reranker_refuses_an_oversized_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "MAX_BYTES", 10_000)
    huge = json.dumps({"results": [{"index": 0, "relevance_score": 0.5}] * 2000})
    with LocalServer({"/rerank": ok(huge, "application/json")}) as server:
        reranker = create_reranker("tei:m", base_url=server.url(), env={},
                                   allow_private_network=True, retry=NO_RETRY)
        with pytest.raises(RerankerError, match="larger than 10000 bytes"):
            reranker.score("q", ["a"])


@pytest.mark.timeout(60)
def test_a_silent_server_times_out_at_the_deadline_not_the_clients_read_timeout() -> None:
    # the client would wait 600 s for a read; the deadline holds each read to 0.5 s
    with LocalServer({"/v1/embeddings": ok(_embeddings(), "application/json",
                                           delay=300)}) as server, \
            httpx.Client(timeout=600.0) as client, pytest.raises(httpx.ReadTimeout):
        post_json(client, server.url("/v1/embeddings"), body={"input": ["x"]},
                  headers={}, what="test provider", error=EmbedderError, deadline=0.5)


def test_a_question_to_a_stalled_provider_times_out_twice_at_most(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A question's attempt gets the short deadline and one retry after a timeout, where
    an ingest batch would get 300 s and four."""
    monkeypatch.setattr(api, "QUESTION_DEADLINE_S", 0.3)
    patient = RetryPolicy(max_retries=4, sleep=lambda s: None)
    stalled = {"/v1/embeddings": ok(_embeddings(), "application/json", delay=1.0),
               "/rerank": ok("[]", "application/json", delay=1.0)}
    with LocalServer(stalled) as server:
        embedder = OpenAIEmbedder("m", base_url=server.url("/v1"), env={},
                                   allow_private_network=True, retry=patient)
        with pytest.raises(EmbedderError, match="request failed after 2 attempts"):
            embedder.embed_query("hello")
        embedder.close()
        reranker = create_reranker("tei:m", base_url=server.url(), env={},
                                   allow_private_network=True, retry=patient)
        with pytest.raises(RerankerError, match="request failed after 2 attempts"):
            reranker.score("q", ["a"])
        assert server.hits_once("/v1/embeddings", 2) == 2
        assert server.hits_once("/rerank", 2) == 2


def test_a_question_still_rides_out_quick_failures() -> None:
    answers = iter([503, 503, 200])

    def flaky(request: object) -> Response:
        status = next(answers)
        return Response(status, _embeddings() if status == 200 else b"busy",
                        {"Content-Type": "application/json"})

    with LocalServer({"/v1/embeddings": flaky}) as server:
        embedder = OpenAIEmbedder("m", base_url=server.url("/v1"), env={},
                                  allow_private_network=True,
                                  retry=RetryPolicy(max_retries=4, sleep=lambda s: None))
        assert embedder.embed_query("hello") == [1.0, 0.0]
        embedder.close()
        assert server.hits("/v1/embeddings") == 3
