"""Settings: flags override the environment, the environment overrides kbctl.yaml, then
defaults.

Every field that a config file may hold is listed in ``_FIELDS``; anything else is an
error naming the file, the key and its line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, InputError
from .hygiene import id_problem, require_clean
from .linefile import LineDict, LoadError, load_json, load_yaml, read_capped, value_kind
from .memory_config import MemorySettings, memory_from_env, memory_from_file
from .rerank.base import DEFAULT_TOP_N
from .results import FUSIONS, MAX_K, MIN_K
from .store.thesaurus import BUILT_IN, MAX_RULES, NONE, Rule, Thesaurus, parse_rule

if TYPE_CHECKING:
    from .evals.retriever import RetrieverPin
    from .sources.base import SourceSpec

CONFIG_NAMES = ("kbctl.yaml", "kbctl.yml")
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know about where and how to work."""

    db_url: str | None = None
    data_dir: Path = Path(".kbctl")
    namespace: str = DEFAULT_NAMESPACE
    embedder: str | None = None
    embedder_base_url: str | None = None
    # The embedding model's input window in tokens: longer texts are embedded in windows
    # (kbctl.embed.windows). None: the model's own when kbctl knows it; 0: sent whole.
    embedder_window: int | None = None
    # A file that carries the embedding cache between runs (kbctl.pipeline.cache_carry):
    # ingest and resync read it first and replace it after.
    embedding_cache: Path | None = None
    max_tokens: int = 512
    overlap_tokens: int = 64
    vector_weight: float = 0.7
    fusion: str = "weighted"  # or "rrf" (kbctl.results.FUSIONS)
    rerank: str | None = None
    rerank_base_url: str | None = None
    rerank_top: int = DEFAULT_TOP_N
    # Match a question word no chunk uses as the nearest in spelling (kbctl.store.spelling).
    typo_tolerance: bool = True
    # A project's own synonyms (kbctl.yaml ``synonyms:``), and whether kbctl's own
    # (kbctl.store.thesaurus) count too, for lexical ranking.
    synonyms: tuple[Rule, ...] = ()
    builtin_synonyms: bool = True
    allow_private_network: bool = False
    agent: str | None = None
    user: str | None = None
    memory: MemorySettings = field(default_factory=MemorySettings)
    sources: tuple[SourceSpec, ...] = field(default_factory=tuple)
    config_path: Path | None = None
    # kbctl.yaml ``eval.retriever``: the retriever every eval run here must measure
    eval_retriever: RetrieverPin | None = None

    @property
    def memory_track(self) -> bool:
        """Whether memory searches are recorded for ``memory stats`` (``memory.track``)."""
        return self.memory.track

    @cached_property
    def thesaurus(self) -> Thesaurus:
        """The synonyms lexical search uses: kbctl's own (unless turned off) and the
        project's."""
        return (BUILT_IN if self.builtin_synonyms else NONE).extended(self.synonyms)

    @cached_property
    def retrieval(self) -> RetrievalSettings:
        """How this project ranks a question, from settings checked as they were resolved;
        a question's own ``k``, ``min_score`` and filters join with ``asking``."""
        return RetrievalSettings(
            namespace=self.namespace, vector_weight=self.vector_weight, fusion=self.fusion,
            rerank_top=self.rerank_top, typo_tolerance=self.typo_tolerance,
            thesaurus=self.thesaurus)


@dataclass(frozen=True)
class RetrievalSettings:
    """How one question is ranked (``kbctl.pipeline.query.retrieve``): ``k`` results of
    ``namespace`` at least ``min_score``, matching ``filters``; hybrid ranking's
    ``vector_weight`` and ``fusion``; the ``rerank_top`` candidates a reranker re-scores;
    ``typo_tolerance`` and the ``thesaurus`` of lexical ranking. Made from checked settings
    (``Settings.retrieval``), with a question's own ``k``, ``min_score`` and filters
    checked as they are given (``asking``)."""

    namespace: str = DEFAULT_NAMESPACE
    k: int = 5
    min_score: float | None = None
    filters: Mapping[str, str] = field(default_factory=dict)
    vector_weight: float = 0.7
    fusion: str = "weighted"  # or "rrf" (kbctl.results.FUSIONS)
    rerank_top: int = DEFAULT_TOP_N
    typo_tolerance: bool = True
    thesaurus: Thesaurus = BUILT_IN

    def asking(self, *, k: int = 5, min_score: float | None = None,
               filters: Mapping[str, str] | None = None) -> RetrievalSettings:
        """These settings for one question's ``k``, ``min_score`` and ``filters``, which
        arrive unchecked (a flag, a suite's case, a tool's argument): a value out of range
        is refused (``InputError``), not silently cut."""
        if not MIN_K <= k <= MAX_K:
            raise InputError(f"--top-k must be within {MIN_K}..{MAX_K}, got {k}")
        if min_score is not None and not 0.0 <= min_score <= 1.0:  # scores lie in 0..1
            raise InputError(f"--min-score must be within 0..1, got {min_score}")
        return replace(self, k=k, min_score=min_score, filters=dict(filters or {}))


