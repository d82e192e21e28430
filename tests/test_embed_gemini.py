from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading

import httpx
import pytest

from kbctl.embed.base import Embedder
from kbctl.embed.gemini import DEFAULT_BASE_URL, GeminiEmbedder
from kbctl.errors import AuthError, EmbedderError
from kbctl.net.retry import RetryPolicy
from tests.embed_fakes import FakeClock, Recorder, public_dns, sequence

BASE = "https://gemini.test/v1beta"
KEY_ENV = {"GEMINI_API_KEY": "env-key"}


def raw_vector(text: str, dims: int) -> list[float]:
    """A deterministic, text-dependent, unnormalised vector."""
    seed = hashlib.sha256(text.encode()).digest()
    return [float(seed[i % len(seed)] - 127) + 0.5 for i in range(dims)]


def unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def text_of(request: httpx.Request) -> str:
    return json.loads(request.content)["content"]["parts"][0]["text"]


def echo(dims: int, shape: str = "single"):
    """Answer with a vector derived from the request's text."""

    def respond(request: httpx.Request) -> httpx.Response:
        values = raw_vector(text_of(request), dims)
        if shape == "single":
            return httpx.Response(200, json={"embedding": {"values": values}})
        return httpx.Response(200, json={"embeddings": [{"values": values}]})

    return respond


def make(recorder: Recorder, **kwargs) -> GeminiEmbedder:
    kwargs.setdefault("base_url", BASE)
    kwargs.setdefault("env", dict(KEY_ENV))
    return GeminiEmbedder(transport=recorder.transport, resolver=public_dns, **kwargs)


# --- request shapes ------------------------------------------------------------------


def test_embedding_2_document_request_is_prefixed_and_sized_in_config() -> None:
    rec = Recorder(echo(1536))
    make(rec).embed(["How to install"], titles=["Getting started"])

    (request,) = rec.requests
    assert request.method == "POST"
    assert str(request.url) == f"{BASE}/models/gemini-embedding-2:embedContent"
    assert request.url.params.get("key") is None
    assert request.headers["x-goog-api-key"] == "env-key"
    assert json.loads(request.content) == {
        "model": "models/gemini-embedding-2",
        "content": {"parts": [{"text": "title: Getting started | text: How to install"}]},
        "config": {"output_dimensionality": 1536},
    }


def test_embedding_2_missing_titles_become_none() -> None:
    rec = Recorder(echo(1536))
    emb = make(rec)
    emb.embed(["a"])
    emb.embed(["b", "c"], titles=[None, ""])
    assert [b["content"]["parts"][0]["text"] for b in rec.bodies()] == [
        "title: none | text: a",
        "title: none | text: b",
        "title: none | text: c",
    ]


def test_embedding_2_query_uses_the_search_prefix() -> None:
    rec = Recorder(echo(768))
    vector = make(rec, dimensions=768).embed_query("what is a crate?")
    assert rec.bodies() == [{
        "model": "models/gemini-embedding-2",
        "content": {"parts": [{"text": "task: search result | query: what is a crate?"}]},
        "config": {"output_dimensionality": 768},
    }]
    assert vector == pytest.approx(
        unit(raw_vector("task: search result | query: what is a crate?", 768))
    )


def test_embedding_001_uses_task_type_title_and_output_dimensionality() -> None:
    rec = Recorder(echo(768))
    emb = make(rec, model="gemini-embedding-001", dimensions=768)
    emb.embed(["chunk one", "chunk two"], titles=["Doc", None])
    emb.embed_query("find me")

    assert {str(r.url) for r in rec.requests} == {
        f"{BASE}/models/gemini-embedding-001:embedContent"
    }
    docs, query = rec.bodies()[:2], rec.bodies()[2]
    assert sorted(docs, key=lambda b: b["content"]["parts"][0]["text"]) == [
        {
            "model": "models/gemini-embedding-001",
            "content": {"parts": [{"text": "chunk one"}]},
            "taskType": "RETRIEVAL_DOCUMENT",
            "title": "Doc",
            "outputDimensionality": 768,
        },
        {
            "model": "models/gemini-embedding-001",
            "content": {"parts": [{"text": "chunk two"}]},
            "taskType": "RETRIEVAL_DOCUMENT",
            "outputDimensionality": 768,
        },
    ]
    assert query == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "find me"}]},
        "taskType": "RETRIEVAL_QUERY",
        "outputDimensionality": 768,
    }


def test_default_base_url_and_identity() -> None:
    rec = Recorder(echo(1536))
    emb = GeminiEmbedder(transport=rec.transport, env=KEY_ENV, resolver=public_dns)
    emb.embed_query("q")
    assert str(rec.requests[0].url) == (
        f"{DEFAULT_BASE_URL}/models/gemini-embedding-2:embedContent"
    )
    assert str(emb.identity) == "gemini/gemini-embedding-2@1536"
    assert emb.dimensions == 1536
    assert isinstance(emb, Embedder)


# --- fan-out -------------------------------------------------------------------------


