"""Source options: typed per kind, checked before anything is recorded, on the real CLI and
database; a kind is one module plus one registry line; a recorded definition that no longer
validates fails its source in resync, never the run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.types.json import Jsonb

from kbctl.errors import InputError
from kbctl.sources import registry
from kbctl.sources.base import Expansion, Leaf
from kbctl.sources.crawl import CrawlOptions
from kbctl.sources.registry import flag_spec, recorded_spec, source_spec
from tests import echo_source
from tests.http_server import LocalServer, html

from .conftest import Cli, rows

PRIVATE = "--allow-private-network"


@pytest.fixture
def docs(workdir: Path) -> Path:
    root = workdir / "docs"
    root.mkdir()
    (root / "intro.md").write_text("# Intro\n\nWelcome to the docs.\n")
    (root / "setup.md").write_text("# Setup\n\nInstall it.\n")
    return root


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with LocalServer({"/a": html("<html><head><title>A</title></head><body><main>"
                                 "<h1>A</h1><p>Alpha page.</p></main></body></html>")}) as s:
        yield s


def _nothing_recorded(cli: Cli) -> None:
    if rows(cli.db_url, "SELECT to_regclass('source_defs')") == [(None,)]:
        return  # refused before the database was even set up
    assert rows(cli.db_url, "SELECT count(*) FROM source_defs") == [(0,)]
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(0,)]


# --- the options types ---------------------------------------------------------------


def test_defaults_live_on_the_options_and_only_differences_are_recorded() -> None:
    spec = source_spec("crawl", "https://x.test/", {"max_depth": 3, "max_pages": 20,
                                                    "allow_domains": [".API.x.test"]})
    assert isinstance(spec.options, CrawlOptions)
    assert (spec.options.max_depth, spec.options.max_pages) == (3, 20)
    assert spec.options.allow_domains == frozenset({"api.x.test"})
    assert spec.to_json()["options"] == {"max_pages": 20, "allow_domains": ["api.x.test"]}
    with pytest.raises(AttributeError):
        spec.options.max_pages = 5  # type: ignore[misc]
    # a recorded definition reads back to the same options
    again = recorded_spec("crawl", "https://x.test/", spec.to_json()["options"])
    assert again == spec


@pytest.mark.parametrize(("kind", "options", "needle"), [
    ("files", {"exclude": 5}, "option 'exclude' must be a list of glob patterns, got 5"),
    ("files", {"base_url": 5}, "option 'base_url' must be an http(s) URL, got 5"),
    ("files", {"base_url": "docs/"}, "option 'base_url' must be an http(s) URL"),
    ("sitemap", {"timeout": float("nan")}, "'timeout' must be a number greater than 0, got nan"),
    ("url", {"timeout": float("inf")}, "'timeout' must be a number greater than 0, got inf"),
    ("crawl", {"max_depth": -1}, "'max_depth' must be an integer of at least 0"),
    ("crawl", {"max_pages": 2.5}, "'max_pages' must be an integer of at least 1"),
    ("crawl", {"max_pages": True}, "'max_pages' must be an integer of at least 1"),
    ("sitemap", {"max_urls": 0}, "'max_urls' must be an integer of at least 1"),
    ("llms", {"skip_optional": "yes"}, "'skip_optional' must be true or false"),
    ("text", {"format": "html"}, "'format' must be markdown or text"),
    ("url", {"max_depth": 2}, "'max_depth' is not an option of a url source"),
])
def test_each_kind_refuses_wrong_types_ranges_and_unknown_keys(kind: str, options: dict,
                                                               needle: str) -> None:
    with pytest.raises(InputError) as caught:
        source_spec(kind, "https://x.test/", options)
    assert needle in caught.value.message
    assert caught.value.exit_code == 2


def test_flag_messages_name_the_flag() -> None:
    with pytest.raises(InputError, match=r"^--max-pages must be an integer of at least 1"):
        flag_spec("crawl", "https://x.test/", max_pages=0)
    with pytest.raises(InputError, match=r"^--allow-domain must be a list of host names"):
        flag_spec("crawl", "https://x.test/", allow_domains=[" "])


# --- config sources: file:line, exit 2, nothing written ------------------------------


@pytest.mark.parametrize(("entry", "needle"), [
    ("    kind: files\n    target: docs\n    exclude: 5\n",
     "kbctl.yaml:8: sources[1].exclude must be a list of glob patterns, got 5"),
    ("    kind: files\n    target: docs\n    base_url: 5\n",
     "kbctl.yaml:8: sources[1].base_url must be an http(s) URL, got 5"),
    ("    kind: sitemap\n    target: https://x.test/sitemap.xml\n    timeout: .nan\n",
     "kbctl.yaml:8: sources[1].timeout must be a number greater than 0, got nan"),
    ("    kind: crawl\n    target: https://x.test/\n    max_pages: -3\n",
     "kbctl.yaml:8: sources[1].max_pages must be an integer of at least 1, got -3"),
    ("    kind: url\n    target: docs/guide.md\n",
     "kbctl.yaml:7: sources[1].target must be an http(s) URL, got 'docs/guide.md'"),
    ("    kind: crawl\n    target: https://x.test/\n    depth: 2\n",
     "kbctl.yaml:8: sources[1].depth is not an option of a crawl source"),
])
def test_a_bad_config_source_is_refused_with_its_line_before_anything_runs(
        cli: Cli, docs: Path, workdir: Path, entry: str, needle: str) -> None:
    (workdir / "kbctl.yaml").write_text(
        "namespace: site\nsources:\n  - kind: files\n    target: docs\n  -\n" + entry)
    for command in (["ingest"], ["resync"]):
        result = cli(*command)
        assert result.exit_code == 2, result.output
        assert needle in result.stderr
        _nothing_recorded(cli)


# --- command-line flags: the flag named, exit 2, nothing written ----------------------


@pytest.mark.parametrize(("args", "needle"), [
    (["crawl", "https://x.test/", "--timeout", "nan"],
     "--timeout must be a number greater than 0, got nan"),
    (["crawl", "https://x.test/", "--max-depth", "-1"],
     "--max-depth must be an integer of at least 0, got -1"),
    (["sitemap", "https://x.test/", "--max-urls", "0"], "--max-urls must be an integer"),
    (["url", "https://x.test/", "--max-page-bytes", "0"], "--max-page-bytes must be"),
    (["files", "docs", "--base-url", "docs.example.com"],
     "--base-url must be an http(s) URL, got 'docs.example.com'"),
])
def test_a_bad_flag_is_refused_naming_the_flag(cli: Cli, docs: Path, args: list[str],
                                               needle: str) -> None:
    result = cli("ingest", *args)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr
    _nothing_recorded(cli)


# --- the guard: a refused target is never recorded ------------------------------------


@pytest.mark.parametrize("args", [
    ["url", "http://127.0.0.1:9/a"],
    ["crawl", "http://169.254.169.254/latest/", PRIVATE],
    ["sitemap", "http://[::ffff:10.0.0.1]/sitemap.xml"],
])
def test_a_target_the_guard_refuses_is_not_recorded(cli: Cli, args: list[str]) -> None:
    report = cli.json("ingest", *args, code=1)
    [error] = report["errors"]
    assert error["type"] == "BlockedURL" and error["ref"] == args[1]
    _nothing_recorded(cli)


# --- recorded definitions that no longer validate -------------------------------------


def _set_options(db_url: str, kind: str, options: object) -> None:
    with psycopg.connect(db_url) as conn:
        conn.execute("UPDATE source_defs SET options = %s WHERE kind = %s",
                     (Jsonb(options), kind))


def test_a_recorded_definition_that_no_longer_validates_fails_alone(
        cli: Cli, docs: Path, site: LocalServer) -> None:
    cli.json("ingest", "files", str(docs))
    cli.json("ingest", "url", site.url("/a"), PRIVATE)
    _set_options(cli.db_url, "files", {"exclude": 5, "colour": "red"})
    before = rows(cli.db_url, "SELECT ref, content_hash FROM sources ORDER BY ref")
    report = cli.json("resync", PRIVATE, code=1)
    [ns] = report["namespaces"]
    [error] = ns["errors"]
    assert error["type"] == "DefinitionError" and error["ref"] == str(docs)
    assert "recorded files source" in error["error"] and "'colour'" in error["error"]
    assert ns["failed"] == 1 and ns["unchanged"] + ns["notModified"] == 1  # the url synced
    # the broken definition's documents are kept, and its failure is on record
    assert rows(cli.db_url, "SELECT ref, content_hash FROM sources ORDER BY ref") == before
    [(errors,)] = rows(cli.db_url, "SELECT last_errors FROM source_defs WHERE kind = 'files'")
    assert errors[0]["type"] == "DefinitionError"
    # --all goes through the same path; a kind this version does not know fails alone too
    with psycopg.connect(cli.db_url) as conn:
        conn.execute("UPDATE source_defs SET kind = 'git', options = '{}' WHERE kind = 'files'")
    report = cli.json("resync", "--all", PRIVATE, code=1)
    [error] = report["namespaces"][0]["errors"]
    assert "unknown source kind 'git'" in error["error"]
    status = cli.json("status")
    assert status["namespaces"][0]["lastRunFailures"] == 1


def test_a_recorded_folder_that_vanished_fails_its_source_not_the_run(
        cli: Cli, docs: Path, site: LocalServer) -> None:
    cli.json("ingest", "files", str(docs))
    cli.json("ingest", "url", site.url("/a"), PRIVATE)
    for path in docs.iterdir():
        path.unlink()
    docs.rmdir()
    report = cli.json("resync", code=1)
    [error] = report["namespaces"][0]["errors"]
    assert error["ref"] == str(docs) and "is not a file, a directory or a glob" in error["error"]
    assert report["totals"]["deleted"] == 0  # a listing that failed deletes nothing
    assert rows(cli.db_url, "SELECT count(*) FROM sources") == [(3,)]


def test_a_relative_folder_resynced_from_elsewhere_says_where_it_looked(
        cli: Cli, docs: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli.json("ingest", "files", "docs")  # recorded as given, read from where resync runs
    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a cron job's home directory
    report = cli.json("resync", code=1)
    [error] = report["namespaces"][0]["errors"]
    assert error["error"].endswith(f"(looked for in {elsewhere})")
    assert "run from the folder it was ingested in" in error["hint"]
    monkeypatch.chdir(workdir)
    cli.json("resync")


def test_a_mistyped_folder_makes_no_knowledge_base(cli: Cli, workdir: Path) -> None:
    result = cli("ingest", "files", "dcos", "--data-dir", str(workdir / "kb"), db=False)
    assert result.exit_code == 2
    assert f"dcos is not a file, a directory or a glob whose folder exists (looked for in " \
           f"{workdir})" in result.output
    assert not (workdir / "kb").exists()  # no server was made or started for it
    result = cli("ingest", "files", str(workdir / "dcos"), "--data-dir", str(workdir / "kb"),
                 db=False)
    assert result.exit_code == 2 and "looked for" not in result.output
    assert not (workdir / "kb").exists()
    for name in ("x" * 5000, "docs/" + "y" * 300 + "/*.md"):  # too long for a file system
        result = cli("ingest", "files", name, "--data-dir", str(workdir / "kb"), db=False)
        assert result.exit_code == 2 and "is not a file, a directory" in result.output


# --- a new kind: one module plus one registry line -------------------------------------


def test_a_new_kind_is_one_module_plus_one_registry_line(
        cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.KINDS, "echo", echo_source.KIND)
    (workdir / "kbctl.yaml").write_text(
        "sources:\n  - kind: echo\n    target: hello\n    times: 3\n")
    report = cli.json("ingest")
    assert report["added"] == 1
    assert rows(cli.db_url, "SELECT kind, options FROM source_defs") == [("echo", {"times": 3})]
    assert rows(cli.db_url, "SELECT text FROM chunks")[0][0].count("hello") == 3
    (workdir / "kbctl.yaml").unlink()
    assert cli.json("resync")["totals"]["unchanged"] == 1  # from the recorded definition
    (workdir / "kbctl.yaml").write_text(
        "sources:\n  - kind: echo\n    target: hello\n    times: 0\n")
    result = cli("ingest")
    assert result.exit_code == 2
    assert "kbctl.yaml:4: sources[0].times must be an integer of at least 1" in result.stderr


def test_a_new_kind_gets_its_command_from_its_options(
        cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No command is written for a kind: ``kbctl ingest KIND`` is made from its options'
    help, defaults and checks, by the ingest group, for any registered kind."""
    monkeypatch.setitem(registry.KINDS, "echo", echo_source.KIND)
    assert "echo" in cli("ingest", "--help", db=False).stdout
    shown = cli("ingest", "echo", "--help", db=False)
    assert shown.exit_code == 0, shown.output
    assert "Ingest a word, repeated." in shown.stdout and "Example" in shown.stdout
    assert "The word." in shown.stdout and "--times" in shown.stdout
    assert "How many times [default: 1]." in " ".join(shown.stdout.split())
    assert "--json" in shown.stdout and "--namespace" in shown.stdout
    assert cli.json("ingest", "echo", "hello", "--times", "2")["added"] == 1
    assert rows(cli.db_url, "SELECT kind, options FROM source_defs") == [("echo", {"times": 2})]
    refused = cli("ingest", "echo", "hello", "--times", "0")
    assert refused.exit_code == 2
    assert "--times must be an integer of at least 1" in refused.stderr


