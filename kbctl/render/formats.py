"""How a command offers output formats: a registry ``{format_name: renderer}`` per result
type. A renderer is a pure function of the result that returns ``Rendered``; ``Output``
does the printing. A new format is one renderer plus one line in its type's registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import RenderableType

from ..errors import InputError
from .jsonable import json_text

# A part is either exact text (``str``, written as is) or a rich renderable (a table, a
# styled line) printed by the console.
Part = str | RenderableType
Stream = Literal["out", "err"]


@dataclass(frozen=True)
class Rendered:
    """What a renderer produced, in order: each part goes to ``out`` (stdout, the result)
    or ``err`` (stderr, chatter for people). Join renderings with ``+``."""

    parts: tuple[tuple[Stream, Part], ...] = ()

    @classmethod
    def stdout(cls, *parts: Part) -> Rendered:
        return cls(tuple(("out", p) for p in parts))

    @classmethod
    def stderr(cls, *parts: Part) -> Rendered:
        return cls(tuple(("err", p) for p in parts))

    def __add__(self, other: Rendered) -> Rendered:
        return Rendered(self.parts + other.parts)

    def text(self, stream: Stream = "out") -> str:
        """The text parts of one stream (for files and tests; renderables are not text)."""
        return "".join(p for s, p in self.parts if s == stream and isinstance(p, str))


Renderer = Callable[..., Rendered]
Formats = Mapping[str, Renderer]


def document(data: Any) -> Rendered:
    """A JSON document on stdout."""
    return Rendered.stdout(json_text(data))


def as_json(shape: Callable[..., Any] | None = None) -> Renderer:
    """The ``json`` format of a result: ``shape(result, **options)`` or the result itself
    (camelCased by ``to_jsonable``)."""

    def render(result: Any, **options: Any) -> Rendered:
        return document(shape(result, **options) if shape is not None else result)

    return render


def check_format(formats: Formats, fmt: str, flag: str = "--format") -> Renderer:
    """The renderer for ``fmt``, or a usage error naming the choices."""
    renderer = formats.get(fmt)
    if renderer is None:
        raise InputError(f"{flag} must be one of {', '.join(formats)}, got '{fmt}'")
    return renderer