def test_one_request_per_item_results_in_input_order() -> None:
    texts = [f"chunk number {i}" for i in range(25)]
    rec = Recorder(echo(32))
    vectors = make(rec, dimensions=32, concurrency=4).embed(texts)

    assert len(rec.requests) == len(texts)
    assert sorted(text_of(r) for r in rec.requests) == sorted(
        f"title: none | text: {t}" for t in texts
    )
    for text, vector in zip(texts, vectors, strict=True):
        assert vector == pytest.approx(unit(raw_vector(f"title: none | text: {text}", 32)))


@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_in_flight_requests_never_exceed_concurrency(concurrency: int) -> None:
    rec = Recorder(echo(8), gate=concurrency)
    make(rec, dimensions=8, concurrency=concurrency).embed([f"t{i}" for i in range(20)])
    assert len(rec.requests) == 20
    assert rec.max_active == concurrency


def test_works_inside_a_running_event_loop_and_from_threads() -> None:
    rec = Recorder(echo(8))
    emb = make(rec, dimensions=8)

    async def inside_loop() -> list[list[float]]:
        return emb.embed(["x", "y"])

    from_loop = asyncio.run(inside_loop())
    results: dict[str, list[list[float]]] = {}

    def worker() -> None:
        results["thread"] = emb.embed(["x", "y"])

    loop = asyncio.new_event_loop()
    loop_thread = threading.Thread(target=loop.run_forever, daemon=True)
    loop_thread.start()
    try:
        t = threading.Thread(target=worker)
        t.start()
        t.join(timeout=10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        loop_thread.join(timeout=5)
        loop.close()
    assert results["thread"] == from_loop
    assert len(from_loop) == 2


def test_empty_input_sends_nothing() -> None:
    rec = Recorder(echo(8))
    assert make(rec, dimensions=8).embed([]) == []
    assert rec.requests == []


def test_titles_must_match_texts() -> None:
    rec = Recorder(echo(8))
    with pytest.raises(ValueError):
        make(rec, dimensions=8).embed(["a", "b"], titles=["only one"])


# --- responses -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["single", "list"])
def test_both_response_shapes_are_parsed_and_normalised(shape: str) -> None:
    rec = Recorder(echo(16, shape))
    (vector,) = make(rec, dimensions=16).embed(["abc"])
    assert vector == pytest.approx(unit(raw_vector("title: none | text: abc", 16)))
    assert math.fsum(v * v for v in vector) == pytest.approx(1.0)


def test_wrong_length_vector_is_an_error_not_truncated() -> None:
    rec = Recorder(lambda r: httpx.Response(200, json={"embedding": {"values": [1.0] * 3072}}))
    with pytest.raises(EmbedderError, match="expected a 1536-dimensional vector, got 3072"):
        make(rec).embed(["x"])


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"embedding": {}},
        {"embedding": {"values": []}},
        {"embeddings": []},
        {"embedding": {"values": ["a", "b"]}},
        {"embedding": {"values": [0.0, 0.0]}},
    ],
)
def test_malformed_responses_are_embedder_errors(payload: dict) -> None:
    rec = Recorder(lambda r: httpx.Response(200, json=payload))
    with pytest.raises(EmbedderError):
        make(rec, dimensions=2).embed(["x"])


@pytest.mark.parametrize("body", ["<html>proxy</html>", "[" * 200_000])
def test_non_json_body_is_an_embedder_error(body: str) -> None:
    rec = Recorder(lambda r: httpx.Response(200, text=body))
    with pytest.raises(EmbedderError, match="not JSON"):
        make(rec, dimensions=2).embed_query("x")


def test_unknown_model_404_suggests_the_fallback() -> None:
    rec = Recorder(lambda r: httpx.Response(404, json={"error": {"message": "not found"}}))
    with pytest.raises(EmbedderError) as info:
        make(rec, model="gemini-embedding-9").embed(["x"])
    assert "gemini-embedding-9" in info.value.message
    assert "gemini-embedding-001" in (info.value.hint or "")


def test_other_client_errors_carry_the_api_message() -> None:
    body = {"error": {"code": 400, "message": "Request payload size exceeds the limit"}}
    rec = Recorder(lambda r: httpx.Response(400, json=body))
    with pytest.raises(EmbedderError, match="payload size exceeds") as info:
        make(rec).embed(["x"])
    assert not isinstance(info.value, AuthError)
    assert len(rec.requests) == 1


# --- retries -------------------------------------------------------------------------


def test_5xx_is_retried_with_growing_backoff() -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_retries=4, base_delay=0.5, sleep=clock.sleep, random=lambda: 0.5)
    ok = httpx.Response(200, json={"embedding": {"values": [3.0, 4.0]}})
    rec = Recorder(sequence(httpx.Response(503), httpx.Response(500), httpx.Response(502), ok))

    assert make(rec, dimensions=2, retry=policy).embed_query("q") == pytest.approx([0.6, 0.8])
    assert len(rec.requests) == 4
    # equal jitter: cap/2 + random*cap/2, cap doubling from base_delay
    assert clock.sleeps == pytest.approx([0.375, 0.75, 1.5])


