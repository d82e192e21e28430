"""YAML (and JSON) loading that remembers where every value came from.

Error messages must name the file, the field and the line; PyYAML's node tree has the
marks, so we build plain Python values from it and keep a path → line map beside them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError

Path_ = tuple[Any, ...]


@dataclass
class LoadedFile:
    """Plain data plus the 1-based line of each mapping key / sequence item."""

    path: Path
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)

    def line(self, at: Path_) -> int | None:
        """The line of ``at``, or of its nearest ancestor that has one."""
        while True:
            if at in self.lines:
                return self.lines[at]
            if not at:
                return None
            at = at[:-1]

    def where(self, at: Path_) -> str:
        """``file:line`` for messages."""
        line = self.line(at)
        return f"{self.path}:{line}" if line else str(self.path)


def load_data_file(path: str | Path, error: type[InputError] = InputError) -> LoadedFile:
    """Load ``.json`` with the json module, anything else as YAML, keeping line numbers."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise error(f"{p}: file not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{p}: cannot read: {exc}") from exc
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise error(f"{p}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
        # JSON is valid YAML, so the node tree gives us lines for it as well.
        try:
            lines = _lines_of(yaml.compose(text, Loader=yaml.SafeLoader))
        except yaml.YAMLError:
            lines = {}
        return LoadedFile(p, data, lines)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark else str(p)
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{where}: invalid YAML: {problem}") from exc
    if node is None:
        return LoadedFile(p, None, {})
    lines: dict[Path_, int] = {}
    data = _build(node, (), lines, p, error)
    return LoadedFile(p, data, lines)


def _build(node: yaml.Node, at: Path_, lines: dict[Path_, int], p: Path,
           error: type[InputError]) -> Any:
    lines.setdefault(at, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node)
            if key in out:
                raise error(f"{p}:{key_node.start_mark.line + 1}: duplicate key '{key}'")
            lines[at + (key,)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, at + (key,), lines, p, error)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, at + (i,), lines, p, error) for i, item in enumerate(node.value)]
    return _scalar(node)


def _lines_of(node: yaml.Node | None) -> dict[Path_, int]:
    lines: dict[Path_, int] = {}
    if node is not None:
        _build(node, (), lines, Path("."), InputError)
    return lines


_CONSTRUCTOR = yaml.SafeLoader("")


def _scalar(node: yaml.Node) -> Any:
    return _CONSTRUCTOR.construct_object(node, deep=True)
