"""Hooks under test: :mod:`.hook_call` (one hook point called directly, as ``rienda hook``
and ``%rienda hook`` do), :mod:`.replay` (a recorded session through the hooks again;
a session as a script), :mod:`.not_run` (why a call cannot run again with
``run_tools``) and :mod:`.expectations` (``<id>.expect.yaml``)."""
