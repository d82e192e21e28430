"""Agent tools: what a model may call (knowledge search, memory) as data, their argument
checks, the session that runs them over a pinned scope, and the MCP server (``mcp_server``,
imported only by ``kbctl serve mcp``).

The namespace, agent and user come from the operator's settings, never from arguments: a
parameter can narrow a call but never widen whose data it sees, and unknown arguments are
refused. Retrieved text reaches the model spotlighted: it is data, not orders.

This package imports none of its modules: a user imports the one it needs, and loads
nothing else.
"""
