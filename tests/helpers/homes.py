"""A RIENDA_HOME and a workdir on disk: agents, extensions, the scripted model's script,
and the session files a run leaves. Used by every front end's tests (engine, CLI, Jupyter)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Iterable

import yaml

DEFAULT_MODEL = "scripted/script.yaml"


def scripted_home(root: Path) -> tuple[Path, Path]:
    """``root/home`` (with ``agents/`` and a config.yaml whose default model, the built-in
    default agent's, is the scripted one) and an empty ``root/work``."""
    home, work = root / "home", root / "work"
    (home / "agents").mkdir(parents=True)
    (home / "config.yaml").write_text(f"default_model: {DEFAULT_MODEL}\n")
    work.mkdir()
    return home, work


def write_extension(home: Path, kind: str, name: str, source: str) -> Path:
    """``home/<kind>/<name>/index.js`` (kind: tools or hooks) holding ``source``, dedented."""
    path = home / kind / name / "index.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def write_agent_file(home: Path, name: str, text: str) -> Path:
    """``home/agents/<name>.md`` holding exactly ``text``."""
    path = home / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_agent(home: Path, name: str, tools: Iterable[str] = (), hooks: Iterable[str] = (),
                model: str = DEFAULT_MODEL, *, description: str | None = "test", body: str = "Be brief.") -> Path:
    """Agent ``name`` on ``model`` with these tools and hooks; ``body`` is its system prompt
    (no description line when ``description`` is None)."""
    front = [f"description: {description}"] if description is not None else []
    front += [f"model: {model}", f"tools: {list(tools)}", f"hooks: {list(hooks)}"]
    return write_agent_file(home, name, "---\n" + "\n".join(front) + f"\n---\n{body}\n")


def write_hooked_agent(home: Path, workdir: Path) -> None:
    """Agent ``agent`` with one ``afterRun`` hook, so that a turn runs it in a V8 worker, and a
    script answering once."""
    write_extension(home, "hooks", "audit", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun"); } };')
    write_agent(home, "agent", hooks=["audit"])
    write_script(workdir, [{"text": "Done."}])


def write_script(workdir: Path, responses: list, name: str = "script.yaml") -> Path:
    """The scripted model's responses, in ``workdir/<name>`` (keys in the order given)."""
    path = workdir / name
    path.write_text(yaml.safe_dump(responses, sort_keys=False))
    return path


def call_script(tool: str, arguments: dict[str, Any] | None = None, then: str = "Finished.") -> list[dict[str, Any]]:
    """A script whose first response calls ``tool`` and whose second says ``then``."""
    return [{"text": "Calling.", "tool_calls": [{"name": tool, "arguments": arguments or {}}]}, {"text": then}]


def python_call(code: str) -> dict[str, Any]:
    """A script's call of the notebook's python tool running ``code``."""
    return {"name": "python", "arguments": {"code": code}}


def session_lines(home: Path, session_id: str) -> list[dict[str, Any]]:
    """The records of session ``session_id``, in order."""
    path = home / "sessions" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def only_session_lines(home: Path) -> list[dict[str, Any]]:
    """The records of the one session in ``home`` (fails if there is not exactly one)."""
    [path] = (home / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]
