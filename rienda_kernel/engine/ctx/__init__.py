"""What ``ctx`` does on the host: :mod:`.host` (the Python side of one invocation's
``ctx``), :mod:`.processes` (``ctx.system.exec``), :mod:`.http` (``ctx.http.fetch``) and
:mod:`.files` (``ctx.file``). The built-in tools use the same code."""
