from __future__ import annotations

import hashlib
import json
import math

import httpx
import pytest

from kbctl.embed.base import Embedder
from kbctl.embed.openai import DEFAULT_BASE_URL, OpenAIEmbedder
from kbctl.errors import AuthError, EmbedderError
from kbctl.net.retry import RetryPolicy
from tests.embed_fakes import FakeClock, Recorder, public_dns, sequence

OLLAMA = "http://127.0.0.1:11434/v1"


def raw_vector(text: str, dims: int) -> list[float]:
    seed = hashlib.sha256(text.encode()).digest()
    return [float(seed[i % len(seed)] - 127) + 0.5 for i in range(dims)]


def unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def echo(dims: int, *, reverse: bool = False):
    """An OpenAI-style server; ``reverse`` lists ``data`` backwards, relying on ``index``."""

    def respond(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        data = [
            {"object": "embedding", "index": i, "embedding": raw_vector(text, dims)}
            for i, text in enumerate(body["input"])
        ]
        if reverse:
            data.reverse()
        return httpx.Response(200, json={"object": "list", "data": data, "model": body["model"]})

    return respond


def make(rec: Recorder, **kwargs) -> OpenAIEmbedder:
    kwargs.setdefault("env", {})
    kwargs.setdefault("resolver", public_dns)
    kwargs.setdefault("allow_private_network", True)  # some tests name a loopback server
    return OpenAIEmbedder(transport=rec.transport, **kwargs)


def test_request_fields_against_openai() -> None:
    rec = Recorder(echo(1536))
    emb = make(rec, env={"OPENAI_API_KEY": "sk-test"})
    vectors = emb.embed(["alpha", "beta"], titles=["T1", "T2"])

    (request,) = rec.requests
    assert request.method == "POST"
    assert str(request.url) == f"{DEFAULT_BASE_URL}/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.content) == {
        "model": "text-embedding-3-small", "input": ["alpha", "beta"]
    }
    assert vectors == [
        pytest.approx(unit(raw_vector("alpha", 1536))),
        pytest.approx(unit(raw_vector("beta", 1536))),
    ]
    assert str(emb.identity) == "openai/text-embedding-3-small@1536"


def test_spec_dimensions_are_sent_and_enforced() -> None:
    rec = Recorder(echo(256))
    emb = make(rec, dimensions=256, api_key="k")
    emb.embed(["x"])
    assert json.loads(rec.requests[0].content)["dimensions"] == 256

    wrong = Recorder(echo(255))
    with pytest.raises(EmbedderError, match="expected a 256-dimensional vector, got 255"):
        make(wrong, dimensions=256, api_key="k").embed(["x"])


def test_local_server_needs_no_key_and_gets_no_auth_header() -> None:
    rec = Recorder(echo(768))
    emb = make(rec, model="nomic-embed-text", base_url=OLLAMA)
    emb.embed(["hello"])
    (request,) = rec.requests
    assert str(request.url) == f"{OLLAMA}/embeddings"
    assert "authorization" not in request.headers
    assert json.loads(request.content) == {"model": "nomic-embed-text", "input": ["hello"]}


def test_key_from_option_beats_environment_on_any_server() -> None:
    rec = Recorder(echo(4))
    make(rec, base_url=OLLAMA, api_key="opt", env={"OPENAI_API_KEY": "env"}).embed(["x"])
    make(rec, base_url=OLLAMA, env={"OPENAI_API_KEY": "env"}).embed(["x"])
    assert [r.headers["authorization"] for r in rec.requests] == ["Bearer opt", "Bearer env"]


def test_missing_key_against_openai_is_an_auth_error() -> None:
    rec = Recorder(echo(4))
    with pytest.raises(AuthError, match="OPENAI_API_KEY") as info:
        make(rec).embed(["x"])
    assert info.value.exit_code == 3
    assert rec.requests == []


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_key_is_an_auth_error(status: int) -> None:
    rec = Recorder(lambda r: httpx.Response(status, json={"error": {"message": "bad key"}}))
    with pytest.raises(AuthError) as info:
        make(rec, api_key="k").embed(["x"])
    assert str(status) in info.value.message
    assert "OPENAI_API_KEY" in (info.value.hint or "")
    assert len(rec.requests) == 1


