"""What a tool call returns: text for the model, data for programs, failures as values."""

from __future__ import annotations

from collections.abc import Sequence
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


def sources_block(sources: Sequence[Any], nonce: str) -> str:
    """The de-duplicated sources, delimited like the passages (titles are retrieved too)."""
    tag = f"kb-sources-{nonce}"
    lines = [f"\nSources (passage numbers → citation, title), wrapped in <{tag}>:", f"<{tag}>"]

    def flat(value: str) -> str:  # one line, and no copy of the closing tag
        return " ".join(value.split()).replace(tag, tag.replace("-", "\u2011"))

    for s in sources:
        nums = ",".join(str(n) for n in s.passages)
        lines.append(f"[{nums}] {flat(s.citation)}  {flat(s.title)}")
    lines.append(f"</{tag}>")
    return "\n".join(lines) + "\n"


def with_notes(text: str, notes: Sequence[str]) -> str:
    if not notes:
        return text
    return text.rstrip("\n") + "\n\n" + "\n".join(f"note: {n}" for n in notes) + "\n"
