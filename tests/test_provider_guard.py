"""Provider endpoints (embedders, rerankers) pass the same SSRF guard as fetches: cloud
metadata refused always, private and loopback hosts only with the opt-in, the refusal
before any connection and naming the rule, the vetted address the one connected to, no
key across a redirect, and ``status`` naming the host each key goes to. Real loopback
servers, and injected transports where an address must not be reached."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from kbctl.embed.gemini import GeminiEmbedder
from kbctl.embed.openai import OpenAIEmbedder
from kbctl.errors import ConfigError, EmbedderError
from kbctl.rerank.registry import create_reranker
from tests.conftest import Cli, rows
from tests.embed_fakes import Recorder
from tests.http_server import LocalServer, Request, Response, ok, redirect

PRIVATE = "--allow-private-network"
METADATA = ["169.254.169.254", "fd00:ec2::23", "::ffff:a9fe:a9fe", "169.254.170.2"]


def embeddings(request: Request) -> Response:
    count = len(json.loads(request.body)["input"])
    return ok(json.dumps({"data": [{"index": i, "embedding": [1.0, 0.5, 0.25]}
                                   for i in range(count)]}), "application/json")


def answering() -> Recorder:
    return Recorder(lambda r: httpx.Response(200, json={"data": [
        {"index": 0, "embedding": [1.0, 0.0]}]}))


def _url(address: str) -> str:
    return f"http://[{address}]/v1" if ":" in address else f"http://{address}/v1"


@pytest.mark.parametrize("address", METADATA)
def test_a_metadata_endpoint_is_refused_before_any_connection_even_with_the_opt_in(
        address: str) -> None:
    rec = answering()
    with pytest.raises(ConfigError) as info:
        OpenAIEmbedder("m", base_url=_url(address), transport=rec.transport,
                       allow_private_network=True, api_key="sk-secret")
    assert "cloud metadata endpoint" in info.value.message
    assert info.value.exit_code == 2 and rec.requests == []


@pytest.mark.parametrize("address", METADATA + ["10.1.2.3", "127.0.0.1"])
def test_a_name_that_resolves_to_a_refused_address_is_refused_before_connecting(
        address: str) -> None:
    rec = answering()
    lookups: list[str] = []

    def resolver(host: str) -> list[str]:
        lookups.append(host)
        return [address]

    embedder = OpenAIEmbedder("m", base_url="https://embed.example.org/v1", api_key="sk-x",
                              transport=rec.transport, resolver=resolver, max_retries=0)
    with pytest.raises(ConfigError) as info:
        embedder.embed(["text"])
    assert "embed.example.org" in info.value.message and address.split(":")[-1] in (
        info.value.message)
    assert rec.requests == [] and lookups == ["embed.example.org"]


def test_a_reranker_is_guarded_the_same_way() -> None:
    rec = answering()
    with pytest.raises(ConfigError, match="cloud metadata"):
        create_reranker("cohere:m", base_url="http://[::ffff:169.254.169.254]/v2",
                        transport=rec.transport, allow_private_network=True)
    with pytest.raises(ConfigError, match="loopback") as info:
        create_reranker("tei:m", base_url="http://127.0.0.1:9", transport=rec.transport)
    assert "--allow-private-network" in (info.value.hint or "")
    with pytest.raises(ConfigError, match="metadata"):
        GeminiEmbedder(base_url="http://metadata.google.internal/v1beta",
                       transport=rec.transport, allow_private_network=True)
    assert rec.requests == []


def test_loopback_needs_the_opt_in_and_the_vetted_address_is_the_one_connected_to() -> None:
    with LocalServer({"/v1/embeddings": embeddings}) as server:
        with pytest.raises(ConfigError, match=r"127\.0\.0\.1 is loopback"):
            OpenAIEmbedder("m", base_url=server.url("/v1"))
        asked: list[str] = []

        def resolver(host: str) -> list[str]:
            asked.append(host)
            return ["127.0.0.1"]

        named = f"http://embed.internal:{server.port}/v1"
        embedder = OpenAIEmbedder("m", base_url=named, allow_private_network=True,
                                  resolver=resolver, api_key="sk-local")
        assert embedder.embed(["a", "b"]) and embedder.embed_query("q")
        embedder.close()
    assert asked == ["embed.internal", "embed.internal"]  # once per request, no second look
    hosts = {r.headers["host"] for r in server.requests}
    assert hosts == {f"embed.internal:{server.port}"}
    assert {r.headers["authorization"] for r in server.requests} == {"Bearer sk-local"}


def test_a_key_never_follows_a_redirect() -> None:
    with LocalServer({"/v1/embeddings": embeddings}) as elsewhere, LocalServer() as first:
        first.routes["/v1/embeddings"] = redirect(elsewhere.url("/v1/embeddings"), 307)
        embedder = OpenAIEmbedder("m", base_url=first.url("/v1"), api_key="sk-secret",
                                  allow_private_network=True, max_retries=0)
        with pytest.raises(EmbedderError) as info:
            embedder.embed(["text"])
        embedder.close()
    assert "redirects to" in info.value.message and "does not follow" in info.value.message
    assert len(first.requests) == 1 and elsewhere.requests == []


# --- the command line: exit 2 naming where the value came from ---------------------------


@pytest.mark.parametrize(("how", "needle"), [
    (["--embedder-base-url", "http://169.254.169.254/v1"], "cloud metadata endpoint"),
    (["--embedder-base-url", "http://[fd00:ec2::23]/v1"], "AWS EKS Pod Identity"),
    (["--embedder-base-url", "http://[::ffff:a9fe:a9fe]/v1"], "embeds 169.254.169.254"),
    (["--embedder-base-url", "http://[::1/v1"], "not a valid URL"),
    (["--rerank", "tei:m", "--rerank-base-url", "http://169.254.170.2/"], "ECS task"),
    (["--embedder-base-url", "http://127.0.0.1:9/v1"], "127.0.0.1 is loopback"),
])
def test_a_refused_endpoint_on_the_command_line_is_exit_2(cli: Cli, how: list[str],
                                                          needle: str) -> None:
    cli("ingest", "text", "widgets frobnicate", "--ref", "a")
    result = cli("query", "widgets", "--embedder", "openai:m", *how)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and "Traceback" not in result.output


def test_a_refused_endpoint_in_the_environment_or_kbctl_yaml_names_it(
        cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBCTL_EMBEDDER_BASE_URL", "http://[fd00:ec2::254]/v1")
    result = cli("ingest", "text", "x", "--ref", "a", "--embedder", "openai:m", PRIVATE)
    assert result.exit_code == 2
    assert "KBCTL_EMBEDDER_BASE_URL" in result.stderr and "metadata" in result.stderr
    monkeypatch.delenv("KBCTL_EMBEDDER_BASE_URL")
    (workdir / "kbctl.yaml").write_text("namespace: n\nrerank_base_url: http://[::1/v1\n")
    result = cli("query", "x")
    assert result.exit_code == 2 and "kbctl.yaml:2" in result.stderr, result.output
    assert "Traceback" not in result.output


def test_the_opt_in_is_remembered_for_the_endpoint_it_was_given_for(
        cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LocalServer({"/v1/embeddings": embeddings}) as server, \
            LocalServer({"/v1/embeddings": embeddings}) as other:
        base = server.url("/v1")
        cli.json("ingest", "text", "widgets frobnicate", "--ref", "a", "--embedder",
                 "openai:m@3", "--embedder-base-url", base, PRIVATE)
        assert rows(cli.db_url, "SELECT value ->> 'privateNetwork' FROM kb_meta "
                                "WHERE value ? 'baseUrl'") == [("true",)]
        # a query and a resync reach the recorded endpoint without being told again
        assert cli.json("query", "widgets")["mode"] == "hybrid"
        assert cli.json("query", "widgets", "--embedder-base-url", base)["mode"] == "hybrid"
        # another loopback endpoint is not covered by it
        moved = cli("query", "widgets", "--embedder-base-url", other.url("/v1"))
        assert moved.exit_code == 2 and "loopback" in moved.stderr
        assert other.requests == []
        status = cli.json("status")
    assert status["keys"] == [{"provider": "embedder openai/m@3",
                               "host": f"127.0.0.1:{server.port}",
                               "variables": ["OPENAI_API_KEY"]}]
