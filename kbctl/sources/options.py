"""Typed source options: each kind declares a frozen dataclass whose fields carry their check.

Options reach a source three ways: command-line flags, an entry of kbctl.yaml, and a
definition recorded by an earlier run. All three are built by ``parse_options``, so types,
ranges and unknown keys are checked in one place, before anything is recorded, and the
message names what the user can fix: the flag, the file and line, or the recorded
definition. A field's default is the kind's default, declared once, next to its check.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

from ..errors import InputError

#: How to name an option in a message: ``key`` → "--max-pages", "kbctl.yaml:7: sources[0]
#: .max_pages", "crawl source https://…: option 'max_pages'".
Where = Callable[[str], str]


class Bad(ValueError):
    """A value an option refuses; ``what`` completes "… must be {what}"."""

    def __init__(self, what: str, *, hint: str | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint


Check = Callable[[Any], Any]


def option(default: Any, check: Check, *, flag: str | None = None,
           help: str | None = None) -> Any:
    """A dataclass field with its check (which returns the normalised value or raises
    ``Bad``), the command-line flag that sets it (``--name-with-dashes`` by default) and
    that flag's help (``{default}`` in it: the default). An option with help is a flag of
    its kind's generated command (``kbctl.cli.ingest``); one without is set another way."""
    shown = None if help is None else help.replace("{default}", str(default))
    return field(default=default, metadata={"check": check, "flag": flag, "help": shown})


# Help shared by several kinds' options, and by the commands written by hand.
NOINDEX_HELP = ("Keep pages marked noindex (robots meta tag, or a web page's X-Robots-Tag "
                "header).")
ROBOTS_HELP = "Do not honour robots.txt (only for sites you run)."
VERSION_HELP = ("Versioned docs: keep this version of each page (stable, latest, a name, or "
                "all) [default: where a site's root points, else stable, the unprefixed or "
                "the newest].")
LANG_HELP = ("Translated docs: keep this language (en, fr, …, or all) [default: where a "
             "site's root points, else en, else the unprefixed].")


# --- checks ---------------------------------------------------------------------------


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Bad("true or false")
    return value


def integer(minimum: int = 1) -> Check:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise Bad(f"an integer of at least {minimum}")
        return value
    return check


def positive_number(value: Any) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value <= 0):
        raise Bad("a number greater than 0")
    return float(value)


def text(value: Any) -> str:
    if not isinstance(value, str):
        raise Bad("a string")
    return value


def choice(*allowed: str) -> Check:
    def check(value: Any) -> str:
        if value not in allowed:
            raise Bad(" or ".join(allowed))
        return str(value)
    return check


def http_url(value: Any) -> str:
    if not isinstance(value, str):
        raise Bad("an http(s) URL")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Bad("an http(s) URL")
    return value


def strings(what: str) -> Check:
    """A list of non-empty strings (one string counts as a list of one) → a tuple."""
    def check(value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(
                isinstance(item, str) and item.strip() for item in items):
            raise Bad(what)
        return tuple(items)
    return check


def version_name(value: Any) -> str:
    """A version or language name: ``stable``, ``latest``, ``3.11``, ``en``, ``all``."""
    if not isinstance(value, str) or not value.strip() or "/" in value:
        raise Bad("a name such as 'stable', 'latest', 'en' or 'all'")
    return value.strip()


# --- the options base ----------------------------------------------------------------

O = TypeVar("O", bound="SourceOptions")  # noqa: E741


@dataclass(frozen=True)
class SourceOptions:
    """Base of every kind's options; subclasses add fields made with ``option``."""

    #: the kind these options belong to, for messages
    kind: ClassVar[str] = "source"
    #: the help of the kind's generated command (its first paragraph what ``kbctl ingest
    #: --help`` lists, then an example), and of its target argument; a kind without is
    #: given its command by hand
    about: ClassVar[str | None] = None
    target_name: ClassVar[str] = "target"
    target_help: ClassVar[str] = "The source's target."

    @classmethod
    def parse(cls: type[O], raw: Mapping[str, Any], where: Where) -> O:
        """Check ``raw`` (None values count as not given) and build the options."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        for key in raw:
            if key not in known:
                names = ", ".join(known) or "none"
                raise InputError(f"{where(str(key))} is not an option of a {cls.kind} "
                                 f"source (known: {names})")
        values = {}
        for key, value in raw.items():
            if value is None:
                continue
            try:
                values[key] = known[key].metadata["check"](value)
            except Bad as bad:
                raise InputError(f"{where(key)} must be {bad.what}, got {_shown(value)}"
                                 ) from None
        return cls(**values)

    @classmethod
    def check_target(cls, target: str) -> None:
        """Refuse a target this kind can never read (raise ``Bad``); where it exists is
        only known when the source runs."""

    @classmethod
    def check_present(cls, target: str) -> None:
        """Refuse a new definition's target that is plainly not there (raise
        ``InputError``), before a knowledge base is opened or made for it; a recorded
        definition's is not asked: its source fails when it runs."""

    def reaching_private_network(self) -> SourceOptions:
        """These options, remembering that the source was given ``--allow-private-network``
        (only a kind that fetches keeps it: files and text never touch the network)."""
        return self

    def to_record(self) -> dict[str, Any]:
        """The options that differ from their defaults, as JSON values: what a definition
        records, so a default changed later reaches definitions recorded before."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = _json(value)
        return out

    @classmethod
    def flag(cls, key: str) -> str:
        """The command-line flag of option ``key``."""
        declared = {f.name: f.metadata.get("flag") for f in dataclasses.fields(cls)}
        return declared.get(key) or "--" + key.replace("_", "-")

    @classmethod
    def flags(cls) -> list[dataclasses.Field[Any]]:
        """The options offered as command-line flags (those with help): the kind's own
        first, then those it shares with other kinds."""
        own = [f for f in dataclasses.fields(cls) if f.metadata.get("help")]
        mine = set(vars(cls).get("__annotations__", {}))
        return [f for f in own if f.name in mine] + [f for f in own if f.name not in mine]

    @classmethod
    def default(cls, key: str) -> Any:
        """The default of option ``key`` (for help texts)."""
        return next(f.default for f in dataclasses.fields(cls) if f.name == key)


def _json(value: Any) -> Any:
    if isinstance(value, frozenset):
        return sorted(value)
    return list(value) if isinstance(value, tuple) else value


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
