"""Each reranker wire format against a real loopback server that checks the request fields
and answers the way that service does (results out of order, as real APIs sort them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial

import pytest

from kbctl.errors import ConfigError, RerankerError
from kbctl.net.retry import RetryPolicy
from kbctl.rerank.registry import create_reranker as create_guarded
from kbctl.rerank.registry import parse_rerank_spec
from tests.embed_fakes import FakeClock
from tests.http_server import LocalServer, Request, Response, ok

# the servers here listen on loopback: the opt-in a local reranker needs
create_reranker = partial(create_guarded, allow_private_network=True)

DOCS = ["pigs fly", "python subprocess run", "os.path.splitext splits the extension"]
QUERY = "file extension"
# what each fake server scores: the number of query words a document shares, scaled
EXPECTED = [0.1, 0.1, 0.9]


def _relevance(doc: str) -> float:
    return 0.9 if "extension" in doc else 0.1


def _json(payload: object, status: int = 200) -> Response:
    return ok(json.dumps(payload), "application/json", status=status)


def results_api(expect_model: str, extra: dict | None = None,
                key: str | None = None) -> Callable[[Request], Response]:
    """Cohere / Jina / Infinity / vLLM: ``{"results": [{"index", "relevance_score"}]}``."""

    def respond(request: Request) -> Response:
        body = json.loads(request.body)
        assert body == {"model": expect_model, "query": QUERY, "documents": DOCS,
                        "top_n": len(DOCS), **(extra or {})}
        assert request.headers.get("authorization") == (f"Bearer {key}" if key else None)
        ranked = sorted(range(len(DOCS)), key=lambda i: -_relevance(DOCS[i]))
        return _json({"id": "x", "results": [
            {"index": i, "relevance_score": _relevance(DOCS[i])} for i in ranked]})

    return respond


def test_cohere_format_against_a_self_hosted_server() -> None:
    with LocalServer({"/v1/rerank": results_api("BAAI/bge-reranker-base")}) as server:
        rr = create_reranker("cohere:BAAI/bge-reranker-base", base_url=server.url("/v1"),
                             env={})
        assert rr.score(QUERY, DOCS) == EXPECTED
        assert str(rr.identity) == "cohere/BAAI/bge-reranker-base"


def test_cohere_sends_the_key_from_the_environment() -> None:
    with LocalServer({"/v2/rerank": results_api("rerank-v3.5", key="co-key")}) as server:
        rr = create_reranker("cohere:rerank-v3.5", base_url=server.url("/v2"),
                             env={"COHERE_API_KEY": "co-key"})
        assert rr.score(QUERY, DOCS) == EXPECTED


def test_jina_asks_not_to_echo_documents() -> None:
    handler = results_api("jina-reranker-v2-base-multilingual",
                          extra={"return_documents": False}, key="jina-key")
    with LocalServer({"/v1/rerank": handler}) as server:
        rr = create_reranker("jina:jina-reranker-v2-base-multilingual",
                             base_url=server.url("/v1"), env={"JINA_API_KEY": "jina-key"})
        assert rr.score(QUERY, DOCS) == EXPECTED


def test_voyage_format() -> None:
    def respond(request: Request) -> Response:
        body = json.loads(request.body)
        assert body == {"model": "rerank-2.5-lite", "query": QUERY, "documents": DOCS,
                        "truncation": True}
        assert request.headers["authorization"] == "Bearer vo-key"
        return _json({"object": "list", "model": "rerank-2.5-lite",
                      "data": [{"index": i, "relevance_score": _relevance(d)}
                               for i, d in reversed(list(enumerate(DOCS)))],
                      "usage": {"total_tokens": 10}})

    with LocalServer({"/v1/rerank": respond}) as server:
        rr = create_reranker("voyage:rerank-2.5-lite", base_url=server.url("/v1"),
                             env={"VOYAGE_API_KEY": "vo-key"})
        assert rr.score(QUERY, DOCS) == EXPECTED


def test_tei_format() -> None:
    def respond(request: Request) -> Response:
        body = json.loads(request.body)
        assert body == {"query": QUERY, "texts": DOCS, "raw_scores": False,
                        "truncate": True}
        assert "authorization" not in request.headers
        return _json([{"index": i, "score": _relevance(d)}
                      for i, d in reversed(list(enumerate(DOCS)))])

    with LocalServer({"/rerank": respond}) as server:
        rr = create_reranker("tei:BAAI/bge-reranker-base", base_url=server.url(), env={})
        assert rr.score(QUERY, DOCS) == EXPECTED


def test_empty_document_list_sends_nothing() -> None:
    with LocalServer({}) as server:
        rr = create_reranker("tei:m", base_url=server.url(), env={})
        assert rr.score(QUERY, []) == []
        assert server.requests == []


def test_hosted_api_without_a_key_is_an_environment_failure() -> None:
    rr = create_reranker("cohere:rerank-v3.5", env={})
    with pytest.raises(RerankerError, match="COHERE_API_KEY") as info:
        rr.score(QUERY, DOCS)
    assert info.value.exit_code == 3


def test_rejected_key_is_an_environment_failure() -> None:
    with LocalServer({"/rerank": _json({"message": "invalid api token"}, 401)}) as server:
        rr = create_reranker("voyage:rerank-2", base_url=server.url(),
                             env={"VOYAGE_API_KEY": "bad"})
        with pytest.raises(RerankerError, match="HTTP 401") as info:
            rr.score(QUERY, DOCS)
    assert info.value.exit_code == 3


def test_transient_failures_are_retried_with_the_shared_policy() -> None:
    answers = [_json({"error": "busy"}, 503), _json({"error": "slow down"}, 429)]

    def respond(request: Request) -> Response:
        if answers:
            return answers.pop(0)
        return results_api("m")(request)

    clock = FakeClock()
    with LocalServer({"/rerank": respond}) as server:
        rr = create_reranker("cohere:m", base_url=server.url(), env={},
                             retry=RetryPolicy(max_retries=3, sleep=clock.sleep))
        assert rr.score(QUERY, DOCS) == EXPECTED
        assert len(server.requests) == 3 and len(clock.sleeps) == 2


def test_retries_run_out_with_a_clear_error() -> None:
    clock = FakeClock()
    with LocalServer({"/rerank": _json({"error": "down"}, 500)}) as server:
        rr = create_reranker("tei:m", base_url=server.url(), env={},
                             retry=RetryPolicy(max_retries=2, sleep=clock.sleep))
        with pytest.raises(RerankerError, match="HTTP 500 after 3 attempts"):
            rr.score(QUERY, DOCS)


def test_unreachable_server_is_an_environment_failure() -> None:
    with LocalServer({}) as server:
        url = server.url()
    rr = create_reranker("tei:m", base_url=url, env={},
                         retry=RetryPolicy(max_retries=0, sleep=lambda _s: None))
    with pytest.raises(RerankerError, match="tei reranker m"):
        rr.score(QUERY, DOCS)


@pytest.mark.parametrize("payload, message", [
    ({"results": [{"index": 0, "relevance_score": 0.5}]}, "2 of 3 documents"),
    ({"results": [{"index": 7, "relevance_score": 0.5}]}, "index 7"),
    ({"results": [{"index": 0, "relevance_score": "high"}]}, "no numeric relevance_score"),
    ({"results": [{"index": 0, "relevance_score": 0.5}] * 2}, "scored twice"),
    ({"data": []}, "no list of results"),
])
def test_malformed_answers_are_errors(payload: dict, message: str) -> None:
    with LocalServer({"/rerank": _json(payload)}) as server:
        rr = create_reranker("cohere:m", base_url=server.url(), env={})
        with pytest.raises(RerankerError, match=message):
            rr.score(QUERY, DOCS)


@pytest.mark.parametrize("body", ["<html>gateway</html>", "[" * 200_000])
def test_non_json_answer_is_an_error(body: str) -> None:
    """Not JSON, or nested past the parser's depth: an error, never a traceback."""
    with LocalServer({"/rerank": ok(body, "text/html")}) as server:
        rr = create_reranker("cohere:m", base_url=server.url(), env={})
        with pytest.raises(RerankerError, match="not JSON"):
            rr.score(QUERY, DOCS)


def test_scores_outside_the_unit_interval_are_clamped() -> None:
    payload = [{"index": 0, "score": -3.0}, {"index": 1, "score": 0.25},
               {"index": 2, "score": 7.5}]
    with LocalServer({"/rerank": _json(payload)}) as server:
        rr = create_reranker("tei:m", base_url=server.url(), env={})
        assert rr.score(QUERY, DOCS) == [0.0, 0.25, 1.0]


@pytest.mark.parametrize("spec, message", [
    ("", "empty reranker spec"),
    ("openai:x", "unknown reranker provider 'openai'"),
    ("cohere", "names no model"),
    ("cohere: ", "names no model"),
])
def test_bad_specs_are_config_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_rerank_spec(spec)
    assert info.value.exit_code == 2


def test_tei_needs_a_base_url() -> None:
    with pytest.raises(ConfigError, match="--rerank-base-url"):
        create_reranker("tei:BAAI/bge-reranker-base")


def test_unknown_options_are_named() -> None:
    with pytest.raises(ConfigError, match="unknown option\\(s\\) bogus"):
        create_reranker("cohere:m", bogus=1)
