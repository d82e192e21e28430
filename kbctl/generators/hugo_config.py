"""Hugo's configuration as ``hugo`` (the build, not ``hugo server``) merges it: the first
of ``hugo.toml``/``.yaml``/``.yml``/``.json`` (or ``config.*``) in the project, then every
file of ``config/_default/``, then of ``config/production/``, each over the last. Keys are
case-insensitive, so they are lower-cased; YAML is read as YAML 1.2, as Go reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..projectfiles import inside, read_config_json, read_config_text
from ..yamlfile import load_yaml_config
from .tomlfile import load_toml

_CONFIGS = ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json")
_LEGACY = ("config.toml", "config.yaml", "config.yml", "config.json")
_CONFIG_DIR = "config"
_CONFIG_EXTENSIONS = (".toml", ".yaml", ".yml", ".json")
_ENVIRONMENT = "production"  # what ``hugo`` builds with (``hugo server``: development)
# A config folder holds a handful of small files; a hostile one is read this far.
_MAX_CONFIG_FILES = 64
_MAX_CONFIG_FOLDER_BYTES = 4 * 1024 * 1024
MARKERS = _CONFIGS + _LEGACY + tuple(f"{_CONFIG_DIR}/_default/{name}" for name in _CONFIGS)


def _load(path: Path) -> dict[str, Any]:
    if path.suffix == ".json":
        data = read_config_json(path)
        return data if isinstance(data, dict) else {}
    text = read_config_text(path) or ""
    if path.suffix == ".toml":
        return load_toml(text)
    return load_yaml_config(text, yaml_1_2=True)


def _lower_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).lower(): _lower_keys(v) for k, v in value.items()}
    return value


def _config(path: Path) -> dict[str, Any]:
    """The config at ``path`` with its keys lower-cased (Hugo's keys are case-insensitive);
    one nested too deeply to walk counts as empty, like one that does not parse."""
    try:
        return _lower_keys(_load(path))
    except RecursionError:
        return {}


def project_config(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    """The project's config as ``hugo`` merges it, with the file that marks the project:
    the first config file in ``folder``, then the files of ``config/_default/`` and of
    ``config/production/`` (the environment ``hugo`` builds with), each over the last.
    None when there is none, or only a ``config.*`` that is not Hugo's."""
    root = next((folder / name for name in _CONFIGS + _LEGACY if (folder / name).is_file()),
                None)
    config = _config(root) if root is not None else {}
    files = _config_dir_files(folder, config.get("configdir"))
    if root is None and not files:
        return None
    for path in files:
        config = _merged(config, _config_dir_entry(path))
    marker = root or next((p for p in files if p.stem in ("hugo", "config")), files[0])
    if ((root is None or root.name in _LEGACY) and not (
            (folder / "content").is_dir() or "contentdir" in config or "baseurl" in config)):
        return None  # a config.toml or config/ folder that is not Hugo's
    return marker, config


def _config_dir_files(folder: Path, config_dir: Any) -> list[Path]:
    """The config files under ``configDir`` (default ``config``) that ``hugo`` reads, least
    specific first; a folder outside the project is not read."""
    top = folder / (config_dir if isinstance(config_dir, str) and config_dir.strip()
                    else _CONFIG_DIR)
    if not inside(folder, top):
        return []
    found: list[Path] = []
    budget = _MAX_CONFIG_FOLDER_BYTES
    for environment in ("_default", _ENVIRONMENT):
        for dirpath, dirnames, filenames in os.walk(top / environment):
            dirnames.sort()
            for name in sorted(filenames):
                if Path(name).suffix.lower() not in _CONFIG_EXTENSIONS:
                    continue
                try:
                    budget -= os.stat(Path(dirpath) / name).st_size
                except OSError:
                    continue
                if budget < 0 or len(found) >= _MAX_CONFIG_FILES:
                    return found
                found.append(Path(dirpath) / name)
    return found


def _config_dir_entry(path: Path) -> dict[str, Any]:
    """One file of the config folder, placed as Hugo places it: ``hugo.*`` and ``config.*``
    at the top, ``KEY.*`` under ``KEY``, ``KEY.LANG.*`` under ``languages.LANG`` (its menus
    and params under their key); a file holding just ``KEY`` is that key's value."""
    item = _config(path)
    name = path.stem
    if name in ("hugo", "config"):
        return item
    name, _, language = name.partition(".")
    key = name.lower()
    value: Any = item.get(key, item) if len(item) == 1 else item
    if not language:
        return {key: value}
    entry = {key: value} if key in ("menu", "menus", "params") else value
    return {"languages": {language.lower(): entry}}


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base``, table by table; ``over`` wins where both set a value."""
    out = dict(base)
    for key, value in over.items():
        below = out.get(key)
        out[key] = (_merged(below, value) if isinstance(below, dict) and isinstance(value, dict)
                    else value)
    return out
