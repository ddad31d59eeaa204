"""engine/secrets.py: which names hold secrets, and no secret in any output (session file,
events for --json, the terminal and notebook cells), through real runs, V8 and HTTP."""

from __future__ import annotations

import json
import textwrap

import pytest

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.events import TextDelta
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.secrets import Scrubber, StreamGuard, is_secret_name

from ..helpers.homes import session_lines, write_agent, write_script

KEY = "sk-live-0123456789abcdef"
PASSPHRASE = "correct horse battery staple"  # streamed by the scripted model word by word


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY",
                                  "CLIENT_SECRET", "DB_PASSWORD", "PGPASSWORD", "MYSQL_ROOT_PASSWORD_FILE",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "NPM_AUTH", "apiKey", "accessToken", "api_key",
                                  "DB_PASSPHRASE", "Authorization"])
def test_names_that_hold_secrets(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "max_tokens", "MAX_TOKENS", "api_key_env",
                                  "OPENAI_API_KEY_ENV", "AWS_ACCESS_KEY_ID", "PWD", "OLDPWD", "HOME", "PATH",
                                  "KEYBOARD_LAYOUT", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK", "XAUTHORITY",
                                  "GITHUB_TOKEN_PATH", "monkey", "author"])
def test_names_that_do_not(name):
    assert not is_secret_name(name)


def test_values_too_short_to_be_secrets_are_never_redacted():
    scrubber = Scrubber({"DEBUG_TOKEN": "1", "FLAG_SECRET": "true", "OPENAI_API_KEY": KEY})
    assert scrubber.scrub("1 true " + KEY) == "1 true [redacted]"


def test_the_password_in_a_urls_user_info_is_a_secret_whatever_the_variables_name():
    scrubber = Scrubber({"DATABASE_URL": "postgres://app:s3cret-hunter2@db:5432/sales",
                         "REDIS_URL": "redis://:another-long-one@cache/0", "CACHE_URL": "redis://u:short@cache/0",
                         "HOMEPAGE": "https://example.org/a:b@c"})
    text = "connect postgres://app:s3cret-hunter2@db:5432/sales; redis://:another-long-one@cache/0; short; a:b@c"
    assert scrubber.scrub(text) == ("connect postgres://app:[redacted]@db:5432/sales; redis://:[redacted]@cache/0; "
                                    "short; a:b@c")


