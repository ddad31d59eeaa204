"""Tools, whatever their kind (built-in, JavaScript, notebook): :mod:`.invoke` (decode and
validate a call's arguments, run the tool, type and cap its result), :mod:`.schemas`
(a tool's JSON Schema, checked whole at load and applied at each call) and ``mcp/`` (MCP
servers' tools, as tools like any other)."""
