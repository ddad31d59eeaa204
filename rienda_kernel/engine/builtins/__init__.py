"""Built-in tools: :mod:`.standard` (``shell``, ``http``, ``read``, ``write``, in every
front end, and ``agent``, :mod:`.agent`, whose sub-agent runs are :mod:`..runtime.subagents`') and :mod:`.notebook`
(``python`` and ``variables``, only where a front end gives a live Python namespace).

The built-in default agent's tools and the notebook tools are named here, so that reading
an agent file and saying where a tool exists import no tool's implementation (and no
front end without a Python namespace loads :mod:`.notebook`)."""

STANDARD_TOOLS = ("shell", "http", "read", "write")  # the built-in default agent's tools
NOTEBOOK_TOOL_NAMES = ("python", "variables")
WHERE_THEY_EXIST = ("the %rienda magics in an IPython or Jupyter Python kernel, and the Rienda Jupyter kernel")
