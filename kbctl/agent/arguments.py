"""Tool arguments checked against a spec's JSON schema (``jsonschema``), with messages a
model can act on.

``null`` for an optional parameter means "not given". Range limits (``minimum`` /
``maximum``) are left to the tool, which clamps them; unknown names, types, required
parameters and lengths are refused here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..hygiene import describe_bad_char
from .specs import SCOPE_NOTE, ToolSpec

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

SCOPE_NAMES = frozenset({"namespace", "agent", "agent_id", "user", "user_id", "scope"})
CLAMPED = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


class ToolArgumentError(InputError):
    """Arguments a tool does not accept (unknown, missing, wrong type, too long)."""


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The declared, non-null arguments, validated and typed (a whole float becomes int)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(f"{spec.name}: arguments must be a JSON object")
    given = {k: v for k, v in arguments.items() if v is not None}
    props: dict[str, Any] = spec.parameters["properties"]
    # imported here: most commands never check tool arguments, and every one starts faster
    from jsonschema import Draft202012Validator

    errors = [e for e in Draft202012Validator(spec.parameters).iter_errors(given)
              if e.validator not in CLAMPED]
    if errors:
        raise _first(spec, props, given, errors)
    out: dict[str, Any] = {}
    for name, schema in props.items():
        if name not in given:
            continue
        value = given[name]
        if schema["type"] == "string" and len(value.strip()) < schema.get("minLength", 0):
            raise ToolArgumentError(f"{spec.name}: '{name}' must not be empty")
        if schema["type"] == "string" and (bad := describe_bad_char(value)):
            # no text may hold it: the caller's error, not the database's
            raise ToolArgumentError(f"{spec.name}: '{name}' contains {bad}, which no "
                                    "text may hold")
        if schema["type"] in ("integer", "number") and not _finite(value):
            # NaN and Infinity are no JSON, but Python's reader lets them through; an
            # integer of hundreds of digits is JSON, and no float holds it
            raise ToolArgumentError(f"{spec.name}: '{name}' must be a finite number "
                                    f"within a float's range")
        out[name] = (int(value) if schema["type"] == "integer" else
                     float(value) if schema["type"] == "number" else value)
    return out


def _finite(value: float) -> bool:
    """Whether a JSON number is one a float holds (Python's integers have no bound)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _first(spec: ToolSpec, props: Mapping[str, Any], given: Mapping[str, Any],
           errors: list[ValidationError]) -> ToolArgumentError:
    """The error to report: unknown names first, then parameters in declaration order."""
    unknown = sorted(set(given) - set(props))
    if unknown:
        scoped = SCOPE_NAMES & set(unknown)
        return ToolArgumentError(
            f"{spec.name}: unknown argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(u) for u in unknown)} (accepted: {', '.join(props)})"
            + (f"; {SCOPE_NOTE}" if scoped else ""))
    order = list(props)

    def position(error: ValidationError) -> int:
        name = _parameter(error)
        return order.index(name) if name in order else -1

    error = min(errors, key=position)
    return ToolArgumentError(f"{spec.name}: {_message(error, _parameter(error))}")


def _parameter(error: ValidationError) -> str:
    if error.validator == "required":
        return next(r for r in error.validator_value if r not in error.instance)
    return str(error.absolute_path[0]) if error.absolute_path else ""


def _message(error: ValidationError, name: str) -> str:
    schema, value = error.schema, error.instance
    if error.validator == "required":
        return f"'{name}' is required"
    if error.validator == "type" and schema["type"] == "string":
        return f"'{name}' must be a string"
    if error.validator == "type":
        if isinstance(value, float) and not isinstance(value, bool):
            return f"'{name}' must be a whole number, got {value}"
        return f"'{name}' must be a number"
    if error.validator == "minLength":
        return f"'{name}' must not be empty"
    if error.validator == "maxLength":
        return f"'{name}' is longer than {schema['maxLength']} characters ({len(value)})"
    return f"'{name}': {error.message}"
