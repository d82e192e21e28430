"""Agent tools: what a model may call (knowledge search, memory) as data, their argument
checks, the session that runs them over a pinned scope, and the MCP server (``mcp_server``,
imported only by ``kbctl serve mcp``).

The namespace, agent and user come from the operator's settings, never from arguments: a
parameter can narrow a call but never widen whose data it sees, and unknown arguments are
refused. Retrieved text reaches the model spotlighted: it is data, not orders.
"""

from .arguments import ToolArgumentError, check_arguments
from .result import ToolResult
from .session import AgentTools, phase_file
from .specs import (
    MEMORY_APPEND,
    MEMORY_GET,
    MEMORY_SEARCH,
    SEARCH_KNOWLEDGE,
    ToolLimits,
    ToolSpec,
    tool_specs,
)

__all__ = [
    "MEMORY_APPEND", "MEMORY_GET", "MEMORY_SEARCH", "SEARCH_KNOWLEDGE",
    "AgentTools", "ToolArgumentError", "ToolLimits", "ToolResult", "ToolSpec",
    "check_arguments", "phase_file", "tool_specs",
]