def test_jitter_spreads_waits_within_the_cap() -> None:
    clock = FakeClock()
    draws = iter([0.0, 1.0])
    policy = RetryPolicy(base_delay=1.0, sleep=clock.sleep, random=lambda: next(draws))
    ok = httpx.Response(200, json={"embedding": {"values": [1.0, 0.0]}})
    rec = Recorder(sequence(httpx.Response(429), httpx.Response(429), ok))
    make(rec, dimensions=2, retry=policy).embed_query("q")
    assert clock.sleeps == pytest.approx([0.5, 2.0])


def test_retry_after_is_honoured() -> None:
    clock = FakeClock()
    policy = RetryPolicy(sleep=clock.sleep, random=lambda: 0.0)
    ok = httpx.Response(200, json={"embedding": {"values": [1.0, 0.0]}})
    rec = Recorder(sequence(httpx.Response(429, headers={"Retry-After": "7"}), ok))
    make(rec, dimensions=2, retry=policy).embed_query("q")
    assert clock.sleeps == [7.0]


def test_retries_run_out_into_an_error_naming_status_and_model() -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_retries=2, sleep=clock.sleep, random=lambda: 0.0)
    rec = Recorder(lambda r: httpx.Response(503, text="overloaded"))
    with pytest.raises(EmbedderError) as info:
        make(rec, model="gemini-embedding-001", retry=policy).embed(["x"])
    assert "503" in info.value.message
    assert "gemini-embedding-001" in info.value.message
    assert info.value.exit_code == 3
    assert len(rec.requests) == 3
    assert len(clock.sleeps) == 2


def test_max_retries_option_sets_the_policy() -> None:
    rec = Recorder(lambda r: httpx.Response(500))
    emb = make(rec, max_retries=0)
    with pytest.raises(EmbedderError, match="500"):
        emb.embed(["x"])
    assert len(rec.requests) == 1


def test_connection_errors_are_retried() -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_retries=3, sleep=clock.sleep, random=lambda: 0.0)
    calls = {"n": 0}

    def flaky(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] < 3:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={"embedding": {"values": [0.0, 2.0]}})

    rec = Recorder(flaky)
    assert make(rec, dimensions=2, retry=policy).embed_query("q") == [0.0, 1.0]
    assert len(clock.sleeps) == 2


# --- keys ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"])
def test_rejected_key_is_an_auth_error_naming_the_variable(status: int, variable: str) -> None:
    rec = Recorder(lambda r: httpx.Response(status, json={"error": {"message": "denied"}}))
    emb = make(rec, env={variable: "bad"})
    with pytest.raises(AuthError) as info:
        emb.embed(["x"])
    assert info.value.exit_code == 3
    assert str(status) in info.value.message
    assert variable in (info.value.hint or "")
    assert len(rec.requests) == 1  # never retried


def test_google_invalid_key_400_is_an_auth_error() -> None:
    body = {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                      "details": [{"reason": "API_KEY_INVALID"}]}}
    rec = Recorder(lambda r: httpx.Response(400, json=body))
    with pytest.raises(AuthError, match="400"):
        make(rec).embed_query("q")


def test_missing_key_is_an_auth_error_and_sends_nothing() -> None:
    rec = Recorder(echo(8))
    emb = make(rec, env={})  # constructing needs no key
    assert str(emb.identity) == "gemini/gemini-embedding-2@1536"
    with pytest.raises(AuthError, match="GEMINI_API_KEY") as info:
        emb.embed(["x"])
    assert info.value.exit_code == 3
    with pytest.raises(AuthError):
        emb.embed_query("x")
    assert rec.requests == []


@pytest.mark.parametrize(
    ("option", "env", "sent"),
    [
        ("opt", {"GEMINI_API_KEY": "g", "GOOGLE_GENERATIVE_AI_API_KEY": "x"}, "opt"),
        (None, {"GEMINI_API_KEY": "g", "GOOGLE_GENERATIVE_AI_API_KEY": "x"}, "g"),
        (None, {"GEMINI_API_KEY": " ", "GOOGLE_GENERATIVE_AI_API_KEY": "x"}, "x"),
    ],
)
def test_key_precedence(option: str | None, env: dict[str, str], sent: str) -> None:
    rec = Recorder(echo(8))
    make(rec, dimensions=8, api_key=option, env=env).embed_query("q")
    assert rec.requests[0].headers["x-goog-api-key"] == sent


def test_key_is_read_at_first_use_not_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GENERATIVE_AI_API_KEY", raising=False)
    rec = Recorder(echo(8))
    emb = GeminiEmbedder(dimensions=8, base_url=BASE, transport=rec.transport,
                         resolver=public_dns)
    monkeypatch.setenv("GEMINI_API_KEY", "late-key")
    emb.embed_query("q")
    assert rec.requests[0].headers["x-goog-api-key"] == "late-key"
