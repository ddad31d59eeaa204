"""A config.yaml holding secrets, and the tool and check that show ctx.config keeps them out.

Shared by the engine's run path test (tests/engine/test_config.py) and the ``rienda call``
one (tests/cli/test_main.py). The check is on behaviour: no secret value appears, the harmless
settings stay visible; not on how the redaction is written.
"""

from __future__ import annotations

import json

SECRETS = {"sk-live-0123456789abcdef", "ghp_live0123456789", "hunter2-correct-horse"}
CONFIG_WITH_SECRETS = """\
auto_approve: false
github_token: ghp_live0123456789
password: hunter2-correct-horse
limits: {depth: 3}
providers:
  vault: {api: openai, base_url: "http://127.0.0.1:9/v1", api_key: sk-live-0123456789abcdef}
"""
CONFIG_TOOL = """module.exports = { description: "Shows ctx.config.", parameters: { type: "object" },
  execute: (ctx) => JSON.stringify(ctx.config) };"""


def assert_redacted(text: str) -> None:
    """``text`` (ctx.config as a tool saw it) holds no secret, and the harmless settings."""
    assert not [secret for secret in SECRETS if secret in text]
    config = json.loads(text)
    assert (config["auto_approve"], config["limits"]) == (False, {"depth": 3})
    assert config["providers"]["vault"]["base_url"] == "http://127.0.0.1:9/v1"
    assert config["providers"]["vault"]["api"] == "openai"
