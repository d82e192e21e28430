"""JSON and YAML loaders that remember where each mapping and key sits in the file.

Suite errors and GitHub annotations must point at a line, and neither ``json`` nor
``yaml.safe_load`` keeps positions, so both loaders return ``LineDict`` mappings that carry
the 1-based line of the mapping itself and of each of its keys. Duplicate keys, which both
formats silently collapse, are recorded so validation can refuse them.

The files come from users and repositories, so every input is bounded before it is
expanded: ``read_capped`` refuses an oversized file before reading it whole, and a YAML
document whose aliases would expand past ``MAX_YAML_NODES`` nodes (an alias bomb) is
refused from its node graph, before a single object is built. Strings holding a NUL byte
or a lone surrogate are refused with the line of their key.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Hashable, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from .hygiene import describe_bad_char

if TYPE_CHECKING:  # yaml is imported when a YAML text is read: most commands read none
    import yaml

#: Largest config or suite file read, in bytes; real ones are a few KiB.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: Most YAML nodes a document may expand to once every alias is followed.
MAX_YAML_NODES = 200_000


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


def read_capped(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path``, refused (``LoadError``) when over ``limit`` bytes.
    ``OSError`` passes through for the caller to word."""
    with open(path, "rb") as handle:
        return decode_capped(handle, limit, what="the file")


def decode_capped(handle: BinaryIO, limit: int = MAX_FILE_BYTES, *, what: str) -> str:
    """The UTF-8 text read from ``handle`` (a file, a pipe), refused (``LoadError``) when
    over ``limit`` bytes. At most ``limit + 1`` bytes are read, so a huge file or an
    endless stream costs nothing."""
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise LoadError(f"{what} is over the {limit} byte limit", None)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(f"{what} is not UTF-8 text (byte {exc.start})", None) from None


# --- YAML ------------------------------------------------------------------------------


@cache
def _line_loader() -> type[yaml.SafeLoader]:
    """The (libyaml-backed when available) SafeLoader, whose mappings are LineDicts."""
    import yaml

    safe: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = type("LineLoader", (safe,), {})
    loader.add_constructor("tag:yaml.org,2002:map", _construct_line_map)
    return loader


def _construct_line_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterator[LineDict]:
    import yaml

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