def test_batches_follow_batch_size_and_keep_order() -> None:
    texts = [f"text {i}" for i in range(10)]
    rec = Recorder(echo(8, reverse=True))
    vectors = make(rec, base_url=OLLAMA, batch_size=4, dimensions=8).embed(texts)

    inputs = sorted((json.loads(r.content)["input"] for r in rec.requests), key=lambda b: b[0])
    assert inputs == [texts[0:4], texts[4:8], texts[8:10]]
    assert vectors == [pytest.approx(unit(raw_vector(t, 8))) for t in texts]


def test_batches_in_flight_never_exceed_concurrency() -> None:
    rec = Recorder(echo(8), gate=2)
    make(rec, base_url=OLLAMA, batch_size=1, concurrency=2, dimensions=8).embed(
        [f"t{i}" for i in range(9)]
    )
    assert len(rec.requests) == 9
    assert rec.max_active == 2


def test_dimensions_are_learned_from_the_first_response() -> None:
    rec = Recorder(echo(5))
    emb = make(rec, model="nomic-embed-text", base_url=OLLAMA, batch_size=2)
    vectors = emb.embed(["a", "b", "c"])
    assert [len(v) for v in vectors] == [5, 5, 5]
    assert emb.dimensions == 5
    assert str(emb.identity) == "openai/nomic-embed-text@5"
    assert len(rec.requests) == 2
    assert all("dimensions" not in json.loads(r.content) for r in rec.requests)


def test_reading_dimensions_first_sends_one_probe() -> None:
    rec = Recorder(echo(7))
    emb = make(rec, model="bge-m3", base_url=OLLAMA)
    assert emb.dimensions == 7
    assert len(rec.requests) == 1
    assert emb.identity.dimensions == 7
    assert len(rec.requests) == 1  # learned once


def test_learned_width_is_enforced_on_later_responses() -> None:
    widths = iter([6, 6, 9])

    def respond(request: httpx.Request) -> httpx.Response:
        n = next(widths)
        body = json.loads(request.content)
        data = [{"index": i, "embedding": [1.0] * n} for i in range(len(body["input"]))]
        return httpx.Response(200, json={"data": data})

    emb = make(Recorder(respond), base_url=OLLAMA, batch_size=1, concurrency=1)
    with pytest.raises(EmbedderError, match="expected a 6-dimensional vector, got 9"):
        emb.embed(["a", "b", "c"])


def test_embed_query_falls_back_to_document_embedding() -> None:
    rec = Recorder(echo(8))
    emb = make(rec, base_url=OLLAMA, dimensions=8)
    query = emb.embed_query("how do I?")
    (doc,) = emb.embed(["how do I?"])
    first, second = rec.bodies()
    assert first == second == {"model": "text-embedding-3-small", "input": ["how do I?"],
                               "dimensions": 8}
    assert query == doc == pytest.approx(unit(raw_vector("how do I?", 8)))
    assert isinstance(emb, Embedder)


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"data": []},
        {"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]},
        {"data": [{"index": 5, "embedding": [1.0]}, {"index": 1, "embedding": [1.0]}]},
        {"data": [{"index": 0, "embedding": "base64"}, {"index": 1, "embedding": [1.0]}]},
    ],
)
def test_malformed_responses_are_embedder_errors(payload: dict) -> None:
    rec = Recorder(lambda r: httpx.Response(200, json=payload))
    with pytest.raises(EmbedderError):
        make(rec, base_url=OLLAMA).embed(["a", "b"])


def test_server_error_message_is_surfaced() -> None:
    body = {"error": {"message": "model 'nomic' not found, try pulling it first"}}
    rec = Recorder(lambda r: httpx.Response(404, json=body))
    with pytest.raises(EmbedderError, match="try pulling it first"):
        make(rec, model="nomic", base_url=OLLAMA).embed(["a"])


def test_rate_limits_use_the_shared_retry_policy() -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_retries=3, base_delay=1.0, sleep=clock.sleep, random=lambda: 0.0)
    rec = Recorder(sequence(
        httpx.Response(429, headers={"Retry-After": "3"}),
        httpx.Response(500),
        httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.0, 5.0]}]}),
    ))
    assert make(rec, base_url=OLLAMA, retry=policy).embed(["a"]) == [[0.0, 1.0]]
    assert clock.sleeps == [3.0, 1.0]

    failing = Recorder(lambda r: httpx.Response(502))
    emb = make(failing, model="m1", base_url=OLLAMA, retry=policy)
    with pytest.raises(EmbedderError, match="502") as info:
        emb.embed(["a"])
    assert "m1" in info.value.message
    assert len(failing.requests) == 4
