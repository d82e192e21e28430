"""The ``memory:`` settings: search defaults and the flush policy, set once per agent.

One home for their defaults and ranges: the CLI, the MCP tools and the library surface
all start from ``MemorySettings``, and flags override single fields. Kept free of the
``memory`` package's imports so ``config`` can hold it without a cycle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .errors import ConfigError

MAX_RESULTS_LIMIT = 50
MIN_HALF_LIFE_DAYS = 0.001  # ~1.4 minutes: anything shorter weighs every note zero
# ~2,700 years: anything longer weighs every note one (and a huge one overflows the SQL)
MAX_HALF_LIFE_DAYS = 1_000_000
CITATION_MODES = ("on", "off", "auto")
BACKENDS = ("postgres", "graph", "composite")
GRAPH_PROVIDERS = ("openai", "gemini")
ENV_PREFIX = "KBCTL_MEMORY_"
_FLAGS = {"max_injected_chars": "--max-chars"}  # where a flag's name differs from its key

Where = Callable[[Any, Any], str]  # (mapping, key) -> "file:line"


@dataclass(frozen=True)
class FlushSettings:
    """Flush once used tokens pass ``context_window - reserve_floor - soft_threshold``."""

    enabled: bool = True
    soft_threshold_tokens: int = 4000
    reserve_floor_tokens: int = 20000
    context_window: int | None = None


@dataclass(frozen=True)
class GraphSettings:
    """Where the graph lives and which language model reads episodes into it.

    ``path`` is the embedded engine's database (default ``<data dir>/graph``); ``url``
    names a graph server instead (``bolt://…`` for Neo4j). ``model`` is
    ``provider:name`` (``openai:…`` for any OpenAI-compatible server, ``gemini:…``);
    its key comes from the environment only, never from a file.
    """

    model: str | None = None
    model_base_url: str | None = None
    path: str | None = None
    url: str | None = None
    timeout_s: float = 120.0


@dataclass(frozen=True)
class MemorySettings:
    """Defaults for ``memory search`` (and the memory tools), and the flush policy."""

    max_results: int = 6
    min_score: float | None = None
    mmr: bool = False
    mmr_lambda: float = 0.7
    decay: bool = False
    half_life_days: float = 30.0
    max_injected_chars: int | None = None
    citations: str = "auto"
    track: bool = False
    backend: str = "postgres"
    flush: FlushSettings = field(default_factory=FlushSettings)
    graph: GraphSettings = field(default_factory=GraphSettings)

    def merged(self, overrides: Mapping[str, Any], *, from_flags: bool = False
               ) -> MemorySettings:
        """These settings with the given (non-None) fields replaced, each checked; a
        ``flush`` mapping replaces single fields of the flush policy. Errors name the
        flag when the values came from the command line."""
        given = {k: v for k, v in overrides.items() if v is not None}
        flush = given.pop("flush", None) or {}
        graph = given.pop("graph", None) or {}
        for key, value in given.items():
            if key not in _SEARCH_RULES:
                raise ConfigError(f"unknown memory setting '{key}'")
            problem = _problem(key, value, _SEARCH_RULES)
            if problem:
                name = _FLAGS.get(key, "--" + key.replace("_", "-")) if from_flags \
                    else f"memory.{key}"
                raise ConfigError(f"{name} {problem}")
        for key, value in flush.items():
            problem = _problem(key, value, _FLUSH_RULES)
            if problem:
                raise ConfigError(f"memory.flush.{key} {problem}")
        for key, value in graph.items():
            problem = _problem(key, value, _GRAPH_RULES)
            if problem:
                raise ConfigError(f"memory.graph.{key} {problem}")
        return replace(self, **given, flush=replace(self.flush, **flush),
                       graph=replace(self.graph, **graph))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# field -> (accepts, what it must be)
Rule = tuple[Callable[[Any], bool], str]
_SEARCH_RULES: dict[str, Rule] = {
    "max_results": (lambda v: _int(v) and 1 <= v <= MAX_RESULTS_LIMIT,
                    f"an integer within 1..{MAX_RESULTS_LIMIT}"),
    "min_score": (lambda v: v is None or (_finite(v) and 0 <= v <= 1), "a number within 0..1"),
    "mmr": (lambda v: isinstance(v, bool), "true or false"),
    "mmr_lambda": (lambda v: _finite(v) and 0 <= v <= 1, "a number within 0..1"),
    "decay": (lambda v: isinstance(v, bool), "true or false"),
    "half_life_days": (lambda v: _finite(v) and MIN_HALF_LIFE_DAYS <= v <= MAX_HALF_LIFE_DAYS,
                       f"a number of days within {MIN_HALF_LIFE_DAYS}..{MAX_HALF_LIFE_DAYS:,}"),
    "max_injected_chars": (lambda v: v is None or (_int(v) and v >= 200),
                           "an integer of at least 200"),
    "citations": (lambda v: v in CITATION_MODES, f"one of {', '.join(CITATION_MODES)}"),
    "track": (lambda v: isinstance(v, bool), "true or false"),
    "backend": (lambda v: v in BACKENDS, f"one of {', '.join(BACKENDS)}"),
}


def search_problem(name: str, value: Any) -> str | None:
    """What is wrong with ``value`` for the search setting ``name``, or None: the one
    range check for config files, the CLI, the MCP tools and the library."""
    return _problem(name, value, _SEARCH_RULES)


_FLUSH_RULES: dict[str, Rule] = {
    "enabled": (lambda v: isinstance(v, bool), "true or false"),
    "soft_threshold_tokens": (lambda v: _int(v) and v >= 0, "a non-negative integer"),
    "reserve_floor_tokens": (lambda v: _int(v) and v >= 0, "a non-negative integer"),
    "context_window": (lambda v: v is None or (_int(v) and v > 0), "a positive integer"),
}


def _text(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip()) and "\x00" not in v


def _model(v: Any) -> bool:
    return _text(v) and v.partition(":")[0] in GRAPH_PROVIDERS and bool(v.partition(":")[2])


_GRAPH_RULES: dict[str, Rule] = {
    "model": (lambda v: v is None or _model(v),
              f"provider:model with a provider of {', '.join(GRAPH_PROVIDERS)}"),
    "model_base_url": (lambda v: v is None or _text(v), "a URL"),
    "path": (lambda v: v is None or _text(v), "a path"),
    "url": (lambda v: v is None or _text(v), "a URL"),
    "timeout_s": (lambda v: _finite(v) and 1 <= v <= 3600, "a number of seconds within 1..3600"),
}
GRAPH_ENV = {"KBCTL_MEMORY_GRAPH_MODEL": "model",
             "KBCTL_MEMORY_GRAPH_MODEL_BASE_URL": "model_base_url",
             "KBCTL_MEMORY_GRAPH_PATH": "path", "KBCTL_MEMORY_GRAPH_URL": "url"}


def _problem(key: str, value: Any, rules: Mapping[str, Rule]) -> str | None:
    accepts, what = rules[key]
    return None if accepts(value) else f"must be {what}, got {value!r}"


def _section(value: Any, rules: Mapping[str, Rule], name: str, parent: Any,
             where: Where, nested: tuple[str, ...] = ()) -> dict[str, Any]:
    """Checked fields of one mapping; keys in ``nested`` are sections parsed elsewhere."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where(parent, name.rsplit('.', 1)[-1])}: '{name}' must be a "
                          f"mapping")
    out: dict[str, Any] = {}
    for key, v in value.items():
        if key in nested:
            continue
        if key not in rules:
            known = ", ".join(sorted([*rules, *nested]))
            raise ConfigError(f"{where(value, key)}: unknown key '{name}.{key}' "
                              f"(known: {known})")
        if _int(v) and key in _FLOATS:
            v = float(v)
        if key == "citations" and isinstance(v, bool):  # YAML reads a bare on/off as bool
            v = "on" if v else "off"
        problem = _problem(key, v, rules)
        if problem:
            raise ConfigError(f"{where(value, key)}: '{name}.{key}' {problem}")
        out[key] = v
    return out


