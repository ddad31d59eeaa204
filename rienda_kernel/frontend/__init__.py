"""What every front end (the ``rienda`` command, ``rienda chat``, the kernel, the magics)
shares on its way out: :mod:`.output` (the Reader: every byte shown scrubbed, encodable,
paths as the reader sees them; OutputStream, a stream that never raises; one line per
error), :mod:`.terminal` (a run in a terminal), :mod:`.hook_actions` (a hook's action in
one line), :mod:`.previews` (a tool result's first lines), :mod:`.show` (a saved session
as ``rienda show`` and ``%rienda show`` print it)."""
