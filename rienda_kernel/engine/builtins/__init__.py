"""Built-in tools: :mod:`.standard` (``shell``, ``http``, ``read``, ``write``, in every
front end, and ``agent``, whose sub-agent runs are :mod:`.subagent`'s) and :mod:`.notebook`
(``python`` and ``variables``, only where a front end gives a live Python namespace)."""
