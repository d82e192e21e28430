"""Agent tools as text: their definitions in each runtime's function-calling shape
(``openai``, ``anthropic``, ``json-schema``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..agent.specs import ToolSpec
from ..errors import InputError
from .formats import Formats, Rendered, Renderer, document


def _openai(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.description, "parameters": spec.parameters}}


def _anthropic(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description,
            "input_schema": spec.parameters}


def _json_schema(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "title": spec.title, "description": spec.description,
            "parameters": spec.parameters}


SPEC_SHAPES: dict[str, Callable[[ToolSpec], dict[str, Any]]] = {
    "openai": _openai, "anthropic": _anthropic, "json-schema": _json_schema}


def format_specs(specs: Sequence[ToolSpec], fmt: str) -> list[dict[str, Any]]:
    """Definitions for ``openai`` (chat completions), ``anthropic`` or plain ``json-schema``."""
    shape = SPEC_SHAPES.get(fmt)
    if shape is None:
        raise InputError(f"--format must be one of {', '.join(SPEC_SHAPES)}, got '{fmt}'")
    return [shape(s) for s in specs]


def _shaped(fmt: str) -> Renderer:
    def render(specs: Sequence[ToolSpec], **options: Any) -> Rendered:
        return document(format_specs(specs, fmt))

    return render


FORMATS: Formats = {name: _shaped(name) for name in SPEC_SHAPES}
SPEC_FORMATS = tuple(FORMATS)

