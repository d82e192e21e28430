"""Words that mean the same thing in software documentation, for lexical search.

People ask in their own words and docs answer in theirs: "delete a folder" against
"remove a directory tree", "fake" against "mock", "env var" against "environment
variable". BM25 only matches the words it is given, so a question's words that belong to a
group here bring the group's other members into the search (``lexical.query_lexemes_cte``)
at ``lexical.RELATED_WEIGHT`` of their own weight: a passage in the question's own words
still ranks first, and the score's ceiling is the question's own words only.

What belongs here: only words used for the same thing, whatever the project or language:
an abbreviation and its long form, and the names one construct goes by in different
communities. Words that are merely related ("error" and "exception", "print" and
"display", "install" and "setup") or that some tools tell apart ("update" and "upgrade")
do not: they widen every question that uses them and cost more precision than they find.

A member may be a phrase; it joins when the question holds every one of its words (after
stemming, so "folders" is "folder"). Members are compared as PostgreSQL's English
configuration reads them, the same as the index.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

_WORD = re.compile(r"[^\W_]+")
# Stemming keeps a word's first three letters: a member's word can only match a question's
# word that begins as it does, or, for a word of two letters, that begins with it ("ids"
# for "id", "folders" for "folder").
_PREFIX = 3
# The members one question may send to the database to be stemmed and matched: a project's
# thousand rules sharing common words cost seconds a question past this.
MAX_CANDIDATE_MEMBERS = 400

GROUPS: tuple[tuple[str, ...], ...] = (
    # the same thing by another name
    ("folder", "directory"),
    ("delete", "remove", "erase"),
    ("extension", "suffix"),
    ("temporary", "temp", "tmp", "scratch"),
    ("quit", "exit"),
    ("kill", "terminate"),
    ("launch", "spawn"),
    ("execute", "run"),
    ("download", "fetch"),
    ("fake", "mock", "stub"),
    ("cancel", "abort"),
    ("cleanup", "clean-up", "teardown"),
    ("shuffle", "random order"),
    ("ctrl-c", "sigint", "keyboard interrupt"),
    ("exit code", "exit status"),
    ("current directory", "working directory", "cwd"),
    ("anonymous function", "lambda"),
    ("variadic", "varargs", "any number of arguments"),
    ("null", "nil", "none"),
    ("switch statement", "switch case", "match statement"),
    ("keyboard shortcut", "key binding", "keybinding", "hotkey"),
    ("login", "signin"),
    ("identifier", "id"),
)

# An abbreviation brings in its long form, not the other way: docs write the long form in
# their prose, and a question's "memory" or "library" made "mem" and "lib" count, which
# prose does not use but names and paths do (``mem_alloc``, ``zlib``). Left out: short
# forms that name a construct of their own in some language, where the long form means
# something else (Rust's ``Sync`` trait and ``proc`` macros, ``impl`` blocks, the
# ``async`` keyword against asynchronous programming at large).
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "env": ("environment",),
    "var": ("variable",),
    "arg": ("argument",),
    "param": ("parameter",),
    "config": ("configuration",),
    "func": ("function",),
    "dict": ("dictionary",),
    "str": ("string",),
    "int": ("integer",),
    "bool": ("boolean",),
    "repo": ("repository",),
    "db": ("database",),
    "auth": ("authentication",),
    "msg": ("message",),
    "info": ("information",),
    "regex": ("regular expression",),
    "regexp": ("regular expression",),
    "app": ("application",),
    "lib": ("library",),
    "pkg": ("package",),
    "deps": ("dependencies",),
    "cmd": ("command",),
    "src": ("source",),
    "dest": ("destination",),
    "max": ("maximum",),
    "min": ("minimum",),
    "len": ("length",),
    "num": ("number",),
    "mem": ("memory",),
    "perf": ("performance",),
    "stdin": ("standard input",),
    "stdout": ("standard output",),
    "stderr": ("standard error",),
    "cli": ("command line",),
    "gui": ("graphical user interface",),
    "ui": ("user interface",),
    "yaml": ("yml",),
    "js": ("javascript",),
    "ts": ("typescript",),
    "k8s": ("kubernetes",),
    "postgres": ("postgresql",),
    "md": ("markdown",),
}


# A project's own rules (``synonyms:`` in kbctl.yaml), bounded like every input.
MAX_RULES = 1000
MAX_MEMBERS = 32
MAX_MEMBER_CHARS = 100


def parse_rule(text: str) -> Rule:
    """One rule in the synonym-file form search engines share: ``a, b, c`` (each means the
    others) or ``a, b => c`` (a question using a or b also looks for c). Raises ValueError
    saying what is wrong."""
    sides = text.split("=>")
    if len(sides) > 2:
        raise ValueError("has more than one '=>'")
    lists = [[m.strip() for m in side.split(",")] for side in sides]
    if len(lists) == 2 and any(not "".join(side).strip() for side in lists):
        raise ValueError("has nothing on one side of '=>'")
    for members in lists:
        if any(not m for m in members):
            raise ValueError("has an empty word (two commas in a row, or one at an end)")
        if len(members) > MAX_MEMBERS:
            raise ValueError(f"has {len(members)} words on one side; at most {MAX_MEMBERS}")
        for m in members:
            if len(m) > MAX_MEMBER_CHARS:
                raise ValueError(f"has a word or phrase of {len(m)} characters; at most "
                                 f"{MAX_MEMBER_CHARS}")
            if any(unicodedata.category(c) in ("Cc", "Cf") for c in m):
                raise ValueError(f"{m!r} holds an invisible or control character, which no "
                                 f"word of the docs would match")
            if not _words(m):
                raise ValueError(f"{m!r} has no letter or digit")
    if len(lists) == 1:
        rule = Rule.equivalent(lists[0])
        if len(rule.sources) < 2:
            raise ValueError("names one word: list two or more that mean the same, or "
                             "write 'word => other'")
        return rule
    return Rule.one_way(lists[0], lists[1])


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _key(word: str) -> str:
    return word[:_PREFIX]


def _cleaned(words: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(" ".join(w.lower().split()) for w in words if w.strip()))


@dataclass(frozen=True)
class Rule:
    """A question holding one of ``sources`` also looks for every one of ``targets``: an
    equivalence has the same members on both sides, an abbreviation one source."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]

    @classmethod
    def equivalent(cls, words: Iterable[str]) -> Rule:
        members = _cleaned(words)
        return cls(members, members)

    @classmethod
    def one_way(cls, sources: Iterable[str], targets: Iterable[str]) -> Rule:
        return cls(_cleaned(sources), _cleaned(targets))

    def roles(self) -> list[tuple[str, str]]:
        """Each member once with its role: ``s`` a source, ``t`` a target, ``b`` both."""
        return [(m, "b" if m in self.sources and m in self.targets
                 else "s" if m in self.sources else "t")
                for m in dict.fromkeys((*self.sources, *self.targets))]


