from __future__ import annotations

import json

import httpx
import pytest

from kbctl.embed import local as local_module
from kbctl.embed.base import Embedder
from kbctl.embed.gemini import GeminiEmbedder
from kbctl.embed.openai import OpenAIEmbedder
from kbctl.embed.registry import EmbedderSpec, create_embedder, default_spec, parse_spec
from kbctl.errors import ConfigError, EmbedderError
from tests.embed_fakes import Recorder


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("gemini", EmbedderSpec("gemini", "gemini-embedding-2", None)),
        ("gemini:gemini-embedding-001@768",
         EmbedderSpec("gemini", "gemini-embedding-001", 768)),
        ("gemini@3072", EmbedderSpec("gemini", "gemini-embedding-2", 3072)),
        ("openai:text-embedding-3-small",
         EmbedderSpec("openai", "text-embedding-3-small", None)),
        ("openai:nomic-embed-text", EmbedderSpec("openai", "nomic-embed-text", None)),
        ("openai", EmbedderSpec("openai", "text-embedding-3-small", None)),
        ("local:BAAI/bge-small-en-v1.5", EmbedderSpec("local", "BAAI/bge-small-en-v1.5", None)),
        ("local:/models/my@model/dir", EmbedderSpec("local", "/models/my@model/dir", None)),
        ("local:/models/dir@384", EmbedderSpec("local", "/models/dir", 384)),
        ("  Gemini:gemini-embedding-001  ", EmbedderSpec("gemini", "gemini-embedding-001", None)),
        ("none", EmbedderSpec("none", "none", None)),
        ("NONE", EmbedderSpec("none", "none", None)),
        # as status and reports show a KB's embedder, taken back as shown
        ("openai/text-embedding-3-small@1536",
         EmbedderSpec("openai", "text-embedding-3-small", 1536)),
        ("local/BAAI/bge-small-en-v1.5@384", EmbedderSpec("local", "BAAI/bge-small-en-v1.5", 384)),
    ],
)
def test_parse_spec(spec: str, expected: EmbedderSpec) -> None:
    assert parse_spec(spec) == expected


def test_an_identity_as_shown_is_a_spec() -> None:
    from kbctl.embed.base import EmbedderIdentity

    shown = str(EmbedderIdentity("openai", "BAAI/bge-small-en-v1.5", 384))
    assert parse_spec(shown) == EmbedderSpec("openai", "BAAI/bge-small-en-v1.5", 384)


def test_spec_round_trips_through_str() -> None:
    for text in ["gemini:gemini-embedding-001@768", "openai:nomic-embed-text", "none"]:
        assert str(parse_spec(text)) == text
        assert parse_spec(str(parse_spec(text))) == parse_spec(text)


@pytest.mark.parametrize(
    "spec",
    ["", "   ", "gemini:", "gemini@0", "gemini@x", "gemini:model@", "cohere:embed-v3",
     "none:x", ":model", "gem ini", "none@768"],
)
def test_malformed_or_unknown_specs_raise_config_error_naming_the_spec(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec(spec)
    assert info.value.exit_code == 2
    if spec.strip():
        assert repr(spec) in info.value.message
    with pytest.raises(ConfigError):
        create_embedder(spec)


def test_none_creates_no_embedder() -> None:
    assert create_embedder("none") is None


def test_create_gemini_without_a_key() -> None:
    emb = create_embedder("gemini")
    assert isinstance(emb, GeminiEmbedder)
    assert isinstance(emb, Embedder)
    assert str(emb.identity) == "gemini/gemini-embedding-2@1536"


def test_create_passes_model_dimensions_url_key_and_options_through() -> None:
    rec = Recorder(lambda r: httpx.Response(200, json={"embedding": {"values": [1.0] * 768}}))
    emb = create_embedder(
        "gemini:gemini-embedding-001@768", base_url="http://127.0.0.1:9/v1beta",
        api_key="k", transport=rec.transport, concurrency=2, allow_private_network=True,
    )
    assert isinstance(emb, GeminiEmbedder)
    assert emb.concurrency == 2
    emb.embed(["x"])
    (request,) = rec.requests
    assert str(request.url) == "http://127.0.0.1:9/v1beta/models/gemini-embedding-001:embedContent"
    assert request.headers["x-goog-api-key"] == "k"
    assert json.loads(request.content)["outputDimensionality"] == 768


def test_create_openai_compatible_local_server() -> None:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.0, 3.0, 4.0]}]})

    rec = Recorder(respond)
    emb = create_embedder(
        "openai:nomic-embed-text", base_url="http://127.0.0.1:11434/v1",
        transport=rec.transport, batch_size=16, env={}, allow_private_network=True,
    )
    assert isinstance(emb, OpenAIEmbedder)
    assert emb.batch_size == 16
    assert emb.embed_query("q") == pytest.approx([0.0, 0.6, 0.8])
    assert str(rec.requests[0].url) == "http://127.0.0.1:11434/v1/embeddings"
    assert str(emb.identity) == "openai/nomic-embed-text@3"