_FLOATS = ("min_score", "mmr_lambda", "half_life_days", "timeout_s")


def memory_from_file(value: Any, parent: Any, where: Where) -> dict[str, Any]:
    """The fields a config file's ``memory:`` mapping sets (``flush`` as a mapping of its
    own); errors name the file, key and line."""
    given = _section(value, _SEARCH_RULES, "memory", parent, where,
                     nested=("flush", "graph"))
    if "flush" in value:
        given["flush"] = _section(value["flush"], _FLUSH_RULES, "memory.flush", value, where)
    if "graph" in value:
        given["graph"] = _section(value["graph"], _GRAPH_RULES, "memory.graph", value, where)
    return given


def memory_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """``KBCTL_MEMORY_<FIELD>`` for the search defaults, parsed by the field's type."""
    out: dict[str, Any] = {}
    graph = {key: env[var].strip() for var, key in GRAPH_ENV.items() if env.get(var, "").strip()}
    for key, value in graph.items():
        problem = _problem(key, value, _GRAPH_RULES)
        if problem:
            raise ConfigError(f"{next(v for v, k in GRAPH_ENV.items() if k == key)} {problem}")
    if graph:
        out["graph"] = graph
    for f in fields(MemorySettings):
        if f.name in ("flush", "graph"):
            continue
        var = ENV_PREFIX + f.name.upper()
        raw = env.get(var)
        if not raw:
            continue
        value = _parse_env(raw, MemorySettings.__dataclass_fields__[f.name].default)
        problem = _problem(f.name, value, _SEARCH_RULES)
        if problem:
            raise ConfigError(f"{var} {problem}")
        out[f.name] = value
    return out


def _parse_env(raw: str, default: Any) -> Any:
    text = raw.strip()
    if isinstance(default, bool):
        low = text.lower()
        return True if low in ("1", "true", "yes", "on") else (
            False if low in ("0", "false", "no", "off") else text)
    if isinstance(default, str):
        return text
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text
