"""What a tool call returns: text for the model, data for programs, failures as values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import KbctlError


@dataclass(frozen=True)
class ToolResult:
    """``text`` for the model (spotlighted where it carries retrieved content), ``data``
    for programs, and, on failure, ``is_error`` with the exit code the error stands for."""

    tool: str
    text: str
    data: dict[str, Any]
    is_error: bool = False
    exit_code: int = 0

    def to_json(self) -> dict[str, Any]:
        key = "error" if self.is_error else "result"
        return {"tool": self.tool, "isError": self.is_error, "text": self.text,
                key: self.data.get("error") if self.is_error else self.data}

    @classmethod
    def failure(cls, tool: str, exc: KbctlError) -> ToolResult:
        text = f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else "")
        return cls(tool, text, {"error": exc.to_dict()}, is_error=True,
                   exit_code=exc.exit_code)