@dataclass(frozen=True)
class Thesaurus:
    """Rules that relate words and phrases meaning the same thing (the module docstring)."""

    rules: tuple[Rule, ...] = ()

    def extended(self, rules: Iterable[Rule]) -> Thesaurus:
        """This thesaurus with ``rules`` added (a project's own vocabulary)."""
        return Thesaurus((*self.rules, *rules))

    @cached_property
    def _by_key(self) -> dict[str, list[tuple[int, tuple[str, ...]]]]:
        """Each source's word keys, under the key of its first word, with its rule: a
        question looks up only its own words' keys, however many rules there are."""
        index: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        for number, rule in enumerate(self.rules):
            for source in rule.sources:
                keys = tuple(_key(w) for w in _words(source))
                if keys:
                    index.setdefault(keys[0], []).append((number, keys))
        return index

    def candidates(self, question: str) -> dict[str, list[Any]]:
        """The rules that may apply to the question, as the parameters ``sg``, ``sm`` and
        ``sr`` of ``lexical.query_lexemes_cte`` (each member's rule number, the member, its
        role). The test here is cheap (words' first letters) so the database stems only
        these members; it decides exactly, with the index's own stemmer."""
        keys = {k for w in _words(question) for k in (_key(w), w[:2])}
        applying = sorted({number for key in keys for number, source in self._by_key.get(key, ())
                           if all(k in keys for k in source)})
        numbers: list[int] = []
        members: list[str] = []
        roles: list[str] = []
        for number in applying:
            if len(members) + len(self.rules[number].roles()) > MAX_CANDIDATE_MEMBERS:
                break
            for member, role in self.rules[number].roles():
                numbers.append(number)
                members.append(member)
                roles.append(role)
        return {"sg": numbers, "sm": members, "sr": roles}


BUILT_IN = Thesaurus((*(Rule.equivalent(g) for g in GROUPS),
                      *(Rule.one_way([short], long) for short, long in ABBREVIATIONS.items())))
NONE = Thesaurus()
