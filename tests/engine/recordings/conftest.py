"""A home whose agents talk to the echo server (:mod:`tests.helpers.recording_server`) on
127.0.0.1 through a configured endpoint that needs a key."""

from __future__ import annotations

import pytest
import yaml

from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.homes import write_agent
from ...helpers.recorded_notebooks import KEY
from ...helpers.recording_server import echo_server
from ...helpers.vendor_wire import serving

class Recorded:
    """The rig, the server (``None`` once stopped) and a way to make a Rienda on it."""

    def __init__(self, rig, server) -> None:
        self.rig = rig
        self.server = server
        self.url = server.url

    def configure(self, hooks=(), tools=("read",), body="Be brief.", name="a") -> None:
        (self.rig.home / "config.yaml").write_text(yaml.safe_dump(
            {"providers": {"local": {"api": "openai", "base_url": self.url, "api_key_env": "LOCAL_API_KEY"}},
             "compaction": {"keep_recent_tokens": 40}}))
        write_agent(self.rig.home, name, tools, hooks, "local/echo", body=body)

    def rienda(self, recording="talk.rec.jsonl", mode=None) -> Rienda:
        engine = Rienda(home=self.rig.home, workdir=self.rig.workdir, sandbox=self.rig.sandbox)
        engine.record(recording, mode)
        return engine

    @property
    def asked(self) -> int:
        return len(self.server.requests)

    def stop(self) -> None:
        self.server.close()


@pytest.fixture
def recorded(rig, monkeypatch):
    monkeypatch.setenv("LOCAL_API_KEY", KEY)
    monkeypatch.delenv("RIENDA_RECORD_MODE", raising=False)
    server = echo_server()
    with serving(server):
        yield Recorded(rig, server)