def test_unknown_option_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="batch_size"):
        create_embedder("gemini", batch_size=10)
    with pytest.raises(ConfigError, match="frobnicate"):
        create_embedder("openai", frobnicate=True)


def test_bad_option_value_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        create_embedder("gemini", concurrency=0)


def test_local_takes_no_base_url_or_key() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        create_embedder("local:BAAI/bge-small-en-v1.5", base_url="http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="api_key"):
        create_embedder("local:BAAI/bge-small-en-v1.5", api_key="k")


def test_local_without_the_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_module, "fastembed_available", lambda: False)
    with pytest.raises(EmbedderError) as info:
        create_embedder("local:BAAI/bge-small-en-v1.5")
    assert "pip install 'kbctl[local]'" in (info.value.hint or "")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"GEMINI_API_KEY": "k"}, "gemini"),
        ({"GOOGLE_GENERATIVE_AI_API_KEY": "k"}, "gemini"),
        ({"GEMINI_API_KEY": ""}, "none"),
        ({"OPENAI_API_KEY": "k"}, "none"),
        ({}, "none"),
    ],
)
def test_default_spec(env: dict[str, str], expected: str) -> None:
    assert default_spec(env) == expected
    assert parse_spec(default_spec(env)).provider == expected


def test_a_new_provider_is_one_module_and_one_registry_line(
        monkeypatch: pytest.MonkeyPatch, cli) -> None:
    from kbctl.embed.registry import PROVIDERS, Provider
    from tests import embed_provider

    monkeypatch.setitem(PROVIDERS, "test", Provider(embed_provider.hashing_embedder,
                                                    embed_provider.DEFAULT_MODEL, remote=False))

    assert parse_spec("test@32") == EmbedderSpec("test", "hashing-v1", 32)
    embedder = create_embedder("test:hashing-v2@32")
    assert embedder is not None and str(embedder.identity) == str(
        embed_provider.hashing_embedder("hashing-v2", dimensions=32).identity)
    with pytest.raises(ConfigError, match="the test provider takes no base_url"):
        create_embedder("test", base_url="http://127.0.0.1:1/v1")

    # the whole product picks it up: ingest binds it, query uses it without being told
    report = cli.json("ingest", "text", "Closures capture their environment by borrow.",
                      "--ref", "notes/closures", "--embedder", "test@32")
    assert report["embedder"] == "test/hashing-v1@32"
    result = cli.json("query", "how do closures capture values")
    assert result["mode"] == "hybrid"
    assert result["results"][0]["vectorScore"] is not None


def test_the_registry_names_each_provider_and_its_default_model_as_its_module_does() -> None:
    """Providers are named, not imported (a lexical query loads no HTTP client): the name
    must lead to the class, and the default model be the module's own."""
    import importlib

    from kbctl.embed.registry import PROVIDERS

    for name, provider in PROVIDERS.items():
        assert isinstance(provider.factory, str), name
        module_name, _, attribute = provider.factory.partition(":")
        module = importlib.import_module(module_name)
        assert provider.build() is getattr(module, attribute)
        assert provider.default_model == module.DEFAULT_MODEL, name
