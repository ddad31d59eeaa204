"""A RIENDA_HOME for ``rienda run`` and the session commands, shared by their tests."""

from __future__ import annotations

import pytest

from ..helpers.homes import scripted_home, write_agent_file, write_extension

PUBLISH_ASK = """module.exports = { description: "Asks first.", parameters: { type: "object" },
  execute(ctx) { return ctx.confirm({ title: "Publish", body: "Push?" }) ? "pushed" : { text: "cancelled", isError: true }; } };"""


@pytest.fixture
def setup(tmp_path):
    """(home, workdir): agent ``pub`` with the publish tool (it asks first) and the audit
    hook (it logs afterRun), on the scripted model, also the built-in default agent's."""
    home, work = scripted_home(tmp_path)
    write_extension(home, "tools", "publish", PUBLISH_ASK)
    write_extension(home, "hooks", "audit", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };')
    # Tests swap the tool by replacing "[publish]" in this text.
    write_agent_file(home, "pub", "---\ndescription: Publishes.\nmodel: scripted/script.yaml\ntools: [publish]\n"
                                  "hooks: [audit]\n---\nYou publish.\n")
    return home, work
