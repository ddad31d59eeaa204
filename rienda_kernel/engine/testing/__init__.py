"""Hooks under test: :mod:`.hook_call` (one hook point called directly, as ``rienda hook``
and ``%rienda hook`` do), :mod:`.replay` (a recorded session through the hooks again;
a session as a script) and :mod:`.expectations` (``<id>.expect.yaml``)."""
