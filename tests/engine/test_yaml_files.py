"""The YAML a person writes (config.yaml, agent front matter, expectations files, scripted
models) is read strictly and within bounds: a key given twice is an error at its line (YAML
would keep the last without a word), and an alias bomb, a value containing itself or
nesting thousands deep is one line naming the file, in a blink and a few megabytes (issue
25: an alias bomb in config.yaml spun for minutes and took gigabytes)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import pytest

from rienda_kernel.engine import ConfigError
from rienda_kernel.engine.home.agents import load_agent
from rienda_kernel.engine.home.config import read_config
from rienda_kernel.engine.providers.scripted import load_script
from rienda_kernel.engine.testing.expectations import load_expectations

BOMB = "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
                 + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]) + "\n"
SELF = "loop: &loop [1, *loop]\n"
DEEP = "deep: " + "[" * 5000 + "]" * 5000 + "\n"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def config_error(home) -> str:
    with pytest.raises(ConfigError) as caught:
        read_config(home)
    return str(caught.value)


def test_a_key_given_twice_in_config_yaml_is_an_error_at_its_line_at_any_depth(tmp_path):
    path = write(tmp_path / "config.yaml", "max_turns: 5\nconfirm: ask\nmax_turns: 9\n")
    assert config_error(tmp_path) == (f"{path}:3: key 'max_turns' appears twice (first at line 1); YAML would keep "
                                      "only the last: say it once")
    write(path, """\
        providers:
          local:
            api: openai
            base_url: http://127.0.0.1:8080/v1
            base_url: http://127.0.0.1:9090/v1
        """)
    assert config_error(tmp_path).startswith(f"{path}:5: key 'base_url' appears twice (first at line 4)")


def test_merge_keys_still_merge_and_are_not_a_repeated_key(tmp_path):
    write(tmp_path / "config.yaml", """\
        max_turns: 7
        providers:
          base: &base {api: openai, max_tokens: 64}
          local:
            <<: *base
            base_url: http://127.0.0.1:8080/v1
            max_tokens: 32
        """)
    config, _ = read_config(tmp_path)
    assert config["providers"]["local"] == {"api": "openai", "max_tokens": 32, "base_url": "http://127.0.0.1:8080/v1"}


@pytest.mark.parametrize(("text", "problem"), [
    (BOMB, ":6: expands to more than 100000 values (aliases repeating aliases?)"),
    (SELF, ":1: a value that contains itself (an alias to one of its parents)"),
    (DEEP, ": nested more than 200 levels deep"),
    ("x: [" + "[" * 250 + "]" * 250 + "]\n", ":1: nested more than 200 levels deep"),
])
def test_pathological_yaml_is_one_line_naming_the_file(tmp_path, text, problem):
    path = write(tmp_path / "config.yaml", text)
    message = config_error(tmp_path)
    assert message.startswith(f"{path}") and problem in message and "\n" not in message


def test_the_alias_bomb_ends_rienda_at_once_in_bounded_memory(tmp_path):
    """A real `rienda call` (which reads config.yaml, then redacts its secrets for
    ctx.config) under a 2 GiB address-space limit and a deadline: it used to expand the bomb
    in the redaction for minutes."""
    home = tmp_path / "home"
    write(home / "config.yaml", BOMB)

    def bounded():
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024 ** 3, 2 * 1024 ** 3))

    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "call", "read", '{"path": "x"}'], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, preexec_fn=bounded, env={**os.environ, "RIENDA_HOME": str(home)})
    assert done.returncode == 1, done.stderr
    # the path as the reader sees it, relative to the folder rienda started in
    assert done.stderr.strip().startswith("rienda: home/config.yaml:6: expands to more than 100000 values")
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr


def test_an_agent_file_refuses_a_repeated_key_in_its_options_and_a_bomb(tmp_path):
    path = write(tmp_path / "agents" / "a.md", """\
        ---
        model: openai/gpt-4o
        options:
          temperature: 0
          temperature: 1
        ---
        Hi.
        """)
    with pytest.raises(ConfigError, match=r"a\.md:5: key 'temperature' appears twice \(first at line 4\)"):
        load_agent(tmp_path, "a")
    path.write_text("---\nmodel: openai/gpt-4o\n" + BOMB + "---\nHi.\n")
    with pytest.raises(ConfigError, match=r"a\.md:8: expands to more than 100000 values"):
        load_agent(tmp_path, "a")


def test_an_expectations_file_and_a_scripted_model_refuse_a_repeated_key(tmp_path):
    expect = write(tmp_path / "s.expect.yaml", """\
        calls:
          - match: {id: call_1}
            refused: true
            refused: false
        """)
    with pytest.raises(ConfigError, match=r"s\.expect\.yaml:4: key 'refused' appears twice \(first at line 3\)"):
        load_expectations(expect)
    script = write(tmp_path / "script.yaml", """\
        - text: first
          text: second
        """)
    with pytest.raises(ConfigError, match=r"script\.yaml:2: key 'text' appears twice \(first at line 1\)"):
        load_script(script)
    script.write_text(BOMB.replace("a0: ", "- a0: ", 1).replace("\na", "\n  a"))
    with pytest.raises(ConfigError, match=r"script\.yaml:\d+: expands to more than 100000 values"):
        load_script(script)


def test_a_tab_in_yaml_says_to_indent_with_spaces_at_its_line_in_the_cli(tmp_path):
    (tmp_path / "config.yaml").write_text("providers:\n\tlocal: {api: openai}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config.yaml:2: malformed YAML: .*'\\t'.*indents with spaces"):
        read_config(tmp_path)
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(tmp_path), "agents"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "config.yaml:2: malformed YAML" in done.stderr and "YAML indents with spaces" in done.stderr


def test_a_bracket_left_open_is_named_where_it_opened_not_where_the_parser_gave_up(tmp_path):
    """The line a person must fix is where the bracket (or quote) opened; where the parser
    gave up is said after it (issue 40)."""
    (tmp_path / "config.yaml").write_text("max_turns: 3\nproviders: {cloud: {api: openai}\nconfirm: ask\n")
    with pytest.raises(ConfigError) as raised:
        read_config(tmp_path)
    assert str(raised.value) == (f"{tmp_path / 'config.yaml'}:2: malformed YAML: a flow mapping that starts here is "
                                 "not closed (expected ',' or '}', but got '<scalar>' at line 3)")
