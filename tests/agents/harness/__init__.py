"""The harness that runs the real coding-agent CLIs (Claude Code, Codex, Gemini CLI, Copilot
CLI) headless and offline: pinned npm installs in a cache outside the checkout
(``install``), a scripted fake model server on 127.0.0.1 speaking each vendor's wire
(``model_server`` and the ``*_wire`` modules), one runner per agent writing its config into a
throwaway home (``runners``), and hook commands a test can swap (``policies``).
"""
