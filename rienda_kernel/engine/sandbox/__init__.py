"""The V8 sandbox: where extensions run, and how the host process reaches them.

Host process: :mod:`.protocol` (the sandbox protocol and the product's :class:`Sandbox`),
:mod:`.pool` (V8 worker processes, seen from the host: start, use, stop, replace).
Worker process: :mod:`.worker_process` (runs the host's invocations), over
:mod:`.inprocess` (one fresh isolate per invocation), :mod:`.isolate` (isolates with a
synchronous host-call doorbell), :mod:`.mini_racer_compat` (mini-racer's private surface)
and ``prelude.js`` (``ctx``, console and timers inside every isolate). Both sides:
:mod:`.wire` (what crosses the boundaries).
"""
