"""RIENDA_HOME's config.yaml: its settings checked, and the redaction ctx.config relies on."""

from __future__ import annotations

import pytest

from rienda_kernel.engine import ConfigError, NonInteractiveUI, load_config, read_config, redact_config
from rienda_kernel.engine.runtime.rienda import Rienda
from tests.helpers.secret_config import CONFIG_TOOL, CONFIG_WITH_SECRETS, SECRETS, assert_redacted


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
    assert redact_config(config) == {
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


@pytest.mark.parametrize(("line", "problem"), [
    ('auto_approve: "true"', "auto_approve must be true or false (a YAML boolean, without quotes), got the string 'true'"),
    ("default_model: gpt-4o", "default_model must be provider/model, e.g. openai/gpt-4o, got the string 'gpt-4o'"),
    ("providers: [openai]", "providers must be a mapping of provider names to their settings, got a list"),
    ("max_turns: 0", "max_turns must be a positive whole number of model turns, got the number 0"),
    ("max_turns: true", "max_turns must be a positive whole number of model turns, got the boolean True"),
    ("load_timeout: -2", "load_timeout must be a positive number of seconds, got the number -2"),
])
def test_a_setting_of_the_wrong_type_is_an_error_naming_the_file_and_line(tmp_path, line, problem):
    (tmp_path / "config.yaml").write_text(f"# settings\n\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value) == f"{tmp_path / 'config.yaml'}:3: {problem}"


def test_the_known_settings_load_and_an_empty_one_is_not_set(tmp_path):
    (tmp_path / "config.yaml").write_text(
        "default_model: openai/gpt-4o\nauto_approve: false\nmax_turns: 12\nload_timeout: 2.5\nproviders:\n")
    assert read_config(tmp_path) == (
        {"default_model": "openai/gpt-4o", "auto_approve": False, "max_turns": 12, "load_timeout": 2.5}, [])


def test_an_unknown_key_is_a_diagnostic_with_a_did_you_mean(tmp_path):
    (tmp_path / "config.yaml").write_text("auto_aprove: true\nmystery: 1\n")
    config, diagnostics = read_config(tmp_path)
    path = tmp_path / "config.yaml"
    assert [(d.path, d.line) for d in diagnostics] == [(str(path), 1), (str(path), 2)]
    assert diagnostics[0].message.startswith(f"{path}:1: unknown setting 'auto_aprove' (did you mean 'auto_approve'?); ignored")
    assert diagnostics[1].message.startswith(f"{path}:2: unknown setting 'mystery'; ignored (the settings are default_model,")
    assert "auto_approve" not in config
