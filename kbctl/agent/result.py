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
        """``{tool, isError, text, result}``, or ``error`` and ``exitCode`` as every
        command's error document carries them."""
        if self.is_error:
            return {"tool": self.tool, "isError": True, "text": self.text,
                    "error": self.data.get("error"), "exitCode": self.exit_code}
        return {"tool": self.tool, "isError": False, "text": self.text, "result": self.data}

    @classmethod
    def failure(cls, tool: str, exc: KbctlError) -> ToolResult:
        text = f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else "")
        return cls(tool, text, {"error": exc.to_dict()}, is_error=True,
                   exit_code=exc.exit_code)

