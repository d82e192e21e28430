"""Which URLs of a web source the operator wants: ``--include`` / ``--exclude`` rules.

A rule is a glob on the URL's path (``/docs/*``, ``*/changelog*``), or a regular
expression after ``re:`` (``re:^/v[0-9]+/``); both see the path with its query string
(``/search?q=x``). Globs know two wildcards: ``*`` (any run of characters, ``/``
included) and ``?`` (one character). They are matched without backtracking: the pieces
between stars have a fixed length, so each is found leftmost in one pass, and a hostile
sitemap full of long URLs cannot make a rule slow. Regular expressions are compiled once,
when the definition is read.

A URL is kept when it matches at least one include rule (or there are none) and no
exclude rule. Every drop is put down to one rule, so a report can say what each rule did.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..errors import InputError

REGEX_PREFIX = "re:"
#: What a URL that matches none of the include rules is put down to.
NOT_INCLUDED = "include (matched none)"
MAX_PATTERN = 1000


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
    _regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

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
            try:
                regex = re.compile(pattern[len(REGEX_PREFIX):])
            except re.error as exc:
                raise InputError(f"{prefix}--{action} {pattern!r}: not a valid regular "
                                 f"expression ({exc})") from None
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
