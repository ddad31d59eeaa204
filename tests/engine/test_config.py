"""RIENDA_HOME's config.yaml and the redaction ctx.config relies on."""

from __future__ import annotations

import pytest

from rienda_kernel.engine import ConfigError, load_config, redact


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


def test_T19_ctx_config_never_shows_a_secret(rig):
    rig.write_tool("cfg", """module.exports = { description: "c", parameters: { type: "object" },
      execute: (ctx) => JSON.stringify(ctx.config) };""")
    text = rig.tool("cfg", {}, config=redact({"openai": {"api_key": "sk-live-123"}})).text
    assert "sk-live-123" not in text and "[redacted]" in text