# --- a definition remembers --allow-private-network -------------------------------------


def test_a_definition_remembers_the_private_network_opt_in(cli: Cli, site: LocalServer,
                                                           docs: Path) -> None:
    cli.json("ingest", "url", site.url("/a"), PRIVATE)
    assert rows(cli.db_url, "SELECT options FROM source_defs") == [
        ({"allow_private_network": True},)]
    site.routes["/a"] = html("<html><head><title>A</title></head><body><main><h1>A</h1>"
                             "<p>Alpha page, edited.</p></main></body></html>")
    report = cli.json("resync")  # a cron line that does not repeat the flag
    assert report["totals"]["updated"] == 1 and report["totals"]["failed"] == 0
    status = cli.json("status")
    [definition] = status["sourceDefinitions"]
    assert definition["allowPrivateNetwork"] is True
    assert definition["target"] == site.url("/a") and definition["kind"] == "url"
    assert "allowed" in cli("status").stdout
    # without the remembered permission the same definition is refused by the guard
    _set_options(cli.db_url, "url", {})
    report = cli.json("resync", code=1)
    assert report["namespaces"][0]["errors"][0]["type"] == "BlockedURL"
    assert cli.json("status")["sourceDefinitions"][0]["allowPrivateNetwork"] is False


def test_the_config_opt_in_is_remembered_by_web_definitions_only(
        cli: Cli, site: LocalServer, docs: Path, workdir: Path) -> None:
    (workdir / "kbctl.yaml").write_text(
        f"allow_private_network: true\nsources:\n  - kind: files\n    target: docs\n"
        f"  - kind: url\n    target: {site.url('/a')}\n")
    cli.json("ingest")
    assert sorted(rows(cli.db_url, "SELECT kind, options FROM source_defs")) == [
        ("files", {}), ("url", {"allow_private_network": True})]
    # one source of a config may carry the opt-in on its own
    (workdir / "kbctl.yaml").write_text(
        f"namespace: one\nsources:\n  - kind: url\n    target: {site.url('/a')}\n"
        f"    allow_private_network: true\n")
    assert cli.json("ingest")["added"] == 1
    assert cli.json("resync")["totals"]["failed"] == 0


