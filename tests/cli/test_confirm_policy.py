"""One confirm policy, spelled ask|allow|deny everywhere, decided the same way by every
command: ``--confirm`` (``--yes`` is allow), ``$RIENDA_CONFIRM``, config.yaml's ``confirm``
(``auto_approve`` is its older spelling), in that order. Real ``rienda`` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

CONFIRMING = """module.exports = { description: "Asks first.", parameters: { type: "object" },
  execute(ctx) { return ctx.confirm({ title: "Publish", body: "Push?" }) ? "pushed" : "not pushed"; } };"""
HOOK = """module.exports = { beforeToolExecute(ctx, call) {
  return ctx.confirm({ title: "Run", body: call.name }) ? undefined : { allow: false, reason: "said no" }; } };"""


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    for kind, name, source in (("tools", "publish", CONFIRMING), ("hooks", "ask", HOOK)):
        (home / kind / name).mkdir(parents=True)
        (home / kind / name / "index.js").write_text(source)
    (home / "agents").mkdir()
    (home / "agents" / "pub.md").write_text(textwrap.dedent("""\
        ---
        description: Publishes.
        model: scripted/script.yaml
        tools: [publish]
        ---
        You publish.
        """))
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(
        [{"text": "", "tool_calls": [{"name": "publish", "arguments": {}}]}, {"text": "Done."}]))
    return home


def rienda(home, *args, env=None):
    environment = {k: v for k, v in os.environ.items() if k != "RIENDA_CONFIRM"}
    environment.update({"RIENDA_HOME": str(home), **(env or {})})
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=home.parent, env=environment,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def confirm_events(done) -> list[tuple[bool, str]]:
    events = [json.loads(line) for line in done.stdout.splitlines()]
    return [(e["answer"], e["how"]) for e in events if e["type"] == "confirm"]


@pytest.mark.parametrize(("config", "env", "flags", "expected"), [
    ("", {}, [], (False, "default-deny")),                              # ask, and nobody to ask
    ("confirm: allow\n", {}, [], (True, "auto-approve")),
    ("confirm: deny\n", {}, [], (False, "auto-deny")),
    ("auto_approve: false\n", {}, [], (False, "auto-deny")),            # the older spelling
    ("auto_approve: true\n", {}, [], (True, "auto-approve")),
    ("confirm: deny\n", {"RIENDA_CONFIRM": "allow"}, [], (True, "auto-approve")),   # the environment first
    ("confirm: allow\n", {"RIENDA_CONFIRM": "allow"}, ["--confirm", "deny"], (False, "auto-deny")),  # the flag first
    ("confirm: deny\n", {}, ["--yes"], (True, "auto-approve")),
])
def test_run_takes_the_policy_from_the_flag_the_environment_or_config_yaml(home, config, env, flags, expected):
    (home / "config.yaml").write_text(config)
    done = rienda(home, "run", "--agent", "pub", "--json", *flags, "go", env=env)
    assert confirm_events(done) == [expected], done.stderr


@pytest.mark.parametrize(("config", "expected_how"), [("auto_approve: false\n", "auto-deny"), ("", "default-deny")])
def test_rienda_hook_json_decides_as_rienda_run_does(home, config, expected_how):
    (home / "config.yaml").write_text(config)
    run = rienda(home, "run", "--agent", "pub", "--json", "go")
    hook = rienda(home, "hook", "ask", "beforeToolExecute", '{"name": "publish"}', "--json")
    ran_how = confirm_events(run)[0][1]
    hooked = json.loads(hook.stdout)
    hook_how = [c["how"] for c in hooked["confirms"]]
    assert ran_how == expected_how and hook_how == [expected_how], (run.stderr, hook.stdout)


def test_a_policy_that_is_not_one_is_one_line_naming_where_it_came_from(home):
    (home / "config.yaml").write_text("confirm: sometimes\n")
    bad_config = rienda(home, "run", "--agent", "pub", "go")
    assert bad_config.returncode == 1
    assert bad_config.stderr.strip().splitlines()[-1].endswith("confirm must be one of ask, allow, deny, got the string 'sometimes'"), bad_config.stderr
    (home / "config.yaml").write_text("")
    bad_env = rienda(home, "run", "--agent", "pub", "go", env={"RIENDA_CONFIRM": "alow"})
    assert bad_env.returncode == 1
    assert bad_env.stderr.strip() == ("rienda: $RIENDA_CONFIRM must be one of ask, allow, deny, got 'alow' "
                                      "(did you mean 'allow'?)")
    bad_flag = rienda(home, "run", "--agent", "pub", "--confirm", "maybe", "go")
    assert (bad_flag.returncode, bad_flag.stderr) == (2, "rienda: run: --confirm must be one of ask, allow, deny, got "
                                                         "'maybe'; rienda run --help shows the usage\n")
