"""Built-in tools: :mod:`.standard` (``shell``, ``http``, ``read``, ``write``, in every
front end, and ``agent``, :mod:`.agent`, whose sub-agent runs are :mod:`..runtime.subagents`') and :mod:`.notebook`
(``python`` and ``variables``, only where a front end gives a live Python namespace).

The notebook tools are named here, so that a run can say where they exist without
importing :mod:`.notebook` (which only a front end with a Python namespace needs)."""

NOTEBOOK_TOOL_NAMES = ("python", "variables")
WHERE_THEY_EXIST = ("the %rienda magics in an IPython or Jupyter Python kernel, and the Rienda Jupyter kernel")