def test_a_kind_with_a_bug_fails_alone_and_deletes_nothing(
        cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.KINDS, "echo", echo_source.KIND)
    monkeypatch.setitem(registry.KINDS, "flaky", echo_source.FLAKY)
    (workdir / "kbctl.yaml").write_text(
        "sources:\n  - kind: echo\n    target: before\n  - kind: flaky\n    target: list\n"
        "  - kind: flaky\n    target: fine\n  - kind: echo\n    target: after\n")
    report = cli.json("ingest", code=1)
    assert report["added"] == 5 and report["failed"] == 1
    [error] = report["errors"]
    assert error["error"] == "flaky list: cannot list it: RuntimeError: listing bug"
    # the same kind failing halfway through a read keeps what it read and deletes nothing
    monkeypatch.setattr(echo_source.FlakySource, "expand", lambda self, spec: Expansion(
        leaves=[Leaf(ref=f"kb://flaky/read/{i}", url=f"kb://flaky/read/{i}", hint="x")
                for i in range(3)]))
    report = cli.json("resync", code=1)
    assert "cannot read it: RuntimeError: reading bug" in report["namespaces"][0]["errors"][0][
        "error"]
    assert report["totals"]["deleted"] == 0
    assert rows(cli.db_url, "SELECT count(*) FROM sources WHERE ref LIKE 'kb://flaky/fine/%%'"
                ) == [(3,)]
