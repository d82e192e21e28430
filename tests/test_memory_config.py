"""The `memory:` section of kbctl.yaml: search defaults and the flush policy, set once,
used by the CLI, the tools and the library surface alike; flags still win."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbctl.config import resolve_settings
from kbctl.errors import ConfigError, InputError
from kbctl.memory import api
from kbctl.memory.backend import MemoryBackend, MemoryStore
from kbctl.memory_config import FlushSettings, MemorySettings

from .conftest import Cli

BOT = ("--agent", "bot")

FULL = """\
agent: bot
memory:
  max_results: 2
  min_score: 0.01
  mmr: true
  mmr_lambda: 0.5
  decay: true
  half_life_days: 7
  max_injected_chars: 900
  citations: off
  track: true
  flush:
    enabled: true
    soft_threshold_tokens: 1000
    reserve_floor_tokens: 2000
    context_window: 10000
"""


def test_every_memory_setting_is_read_from_the_file(tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text(FULL)
    m = resolve_settings({}, env={}, cwd=tmp_path).memory
    assert m == MemorySettings(
        max_results=2, min_score=0.01, mmr=True, mmr_lambda=0.5, decay=True,
        half_life_days=7.0, max_injected_chars=900, citations="off", track=True,
        flush=FlushSettings(enabled=True, soft_threshold_tokens=1000,
                            reserve_floor_tokens=2000, context_window=10000))


def test_flags_over_environment_over_file(tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text("memory:\n  max_results: 3\n  mmr_lambda: 0.5\n")
    env = {"KBCTL_MEMORY_MAX_RESULTS": "9", "KBCTL_MEMORY_DECAY": "true",
           "KBCTL_MEMORY_HALF_LIFE_DAYS": "2.5"}
    m = resolve_settings({}, env=env, cwd=tmp_path).memory
    assert (m.max_results, m.decay, m.half_life_days, m.mmr_lambda) == (9, True, 2.5, 0.5)
    m = resolve_settings({"memory": {"max_results": 4, "decay": False, "mmr": None}},
                         env=env, cwd=tmp_path).memory
    assert (m.max_results, m.decay, m.mmr) == (4, False, False)


@pytest.mark.parametrize(("body", "where", "what"), [
    ("memory:\n  max_results: 0\n", ":2:", "memory.max_results"),
    ("memory:\n  half_life_days: .nan\n", ":2:", "half_life_days"),
    ("memory:\n  half_life_days: -3\n", ":2:", "half_life_days"),
    ("memory:\n  half_life_days: 1.0e+307\n", ":2:", "half_life_days"),  # overflowed SQL
    ("memory:\n  min_score: 1.5\n", ":2:", "min_score"),
    ("memory:\n  mmr: maybe\n", ":2:", "memory.mmr"),
    ("memory:\n  citations: sometimes\n", ":2:", "citations"),
    ("memory:\n  colour: blue\n", ":2:", "unknown key 'memory.colour'"),
    ("memory:\n  flush:\n    reserve_floor_tokens: -1\n", ":3:", "reserve_floor_tokens"),
    ("memory:\n  flush:\n    window: 5\n", ":3:", "unknown key 'memory.flush.window'"),
    ("memory:\n  decay: true\n  decay: false\n", ":3:", "duplicate key"),
    ("memory: 5\n", ":1:", "must be a mapping"),
])
def test_bad_memory_settings_name_file_key_and_line(tmp_path: Path, body: str, where: str,
                                                    what: str) -> None:
    (tmp_path / "kbctl.yaml").write_text(body)
    with pytest.raises(ConfigError) as err:
        resolve_settings({}, env={}, cwd=tmp_path)
    assert "kbctl.yaml" + where in err.value.message and what in err.value.message


def test_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KBCTL_MEMORY_MAX_RESULTS"):
        resolve_settings({}, env={"KBCTL_MEMORY_MAX_RESULTS": "lots"}, cwd=tmp_path)


def test_flush_due_follows_the_settings(tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text(FULL)
    s = resolve_settings({}, env={}, cwd=tmp_path)
    assert api.flush_due(s, 6_999) is False and api.flush_due(s, 7_001) is True
    assert api.flush_due(s, 7_001, context_window=100_000) is False
    off = resolve_settings({"memory": {"flush": {"enabled": False}}}, env={}, cwd=tmp_path)
    assert api.flush_due(off, 9_999) is False
    with pytest.raises(InputError, match="context_window"):
        api.flush_due(resolve_settings({}, env={}, cwd=tmp_path / "x"), 10)


def test_memory_store_is_the_backend_protocol() -> None:
    assert MemoryStore is MemoryBackend


# --- through the real CLI ----------------------------------------------------------------


def test_health_shows_the_settings_in_force(cli: Cli, workdir: Path) -> None:
    (workdir / "kbctl.yaml").write_text(FULL)
    cli.json("memory", "append", "memory/agent/MEMORY.md", "rotate the api token")
    out = cli.json("memory", "health")
    assert out["settings"]["maxResults"] == 2 and out["settings"]["citations"] == "off"
    assert out["settings"]["flush"] == {"enabled": True, "softThresholdTokens": 1000,
                                        "reserveFloorTokens": 2000, "contextWindow": 10000}


def test_search_uses_config_defaults_and_flags_win(cli: Cli, workdir: Path) -> None:
    for i in range(5):
        cli.json("memory", "append", f"memory/agent/n{i}.md", f"rotate the api token {i}",
                 *BOT)
    (workdir / "kbctl.yaml").write_text("memory:\n  max_results: 2\n  citations: off\n")
    out = cli.json("memory", "search", "rotate token", *BOT)
    assert len(out["results"]) == 2 and "citation" not in out["results"][0]
    out = cli.json("memory", "search", "rotate token", "--max-results", "4",
                   "--citations", "on", *BOT)
    assert len(out["results"]) == 4 and "citation" in out["results"][0]
    bad = cli("memory", "search", "rotate token", "--max-results", "0", *BOT)
    assert bad.exit_code == 2 and "--max-results" in bad.output


def test_tools_use_the_memory_settings(cli: Cli, workdir: Path) -> None:
    for i in range(4):
        cli.json("memory", "append", f"memory/agent/n{i}.md", f"rotate the api token {i}",
                 *BOT)
    (workdir / "kbctl.yaml").write_text("memory:\n  max_results: 1\n")
    result = cli("tools", "call", "memory_search", "--args", '{"query": "rotate token"}',
                 *BOT)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)["result"]
    assert payload["maxResults"] == 1 and len(payload["results"]) == 1


def test_an_ancient_note_with_decay_is_simply_weightless(cli: Cli) -> None:
    cli.json("memory", "append", "memory/agent/1900-01-01.md", "rotate the api token", *BOT)
    cli.json("memory", "append", "memory/agent/MEMORY.md", "rotate the api token", *BOT)
    out = cli.json("memory", "search", "rotate token", "--decay", "--half-life-days", "1",
                   *BOT)
    assert [r["path"] for r in out["results"]] == ["memory/agent/MEMORY.md",
                                                   "memory/agent/1900-01-01.md"]
    assert out["results"][1]["score"] == 0.0
