"""Source kinds: ``{kind: SourceKind}``, and building a definition from what the user gave.

A new kind is one module that declares its options and its adapter as a ``SourceKind``
(its ``KIND``), plus one line here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from importlib import import_module
from typing import Any

from ..errors import DefinitionError, InputError
from .base import SourceAdapter, SourceKind, SourceSpec
from .options import Bad, Where


class _Kinds(MutableMapping[str, SourceKind]):
    """``{kind: SourceKind}`` whose kinds are imported when first used: a ``files`` ingest
    loads no web machinery (its HTTP client, the sitemap parser, the extraction pool)."""

    def __init__(self, modules: Mapping[str, str]) -> None:
        self._found: dict[str, SourceKind | str] = dict(modules)

    def __getitem__(self, name: str) -> SourceKind:
        found = self._found[name]
        if isinstance(found, str):
            found = self._found[name] = import_module(found, __package__).KIND
        return found

    def __setitem__(self, name: str, value: SourceKind) -> None:
        self._found[name] = value

    def __delitem__(self, name: str) -> None:
        del self._found[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._found)

    def __len__(self) -> int:
        return len(self._found)


KINDS: MutableMapping[str, SourceKind] = _Kinds({
    "files": ".files",
    "text": ".text",
    "url": ".url",
    "sitemap": ".sitemap",
    "crawl": ".crawl",
    "llms": ".llms",
})


def kind(name: str) -> SourceKind:
    """The registered kind ``name``; an unknown one is bad input."""
    found = KINDS.get(name)
    if found is None:
        raise InputError(f"unknown source kind {name!r} (expected one of {', '.join(KINDS)})")
    return found


def source_spec(kind_name: str, target: str, options: Mapping[str, Any] | None = None, *,
                where: Where | None = None) -> SourceSpec:
    """A checked definition; ``where`` names an option in messages (a flag, a file:line),
    by default as "KIND source TARGET: option 'KEY'"."""
    found = kind(kind_name)
    name = where or (lambda key: f"{kind_name} source {target}: option '{key}'")
    try:
        found.options.check_target(target)
    except Bad as bad:
        raise InputError(f"{name('target')} must be {bad.what}, got {target!r}",
                         hint=bad.hint) from None
    return SourceSpec(kind_name, target, found.options.parse(options or {}, name))


def flag_spec(kind_name: str, target: str, **values: Any) -> SourceSpec:
    """A definition built from command-line flags (None: not given); messages name the
    flag, as the user typed it."""
    options = kind(kind_name).options
    return source_spec(kind_name, target, values,
                       where=lambda key: f"the {kind_name} source's target" if key == "target"
                       else options.flag(key))


def recorded_spec(kind_name: str, target: str, options: Mapping[str, Any]) -> SourceSpec:
    """A definition an earlier run recorded, checked again: one that no longer validates
    (a kind or an option this version does not know, a value out of range) is a
    ``DefinitionError``, for that source alone."""
    def where(key: str) -> str:
        return f"recorded {kind_name} source {target}: option '{key}'"
    try:
        return source_spec(kind_name, target, options, where=where)
    except InputError as exc:
        message = exc.message
        if not message.startswith("recorded "):
            message = f"recorded source {target}: {message}"
        raise DefinitionError(message, hint="ingest the source again with valid options "
                              "to replace its definition") from None


def adapter_for(spec: SourceSpec, **context: Any) -> SourceAdapter:
    """The adapter that expands and loads ``spec``; ``context`` carries network policy."""
    return kind(spec.kind).adapter(spec, **context)