# key in kbctl.yaml → (Settings field, accepted types)
_FIELDS: dict[str, tuple[str, tuple[type, ...]]] = {
    "db": ("db_url", (str,)),
    "data_dir": ("data_dir", (str,)),
    "namespace": ("namespace", (str,)),
    "embedder": ("embedder", (str,)),
    "embedder_base_url": ("embedder_base_url", (str,)),
    "embedder_window": ("embedder_window", (int,)),
    "embedding_cache": ("embedding_cache", (str,)),
    "vector_weight": ("vector_weight", (int, float)),
    "fusion": ("fusion", (str,)),
    "rerank": ("rerank", (str,)),
    "rerank_base_url": ("rerank_base_url", (str,)),
    "rerank_top": ("rerank_top", (int,)),
    "typo_tolerance": ("typo_tolerance", (bool,)),
    "builtin_synonyms": ("builtin_synonyms", (bool,)),
    "allow_private_network": ("allow_private_network", (bool,)),
    "agent": ("agent", (str,)),
    "user": ("user", (str,)),
}
_CHUNKING = {"max_tokens": "max_tokens", "overlap_tokens": "overlap_tokens"}

_ENV = {
    "KBCTL_DATABASE_URL": "db_url",
    "KBCTL_DATA_DIR": "data_dir",
    "KBCTL_NAMESPACE": "namespace",
    "KBCTL_EMBEDDER": "embedder",
    "KBCTL_EMBEDDER_BASE_URL": "embedder_base_url",
    "KBCTL_EMBEDDING_CACHE": "embedding_cache",
    "KBCTL_RERANK": "rerank",
    "KBCTL_RERANK_BASE_URL": "rerank_base_url",
    "KBCTL_AGENT": "agent",
    "KBCTL_USER": "user",
}


def find_config(explicit: str | Path | None, cwd: Path | None = None) -> Path | None:
    """``--config`` if given (it must exist), else kbctl.yaml in the current directory."""
    if explicit is not None:
        if not str(explicit).strip():
            raise ConfigError("--config is empty", hint="name a config file, or leave it out")
        p = Path(explicit)
        if not p.is_file():
            raise ConfigError(f"config file {p} not found" if not p.exists()
                              else f"config file {p} is not a regular file")
        return p
    base = cwd or Path.cwd()
    present = [base / name for name in CONFIG_NAMES if (base / name).is_symlink()
               or (base / name).exists()]
    if len(present) > 1:  # one of them would be passed over in silence, errors and all
        raise ConfigError(f"both {present[0]} and {present[1].name} are here: kbctl reads one "
                          f"config", hint="merge them into kbctl.yaml, or pass --config FILE")
    for found in present:
        if found.is_file():
            return found
        # a folder, a FIFO or a dangling link by that name: said, not silently passed over
        raise ConfigError(f"{found} is not a regular file, so kbctl cannot read it as its "
                          f"config", hint="rename it, or pass --config FILE")
    return None


