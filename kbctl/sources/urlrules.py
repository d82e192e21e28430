"""Which URLs of a web source the operator wants: ``--include`` / ``--exclude`` rules.

A rule is a glob on the URL's path (``/docs/*``, ``*/changelog*``), or a regular
expression after ``re:`` (``re:^/v[0-9]+/``); both see the path with its query string
(``/search?q=x``). Globs know two wildcards: ``*`` (any run of characters, ``/``
included) and ``?`` (one character). They are matched without backtracking: the pieces
between stars have a fixed length, so each is found leftmost in one pass, and a hostile
sitemap full of long URLs cannot make a rule slow. Regular expressions run on RE2, in
time linear in the URL whatever the pattern (``re:^/(a+)+$`` included); they are compiled
once, when the definition is read, and refused there when RE2 cannot run them
(backreferences, lookarounds), when they nest groups past ``MAX_GROUP_DEPTH`` or repeat
past RE2's 1,000. A source takes at most ``MAX_RULES`` rules of each action and
``MAX_RULES_CHARS`` characters of them, so every URL's verdict costs a bounded amount.

A URL is kept when it matches at least one include rule (or there are none) and no
exclude rule. Every drop is put down to one rule, so a report can say what each rule did.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..errors import InputError

REGEX_PREFIX = "re:"
#: What a URL that matches none of the include rules is put down to.
NOT_INCLUDED = "include (matched none)"
MAX_PATTERN = 1000
#: Rules of one action (include or exclude) a source may have, and their characters.
MAX_RULES = 1_000
MAX_RULES_CHARS = 64_000
MAX_GROUP_DEPTH = 32
#: RE2's own limit on a counted repetition (``{n}``, ``{m,n}``).
MAX_REPEAT = 1_000
#: Memory RE2 may use for one compiled rule.
RE2_MAX_MEM = 8 << 20
_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")


@dataclass(frozen=True)
class _Glob:
    """A glob split at its stars: fixed-length pieces matched leftmost, in order."""

    pieces: tuple[re.Pattern[str], ...]
    widths: tuple[int, ...]

    @classmethod
    def compile(cls, pattern: str) -> _Glob:
        parts = pattern.split("*")
        pieces, widths = [], []
        for part in parts:
            pieces.append(re.compile("".join("." if c == "?" else re.escape(c) for c in part),
                                     re.DOTALL))
            widths.append(len(part))
        return cls(tuple(pieces), tuple(widths))

    def matches(self, text: str) -> bool:
        pieces, widths = self.pieces, self.widths
        if len(pieces) == 1:
            return len(text) == widths[0] and pieces[0].match(text) is not None
        first, last = pieces[0], pieces[-1]
        if len(text) < sum(widths):
            return False
        if not first.match(text):
            return False
        end = len(text) - widths[-1]
        if not last.match(text, end):
            return False
        pos = widths[0]
        for piece, width in zip(pieces[1:-1], widths[1:-1], strict=True):
            if not width:
                continue
            found = piece.search(text, pos, end)
            if found is None:
                return False
            pos = found.end()
        return pos <= end


@dataclass(frozen=True)
class UrlRule:
    """One ``--include`` or ``--exclude`` pattern, compiled."""

    action: str  # "include" or "exclude"
    pattern: str
    _glob: _Glob | None = field(default=None, compare=False, repr=False)
    _regex: Any = field(default=None, compare=False, repr=False)  # an RE2 pattern

    @classmethod
    def parse(cls, action: str, pattern: object, *, where: str = "") -> UrlRule:
        """Compile one rule; a bad pattern is bad input naming the pattern."""
        prefix = f"{where}: " if where else ""
        if not isinstance(pattern, str) or not pattern.strip():
            raise InputError(f"{prefix}--{action} needs a non-empty pattern, got {pattern!r}")
        if len(pattern) > MAX_PATTERN:
            raise InputError(f"{prefix}--{action} pattern is longer than {MAX_PATTERN} "
                             f"characters: {pattern[:60]!r}…")
        if pattern.startswith(REGEX_PREFIX):
            problem, regex = compile_regex(pattern[len(REGEX_PREFIX):])
            if regex is None:
                shown = pattern if len(pattern) <= 80 else f"{pattern[:60]}…"
                raise InputError(f"{prefix}--{action} {shown!r}: {problem}",
                                 hint="rules are RE2 expressions: no backreferences or "
                                      "lookarounds")
            return cls(action, pattern, _regex=regex)
        if not pattern.startswith(("/", "*")):
            raise InputError(
                f"{prefix}--{action} {pattern!r}: a glob matches the URL's path from its "
                f"start, so it begins with '/' or '*'",
                hint=f"for example '/{pattern.lstrip('/')}' or '*{pattern}', or "
                     f"'re:{pattern}' for a regular expression")
        return cls(action, pattern, _glob=_Glob.compile(pattern))

    def matches(self, target: str) -> bool:
        """``target`` is a URL's path and query (see ``rule_target``)."""
        if self._regex is not None:
            return self._regex.search(target) is not None
        assert self._glob is not None
        return self._glob.matches(target)

    @property
    def label(self) -> str:
        return f"{self.action} {self.pattern}"


