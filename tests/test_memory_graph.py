"""Graph memory on the real embedded engine (Graphiti over Kùzu) with a language-model
stand-in on 127.0.0.1: facts across files, facts that change, partitions per scope, the
composite, the CLI, the tools, and failures that write nothing."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("graphiti_core", reason="the graph extra is not installed")
pytest.importorskip("kuzu", reason="the graph extra is not installed")

from kbctl.agent.session import AgentTools  # noqa: E402
from kbctl.config import Settings, resolve_settings  # noqa: E402
from kbctl.errors import ConfigError, EnvironmentFailure  # noqa: E402
from kbctl.memory.graph import GraphMemoryBackend, group_of, open_graph  # noqa: E402
from kbctl.memory.llm import make_model  # noqa: E402
from kbctl.memory.model import SearchOptions  # noqa: E402
from kbctl.memory.paths import MemoryScope  # noqa: E402

from . import test_memory_isolation as iso  # noqa: E402
from .conftest import Cli, rows  # noqa: E402
from .embedders import HashingEmbedder  # noqa: E402
from .graph_model import StandInModel, stand_in_model  # noqa: E402

ALICE, BOB, AGENT = MemoryScope("bot", "alice"), MemoryScope("bot", "bob"), MemoryScope("bot")
OTHER = MemoryScope("otherbot", "alice")


@pytest.fixture
def model() -> Iterator[StandInModel]:
    with stand_in_model() as m:
        yield m


def graph_backend(path: Path, model: StandInModel) -> GraphMemoryBackend:
    chat = make_model("openai:stand-in", model.url, allow_private_network=True, timeout_s=30)
    return open_graph(str(path), url=False, model=chat, embedder=HashingEmbedder(),
                      timeout_s=60, writing=True)


@pytest.fixture
def graph(tmp_path: Path, model: StandInModel) -> Iterator[GraphMemoryBackend]:
    backend = graph_backend(tmp_path / "graph", model)
    yield backend
    backend.close()


def test_a_changed_fact_is_current_first_with_its_history(graph: GraphMemoryBackend,
                                                          model: StandInModel) -> None:
    graph.append(ALICE, "memory/user/notes.md", "Alice works on team Falcon.")
    graph.append(ALICE, "memory/user/other.md", "Alice likes green tea.")
    wrote = graph.append(ALICE, "memory/user/notes.md", "Alice works on team Heron.")
    assert (wrote.status, wrote.lines, wrote.chunks) == ("appended", 2, 2)
    hits = graph.search(ALICE, "Alice works on team", SearchOptions(max_results=5)).hits
    teams = [h for h in hits if "team" in h.content]
    assert [h.content for h in teams] == ["Alice works on team Heron",
                                          "Alice works on team Falcon"]
    now, old = teams
    assert now.current and now.invalid_at is None and now.backend == "graph"
    assert not old.current and old.invalid_at == now.valid_at and old.valid_at < now.valid_at
    assert (now.citation, old.citation) == ("memory/user/notes.md#L2-L2",
                                            "memory/user/notes.md#L1-L1")
    assert all(0 <= h.score <= 1 for h in hits) and old.score <= now.score
    # the citation is what `get` shows
    assert graph.get(ALICE, "memory/user/notes.md", from_line=2, lines=1).text == (
        "Alice works on team Heron.")
    asked = {r["name"] for r in model.requests}
    assert {"ExtractedEntities", "ExtractedEdges", "EdgeDuplicate"} <= asked


def test_each_scope_is_a_partition_of_its_own(graph: GraphMemoryBackend) -> None:
    graph.append(AGENT, "memory/agent/teams.md", "Falcon owns the Billing service.")
    graph.append(ALICE, "memory/user/notes.md", "Alice keeps the Vault key zqalice.")
    graph.append(BOB, "memory/user/notes.md", "Bob keeps the Vault key zqbob.")
    graph.append(OTHER, "memory/agent/teams.md", "Osprey owns the Billing service.")
    for scope, sees, never in ((ALICE, "zqalice", "zqbob"), (BOB, "zqbob", "zqalice")):
        found = graph.search(scope, "Vault key zqalice zqbob", SearchOptions(max_results=20))
        text = " ".join(h.content for h in found.hits)
        assert sees in text and never not in text
        shared = graph.search(scope, "who owns Billing", SearchOptions(max_results=20)).hits
        assert [h.content for h in shared] == ["Falcon owns the Billing service"]
        assert shared[0].tier == "agent"
    assert graph.search(MemoryScope("otherbot"), "Vault key").hits == []
    # stored in the writer's partition, a database of its own, whatever the text says
    made = {Path(p).name for p in graph.parts.made()}
    assert made == {f"{group_of(s, t)}.kuzu" for s, t in ((AGENT, "agent"), (ALICE, "user"),
                                                          (BOB, "user"), (OTHER, "agent"))}
    engine, _ = graph.parts.get(group_of(BOB, "user"), create=False)
    stored = engine.run(engine.rows("MATCH (e:Episodic) RETURN e.group_id AS g, "
                                    "e.content AS c"), 30, "test")
    assert stored == [{"g": group_of(BOB, "user"), "c": "Bob keeps the Vault key zqbob."}]
    assert group_of(OTHER, "agent") != group_of(AGENT, "agent")
    with pytest.raises(Exception) as info:
        graph.get(BOB, "memory/agent/../user/notes.md")
    assert getattr(info.value, "exit_code", None) == 2


def test_a_failing_model_writes_nothing(graph: GraphMemoryBackend,
                                        model: StandInModel) -> None:
    graph.append(ALICE, "memory/user/notes.md", "Alice works on team Falcon.")
    before = graph.health().details
    model.fail_with = 400
    with pytest.raises(EnvironmentFailure) as info:
        graph.append(ALICE, "memory/user/notes.md", "Alice works on team Heron.")
    assert info.value.exit_code == 3 and "HTTP 400" in info.value.message
    model.fail_with = None
    after = graph.health().details
    assert {k: after[k] for k in ("files", "episodes", "facts", "currentFacts")} == {
        k: before[k] for k in ("files", "episodes", "facts", "currentFacts")}
    assert graph.get(ALICE, "memory/user/notes.md").text == "Alice works on team Falcon."


def test_health_names_engine_model_and_counts(graph: GraphMemoryBackend,
                                              model: StandInModel) -> None:
    graph.append(ALICE, "memory/user/notes.md", "Alice works on team Falcon.")
    health = graph.health()
    assert health.ok and health.details["engine"].startswith("kuzu ")
    assert health.details["model"] == "openai:stand-in"
    assert (health.details["episodes"], health.details["facts"]) == (1, 1)
    model.fail_with = 400
    sick = graph.health()
    assert not sick.ok and "language model" in (sick.error or "")


def test_wire_formats_keys_and_the_endpoint_guard(model: StandInModel) -> None:
    schema = {"type": "object", "title": "Probe",
              "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    openai = make_model("openai:m1", model.url, allow_private_network=True, timeout_s=10,
                        env={"KBCTL_MEMORY_GRAPH_MODEL_API_KEY": "k1"})
    assert openai.complete_json("sys", "hi", name="Probe", schema=schema,
                                max_tokens=5) == {"ok": True}
    gemini = make_model("gemini:m2", model.url.replace("/v1", "/v1beta"),
                        allow_private_network=True, timeout_s=10,
                        env={"GEMINI_API_KEY": "k2"})
    assert gemini.complete_json("sys", "hi", name="Probe", schema=schema,
                                max_tokens=5) == {"ok": True}
    first, second = model.requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer k1"
    body = first["body"]
    assert body["model"] == "m1" and body["messages"][0] == {"role": "system",
                                                            "content": "sys"}
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "Probe", "schema": schema}}
    assert second["path"] == "/v1beta/models/m2:generateContent" and second["auth"] == "k2"
    config = second["body"]["generationConfig"]
    assert config["responseJsonSchema"] == schema
    assert config["responseMimeType"] == "application/json"
    with pytest.raises(ConfigError) as info:  # loopback needs the same opt-in as fetches
        make_model("openai:m1", model.url, allow_private_network=False, timeout_s=10)
    assert info.value.exit_code == 2
    with pytest.raises(ConfigError):
        make_model("claude:m", None, allow_private_network=False, timeout_s=10)


# --- the product: config, CLI, composite, tools --------------------------------------------


@pytest.fixture
def project(cli: Cli, workdir: Path, model: StandInModel,
            monkeypatch: pytest.MonkeyPatch) -> Cli:
    from kbctl.embed.registry import PROVIDERS, Provider
    from tests import embed_provider
    monkeypatch.setitem(PROVIDERS, "test", Provider(embed_provider.hashing_embedder,
                                                    embed_provider.DEFAULT_MODEL,
                                                    remote=False))
    (workdir / "kbctl.yaml").write_text(
        "allow_private_network: true\nagent: bot\nmemory:\n  backend: graph\n  graph:\n"
        f"    model: openai:stand-in\n    model_base_url: {model.url}\n"
        f"    path: {workdir / 'g'}\n")
    return cli


def test_cli_runs_on_the_configured_graph(project: Cli) -> None:
    wrote = project.json("memory", "append", "memory/user/notes.md",
                         "Alice works on team Falcon.", "--user", "alice",
                         "--embedder", "test@32")
    assert wrote["status"] == "created"
    project("memory", "append", "memory/user/notes.md", "Alice works on team Heron.",
            "--user", "alice")
    found = project.json("memory", "search", "Alice works on team", "--user", "alice")
    assert found["backend"] == "graph"
    top, old = found["results"][:2]
    assert (top["content"], top["current"], top["invalidAt"]) == (
        "Alice works on team Heron", True, None)
    assert (old["current"], old["invalidAt"]) == (False, top["validAt"])
    assert top["citation"] == "memory/user/notes.md#L2-L2" and top["backend"] == "graph"
    assert project.json("memory", "search", "Alice team", "--user", "bob")["results"] == []
    got = project.json("memory", "get", "memory/user/notes.md", "--from", "2", "--lines",
                       "1", "--user", "alice")
    assert got["text"] == "Alice works on team Heron." and got["backend"] == "graph"
    health = project.json("memory", "health")
    assert health["kind"] == "graph" and health["details"]["facts"] == 2
    assert health["settings"]["backend"] == "graph"
    # nothing went to the vector table
    assert rows(project.db_url, "SELECT count(*) FROM memory_files") == [(0,)]


def test_composite_merges_tags_and_survives_a_failing_model(project: Cli,
                                                           model: StandInModel) -> None:
    flags = ("--backend", "composite", "--user", "alice")
    project.json("memory", "append", "memory/user/notes.md", "Alice works on team Falcon.",
                 *flags, "--embedder", "test@32")
    project.json("memory", "append", "memory/agent/teams.md",
                 "Falcon owns the Billing service.", *flags)
    found = project.json("memory", "search", "Falcon team Billing", *flags)
    assert found["backend"] == "composite"
    cited = [r["citation"] for r in found["results"]]
    assert len(cited) == len(set(cited))  # one entry per citation: folded across backends
    tags = {r["backend"] for r in found["results"]} | {
        t for r in found["results"] for t in r.get("alsoIn", [])}
    assert tags == {"postgres", "graph"}
    assert all(0 <= r["score"] <= 1 for r in found["results"])
    model.fail_with = 400
    wrote = project.json("memory", "append", "memory/user/notes.md",
                         "Alice works on team Heron.", *flags)
    assert wrote["status"] == "appended"
    assert any(n.startswith("graph: not written") for n in wrote["notes"])
    model.fail_with = None
    assert rows(project.db_url, "SELECT content FROM memory_files WHERE path = "
                "'memory/user/notes.md'") == [
        ("Alice works on team Falcon.\nAlice works on team Heron.\n",)]
    graph_only = project.json("memory", "get", "memory/user/notes.md", "--backend", "graph",
                              "--user", "alice")
    assert graph_only["text"] == "Alice works on team Falcon."  # no half-read episode


def test_composite_with_an_engine_that_fails_answers_from_vectors(project: Cli,
                                                                  workdir: Path) -> None:
    project.json("memory", "append", "memory/user/notes.md", "Alice works on team Falcon.",
                 "--backend", "postgres", "--user", "alice", "--embedder", "test@32")
    broken = workdir / "broken.kuzu"
    broken.write_text("this is no graph database")
    text = (workdir / "kbctl.yaml").read_text().replace(str(workdir / "g"),
                                                         str(broken))
    (workdir / "kbctl.yaml").write_text(text)
    found = project.json("memory", "search", "Alice team", "--backend", "composite",
                         "--user", "alice")
    assert [r["backend"] for r in found["results"]] == ["postgres"]
    assert any(n.startswith("graph: not searched") for n in found["notes"])
    health = project("memory", "health", "--backend", "composite", "--json")
    assert health.exit_code == 3
    details = json.loads(health.stdout)["details"]
    assert details["postgres"]["ok"] and not details["graph"]["ok"]


def test_choosing_graph_without_the_extra_is_bad_usage(
        project: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.startswith(("kbctl.memory.graph",
                                                         "graphiti_core"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "graphiti_core", None)
    for command in (("memory", "search", "x", "--backend", "graph"),
                    ("memory", "health", "--backend", "composite")):
        result = project(*command)
        assert result.exit_code == 2, result.output
        assert "kbctl[graph]" in result.output
    assert project("memory", "append", "memory/agent/a.md", "x", "--backend", "postgres",
                   "--embedder", "test@32").exit_code == 0


def test_env_and_config_choose_the_backend(tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text("memory:\n  backend: composite\n  graph:\n"
                                         "    model: gemini:g1\n    timeout_s: 30\n")
    m = resolve_settings({}, env={}, cwd=tmp_path).memory
    assert (m.backend, m.graph.model, m.graph.timeout_s) == ("composite", "gemini:g1", 30.0)
    env = {"KBCTL_MEMORY_BACKEND": "graph", "KBCTL_MEMORY_GRAPH_MODEL": "openai:o1"}
    m = resolve_settings({}, env=env, cwd=tmp_path).memory
    assert (m.backend, m.graph.model) == ("graph", "openai:o1")
    assert resolve_settings({"memory": {"backend": "postgres"}}, env=env,
                            cwd=tmp_path).memory.backend == "postgres"
    for body, what in (("memory:\n  backend: vectors\n", "memory.backend"),
                       ("memory:\n  graph:\n    model: llama\n", "memory.graph.model"),
                       ("memory:\n  graph:\n    colour: 1\n", "unknown key")):
        (tmp_path / "kbctl.yaml").write_text(body)
        with pytest.raises(ConfigError) as info:
            resolve_settings({}, env={}, cwd=tmp_path)
        assert what in info.value.message and "kbctl.yaml:" in info.value.message


def test_tools_run_on_the_graph_with_their_specs_unchanged(project: Cli,
                                                           workdir: Path) -> None:
    project.json("memory", "append", "memory/user/notes.md", "Alice works on team Falcon.",
                 "--user", "alice", "--embedder", "test@32")
    base = resolve_settings({"db_url": project.db_url, "user": "alice"}, cwd=workdir)
    with AgentTools(base) as tools:
        graph_specs = [s.name for s in tools.specs]
        wrote = tools.call("memory_append", {"path": "memory/user/notes.md",
                                             "content": "Alice works on team Heron."})
        assert not wrote.is_error, wrote.text
        found = tools.call("memory_search", {"query": "Alice works on team"})
        assert found.data["results"][0]["content"] == "Alice works on team Heron"
        assert found.data["results"][0]["citation"] == "memory/user/notes.md#L2-L2"
    with AgentTools(Settings(db_url=project.db_url, agent="bot", user="alice")) as tools:
        assert [s.name for s in tools.specs] == graph_specs


# --- isolation as a property, as for the vector backend ------------------------------------


@pytest.fixture
def pg_conn(db_url: str) -> Iterator[Any]:
    from kbctl.store.db import connect
    c = connect(db_url)
    yield c
    c.close()


@pytest.mark.parametrize("kind", ["graph", "composite"])
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(iso.append_op, iso.search_op), min_size=1, max_size=10))
def test_nobody_sees_another_users_or_agents_facts(pg_conn: Any, tmp_path: Path,
                                                   model: StandInModel, kind: str,
                                                   ops: list[tuple]) -> None:
    from kbctl.memory.composite import CompositeMemoryBackend
    from kbctl.memory.postgres import PostgresMemoryBackend

    graph = graph_backend(tmp_path / f"iso-{uuid.uuid4().hex}", model)
    backend: Any = graph
    if kind == "composite":
        vectors = PostgresMemoryBackend(pg_conn, HashingEmbedder())
        iso._reset(pg_conn)
        backend = CompositeMemoryBackend([vectors, graph], names=["postgres", "graph"],
                                         mirror_writes=True)
    try:
        iso.run_isolation(backend, ops, embedded=True)
    finally:
        graph.close()
