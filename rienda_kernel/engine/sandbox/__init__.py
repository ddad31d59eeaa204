"""The V8 sandbox: where extensions run, and how the host process reaches them.

In the host process: :mod:`.workers` (the product's :class:`Sandbox`), :mod:`.pool` (the
pool of worker processes) and :mod:`.worker_handle` (one worker process: start, run a job,
stop, kill). In each worker process: :mod:`.worker_main` (runs the host's invocations),
over :mod:`.inprocess` (the sandbox protocol on V8 in one process), :mod:`.realms` (each
invocation in a fresh ShadowRealm, prepared ahead with its module, in the isolates of
:mod:`.homes`), :mod:`.isolate` (isolates with a synchronous host-call doorbell),
:mod:`.mini_racer_compat` (mini-racer's private surface, and the four V8 API functions that
make ShadowRealms) and ``prelude/`` (``kernel.js`` in each isolate's main
context; ``bridge.js`` + ``outcomes.js``, ``ctx``, console and timers, in every realm).
On both sides: :mod:`.protocol` (the sandbox protocol's contracts and the types both
sides use), :mod:`.chain` (one hook point's chain) and :mod:`.wire` (what crosses the
boundaries). The host process never imports V8.
"""
