"""RIENDA_HOME's config.yaml, and the redaction of secrets in what ctx.config shows."""

from __future__ import annotations

import pytest

from rienda_kernel.engine import ConfigError, NonInteractiveUI, load_config, redact
from rienda_kernel.engine.runtime import Rienda
from tests.secret_config import CONFIG_TOOL, CONFIG_WITH_SECRETS, SECRETS, assert_redacted


def test_a_missing_config_is_empty(tmp_path):
    assert load_config(tmp_path) == {}


def test_config_is_parsed(tmp_path):
    (tmp_path / "config.yaml").write_text("auto_approve: true\nproviders:\n  local: {api: openai}\n")
    assert load_config(tmp_path) == {"auto_approve": True, "providers": {"local": {"api": "openai"}}}


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    (tmp_path / "config.yaml").write_text("auto_approve: true\nproviders: [unclosed\nother: 1\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'config.yaml'}:")
    assert "malformed YAML" in str(caught.value)


def test_a_config_that_is_not_a_mapping_is_an_error(tmp_path):
    (tmp_path / "config.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping of settings, got list"):
        load_config(tmp_path)


def test_secrets_are_redacted_and_the_rest_kept():
    config = {
        "auto_approve": False,
        "providers": {
            "openai": {"api_key": "sk-live-123", "base_url": "http://x"},
            "local": {"api_key_env": "LOCAL_API_KEY", "headers": [{"Authorization": "Bearer t"}]},
        },
        "github_token": "ghp_abc",
        "password": None,
    }
    assert redact(config) == {
        "auto_approve": False,
        "providers": {
            "openai": {"api_key": "[redacted]", "base_url": "http://x"},
            "local": {"api_key_env": "LOCAL_API_KEY", "headers": [{"Authorization": "[redacted]"}]},
        },
        "github_token": "[redacted]",
        "password": None,
    }
    assert config["providers"]["openai"]["api_key"] == "sk-live-123"


def test_T19_a_runs_ctx_config_never_shows_a_secret_from_config_yaml(rig):
    """Through Rienda's run path: config.yaml on disk, a real tool reading ctx.config."""
    (rig.home / "config.yaml").write_text(CONFIG_WITH_SECRETS)
    rig.write_tool("cfg", CONFIG_TOOL)
    (rig.home / "agents").mkdir()
    (rig.home / "agents" / "cfg.md").write_text(
        "---\ndescription: Reads config.\nmodel: scripted/script.yaml\ntools: [cfg]\nhooks: []\n---\nRead.\n")
    (rig.workdir / "script.yaml").write_text("- text: ''\n  tool_calls: [{name: cfg, arguments: {}}]\n- text: done\n")
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("cfg").run(
        "go", NonInteractiveUI())
    assert result.reason == "end_turn", result.error
    assert_redacted(result.tool_calls[0][1].text)
    session = (rig.home / "sessions" / f"{result.session_id}.jsonl").read_text()
    assert not [secret for secret in SECRETS if secret in session]


def test_an_unreadable_config_is_a_clear_error_naming_the_file(unprivileged):
    config = unprivileged.directory / "config.yaml"
    config.write_text("auto_approve: true\n")
    config.chmod(0)
    assert unprivileged.run("""
        import json
        from pathlib import Path
        from rienda_kernel.engine import ConfigError, load_config
        try:
            print(json.dumps(load_config(Path.cwd())))
        except ConfigError as exc:
            print(json.dumps(str(exc)))
    """) == f"{config}: cannot be read: Permission denied"