def load_yaml(text: str) -> Any:
    """Parse one YAML document; mappings come back as LineDicts.

    The document is composed into its node graph (aliases stay shared references, so the
    graph is as small as the text), measured as if every alias were expanded, and only then
    constructed.
    """
    import yaml

    try:
        data = construct_bounded(_line_loader()(text))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise LoadError(f"invalid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise LoadError(f"invalid YAML: {exc}", None) from None
    except RecursionError:
        raise LoadError("invalid YAML: nested too deeply", None) from None
    _refuse_bad_strings(data, text)
    return data


def construct_bounded(loader: yaml.BaseLoader) -> Any:
    """The one document ``loader`` holds (None when empty), composed into its node graph,
    refused by ``_refuse_bombs`` when it would expand too far, and only then constructed;
    the loader is disposed of. YAML and ``LoadError``s pass through."""
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _refuse_bombs(node)
        try:
            return loader.construct_document(node)
        except LoadError:
            raise
        except ValueError as exc:  # an integer of over 4,300 digits, a date of month 13
            raise LoadError(f"invalid YAML: {first_clause(exc)}", None) from None
    finally:
        loader.dispose()


def first_clause(exc: ValueError) -> str:
    """The gist of a conversion's error (Python's advice to the programmer cut off): an
    integer of over 4,300 digits, which ``int`` refuses to convert."""
    return str(exc).split(";")[0].strip()


def _refuse_bombs(root: yaml.Node) -> None:
    """Refuse a node graph that expands past ``MAX_YAML_NODES`` nodes, or refers to itself."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    # Iterative post-order walk: a deep document must not exhaust the Python stack here.
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_YAML_NODES:
                raise LoadError(
                    f"invalid YAML: the document expands to more than {MAX_YAML_NODES} "
                    f"nodes once its aliases are followed (an alias bomb?)",
                    node.start_mark.line + 1)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise LoadError("invalid YAML: an alias refers to a node that contains it",
                            node.start_mark.line + 1)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _refuse_bad_strings(data: Any, text: str) -> None:
    """Refuse a string (key or value) holding a NUL byte or a lone surrogate."""
    if "\\" not in text and describe_bad_char(text) is None:
        return  # without escapes, parsed strings hold only characters of the text
    stack: list[tuple[Any, int | None]] = [(data, None)]
    while stack:
        value, line = stack.pop()
        if isinstance(value, str):
            bad = describe_bad_char(value)
            if bad:
                raise LoadError(f"{bad} in {value[:40]!r}; remove it", line)
        elif isinstance(value, LineDict):
            for key, item in value.items():
                at = value.line_of(key)
                stack.extend(((key, at), (item, at)))
        elif isinstance(value, dict):
            stack.extend((part, line) for pair in value.items() for part in pair)
        elif isinstance(value, list | tuple):
            stack.extend((item, line) for item in value)


# --- JSON ------------------------------------------------------------------------------


# A JSON string, or one of the characters that shape objects; strings first, so braces and
# colons inside strings are skipped. Linear: the alternatives never overlap.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}:]')


_NEWLINE = re.compile("\n")


def _object_positions(text: str) -> list[tuple[int, list[int]]]:
    """(offset of ``{``, offsets of its keys) for every object, in the order objects close.

    ``json`` calls ``object_pairs_hook`` as each object closes, so the n-th call is the
    n-th entry here. Only meaningful for valid JSON, which ``json.loads`` checks anyway.
    """
    closed: list[tuple[int, list[int]]] = []
    open_objects: list[tuple[int, list[int]]] = []
    last_string: int | None = None
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token == "{":
            open_objects.append((match.start(), []))
        elif token == "}":
            if open_objects:
                closed.append(open_objects.pop())
        elif token == ":" and last_string is not None and open_objects:
            open_objects[-1][1].append(last_string)
        if token[0] == '"':
            last_string = match.start()
        elif token != ":":
            last_string = None
    return closed


def load_json(text: str) -> Any:
    """Parse JSON; objects come back as LineDicts.

    The text is first checked by the plain parser: locating objects and keys scans for
    strings, which on malformed input (an unterminated string after thousands of escaped
    quotes) takes quadratic time, so it only ever sees valid JSON.
    """
    _parse_json(text)
    newlines = [match.start() for match in _NEWLINE.finditer(text)]

    def line_at(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    positions = iter(_object_positions(text))

    def make_object(pairs: list[tuple[str, Any]]) -> LineDict:
        start, key_offsets = next(positions, (None, []))
        data = LineDict(line_at(start) if start is not None else None)
        lines = [line_at(offset) for offset in key_offsets]
        if len(lines) != len(pairs):  # not reached for valid JSON; never guess a line
            lines = [data.line or 0] * len(pairs)
        for (key, value), line in zip(pairs, lines, strict=True):
            if key in data:
                data.duplicates.append((key, line))
            data[key] = value
            data.key_lines[key] = line
        return data

    data = _parse_json(text, object_pairs_hook=make_object)
    _refuse_bad_strings(data, text)
    return data


def _parse_json(text: str, **hooks: Any) -> Any:
    """``json.loads`` with its failures as ``LoadError``s."""
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        raise LoadError(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise LoadError("invalid JSON: nested too deeply", None) from None
    except LoadError:
        raise
    except ValueError as exc:  # an integer of over 4,300 digits
        raise LoadError(f"invalid JSON: {first_clause(exc)}", None) from None


# bool before int: True is an int to Python, a boolean to the file
_KINDS = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
          (list, "a list"), (dict, "a mapping"))


def value_kind(value: Any) -> str:
    """What a parsed value is, in the words of the file it came from ("an integer", "a
    mapping"), not Python's (``NoneType``, ``LineDict``)."""
    if value is None:
        return "null"
    return next((word for kind, word in _KINDS if isinstance(value, kind)),
                type(value).__name__)
