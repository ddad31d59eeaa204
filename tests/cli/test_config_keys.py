"""A misspelt key is reported as the unknown key, with "did you mean", before the key it
leaves missing (issue 33), everywhere config.yaml and an agent's front matter hold keys:
an ``mcp_servers`` entry (``comand:``), a ``providers:`` entry (``ap:``), an agent
(``modle:``); ``rienda run`` as a real process."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml


def run(home, work, agent="default"):
    env = {**os.environ, "RIENDA_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", agent, "hi"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=60)


def homes(tmp_path, config, agent="---\nmodel: scripted/script.yaml\n---\nBe brief.\n"):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    work.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (home / "agents" / "a.md").write_text(agent)
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": "Hello."}]))
    return home, work


def test_a_misspelt_mcp_server_key_is_named_not_reported_as_command_missing(tmp_path):
    home, work = homes(tmp_path, {"mcp_servers": {"time": {"comand": "python", "args": ["-m", "mcp_server_time"]}}})
    done = run(home, work, "a")
    assert done.returncode != 0
    assert (f"{home / 'config.yaml'}:3: unknown key 'comand' in mcp_servers.time (did you mean 'command'?); "
            "so mcp_servers.time needs command (the program to start)") in done.stderr, done.stderr


def test_a_misspelt_provider_key_is_named_not_reported_as_an_api_that_is_not_available(tmp_path):
    home, work = homes(tmp_path, {"providers": {"local": {"ap": "openai", "base_url": "http://127.0.0.1:9/v1"}}},
                       "---\nmodel: local/m\n---\nBe brief.\n")
    done = run(home, work, "a")
    assert done.returncode != 0
    assert "config.yaml: providers.local: unknown option(s) ap (did you mean api?)" in done.stderr, done.stderr
    assert "is not available" not in done.stderr


def test_a_misspelt_agent_key_is_named_before_the_missing_model(tmp_path):
    home, work = homes(tmp_path, {}, "---\ndescription: test\nmodle: scripted/script.yaml\n---\nBe brief.\n")
    done = run(home, work, "a")
    assert done.returncode != 0
    assert (f"{home / 'agents' / 'a.md'}:3: unknown key 'modle' (did you mean 'model'?); missing required key "
            "'model'") in done.stderr, done.stderr
