"""What each command imports. The console script resolves a command from the registry
(``kbctl.cli.registry.COMMANDS``) before it imports the command's module, so a command loads what
it uses: ``--version`` not even Typer, ``--help`` no command, ``query`` the store, its
ranking and its renderer but no extraction, crawling or memory. Each case runs the
console script's own entry in a fresh process and reads ``sys.modules`` as it exits: a
structural check, timed by nothing."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbctl.cli.registry import COMMANDS

from .conftest import Cli

# Runs kbctl as the console script does, and writes the modules it holds at exit.
PROBE = """
import atexit, os, sys

def held():
    with open(os.environ["KBCTL_HELD_MODULES"], "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(sys.modules)))

atexit.register(held)
sys.argv = ["kbctl", *sys.argv[1:]]
from kbctl.entry import main
main()
"""

# What a command that reads no documents has no use for; memory chunks its own files.
READING = ("kbctl.extract", "kbctl.generators", "kbctl.sources.base", "kbctl.sources.crawl",
           "kbctl.sources.fetchpage", "kbctl.sources.registry", "kbctl.pipeline.ingest",
           "trafilatura", "lxml", "docutils")
EXTRACTION = (*READING, "kbctl.chunk", "markdown_it")
MEMORY = ("kbctl.memory",)
EVALS = ("kbctl.evals",)
# the agent's session and server, and the SDKs only `serve mcp` and `tools` use
AGENT = ("kbctl.agent.session", "kbctl.agent.handlers", "kbctl.agent.mcp_server", "mcp",
         "jsonschema")
HTTP = ("httpx", "kbctl.net.client", "kbctl.embed.gemini", "kbctl.embed.openai")
# the web kinds, which a files or text ingest has no use for
WEB = ("kbctl.sources.url", "kbctl.sources.sitemap", "kbctl.sources.crawl",
       "kbctl.sources.llms", "kbctl.sources.web", "kbctl.sources.fetchpage")
# what a command that draws no progress bar and parses its options as Typer does has no
# use for: click itself (Typer brings its own copy) and the validators of Typer 0.29 on
QUICK = ("click", "pydantic", "rich.progress")
# what only a running command needs: the database driver, the output layer, the config
RUNNING = ("psycopg", "rich", "yaml", "kbctl.config", "kbctl.render", "kbctl.store",
           "kbctl.pipeline", "kbctl.cli.common")


def held_modules(tmp_path: Path, *args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules a ``kbctl ARGS…`` process holds when it ends, and how it ended."""
    listing = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.txt"
    env = {**os.environ, "KBCTL_HELD_MODULES": str(listing)}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert listing.exists(), done.stderr
    return set(listing.read_text(encoding="utf-8").split("\n")), done


def holding(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    """The ``prefixes`` (packages or modules) that ``modules`` holds any part of."""
    return sorted(p for p in prefixes if any(m == p or m.startswith(p + ".") for m in modules))


# `serve mcp` offers the tools `kbctl tools` lists, with the same options
SHARES = {"serve": {"kbctl.cli.tools"}}


def command_modules(*words: str) -> set[str]:
    """The ``kbctl.cli`` modules a command may hold: the registry's root, the shared
    options, and the modules its registry entry names."""
    entry = COMMANDS[words[0]]
    named = {entry.target, *entry.commands.values()}
    return {"kbctl.cli", "kbctl.cli.registry", "kbctl.cli.root", "kbctl.cli.common",
            *SHARES.get(words[0], ()), *(target.partition(":")[0] for target in named)}


def stray_commands(modules: set[str], *words: str) -> list[str]:
    """``kbctl.cli`` modules held beyond those of the command ``words`` names."""
    return sorted(m for m in modules if m.startswith("kbctl.cli")
                  and m not in command_modules(*words))


def test_version_loads_nothing_but_the_registry(tmp_path: Path) -> None:
    modules, done = held_modules(tmp_path, "--version")
    assert done.returncode == 0 and done.stdout.startswith("kbctl "), done.stderr
    assert {m for m in modules if m.startswith("kbctl")} <= {
        "kbctl", "kbctl.entry", "kbctl.errors", "kbctl.cli", "kbctl.cli.registry"}
    assert not holding(modules, ("typer", "click", *RUNNING))


def test_an_editable_install_adds_no_import_hook(tmp_path: Path) -> None:
    """The README installs kbctl editable. Setuptools' import hook for that (a meta path
    finder, with pathlib, re and importlib.util) ran in every process of the environment;
    a plain path in a .pth file (``package-dir`` in pyproject.toml) costs nothing."""
    done = subprocess.run([sys.executable, "-c", "import sys; print(*sys.modules)"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, check=True)
    assert not [m for m in done.stdout.split() if "editable" in m and "kbctl" in m]


def test_help_lists_every_command_without_importing_one(tmp_path: Path) -> None:
    modules, done = held_modules(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert {m for m in modules if m.startswith("kbctl")} <= {
        "kbctl", "kbctl.entry", "kbctl.errors", "kbctl.cli", "kbctl.cli.registry",
        "kbctl.cli.root"}
    assert not holding(modules, RUNNING)
    listed = done.stdout.split("Commands:")[1]
    for name, entry in COMMANDS.items():
        line = next(line for line in listed.splitlines() if line.split()[:1] == [name])
        assert entry.help.split()[0] in line, (name, line)


HELP_CASES = [
    (("ingest", "--help"), MEMORY + EVALS + AGENT),
    (("ingest", "sitemap", "--help"), MEMORY + EVALS + AGENT),
    (("resync", "--help"), MEMORY + EVALS + AGENT),
    (("forget", "--help"), MEMORY + EVALS + AGENT),
    (("reembed", "--help"), MEMORY + EVALS + AGENT),
    (("eval", "--help"), EXTRACTION + MEMORY + AGENT),
    (("memory", "--help"), READING + EVALS + ("mcp", "kbctl.agent.mcp_server")),
    (("serve", "mcp", "--help"), READING + EVALS + ("mcp", "kbctl.agent.mcp_server")),
    (("tools", "--help"), READING + EVALS + ("mcp", "kbctl.agent.mcp_server")),
    (("doctor", "--help"), EXTRACTION + MEMORY + EVALS + AGENT),
]


@pytest.mark.parametrize("args, unused", HELP_CASES,
                         ids=[" ".join(args) for args, _ in HELP_CASES])
def test_a_command_imports_only_its_own_machinery(tmp_path: Path, args: tuple[str, ...],
                                                  unused: tuple[str, ...]) -> None:
    """A command's ``--help`` imports its module, and with it everything that module
    imports before it runs."""
    modules, done = held_modules(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert not holding(modules, unused)
    assert not stray_commands(modules, args[0])


def test_commands_on_a_knowledge_base_load_only_what_they_use(tmp_path: Path,
                                                              db_url: str) -> None:
    """Run for real against a small knowledge base: what a command imports on its way
    (the embedder it resolves, the renderer of its result) counts too."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ownership.md").write_text("# Ownership\n\nEach value in Rust has an owner; "
                                       "borrowing lends it without moving it.\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text("version: 1\ncases:\n  - id: owner\n    question: who owns a value\n"
                     "    expect:\n      sourceIncludes: ownership\n")
    db = ("--db", db_url)
    runs = [
        # a lexical knowledge base of files: no web kind, no HTTP client
        (("ingest", "files", str(docs), *db), MEMORY + EVALS + AGENT + HTTP + WEB),
        (("ingest", "text", "Borrowing lends a value.", "--ref", "b", *db),
         MEMORY + EVALS + AGENT + HTTP + WEB),
        # a lexical knowledge base: its embedder is none, and no HTTP client is loaded
        # the agent's context block only for the format that prints it
        (("query", "who owns a value", *db),
         EXTRACTION + MEMORY + EVALS + AGENT + HTTP + QUICK + ("kbctl.agent",)),
        (("query", "who owns a value", "--format", "context", *db),
         EXTRACTION + MEMORY + EVALS + AGENT + HTTP + QUICK),
        (("eval", str(suite), *db), EXTRACTION + MEMORY + AGENT + HTTP + ("click", "pydantic")),
        (("status", *db), EXTRACTION + MEMORY + EVALS + AGENT + HTTP + QUICK),
        (("doctor", "--check", "--data-dir", str(tmp_path / "none")),
         EXTRACTION + MEMORY + EVALS + AGENT),
        (("memory", "list", "--agent", "bot", *db), READING + EVALS + ("mcp",)),
    ]
    found = {}
    for args, unused in runs:
        modules, done = held_modules(tmp_path, *args)
        assert done.returncode in (0, 1), (args, done.stderr)
        wrong = holding(modules, unused) + stray_commands(modules, args[0])
        if wrong:
            found[" ".join(args[:2])] = wrong
    assert not found


def test_the_registry_says_what_each_command_says_of_itself() -> None:
    """``kbctl --help`` shows the registry's lines, written beside the module names so that
    listing imports no command: each is the first paragraph of that command's own help."""
    from kbctl.cli.root import load

    for name, entry in COMMANDS.items():
        command = load(name, entry)
        assert command.get_short_help_str(limit=10_000) == entry.help, name
        for sub in entry.commands:  # a group's commands kept in other modules
            assert sub in command.commands, (name, sub)


# Runs kbctl as the console script does, and writes how its garbage collector stands at exit.
GC_PROBE = """
import atexit, gc, json, os, sys

during = []  # the freeze count at each collection
gc.callbacks.append(lambda phase, info: phase == "start" and during.append(gc.get_freeze_count()))
import kbctl.entry
started = len(during)  # the interpreter's and this probe's own, before kbctl's code runs

def held():
    with open(os.environ["KBCTL_GC"], "w", encoding="utf-8") as out:
        json.dump({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                   "while_importing": sum(1 for f in during[started:] if f == 0)}, out)

atexit.register(held)
sys.argv = ["kbctl", *sys.argv[1:]]
kbctl.entry.main()
"""


@pytest.mark.parametrize("args", [("query", "--help"), ("ingest", "files", "--help")])
def test_no_garbage_is_collected_while_the_command_is_imported(
        tmp_path: Path, args: tuple[str, ...], cli: Cli) -> None:
    """Importing a command makes tens of thousands of objects that live as long as the
    process: the console script collects none of them while it imports, then freezes what
    it made and collects as usual. A command run inside another process (the tests, a
    library caller) leaves that process's collector as it was."""
    report = tmp_path / "gc.json"
    done = subprocess.run([sys.executable, "-c", GC_PROBE, *args], capture_output=True,
                          text=True, env={**os.environ, "KBCTL_GC": str(report)},
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    stands = json.loads(report.read_text(encoding="utf-8"))
    assert stands["while_importing"] == 0 and stands["enabled"], stands
    assert stands["frozen"] > 10_000, stands  # what the imports made
    frozen = gc.get_freeze_count()
    assert cli(*args).exit_code == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen
