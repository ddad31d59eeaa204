"""Tools, whatever their kind (built-in, JavaScript, notebook): :mod:`.invoke` (decode and
validate a call's arguments, run the tool, type and cap its result) and :mod:`.schemas`
(a tool's JSON Schema, checked whole at load and applied at each call)."""
