"""The V8 sandbox: where extensions run, and how the host process reaches them.

In the host process: :mod:`.protocol` (the sandbox protocol and the product's
:class:`Sandbox`), :mod:`.pool` (the pool of worker processes) and :mod:`.worker_handle`
(one worker process: start, run a job, stop, kill). In each worker process:
:mod:`.worker_main` (runs the host's invocations), over :mod:`.inprocess` (one fresh
isolate per invocation), :mod:`.isolate` (isolates with a synchronous host-call doorbell),
:mod:`.mini_racer_compat` (mini-racer's private surface) and ``prelude/`` (``ctx``,
console and timers inside every isolate). On both sides: :mod:`.wire` (what crosses the
boundaries). The host process never imports V8.
"""
