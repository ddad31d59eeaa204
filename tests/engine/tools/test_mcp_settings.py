"""``mcp_servers`` in config.yaml: checked like every setting (file and line, "did you
mean"), its env and headers secrets from the moment the file is read; and the names
``mcp__SERVER__TOOL``. No server runs here."""

from __future__ import annotations

import textwrap

import pytest

from rienda_kernel.engine import ConfigError, check_config, read_config, redact_config, scrub_text
from rienda_kernel.engine.tools.mcp.names import expand_declared, split_name
from rienda_kernel.engine.tools.mcp.settings import ServerSpec


def config(home, text: str):
    (home / "config.yaml").write_text(textwrap.dedent(text))
    return read_config(home)


def error(home, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        config(home, text)
    return str(caught.value)


def test_a_stdio_and_an_http_server_are_read_as_given(tmp_path):
    settings, diagnostics = config(tmp_path, """\
        mcp_servers:
          time:
            command: python
            args: [-m, mcp_server_time, --local-timezone, UTC]
            env: {TZ: UTC}
            cwd: /srv
          docs:
            type: http
            url: https://example.test/mcp
            headers: {Authorization: Bearer abcdefgh12345}
        """)
    assert diagnostics == []
    specs = check_config(tmp_path).mcp_servers
    assert specs["time"] == ServerSpec("time", command="python", args=("-m", "mcp_server_time", "--local-timezone",
                                                                          "UTC"), env=(("TZ", "UTC"),), cwd="/srv")
    assert specs["time"].kind == "stdio" and specs["docs"].kind == "http"
    assert specs["docs"].headers == (("Authorization", "Bearer abcdefgh12345"),)
    assert specs["docs"].describe() == "https://example.test/mcp"  # never its headers


@pytest.mark.parametrize(("text", "line", "message"), [
    ("mcp_servers: [time]\n", 1, "mcp_servers must be a mapping of MCP server names"),
    ("mcp_servers:\n  time: python -m mcp_server_time\n", 2, "mcp_servers.time must be a mapping (command and args, or url)"),
    ("mcp_servers:\n  time:\n    args: [-m]\n", 2, "mcp_servers.time needs command (the program to start)"),
    ("mcp_servers:\n  time:\n    type: http\n", 2, "mcp_servers.time needs url"),
    ("mcp_servers:\n  time:\n    command: python\n    args: -m mcp_server_time\n", 4,
     "mcp_servers.time.args must be a list of strings, got the string '-m mcp_server_time'"),
    ("mcp_servers:\n  time:\n    command: python\n    args: [--port, 8080]\n", 4,
     "but item 2 is the number 8080 (quote it: '8080')"),
    ("mcp_servers:\n  time:\n    command: python\n    env:\n      TZ: UTC\n      PORT: 8080\n", 6,
     "mcp_servers.time.env.PORT must be a string, got the number 8080"),
    ("mcp_servers:\n  time:\n    command: [python]\n", 3, "mcp_servers.time.command must be a non-empty string, got a list"),
    ("mcp_servers:\n  docs:\n    command: x\n    url: https://a.test\n", 4, "has both command and url"),
    ("mcp_servers:\n  docs:\n    url: ftp://a.test\n", 3, "url must start with http:// or https://"),
    ("mcp_servers:\n  docs:\n    url: https://a.test\n    args: [x]\n", 4, "mcp_servers.docs.args is for a server Rienda starts"),
    ("mcp_servers:\n  time:\n    command: python\n    headers: {A: b}\n", 4, "mcp_servers.time.headers is for a url server"),
    ("mcp_servers:\n  time:\n    command: python\n    start_timeout: -1\n", 4, "start_timeout must be a positive number"),
    ("mcp_servers:\n  time:\n    command: python\n    type: sse\n", 4, "type must be stdio or http"),
    ("mcp_servers:\n  my__time:\n    command: python\n", 2, "'my__time' is not a valid server name"),
    ("mcp_servers:\n  time_:\n    command: python\n", 2, "'time_' is not a valid server name"),
])
def test_a_wrong_setting_is_one_error_naming_the_file_line_and_value(tmp_path, text, line, message):
    found = error(tmp_path, text)
    assert found.startswith(f"{tmp_path / 'config.yaml'}:{line}: "), found
    assert message in found
    assert "\n" not in found


def test_an_unknown_key_is_a_diagnostic_with_the_closest_key_and_is_ignored(tmp_path):
    settings, diagnostics = config(tmp_path, """\
        default_model: scripted/x.yaml
        mcp_servers:
          time:
            command: python
            arg: [-m, mcp_server_time]
        """)
    assert [(d.line, d.message.split(": ", 1)[1]) for d in diagnostics] == [
        (5, "unknown key 'arg' in mcp_servers.time (did you mean 'args'?); ignored "
            "(the keys are type, command, args, env, cwd, url, headers, start_timeout)")]
    assert diagnostics[0].message.startswith(f"{tmp_path / 'config.yaml'}:5:")
    assert check_config(tmp_path).mcp_servers["time"].args == ()


def test_a_misspelt_mcp_servers_is_named_with_the_setting_it_may_mean(tmp_path):
    _, diagnostics = config(tmp_path, "mcp_server:\n  time: {command: python}\n")
    assert "unknown setting 'mcp_server' (did you mean 'mcp_servers'?)" in diagnostics[0].message


def test_secret_env_values_and_every_header_value_are_secrets_once_the_file_is_read(tmp_path):
    token, bearer, greeting = "ghp_envtoken1234567", "hdrsecret-987654321", "hello-from-the-lab"
    config(tmp_path, f"""\
        mcp_servers:
          gh:
            command: python
            env: {{GITHUB_PERSONAL_ACCESS_TOKEN: {token}, TZ: UTC, GREETING: {greeting}, DB_URL: "postgres://app:db-pass-0123@db/x"}}
          docs:
            url: https://example.test/mcp
            headers: {{X-Team: {bearer}}}
        """)
    assert scrub_text(f"got {token} and {bearer} in UTC") == "got [redacted] and [redacted] in UTC"
    assert scrub_text(f"{greeting} at postgres://app:db-pass-0123@db/x") == f"{greeting} at postgres://app:[redacted]@db/x"


def test_ctx_config_redacts_env_values_by_the_process_environments_rule_and_every_header_value(tmp_path):
    settings, _ = config(tmp_path, """\
        mcp_servers:
          time: {command: python, args: [-m, x], env: {TZ: UTC, LAB_DIR: /srv/lab, API_TOKEN: tok,
                                                       DB_URL: "postgres://app:db-pass-0123@db/x"}}
          docs: {url: "https://a.test/mcp", headers: {X-Team: blue}}
        """)
    redacted = redact_config(settings)["mcp_servers"]
    assert redacted["time"] == {"command": "python", "args": ["-m", "x"],
                                "env": {"TZ": "UTC", "LAB_DIR": "/srv/lab", "API_TOKEN": "[redacted]",
                                        "DB_URL": "postgres://app:[redacted]@db/x"}}
    assert redacted["docs"] == {"url": "https://a.test/mcp", "headers": {"X-Team": "[redacted]"}}


def test_a_misspelt_key_is_named_with_did_you_mean_before_the_key_it_leaves_missing(tmp_path):
    said = error(tmp_path, """\
        mcp_servers:
          time:
            comand: python
            args: [-m, mcp_server_time]
        """)
    assert said == (f"{tmp_path / 'config.yaml'}:3: unknown key 'comand' in mcp_servers.time (did you mean "
                    "'command'?); so mcp_servers.time needs command (the program to start)")
    said = error(tmp_path, "mcp_servers:\n  docs: {type: http, ulr: 'https://a.test/mcp'}\n")
    assert "unknown key 'ulr' in mcp_servers.docs (did you mean 'url'?)" in said


def test_names_split_at_the_first_double_underscore_after_the_prefix():
    assert split_name("mcp__time__get_current_time") == ("time", "get_current_time")
    assert split_name("mcp__my-server__a__b") == ("my-server", "a__b")
    assert split_name("mcp__time") == ("time", None)
    assert [split_name(name) for name in ("shell", "mcp__", "mcp____x", "mcp__time__")] == [None] * 4


def test_a_server_name_stands_for_all_its_tools_in_place_and_other_names_stay():
    tools = {"mcp__time__convert_time": 1, "mcp__time__get_current_time": 2, "mcp__timer__x": 3, "shell": 4}
    assert expand_declared(["shell", "mcp__time", "mcp__timer__x"], tools, {"time", "timer"}) == (
        "shell", "mcp__time__convert_time", "mcp__time__get_current_time", "mcp__timer__x")
    assert expand_declared(["mcp__nope"], tools, {"time"}) == ("mcp__nope",)  # left for the check to refuse
