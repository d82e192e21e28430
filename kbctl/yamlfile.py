"""YAML config files of generators (``mkdocs.yml``, ``_config.yml``), read safely.

MkDocs configs name Python callables with tags such as
``!!python/name:pymdownx.slugs.uslugify``; nothing is imported or run: a tag becomes a
``Tagged`` value that says which callable (and which keyword arguments) was meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from .linefile import LoadError, construct_bounded


@dataclass(frozen=True)
class Tagged:
    """A tagged YAML node: ``name`` is the tag suffix (``markdown.extensions.toc.slugify``),
    ``kwds`` the keyword arguments of an ``object/apply`` tag."""

    name: str
    kwds: dict[str, Any] = field(default_factory=dict)


class _Loader(yaml.SafeLoader):
    pass


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Tagged:
    kwds: dict[str, Any] = {}
    if isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
        raw = value.get("kwds")
        kwds = raw if isinstance(raw, dict) else {}
    name = suffix.split(":", 1)[1] if ":" in suffix else suffix
    return Tagged(name, kwds)


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", _tagged)
_Loader.add_multi_constructor("!", _tagged)

_BOOL = "tag:yaml.org,2002:bool"


class _CoreLoader(_Loader):
    """YAML 1.2's booleans, as Go's parsers read them (Hugo's): only ``true`` and ``false``.
    YAML 1.1's ``yes``, ``no``, ``on`` and ``off`` stay strings, so Norwegian's language
    code ``no:`` is a key, not ``False``."""


_CoreLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL]
    for first, resolvers in _Loader.yaml_implicit_resolvers.items()}
_CoreLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  list("tTfF"))


def load_yaml_config(text: str, *, yaml_1_2: bool = False) -> dict[str, Any]:
    """The mapping in ``text``; anything unparsable, too deep, expanding past the limits
    of ``linefile.construct_bounded`` (an alias bomb), or not a mapping counts as empty.
    ``yaml_1_2`` reads booleans as YAML 1.2 does (Hugo's configs); MkDocs' and Jekyll's
    parsers read YAML 1.1."""
    try:
        data = construct_bounded((_CoreLoader if yaml_1_2 else _Loader)(text))
    except (yaml.YAMLError, LoadError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
