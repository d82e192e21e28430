"""JSON and YAML loaders that remember where each mapping and key sits in the file.

Suite errors and GitHub annotations must point at a line, and neither ``json`` nor
``yaml.safe_load`` keeps positions, so both loaders return ``LineDict`` mappings that carry
the 1-based line of the mapping itself and of each of its keys. Duplicate keys, which both
formats silently collapse, are recorded so validation can refuse them.
"""

from __future__ import annotations

import bisect
import json
import json.decoder
import json.scanner
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import yaml


class LineDict(dict[Any, Any]):
    """A plain dict plus the 1-based lines of the mapping, of each key, and of duplicates."""

    def __init__(self, line: int | None = None) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[Any, int] = {}
        self.duplicates: list[tuple[Any, int]] = []

    def line_of(self, key: Any) -> int | None:
        """Line of ``key`` when known, else the mapping's own line."""
        return self.key_lines.get(key, self.line)


class LoadError(ValueError):
    """A syntax error, with the 1-based line when the parser knows it."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


# --- YAML ------------------------------------------------------------------------------


_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_SafeLoader):  # type: ignore[misc, valid-type]
    """The (libyaml-backed when available) SafeLoader, whose mappings are LineDicts."""


def _construct_line_map(loader: _LineLoader, node: yaml.MappingNode) -> Iterator[LineDict]:
    data = LineDict(node.start_mark.line + 1)
    yield data
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
            continue
        key = loader.construct_scalar(key_node)
        line = key_node.start_mark.line + 1
        if key in seen:
            data.duplicates.append((key, line))
        seen[key] = line
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=False)
        if not isinstance(key, Hashable):
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                "found an unhashable key", key_node.start_mark,
            )
        data[key] = loader.construct_object(value_node, deep=False)
        data.key_lines[key] = key_node.start_mark.line + 1


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_line_map)


def load_yaml(text: str) -> Any:
    """Parse one YAML document; mappings come back as LineDicts."""
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise LoadError(f"invalid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise LoadError(f"invalid YAML: {exc}", None) from None
    except RecursionError:
        raise LoadError("invalid YAML: nested too deeply", None) from None


# --- JSON ------------------------------------------------------------------------------


class _LineJSONDecoder(json.JSONDecoder):
    """The pure-Python JSON scanner with an object parser that records positions.

    Each key's line is taken from the position of its value, which the object parser hands
    to ``scan_once``; a key and its value sit on the same line in any sane layout.
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        newlines = [i for i, ch in enumerate(text) if ch == "\n"]

        def line_at(pos: int) -> int:
            return bisect.bisect_left(newlines, pos) + 1

        def parse_object(s_and_end: tuple[str, int], strict: bool,
                         scan_once: Callable[[str, int], tuple[Any, int]],
                         object_hook: Any, object_pairs_hook: Any,
                         memo: dict[str, str] | None = None) -> tuple[LineDict, int]:
            string, end = s_and_end
            value_starts: list[int] = []

            def recording_scan(s: str, idx: int) -> tuple[Any, int]:
                value_starts.append(idx)
                return scan_once(s, idx)

            pairs, new_end = json.decoder.JSONObject(
                (string, end), strict, recording_scan, None, list, memo
            )
            data = LineDict(line_at(end - 1))
            for (key, value), start in zip(pairs, value_starts, strict=True):
                line = line_at(start)
                if key in data:
                    data.duplicates.append((key, line))
                data[key] = value
                data.key_lines[key] = line
            return data, new_end

        self.parse_object = parse_object
        self.scan_once = json.scanner.py_make_scanner(self)


def load_json(text: str) -> Any:
    """Parse JSON; objects come back as LineDicts."""
    try:
        return _LineJSONDecoder(text).decode(text)
    except json.JSONDecodeError as exc:
        raise LoadError(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise LoadError("invalid JSON: nested too deeply", None) from None