def test_a_url_password_in_the_process_environment_is_scrubbed_from_then_on(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://app:s3cret-hunter2@db/sales")
    assert Scrubber().scrub("postgres://app:s3cret-hunter2@db/sales") == "postgres://app:[redacted]@db/sales"


def test_the_environment_is_read_as_it_is_at_each_scrub_set_changed_or_removed(monkeypatch):
    """The scrubber reuses what it found in os.environ while the environment is unchanged;
    any change (a key set, a value replaced, a key removed) is seen at the next scrub."""
    scrubber = Scrubber()
    monkeypatch.delenv("RIENDA_TEST_TOKEN", raising=False)
    assert scrubber.scrub("tok-first-0123456789") == "tok-first-0123456789"
    monkeypatch.setenv("RIENDA_TEST_TOKEN", "tok-first-0123456789")
    assert scrubber.scrub("tok-first-0123456789") == "[redacted]"
    monkeypatch.setenv("RIENDA_TEST_TOKEN", "tok-second-0123456789")
    assert scrubber.scrub("tok-first-0123456789 tok-second-0123456789") == "tok-first-0123456789 [redacted]"
    monkeypatch.delenv("RIENDA_TEST_TOKEN")
    assert scrubber.scrub("tok-second-0123456789") == "tok-second-0123456789"


def test_a_secret_split_across_streamed_pieces_is_held_until_it_is_whole():
    guard = StreamGuard(Scrubber({"DB_PASSPHRASE": PASSPHRASE}))
    shown = [guard.feed(piece) for piece in ("the pass is correct ", "horse ", "battery staple", " ok")]
    assert shown == ["the pass is ", "", "correct horse battery staple", " ok"]
    assert guard.feed("correct") == "" and guard.flush() == "correct"


def test_a_name_like_git_author_name_does_not_make_its_value_a_secret(rig, monkeypatch):
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Jane Smith")
    write_agent(rig.home, "writer", tools=())
    write_script(rig.workdir, [{"text": "Hello Jane Smith."}, {"text": "Still Jane Smith."}])
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    first = engine.conversation("writer")
    result = first.run("I am Jane Smith", NonInteractiveUI())
    first.close()
    texts = [line["text"] for line in session_lines(rig.home, result.session_id) if line["type"] == "message"]
    assert texts == ["I am Jane Smith", "Hello Jane Smith."]
    resumed = engine.conversation(session_id=result.session_id)
    assert [m.text for m in resumed.messages] == ["I am Jane Smith", "Hello Jane Smith."]


def test_ctx_config_redacts_secret_keys_by_the_word_rule_and_keeps_max_tokens(rig):
    (rig.home / "config.yaml").write_text(textwrap.dedent("""\
        providers:
          claude: {api: anthropic, max_tokens: 512, api_key_env: CLAUDE_KEY, api_key: sk-ant-in-the-file}
        """))
    rig.write_tool("cfg", 'module.exports = { description: "c", parameters: { type: "object" },'
                          ' execute: (ctx) => JSON.stringify(ctx.config) };')
    write_agent(rig.home, "writer", tools=("cfg",))
    write_script(rig.workdir, [{"text": "", "tool_calls": [{"name": "cfg", "arguments": {}}]}, {"text": "ok"}])
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("writer").run(
        "go", NonInteractiveUI())
    shown = json.loads(result.tool_calls[0][1].text)
    assert shown["providers"]["claude"] == {"api": "anthropic", "max_tokens": 512, "api_key_env": "CLAUDE_KEY",
                                            "api_key": "[redacted]"}


LEAKY = """module.exports = { description: "Leaks.", parameters: { type: "object" },
  execute(ctx, args) {
    const key = ctx.env.OPENAI_API_KEY;
    ctx.log("log " + key);
    ctx.notify({ title: "notice " + key, body: "body " + key });
    ctx.confirm({ title: "confirm " + key, body: "body " + key });
    ctx.system.exec("echo output $OPENAI_API_KEY; echo errors $DB_PASSPHRASE >&2");
    return "result " + key;
  } };"""


def test_no_event_a_front_end_receives_holds_a_secret(rig, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DB_PASSPHRASE", PASSPHRASE)
    rig.write_tool("leaky", LEAKY)
    write_agent(rig.home, "writer", tools=("leaky",))
    write_script(rig.workdir, [{"text": f"The passphrase is {PASSPHRASE}, the key {KEY}.", "thinking": f"I know {PASSPHRASE}",
                  "tool_calls": [{"name": "leaky", "arguments": {"key": KEY, "headers": {"Authorization": "Bearer x"}}}]},
                 {"text": "done"}])
    ui = NonInteractiveUI(auto_approve=True)
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("writer").run("go", ui)
    assert result.reason == "end_turn"
    shown = "\n".join(json.dumps(event.to_dict()) for event in ui.events)
    assert {"log", "notify", "confirm", "output", "text", "thinking", "message", "tool_call", "tool_result"} <= {
        event.type for event in ui.events}
    for secret in (KEY, "Bearer x", "horse"):  # "horse": no piece of the streamed passphrase either
        assert secret not in shown
    assert "".join(e.text for e in ui.events if isinstance(e, TextDelta)).startswith(
        "The passphrase is [redacted], the key [redacted].")
    assert KEY not in (rig.home / "sessions" / f"{result.session_id}.jsonl").read_text()


def test_an_authorization_header_the_http_tool_sent_is_redacted_where_the_server_echoes_it(rig, http_server):
    token = "Bearer tok-echoed-0123456789"
    write_agent(rig.home, "writer", tools=("http",))
    write_script(rig.workdir, [{"text": "", "tool_calls": [{"name": "http", "arguments": {
        "url": http_server.url("/headers"), "headers": {"Authorization": token}}}]}, {"text": "ok"}])
    ui = NonInteractiveUI()
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("writer").run("go", ui)
    assert http_server.requests[0]["headers"]["Authorization"] == token, "the server got the real header"
    echoed = result.tool_calls[0][1].text
    assert echoed.startswith("HTTP 200") and "tok-echoed-0123456789" in echoed  # what the model reads
    session = (rig.home / "sessions" / f"{result.session_id}.jsonl").read_text()
    shown = json.dumps([event.to_dict() for event in ui.events])
    for output in (session, shown):
        assert "tok-echoed-0123456789" not in output and "[redacted]" in output


def test_a_secret_a_command_prints_in_two_pieces_is_redacted_in_its_output_events(rig, monkeypatch):
    monkeypatch.setenv("SPLIT_SECRET_TOKEN", "part-one-part-two")
    rig.write_tool("split", 'module.exports = { description: "s", parameters: { type: "object" }, execute(ctx) {'
                            ' return ctx.system.exec("printf part-one-; sleep 0.2; printf \'part-two\\\\n\'").stdout; } };')
    write_agent(rig.home, "writer", tools=("split",))
    write_script(rig.workdir, [{"text": "", "tool_calls": [{"name": "split", "arguments": {}}]}, {"text": "ok"}])
    ui = NonInteractiveUI()
    Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("writer").run("go", ui)
    outputs = [event.text for event in ui.events if event.type == "output"]
    assert "".join(outputs) == "[redacted]\n"