def resolve_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    config: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Merge the layers; ``flags`` holds only options the user actually passed (non-None).

    Flags win over the environment, the environment over kbctl.yaml: a runtime pinned by
    its environment (``KBCTL_USER`` of an MCP server, a CI job's ``KBCTL_DATABASE_URL``)
    keeps it in any folder it is started from, whatever kbctl.yaml that folder holds.
    The database is one setting in two forms (``db`` and ``data_dir``): a layer naming
    either replaces both of a lower layer's."""
    env = os.environ if env is None else env
    from_env: dict[str, Any] = {}
    for var, name in _ENV.items():
        if env.get(var):
            require_clean(var, env[var])
            _check_value(name, env[var], var)
            from_env[name] = env[var]
    _check_linger(env)
    values: dict[str, Any] = {}
    memory = MemorySettings()
    path = find_config(config, cwd)
    if path is not None:
        from_file = _from_file(path)
        if "memory_track" in from_file:
            memory = memory.merged({"track": from_file.pop("memory_track")})
        memory = memory.merged(from_file.pop("memory", {}))
        for key in ("data_dir", "embedding_cache"):  # relative to the file, wherever
            if key in from_file:                     # kbctl runs from
                from_file[key] = path.parent / from_file[key]
        values.update(from_file)
        values["config_path"] = path
    memory = memory.merged(memory_from_env(env))
    _layer(values, from_env)
    flags = dict(flags or {})
    memory = memory.merged(flags.pop("memory", None) or {}, from_flags=True)
    given = {k: v for k, v in flags.items() if v is not None}
    for name, value in given.items():
        if name in _FLAGS:
            _check_value(name, value, _FLAGS[name])
    if "db_url" in given and "data_dir" in given:
        raise ConfigError("--db and --data-dir name two databases (a server, and the embedded "
                          "one in a folder)", hint="pass one of them")
    _layer(values, given)
    values["memory"] = memory
    for key in ("data_dir", "embedding_cache"):
        if key in values:
            values[key] = Path(values[key])
    settings = replace(Settings(), **values)
    _check(settings)
    return settings


def _check_linger(env: Mapping[str, str]) -> None:
    """``KBCTL_SERVER_LINGER`` is read where the embedded server is managed; a bad value
    there fell back to the default without a word, so it is refused here."""
    from .embedded.server import LINGER_ENV, linger_problem  # here: it loads psutil

    raw = env.get(LINGER_ENV, "").strip()
    if raw and (problem := linger_problem(raw)):
        raise ConfigError(f"{LINGER_ENV} {raw[:40]!r} {problem}")


def _layer(values: dict[str, Any], layer: Mapping[str, Any]) -> None:
    """``layer`` over ``values``: a layer naming a database (a URL, or the embedded one's
    folder) replaces the lower layer's, in either form; ``--data-dir`` with a URL from the
    environment (a production secret in CI) must not send the run's writes there."""
    if "db_url" in layer or "data_dir" in layer:
        values.pop("db_url", None)
        values.pop("data_dir", None)
    values.update(layer)


def _load(path: Path) -> Any:
    """Parse kbctl.yaml (or a .json config) keeping the line of every mapping and key."""
    try:
        text = read_capped(path)
        return load_json(text) if path.suffix.lower() == ".json" else load_yaml(text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except LoadError as exc:
        raise ConfigError(f"{path}:{exc.line}: {exc.message}" if exc.line
                          else f"{path}: {exc.message}") from None


def _at(path: Path, mapping: Any, key: Any = None) -> str:
    """``file:line`` of ``key`` in ``mapping`` (or of the mapping itself)."""
    line = None
    if isinstance(mapping, LineDict):
        line = mapping.line if key is None else mapping.line_of(key)
    return f"{path}:{line}" if line else str(path)


def _no_duplicates(path: Path, mapping: LineDict) -> None:
    if mapping.duplicates:
        key, line = mapping.duplicates[0]
        raise ConfigError(f"{path}:{line}: duplicate key '{key}'")


def _from_file(path: Path) -> dict[str, Any]:
    data = _load(path)
    if data is None:
        return {}
    if not isinstance(data, LineDict):
        raise ConfigError(f"{path}: the config must be a mapping of settings")
    _no_duplicates(path, data)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "chunking":
            out.update(_chunking(path, data, value))
        elif key == "sources":
            out["sources"] = tuple(_sources(path, data, value))
        elif key == "synonyms":
            out["synonyms"] = _synonyms(path, data, value)
        elif key == "memory":
            out["memory"] = _memory(path, data, value)
        elif key == "eval":
            out["eval_retriever"] = _eval(path, data, value)
        elif key == "memory_track":  # kept from before the memory section; memory.track
            if not isinstance(value, bool):
                raise ConfigError(f"{_at(path, data, key)}: 'memory_track' must be true or "
                                  f"false, got {value_kind(value)}")
            out["memory_track"] = value
        elif key in _FIELDS:
            name, types = _FIELDS[key]
            if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
                raise ConfigError(
                    f"{_at(path, data, key)}: '{key}' must be {_type_names(types)}, "
                    f"got {value_kind(value)}")
            _check_value(name, value, f"{_at(path, data, key)}: '{key}'")
            out[name] = value
        else:
            known = ", ".join(sorted([*_FIELDS, "chunking", "eval", "sources", "synonyms",
                                      "memory", "memory_track"]))
            raise ConfigError(f"{_at(path, data, key)}: unknown key '{key}' "
                              f"(known keys: {known})")
    if "vector_weight" in out:
        out["vector_weight"] = float(out["vector_weight"])
    return out


def _chunking(path: Path, parent: LineDict, value: Any) -> dict[str, Any]:
    if not isinstance(value, LineDict):
        raise ConfigError(f"{_at(path, parent, 'chunking')}: 'chunking' must be a mapping")
    _no_duplicates(path, value)
    out = {}
    for key, v in value.items():
        if key not in _CHUNKING:
            raise ConfigError(f"{_at(path, value, key)}: unknown key 'chunking.{key}' "
                              f"(known: {', '.join(_CHUNKING)})")
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ConfigError(f"{_at(path, value, key)}: 'chunking.{key}' must be a "
                              f"non-negative integer")
        if key == "max_tokens" and not MIN_CHUNK_TOKENS <= v <= MAX_CHUNK_TOKENS:
            raise ConfigError(f"{_at(path, value, key)}: 'chunking.max_tokens' must be within "
                              f"{MIN_CHUNK_TOKENS}..{MAX_CHUNK_TOKENS:,}, got {v}")
        out[_CHUNKING[key]] = v
    return out


def _synonyms(path: Path, parent: LineDict, value: Any) -> tuple[Rule, ...]:
    """``synonyms:``, a list of rules as search engines' synonym files write them."""
    where = _at(path, parent, "synonyms")
    if not isinstance(value, list):
        raise ConfigError(f"{where}: 'synonyms' must be a list of rules such as "
                          f"'folder, directory' or 'k8s => kubernetes', got "
                          f"{value_kind(value)}")
    if len(value) > MAX_RULES:
        raise ConfigError(f"{where}: 'synonyms' has {len(value):,} rules; at most "
                          f"{MAX_RULES:,}")
    rules = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(f"{where}: synonyms[{i}] must be a string such as "
                              f"'folder, directory', got {value_kind(item)}")
        require_clean(f"{where}: synonyms[{i}]", item)
        try:
            rules.append(parse_rule(item))
        except ValueError as exc:
            raise ConfigError(f"{where}: synonyms[{i}] {item[:60]!r} {exc}") from None
    return tuple(rules)


def _eval(path: Path, parent: LineDict, value: Any) -> RetrieverPin | None:
    """``eval:``, holding ``retriever:``, the retriever the project's gates measure."""
    from .evals.retriever import pin_from_mapping, pin_problems  # here: evals' own module

    if value is None:
        return None
    if not isinstance(value, LineDict):
        raise ConfigError(f"{_at(path, parent, 'eval')}: 'eval' must be a mapping holding "
                          f"retriever, got {value_kind(value)}")
    _no_duplicates(path, value)
    for key in value:
        if key != "retriever":
            raise ConfigError(f"{_at(path, value, key)}: unknown key 'eval.{key}' "
                              f"(known: retriever)")
    raw = value.get("retriever")
    if raw is None:
        return None
    if not isinstance(raw, LineDict):
        raise ConfigError(f"{_at(path, value, 'retriever')}: 'eval.retriever' must be a "
                          f"mapping of embedder, fusion and rerank, got {value_kind(raw)}")
    _no_duplicates(path, raw)
    for key, message in pin_problems(raw):
        where = _at(path, raw, key) if key in raw else _at(path, value, "retriever")
        raise ConfigError(f"{where}: 'eval.retriever{'.' + key if key else ''}' {message}")
    return pin_from_mapping(raw, _at(path, value, "retriever"))


def _memory(path: Path, parent: LineDict, value: Any) -> dict[str, Any]:
    for mapping in (value, value.get("flush") if isinstance(value, LineDict) else None):
        if isinstance(mapping, LineDict):
            _no_duplicates(path, mapping)
    return memory_from_file(value, parent, lambda m, k: _at(path, m, k))


def _sources(path: Path, parent: LineDict, value: Any) -> list[SourceSpec]:
    # imported here: the registry loads every source kind (and httpx), which only a config
    # with a sources: section needs; a library or MCP user settles settings without it
    from .sources.registry import KINDS

    if not isinstance(value, list):
        raise ConfigError(f"{_at(path, parent, 'sources')}: 'sources' must be a list")
    specs = []
    for i, item in enumerate(value):
        if not isinstance(item, LineDict):
            raise ConfigError(f"{_at(path, parent, 'sources')}: sources[{i}] must be a "
                              f"mapping with kind and target")
        _no_duplicates(path, item)
        kind, target = item.get("kind"), item.get("target")
        if kind not in KINDS:
            raise ConfigError(f"{_at(path, item, 'kind')}: sources[{i}].kind must be one of "
                              f"{', '.join(KINDS)}, got {kind!r}")
        if not isinstance(target, str) or not target:
            raise ConfigError(f"{_at(path, item, 'target')}: sources[{i}].target must be a "
                              f"non-empty string")
        options = {k: v for k, v in item.items() if k not in ("kind", "target")}
        specs.append(_source(path, item, i, kind, target, options))
    return specs


def _source(path: Path, item: LineDict, i: int, kind: str, target: str,
            options: dict[str, Any]) -> SourceSpec:
    """The entry's options checked by its kind; a message names the file and line."""
    from .sources.registry import source_spec

    try:
        return source_spec(kind, target, options,
                           where=lambda key: f"{_at(path, item, key)}: sources[{i}].{key}")
    except InputError as exc:
        raise ConfigError(exc.message, hint=exc.hint) from None


# A setting's flag, for messages about a value given there.
_FLAGS = {"db_url": "--db", "data_dir": "--data-dir", "namespace": "--namespace",
          "embedder": "--embedder", "embedder_base_url": "--embedder-base-url",
          "vector_weight": "--vector-weight", "fusion": "--fusion", "rerank": "--rerank",
          "rerank_base_url": "--rerank-base-url", "rerank_top": "--rerank-top",
          "agent": "--agent", "user": "--user", "embedding_cache": "--embedding-cache"}


def _check_value(name: str, value: Any, source: str) -> None:
    """Refuse a setting's value where it was given: ``source`` names the flag, the
    environment variable or the config file's line, so the message says which to fix (a
    bad value in kbctl.yaml was reported as if a flag had given it)."""
    if isinstance(value, str) and not value.strip():
        raise ConfigError(f"{source} is empty", hint="give a value, or leave the setting out")
    if name == "namespace" and value != value.strip():  # "docs " made a namespace of its own
        raise ConfigError(f"{source} {value!r} has spaces around it",
                          hint=f"use {value.strip()!r}")
    # checked here, where the value was given: found later, their messages named the flag
    # whichever place held them, and a bad base URL left a new, empty KB behind
    if name in ("agent", "user") and (problem := id_problem(value)):
        raise ConfigError(f"{source} {value[:40]!r}: {problem}")
    if name in ("embedder_base_url", "rerank_base_url"):
        from .net.endpoint import checked_endpoint  # here: the network layer loads httpx

        checked_endpoint(value, source)
    if name == "db_url":
        from .store.db import require_conninfo  # here: a config read needs no database

        require_conninfo(value, source)
    if name == "embedding_cache" and Path(value).is_dir():
        raise ConfigError(f"{source} {value} is a folder", hint="name the cache file in it")
    if name == "vector_weight" and not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"{source} must be within 0..1, got {value}")
    if name == "fusion" and value not in FUSIONS:
        raise ConfigError(f"{source} must be {' or '.join(map(repr, FUSIONS))}, got {value!r}")
    if name == "embedder_window" and value != 0:
        from .embed.windows import MIN_TOKENS  # here: the embed package loads httpx

        if not MIN_TOKENS <= value <= MAX_CHUNK_TOKENS:
            raise ConfigError(f"{source} must be 0 (never split) or within "
                              f"{MIN_TOKENS}..{MAX_CHUNK_TOKENS:,} tokens, got {value}")
    if name == "rerank_top" and not MIN_K <= value <= MAX_K:
        raise ConfigError(f"{source} must be within {MIN_K}..{MAX_K}, got {value}")
    if name in ("embedder", "rerank"):
        # imported here: the registries know every provider, which a config read need not
        from .embed.registry import parse_spec
        from .rerank.registry import parse_rerank_spec

        try:
            (parse_spec if name == "embedder" else parse_rerank_spec)(value)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc.message}", hint=exc.hint) from None


# A chunk's size in tokens: below, a heading path alone fills it; above, one chunk is a
# whole book, past what any embedder takes.
MIN_CHUNK_TOKENS = 16
MAX_CHUNK_TOKENS = 100_000


def _check(s: Settings) -> None:
    if s.max_tokens < MIN_CHUNK_TOKENS:
        raise ConfigError(f"chunking.max_tokens must be at least {MIN_CHUNK_TOKENS}, got "
                          f"{s.max_tokens}")
    if s.overlap_tokens >= s.max_tokens:
        raise ConfigError("chunking.overlap_tokens must be smaller than chunking.max_tokens")


def _type_names(types: tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer" if float not in types else "a number",
             float: "a number", bool: "true or false"}
    return " or ".join(dict.fromkeys(names[t] for t in types))
