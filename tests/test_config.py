"""Settings resolution: flags over kbctl.yaml over environment over defaults."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kbctl.config import resolve_settings
from kbctl.errors import ConfigError

from .conftest import Cli


def test_layers_override_in_order(tmp_path: Path) -> None:
    """Flags over the environment over the file: a runtime pinned by its environment
    (``KBCTL_USER``) keeps it in a folder whose kbctl.yaml names another user."""
    (tmp_path / "kbctl.yaml").write_text("namespace: from-file\nmemory_track: true\n"
                                         "user: file-user\nembedder: none\n")
    env = {"KBCTL_NAMESPACE": "from-env", "KBCTL_AGENT": "bot", "KBCTL_MEMORY_TRACK": "0",
           "KBCTL_USER": "env-user"}
    s = resolve_settings({}, env=env, cwd=tmp_path)
    assert (s.namespace, s.agent, s.user, s.memory_track, s.embedder) == (
        "from-env", "bot", "env-user", False, "none")
    s = resolve_settings({"namespace": "from-flag", "user": "flag-user"}, env=env,
                         cwd=tmp_path)
    assert (s.namespace, s.user) == ("from-flag", "flag-user")
    assert s.config_path == tmp_path / "kbctl.yaml"


def test_a_layer_naming_a_database_replaces_the_lower_layers_in_either_form(
        tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text("data_dir: kbdata\n")
    url = {"KBCTL_DATABASE_URL": "postgresql://kb@db.internal/kb"}
    s = resolve_settings({}, env=url, cwd=tmp_path)
    assert s.db_url == url["KBCTL_DATABASE_URL"]
    s = resolve_settings({"data_dir": "here"}, env=url, cwd=tmp_path)
    assert (s.db_url, s.data_dir) == (None, Path("here"))
    (tmp_path / "kbctl.yaml").write_text("db: postgresql://kb@db.internal/kb\n")
    s = resolve_settings({}, env={"KBCTL_DATA_DIR": "/ci/kb"}, cwd=tmp_path)
    assert (s.db_url, s.data_dir) == (None, Path("/ci/kb"))


def test_a_relative_data_dir_in_a_config_file_is_the_files_neighbour(tmp_path: Path) -> None:
    """``--config ../../kbctl.yaml`` from a subfolder made a new, empty KB there."""
    (tmp_path / "kbctl.yaml").write_text("data_dir: kbdata\n")
    deep = tmp_path / "docs" / "guide"
    deep.mkdir(parents=True)
    s = resolve_settings({}, config=deep / ".." / ".." / "kbctl.yaml", env={}, cwd=deep)
    assert s.data_dir.resolve() == tmp_path / "kbdata"
    assert resolve_settings({}, env={}, cwd=tmp_path).data_dir == tmp_path / "kbdata"


def test_environment_alone(tmp_path: Path) -> None:
    s = resolve_settings({}, env={"KBCTL_MEMORY_TRACK": "true", "KBCTL_DATA_DIR": "/x"},
                         cwd=tmp_path)
    assert s.memory_track is True and s.data_dir == Path("/x") and s.namespace == "default"


def test_explicit_config_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        resolve_settings({}, config=tmp_path / "missing.yaml", env={}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="is not a regular file"):
        resolve_settings({}, config=tmp_path, env={}, cwd=tmp_path)


def test_a_folder_or_fifo_named_like_the_config_is_an_error(tmp_path: Path) -> None:
    """It was passed over in silence: the run went on with none of its settings."""
    (tmp_path / "kbctl.yaml").mkdir()
    with pytest.raises(ConfigError, match=r"kbctl\.yaml is not a regular file"):
        resolve_settings({}, env={}, cwd=tmp_path)
    (tmp_path / "kbctl.yaml").rmdir()
    os.mkfifo(tmp_path / "kbctl.yml")
    with pytest.raises(ConfigError, match=r"kbctl\.yml is not a regular file"):
        resolve_settings({}, env={}, cwd=tmp_path)


def test_chunking_budget_is_checked(tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text("chunking:\n  max_tokens: 64\n  overlap_tokens: 64\n")
    with pytest.raises(ConfigError, match="overlap_tokens"):
        resolve_settings({}, env={}, cwd=tmp_path)


def test_duplicate_keys_are_refused_with_their_line(tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text("namespace: a\nagent: x\nnamespace: b\n")
    with pytest.raises(ConfigError, match=r"kbctl.yaml:3: duplicate key 'namespace'"):
        resolve_settings({}, env={}, cwd=tmp_path)


def test_fusion_is_a_setting_a_flag_overrides(tmp_path: Path) -> None:
    """Eval suites gate what queries and agent tools run: one setting for all three."""
    (tmp_path / "kbctl.yaml").write_text("fusion: rrf\nvector_weight: 0.5\n")
    s = resolve_settings({}, env={}, cwd=tmp_path)
    assert (s.fusion, s.vector_weight) == ("rrf", 0.5)
    assert resolve_settings({"fusion": "weighted"}, env={}, cwd=tmp_path).fusion == "weighted"
    assert resolve_settings({}, env={}).fusion == "weighted"
    with pytest.raises(ConfigError, match="^--fusion must be 'weighted' or 'rrf', "
                       "got 'reciprocal'"):
        resolve_settings({"fusion": "reciprocal"}, env={}, cwd=tmp_path)


@pytest.mark.parametrize(("file", "env", "flags", "message"), [
    ("vector_weight: 7\n", {}, {}, "kbctl.yaml:1: 'vector_weight' must be within 0..1, got 7"),
    ("namespace: docs\nfusion: rff\n", {}, {},
     "kbctl.yaml:2: 'fusion' must be 'weighted' or 'rrf', got 'rff'"),
    ("embedder: gemni\n", {}, {}, "kbctl.yaml:1: 'embedder': unknown embedder provider"),
    ("", {"KBCTL_EMBEDDER": "gemni"}, {}, "KBCTL_EMBEDDER: unknown embedder provider"),
    ("", {"KBCTL_RERANK": "cohere"}, {}, "KBCTL_RERANK: reranker spec 'cohere' names no model"),
    ("db: ''\n", {}, {}, "kbctl.yaml:1: 'db' is empty"),
    ("data_dir: ' '\n", {}, {}, "kbctl.yaml:1: 'data_dir' is empty"),
    ("", {}, {"namespace": ""}, "--namespace is empty"),
    ("", {}, {"vector_weight": 1.5}, "--vector-weight must be within 0..1, got 1.5"),
    ("", {}, {"rerank_top": 0}, "--rerank-top must be within 1..50, got 0"),
])
def test_a_bad_value_names_where_it_was_given(tmp_path: Path, file: str, env: dict[str, str],
                                              flags: dict[str, object], message: str) -> None:
    """``vector_weight must be within 0..1`` did not say which file, line or flag; a
    ``fusion:`` in kbctl.yaml was blamed on ``--fusion``; ``db: ''`` was ignored."""
    (tmp_path / "kbctl.yaml").write_text(file)
    with pytest.raises(ConfigError) as caught:
        resolve_settings(flags, env=env, cwd=tmp_path)
    assert caught.value.message.startswith(
        message.replace("kbctl.yaml", str(tmp_path / "kbctl.yaml"))), caught.value.message


def test_a_data_dir_flag_outranks_a_configured_database_url(tmp_path: Path) -> None:
    """``--data-dir`` was ignored when ``KBCTL_DATABASE_URL`` or ``db:`` was set: a CI run
    meant for a throwaway folder wrote into the production database."""
    url = "postgresql://kb@db.internal/kb"
    env = {"KBCTL_DATABASE_URL": url}
    s = resolve_settings({"data_dir": "/tmp/throwaway"}, env=env, cwd=tmp_path)
    assert (s.db_url, s.data_dir) == (None, Path("/tmp/throwaway"))
    (tmp_path / "kbctl.yaml").write_text(f"db: {url}\n")
    s = resolve_settings({"data_dir": "/tmp/throwaway"}, env={}, cwd=tmp_path)
    assert (s.db_url, s.data_dir) == (None, Path("/tmp/throwaway"))
    # without the flag, a URL still wins over a folder from the file or the environment
    (tmp_path / "kbctl.yaml").write_text("data_dir: .kb\n")
    assert resolve_settings({}, env=env, cwd=tmp_path).db_url == url
    assert resolve_settings({"db_url": url}, env={}, cwd=tmp_path).db_url == url
    with pytest.raises(ConfigError, match="--db and --data-dir name two databases"):
        resolve_settings({"db_url": url, "data_dir": "/tmp/x"}, env={}, cwd=tmp_path)


def test_empty_folders_and_spaced_namespaces_are_refused(cli: Cli, workdir: Path) -> None:
    """``--data-dir "$UNSET"`` made the embedded server's files in the current directory,
    and ``KBCTL_NAMESPACE="docs "`` a namespace of its own beside ``docs``."""
    for args, named in ((("--data-dir", ""), "--data-dir is empty"),
                        (("--config", " "), "--config is empty"),
                        (("-n", "docs "), "--namespace 'docs ' has spaces around it")):
        result = cli("ingest", "text", "a note", "--ref", "n", *args, db="--data-dir" not in args)
        assert result.exit_code == 2, result.output
        assert named in result.output
    assert sorted(p.name for p in workdir.iterdir()) == []


@pytest.mark.parametrize("layout", ["both", "dangling"])
def test_a_config_kbctl_would_pass_over_is_an_error(tmp_path: Path, layout: str) -> None:
    if layout == "both":
        (tmp_path / "kbctl.yaml").write_text("namespace: a\n")
        (tmp_path / "kbctl.yml").write_text("namespace: b\n")
        expected = "kbctl reads one config"
    else:
        (tmp_path / "kbctl.yaml").symlink_to(tmp_path / "gone.yaml")
        expected = "is not a regular file"
    with pytest.raises(ConfigError, match=expected):
        resolve_settings({}, env={}, cwd=tmp_path)


@pytest.mark.parametrize(("body", "env", "named"), [
    ('user: " alice"\n', {}, "kbctl.yaml:1: 'user' ' alice': at most 200 characters"),
    ("", {"KBCTL_USER": " alice"}, "KBCTL_USER ' alice': at most 200 characters"),
    ("embedder_base_url: ftp://x\n", {}, "kbctl.yaml:1: 'embedder_base_url' must be an "
                                         "http(s) URL"),
    ("", {"KBCTL_RERANK_BASE_URL": "bogus value!"}, "KBCTL_RERANK_BASE_URL must be an "
                                                    "http(s) URL"),
    ('db: "not a url"\n', {}, "kbctl.yaml:1: 'db' is not a PostgreSQL connection string"),
    # libpq checks these only when it connects: a typo had read as the server failing (3)
    ("", {"KBCTL_DATABASE_URL": "postgresql://kb:secret@db:543200/kb"},
     "KBCTL_DATABASE_URL has port='543200': a port is a number within 1..65535"),
    ('db: "postgresql://kb:secret@db1:5432,db2:x/kb"\n', {}, "kbctl.yaml:1: 'db' has "
                                                              "port='5432,x'"),
    ('db: "postgresql://kb:secret@db/kb?sslmode=requre"\n', {},
     "'db' has sslmode='requre': sslmode must be one of disable, allow, prefer, require"),
    ('db: "postgresql://kb:secret@db/kb?connect_timeout=10s"\n', {},
     "connect_timeout is a whole number of seconds"),
    # read where the server is managed, where a bad value fell back to the default unsaid
    ("", {"KBCTL_SERVER_LINGER": "10m"}, "KBCTL_SERVER_LINGER '10m' must be a number of "
                                         "seconds"),
    ("", {"KBCTL_SERVER_LINGER": "7200"}, "KBCTL_SERVER_LINGER '7200' must be within "
                                          "0..3600 seconds"),
    ("chunking:\n  max_tokens: 8\n", {}, "kbctl.yaml:2: 'chunking.max_tokens' must be "
                                         "within 16..100,000, got 8"),
    ("chunking:\n  max_tokens: 100000000000000000000\n", {}, "kbctl.yaml:2: "
                                                             "'chunking.max_tokens' must be"),
])
def test_a_bad_value_is_named_where_it_was_given(tmp_path: Path, body: str,
                                                 env: dict[str, str], named: str) -> None:
    """Checked late, these named the flag (or nothing) whichever place held them, and a
    bad base URL was found only after a new KB had been made."""
    (tmp_path / "kbctl.yaml").write_text(body)
    with pytest.raises(ConfigError) as refused:
        resolve_settings({}, env=env, cwd=tmp_path)
    assert named in refused.value.message
    assert "secret" not in refused.value.message


@pytest.mark.parametrize(("body", "said"), [
    ("rerank_top: 5.5\n", "'rerank_top' must be an integer, got a number"),
    ("namespace:\n", "'namespace' must be a string, got null"),
    ("db: {a: 1}\n", "'db' must be a string, got a mapping"),
])
def test_a_wrong_type_is_said_in_the_files_words(tmp_path: Path, body: str, said: str) -> None:
    """It was Python's: 'must be a number, got float', 'got NoneType', 'got LineDict'."""
    (tmp_path / "kbctl.yaml").write_text(body)
    with pytest.raises(ConfigError, match=said):
        resolve_settings({}, env={}, cwd=tmp_path)


def test_status_says_which_database_and_config_the_settings_came_to(cli: Cli,
                                                                     workdir: Path) -> None:
    """Flags, environment and kbctl.yaml combine: nothing showed which won."""
    (workdir / "kbctl.yaml").write_text("namespace: docs\n")
    assert cli("ingest", "text", "a note", "--ref", "n").exit_code == 0
    out = json.loads(cli("status", "--json").stdout)
    assert out["database"].startswith("postgresql://") and "@" not in out["database"]
    assert out["config"] == str(workdir / "kbctl.yaml")
    assert [n["namespace"] for n in out["namespaces"]] == ["docs"]


def test_status_checks_its_namespace_as_every_command_does(cli: Cli) -> None:
    assert cli("ingest", "text", "a note", "--ref", "n").exit_code == 0
    spaced = cli("status", "-n", "default ")
    assert spaced.exit_code == 2 and "has spaces around it" in spaced.output
