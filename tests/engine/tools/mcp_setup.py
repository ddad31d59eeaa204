"""What the MCP engine tests share: a home whose config.yaml names real servers, agents and
hooks written into it, and runs of the scripted model (or a probe that records what the
model is offered)."""

from __future__ import annotations

import itertools
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rienda_kernel.engine import CancelToken, NonInteractiveUI, Rienda
from rienda_kernel.engine.providers import PROVIDERS, Provider, TextChunk, ToolCallChunk
from rienda_kernel.engine.sessions.messages import ToolCall

from ...helpers.mcp_servers import write_config

_names = itertools.count(1)


@dataclass
class Home:
    """A RIENDA_HOME, a workspace, the lab server's trace folder and the Rienda over them."""

    root: Path
    servers: dict[str, Any]
    sandbox: Any
    rienda: Rienda = field(init=False)

    def __post_init__(self) -> None:
        for folder in (self.home / "agents", self.work, self.lab):
            folder.mkdir(parents=True, exist_ok=True)
        write_config(self.home, self.servers)
        self.rienda = Rienda(self.home, self.work, sandbox=self.sandbox)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def lab(self) -> Path:
        return self.root / "lab"

    def configure(self, servers: dict[str, Any]) -> None:
        self.servers = servers
        write_config(self.home, servers)

    def hook(self, name: str, source: str) -> str:
        path = self.home / "hooks" / name / "index.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return name

    def agent(self, tools: list[str], hooks: list[str] = (), model: str | None = None) -> str:
        """A new agent (its own name, and its own script file unless ``model`` is given)."""
        name = f"agent{next(_names)}"
        model = model or f"scripted/{name}.yaml"
        (self.home / "agents" / f"{name}.md").write_text(
            f"---\ndescription: test\nmodel: {model}\ntools: {list(tools)}\nhooks: {list(hooks)}\n---\nBe brief.\n")
        return name

    def run(self, tools: list[str], calls: list[tuple[str, dict[str, Any]]], hooks: list[str] = (),
            ui: NonInteractiveUI | None = None, cancel: CancelToken | None = None):
        """One run of a new agent whose model makes ``calls`` (one turn), then says "Done."."""
        agent = self.agent(tools, hooks)
        script = [{"text": "Calling.", "tool_calls": [{"name": n, "arguments": a} for n, a in calls]},
                  {"text": "Done."}]
        (self.work / f"{agent}.yaml").write_text(yaml.safe_dump(script))
        ui = ui or NonInteractiveUI()
        return self.rienda.conversation(agent).run("go", ui, cancel), ui

    def session_text(self, result) -> str:
        return (self.home / "sessions" / f"{result.session_id}.jsonl").read_text()


def results(result) -> list[tuple[str, bool]]:
    """Each tool result of a run: (text, is_error)."""
    return [(message.text, message.is_error) for message in result.messages if message.role == "tool"]


class Probe(Provider):
    """A model that records each request (the tools it is offered) and answers from a list."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.requests: list[Any] = []
        self.answers = answers

    def stream(self, request, cancel):
        self.requests.append(request)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        yield TextChunk(answer.get("text", ""))
        for index, (name, arguments) in enumerate(answer.get("calls", [])):
            yield ToolCallChunk(ToolCall(f"call-{len(self.requests)}-{index}", name, arguments))


def install_probe(probe: Probe):
    PROVIDERS["probe"] = lambda config: probe
    return lambda: PROVIDERS.pop("probe", None)
