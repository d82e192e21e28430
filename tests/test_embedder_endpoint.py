"""A KB remembers the endpoint its embedder was reached at (never a secret), so a plain
query or a cron resync uses it without being told; an explicit base URL still wins."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import httpx
import pytest

from kbctl.embed.openai import OpenAIEmbedder
from kbctl.errors import ConfigError, EmbedderError
from kbctl.net.endpoint import checked_endpoint, public_endpoint
from kbctl.net.retry import RetryPolicy

from .conftest import Cli, rows
from .embed_fakes import public_dns
from .test_hybrid import openai_server  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint where nothing listens is retried as in production, without the waits
    between attempts (three refused commands waited 15 s)."""
    monkeypatch.setattr("kbctl.embed.openai.RetryPolicy",
                        partial(RetryPolicy, sleep=lambda _seconds: None))


def test_public_endpoint_drops_what_could_hold_a_key() -> None:
    assert public_endpoint("http://user:s3cret@127.0.0.1:8799/v1/?key=abc#x") == \
        "http://127.0.0.1:8799/v1"
    assert public_endpoint("https://[::1]:11434/v1") == "https://[::1]:11434/v1"
    assert public_endpoint("http://127.0.0.1:99999/v1") == "http://127.0.0.1/v1"  # never raises


@pytest.mark.parametrize("bad", ["notaurl", "ftp://x/v1", "http:///v1", "http://h:99999/v1",
                                 "http://u:s3cret@h:x/v1"])
def test_a_base_url_that_is_no_http_endpoint_is_bad_input_without_its_secret(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        checked_endpoint(bad, "embedder base URL")
    assert info.value.exit_code == 2 and "s3cret" not in str(info.value)
    with pytest.raises(ConfigError):
        OpenAIEmbedder("m", base_url=bad)
    assert checked_endpoint(" http://h:8/v1/ ", "x") == "http://h:8/v1"


def test_a_failing_provider_is_named_without_the_credentials_in_its_url() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="down")

    embedder = OpenAIEmbedder("m", base_url="http://ops:s3cret@embed.internal/v1",
                              transport=httpx.MockTransport(refuse), max_retries=0,
                              resolver=public_dns)
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["text"])
    assert "at http://embed.internal/v1" in str(info.value) and "s3cret" not in str(info.value)


def test_later_commands_reach_the_recorded_endpoint(
        cli: Cli, workdir: Path, openai_server: tuple[str, list[dict]]) -> None:  # noqa: F811
    base, seen = openai_server
    with_secret = base.replace("http://", "http://ops:s3cret@")
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Install\n\n## With pnpm\n\npnpm add widget\n")
    report = cli.json("ingest", "files", str(docs), "--embedder", "openai:fake-model@24",
                      "--embedder-base-url", with_secret, "--allow-private-network")
    assert report["embedded"] == 1 and len(seen) == 1
    assert rows(cli.db_url, "SELECT value ->> 'baseUrl' FROM kb_meta") == [(base,)]
    assert not rows(cli.db_url, "SELECT 1 FROM kb_meta WHERE value::text LIKE %s", "%s3cret%")
    assert cli.json("status")["embedderEndpoint"] == base

    # no flag, no env: the query embeds its question at the recorded endpoint
    out = cli.json("query", "install with pnpm")
    assert out["mode"] == "hybrid" and len(seen) == 2
    # a cron resync too
    (docs / "a.md").write_text("# Install\n\n## With pnpm\n\npnpm add widget --global\n")
    assert cli.json("resync")["totals"]["updated"] == 1 and len(seen) == 3

    # an explicit base URL wins over the recorded one (here: nothing listens there)
    moved = cli("query", "install", "--embedder-base-url", "http://127.0.0.1:9/v1",
                "--allow-private-network")
    assert moved.exit_code == 3 and len(seen) == 3
    # a read does not record it; the KB still reaches its own endpoint
    assert cli.json("status")["embedderEndpoint"] == base


def test_a_write_with_a_new_endpoint_records_it(
        cli: Cli, workdir: Path, openai_server: tuple[str, list[dict]],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    base, seen = openai_server
    cli.json("ingest", "text", "pnpm add widget", "--ref", "a", "--allow-private-network",
             "--embedder", "openai:fake-model@24", "--embedder-base-url", base)
    other = base.replace("127.0.0.1", "localhost")
    monkeypatch.setenv("KBCTL_EMBEDDER_BASE_URL", other)
    # another loopback endpoint: the opt-in is given again for it
    result = cli("ingest", "text", "widget upgrade", "--ref", "b", "--allow-private-network")
    assert result.exit_code == 0, result.output
    assert f"reaches its embedder at {other}" in result.stderr
    monkeypatch.delenv("KBCTL_EMBEDDER_BASE_URL")
    assert cli.json("status")["embedderEndpoint"] == other
    # a re-embed to another embedder forgets the old endpoint unless it is given again
    cli.json("reembed", "--embedder", "openai:fake-model-2@24", "--embedder-base-url", base,
             "--allow-private-network")
    assert cli.json("status")["embedderEndpoint"] == base
    cli.json("reembed", "--embedder", "none")
    assert cli.json("status")["embedderEndpoint"] is None


def test_a_failed_write_does_not_record_its_endpoint(
        cli: Cli, workdir: Path, openai_server: tuple[str, list[dict]],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A mistyped KBCTL_EMBEDDER_BASE_URL in one failed job was recorded before the first
    request, and every later command of the KB (cron, MCP) reached it, and failed."""
    base, seen = openai_server
    (workdir / "kbctl.yaml").write_text("allow_private_network: true\n")  # loopback servers
    cli.json("ingest", "text", "pnpm add widget", "--ref", "a",
             "--embedder", "openai:fake-model@24", "--embedder-base-url", base)
    monkeypatch.setenv("KBCTL_EMBEDDER_BASE_URL", "http://127.0.0.1:9/v1")  # nothing there
    failed = cli("ingest", "text", "widget upgrade", "--ref", "b")
    assert failed.exit_code != 0 and "reaches its embedder" not in failed.stderr
    assert cli("memory", "append", "memory/agent/n.md", "a note", "--agent", "bot"
               ).exit_code == 3
    # with the embedder down, memory health says so (it said ok)
    health = cli("memory", "health", "--agent", "bot", "--json")
    assert health.exit_code == 3 and "the embedder does not embed" in health.stdout
    monkeypatch.delenv("KBCTL_EMBEDDER_BASE_URL")
    assert cli.json("status")["embedderEndpoint"] == base
    assert cli.json("query", "widget")["mode"] == "hybrid"
