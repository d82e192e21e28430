"""Memory scope and path rules, as pure functions and through the CLI."""

from __future__ import annotations

from datetime import date

import pytest

from kbctl.errors import InputError, PathError
from kbctl.memory.paths import (
    MAX_PATH_CHARS,
    MemoryScope,
    file_date,
    parse_path,
    scope_of,
    tier_prefix,
)

from .conftest import Cli, rows

BAD_PATHS = [
    "",
    "notes.md",
    "memory",
    "memory/",
    "memory/agent",
    "memory/agent/",
    "memory/user/",
    "memory/notes.md",
    "memory/team/notes.md",
    "Memory/agent/notes.md",
    "/memory/agent/notes.md",
    "./memory/agent/notes.md",
    "memory//agent/notes.md",
    "memory/agent//notes.md",
    "memory/agent/./notes.md",
    "memory/agent/../user/notes.md",
    "memory/user/../agent/notes.md",
    "memory/agent/..",
    "memory/agent/notes..md",
    "memory\\agent\\notes.md",
    "memory/agent/sub\\notes.md",
    "memory/agent/C:/notes.md",
    "memory/agent/notes\x00.md",
    "memory/agent/notes\n.md",
    "memory/agent/" + "n" * MAX_PATH_CHARS,
]


@pytest.mark.parametrize("path", BAD_PATHS)
def test_bad_paths_are_path_errors(path: str) -> None:
    with pytest.raises(PathError) as info:
        parse_path(path)
    assert info.value.exit_code == 2


@pytest.mark.parametrize(("path", "tier"), [
    ("memory/agent/MEMORY.md", "agent"),
    ("memory/agent/playbooks/deploy.md", "agent"),
    ("memory/user/2024-05-01.md", "user"),
    ("memory/user/prefs/tone.md", "user"),
])
def test_good_paths_name_their_tier(path: str, tier: str) -> None:
    parsed = parse_path(path)
    assert (parsed.path, parsed.tier) == (path, tier)
    assert path.startswith(tier_prefix(tier))


def test_owner_comes_from_the_scope_never_the_path() -> None:
    alice = MemoryScope("bot", "alice")
    assert parse_path("memory/agent/MEMORY.md").owner(alice) is None
    assert parse_path("memory/user/notes.md").owner(alice) == "alice"
    assert parse_path("memory/user/bob/notes.md").owner(alice) == "alice"
    with pytest.raises(PathError, match="no user"):
        parse_path("memory/user/notes.md").owner(MemoryScope("bot"))


@pytest.mark.parametrize(("agent", "user"), [
    (None, None), ("", None), ("  ", "u"), ("bot", " u"), ("bot\n", None), ("x" * 201, None),
])
def test_scope_needs_a_clean_agent_id(agent: str | None, user: str | None) -> None:
    with pytest.raises(InputError):
        scope_of(agent, user)


def test_scope_is_frozen() -> None:
    scope = scope_of("bot", "alice")
    with pytest.raises(AttributeError):
        scope.user_id = "mallory"  # type: ignore[misc]
    assert scope_of("bot", "") == MemoryScope("bot", None)


@pytest.mark.parametrize(("path", "expected"), [
    ("memory/agent/2024-02-29.md", date(2024, 2, 29)),
    ("memory/user/daily/2023-12-31.md", date(2023, 12, 31)),
    ("memory/agent/2023-02-29.md", None),
    ("memory/agent/MEMORY.md", None),
    ("memory/agent/x2024-01-05.md", None),
    ("memory/agent/2024-01-05/notes.md", None),
    ("memory/agent/2024-01-05.txt", None),
])
def test_only_dated_file_names_carry_a_date(path: str, expected: date | None) -> None:
    assert file_date(path) == expected


def _memory_rows(url: str) -> int:
    exists = rows(url, "SELECT to_regclass('memory_files') IS NOT NULL")[0][0]
    return rows(url, "SELECT count(*) FROM memory_files")[0][0] if exists else 0


@pytest.mark.parametrize("path", [p for p in BAD_PATHS if p and "\x00" not in p])
def test_cli_refuses_bad_paths_with_exit_2_and_writes_nothing(cli: Cli, path: str) -> None:
    for args in (["append", path, "text"], ["get", path], ["delete", path]):
        result = cli("memory", *args, "--agent", "bot", "--user", "alice")
        assert result.exit_code == 2, (args, result.output)
    assert _memory_rows(cli.db_url) == 0


def test_cli_refuses_user_paths_without_a_user(cli: Cli) -> None:
    cli.json("memory", "append", "memory/agent/MEMORY.md", "shared", "--agent", "bot")
    result = cli("memory", "append", "memory/user/notes.md", "private", "--agent", "bot")
    assert result.exit_code == 2 and "--user" in result.stderr
    assert rows(cli.db_url, "SELECT path, user_id FROM memory_files") == [
        ("memory/agent/MEMORY.md", None)]


def test_cli_needs_an_agent(cli: Cli) -> None:
    result = cli("memory", "append", "memory/agent/MEMORY.md", "x")
    assert result.exit_code == 2 and "--agent" in result.stderr
    assert _memory_rows(cli.db_url) == 0