def rules_problem(patterns: Sequence[object]) -> str | None:
    """Why a list of rules is too large to check every URL against, or None."""
    if len(patterns) > MAX_RULES:
        return f"has {len(patterns):,} rules (at most {MAX_RULES:,})"
    size = sum(len(p) for p in patterns if isinstance(p, str))
    if size > MAX_RULES_CHARS:
        return f"rules hold {size:,} characters (at most {MAX_RULES_CHARS:,})"
    return None


def compile_regex(body: str) -> tuple[str, Any]:
    """("", the RE2 pattern) for ``body``, or (why it is refused, None). Its shape is
    checked first in one pass: a pattern RE2 would take must still be small to run."""
    import re2  # here: loaded only by sources that have a regular-expression rule

    depth = deepest = 0
    escaped = in_class = False
    for char in body:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    if deepest > MAX_GROUP_DEPTH:
        return f"nests groups {deepest} deep (at most {MAX_GROUP_DEPTH})", None
    for match in _REPEAT.finditer(body):
        counts = [int(n) for n in match.groups() if n]
        if max(counts) > MAX_REPEAT:
            return (f"repeats {match.group(0)} times (at most {MAX_REPEAT:,})", None)
    options = re2.Options()
    options.log_errors = False  # the message is ours, once, on stderr's error line
    options.max_mem = RE2_MAX_MEM
    try:
        return "", re2.compile(body, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return f"not a valid regular expression ({reason})", None


def rule_target(url: str) -> str:
    """What rules see of a URL: its path, and ``?query`` when it has one."""
    parts = urlsplit(url)
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path


@dataclass(frozen=True)
class UrlRules:
    """A source's include and exclude rules."""

    include: tuple[UrlRule, ...] = ()
    exclude: tuple[UrlRule, ...] = ()

    @classmethod
    def parse(cls, include: Iterable[object] = (), exclude: Iterable[object] = (), *,
              where: str = "") -> UrlRules:
        include, exclude = list(include), list(exclude)
        for action, patterns in (("include", include), ("exclude", exclude)):
            problem = rules_problem(patterns)
            if problem:
                raise InputError(f"{where}: --{action} {problem}" if where
                                 else f"--{action} {problem}")
        return cls(tuple(UrlRule.parse("include", p, where=where) for p in include),
                   tuple(UrlRule.parse("exclude", p, where=where) for p in exclude))

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)

    def verdict(self, url: str) -> str | None:
        """None when the URL is kept, else the label of the rule that drops it."""
        if not self:
            return None
        target = rule_target(url)
        if self.include and not any(rule.matches(target) for rule in self.include):
            return NOT_INCLUDED
        for rule in self.exclude:
            if rule.matches(target):
                return rule.label
        return None

    def split(self, urls: Sequence[str]) -> tuple[list[str], dict[str, int]]:
        """The URLs kept (in order) and how many each rule dropped (rules that dropped
        nothing included, so a report shows a rule that never matched)."""
        dropped = {rule.label: 0 for rule in self.exclude}
        if self.include:
            dropped[NOT_INCLUDED] = 0
        kept = []
        for url in urls:
            why = self.verdict(url)
            if why is None:
                kept.append(url)
            else:
                dropped[why] += 1
        return kept, dropped
