"""What the command line knows before any command is imported: every command and where it
lives (``COMMANDS``, the one place where imports wait until they are needed), how help is
marked up, and whether a signal ends the process at once.

A command's module is imported only when that command runs (or its own ``--help`` is asked
for), so a command loads what it uses and no more; ``kbctl --help`` lists them from the
help lines written here. Nothing here imports Typer or a command.
"""

from __future__ import annotations

import importlib
from typing import Any

# Set by the console script: a signal ends the process at once (``common.stop_now``). In a
# process that embeds kbctl (tests, a library caller) it ends the command only.
STOP_AT_ONCE = False

# Set by the console script (``kbctl.entry``), which holds the garbage collector off while
# the command line is imported: the 70,000 to 90,000 objects that makes live as long as the
# process, and the collector walked them again and again as they were made (20 to 27 ms of
# a query's 310 to 340 ms of imports, 60 to 65 ms of an ingest's 500 to 550). Once the
# command's module is imported, ``root.RegistryGroup`` freezes them out of its sight and
# turns it back on.
COLLECT_AFTER_LOAD = False

# Help is click's plain text: it wraps to any width (Typer's panels cut option names at 80
# columns, a CI log's width), reads the same in a pipe, and shows no value for a flag.
HELP_MARKUP = None


class Entry:
    """A command (or a group of them) in the registry.

    ``target`` is ``"module:attribute"``: a command function, or for a group its
    ``typer.Typer``. ``help`` is the line ``kbctl --help`` shows for it without importing
    it: the first paragraph of the command's own help (a test holds the two equal).
    ``question``: its argument is free text (``common.QuestionCommand``). ``commands``: a
    group's further commands, kept in other modules (``{name: "module:function"}``).
    """

    __slots__ = ("commands", "help", "question", "target")

    def __init__(self, target: str, help: str, *, question: bool = False,
                 commands: dict[str, str] | None = None) -> None:
        self.target, self.help, self.question = target, help, question
        self.commands = commands or {}


# In the order `kbctl --help` lists them.
COMMANDS: dict[str, Entry] = {
    "query": Entry("kbctl.cli.query:query", "Retrieve the passages that best answer a "
                   "question, with citations.", question=True),
    "resync": Entry("kbctl.cli.resync:resync", "Re-run the recorded sources of a namespace "
                    "and apply only the differences."),
    "status": Entry("kbctl.cli.status:status", "Sources, chunks, embedder and last sync of "
                    "each namespace."),
    "forget": Entry("kbctl.cli.resync:forget", "Forget a recorded source: resync stops "
                    "running it, and its pages leave the knowledge base."),
    "reembed": Entry("kbctl.cli.reembed:reembed", "Re-embed the whole KB in place from "
                     "stored chunk text, then switch to the new embedder."),
    "doctor": Entry("kbctl.cli.doctor:doctor", "Show the embedded PostgreSQL's data "
                    "directory (server, users, watchdog) and repair what a crash left "
                    "there: a stale postmaster.pid, an orphan server without one, leftover "
                    "server processes, handles of exited processes."),
    "ingest": Entry("kbctl.cli.ingest:app", "Ingest documentation into the knowledge base."),
    "eval": Entry("kbctl.cli.eval:app", "Gate retrieval quality: `kbctl eval SUITE…` runs "
                  "eval suites (JSON or YAML) against the knowledge base and exits 1 when a "
                  "case fails or regresses; `kbctl eval init` scaffolds a suite from the "
                  "knowledge base."),
    "memory": Entry("kbctl.cli.memory:app", "Two-tier agent memory: shared playbooks and "
                    "private per-user notes."),
    "serve": Entry("kbctl.cli.serve:app", "Serve kbctl to agent runtimes."),
    "tools": Entry("kbctl.cli.tools:app", "Tool definitions for function calling (openai, "
                   "anthropic, json-schema), and `tools call` to run one tool."),
}


def resolve(target: str) -> Any:
    """Import the module a registry ``target`` names and return its attribute."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)
