"""The one way JSON leaves kbctl: plain values with camelCase keys, serialised by
``json_text`` (stdout documents, report files and the JSON format of every command)."""

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime
from pathlib import Path
from typing import Any


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, paths and datetimes to plain JSON values, recursively.

    Every JSON document kbctl prints uses camelCase keys: dataclass fields are renamed here
    (plus any properties a class lists in ``__json_properties__``; less the fields whose
    metadata is ``results.NOT_IN_JSON``); keys of plain dicts are data (metadata, options)
    and stay as they are.
    """
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {camel(f.name): to_jsonable(getattr(obj, f.name))
               for f in dataclasses.fields(obj) if f.metadata.get("json", True)}
        for name in getattr(type(obj), "__json_properties__", ()):
            out[camel(name)] = to_jsonable(getattr(obj, name))
        return out
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def json_text(data: Any) -> str:
    """One JSON document, indented, UTF-8 kept, ending in a newline."""
    return json.dumps(to_jsonable(data), indent=2, ensure_ascii=False) + "\n"
