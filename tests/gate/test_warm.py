"""``rienda gate --warm``: a per-user server per home answers the calls with a warm V8
worker; without one, or with one that fails, the gate decides itself (as closed as ever).
Each test gives the processes a TMPDIR of its own (the sockets' folder) and waits, bounded,
for every server it started to end."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rienda_kernel.engine.gate.server import gate_socket
from rienda_kernel.engine.gate.wire import netstring
from tests.gate.conftest import REWRITTEN_CLAUDE, answer, deny, gate_session_file, sample
from tests.helpers.homes import write_extension


LEAN = [sys.executable, "-c", "import sys; from rienda_kernel.engine.gate.client import gate_main; sys.exit(gate_main())"]


def run(home: Path, env: dict[str, str], *args: str, event=None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), *args]
    return subprocess.run(command, input=json.dumps(event or sample("claude-code")).encode(), capture_output=True,
                          env=env, timeout=60)


def lean(home: Path, env: dict[str, str], *args: str, event=None) -> subprocess.CompletedProcess:
    """``rienda-gate claude-code --home HOME *args`` (the console script's function)."""
    return subprocess.run([*LEAN, "claude-code", "--home", str(home), *args], capture_output=True, env=env,
                          input=json.dumps(event or sample("claude-code")).encode(), timeout=60)


def wait_until(condition, what: str, limit: float = 60) -> None:
    """Poll ``condition`` until true; fail naming ``what`` after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def env(monkeypatch):
    """The environment of the gate processes (and this one's TMPDIR, so that
    :func:`gate_socket` here names the same socket): a temporary folder of the test's own,
    directly under the system's (pytest's own folders grow past the 108 bytes a Unix
    socket's path may hold once a machine has run pytest a few hundred times)."""
    tmp = Path(tempfile.mkdtemp(prefix="gate-"))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", None)
    yield {**{k: v for k, v in os.environ.items() if k not in ("RIENDA_HOME", "RIENDA_CONFIRM")}, "TMPDIR": str(tmp)}
    shutil.rmtree(tmp, ignore_errors=True)


def test_a_server_answers_warm_calls_as_the_gate_would(home, env):
    command = [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate-server", "--idle", "60"]
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=env)
    try:
        wait_until(gate_socket(home.resolve()).exists, "the server's socket")
        refused = run(home, env, "gate", "claude-code", "--warm", event=sample("claude-code", command="rm -rf /"))
        assert answer(refused) == deny("claude-code", "no rm -rf here (claude-code)")
        assert answer(run(home, env, "gate", "claude-code", "--warm")) == REWRITTEN_CLAUDE
        assert answer(lean(home, env)) == REWRITTEN_CLAUDE
    finally:
        server.send_signal(signal.SIGTERM)
        log = server.communicate(timeout=60)[1].decode()
    assert server.returncode == 0
    assert log.splitlines() == ["served claude-code: deny", "served claude-code: allow", "served claude-code: allow"]
    assert not gate_socket(home.resolve()).exists()  # removed on the way out
    sessions = list((home / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1 and sessions[0].read_text().count('"role": "assistant"') == 3


def test_the_first_warm_call_decides_itself_and_starts_the_server_which_ends_when_idle(home, env):
    path = gate_socket(home.resolve())
    assert answer(run(home, env, "gate", "claude-code", "--warm", "2")) == REWRITTEN_CLAUDE
    wait_until(path.exists, "the server it started")
    assert answer(run(home, env, "gate", "claude-code", "--warm", "2")) == REWRITTEN_CLAUDE
    wait_until(lambda: not path.exists(), "the server to end after 2 s without a call")
    log = (home / "sessions").glob("*.jsonl")
    assert [path.read_text().count('"role": "assistant"') for path in log] == [2]


def test_a_server_that_fails_changes_nothing(home, env):
    fake = FakeServer(home, "hangup")  # reads the request and closes without a word
    try:
        refused = run(home, env, "gate", "claude-code", "--warm", "1", event=sample("claude-code", command="rm -rf /"))
        assert answer(refused) == deny("claude-code", "no rm -rf here (claude-code)")
        assert len(fake.held) == 1  # asked once: the client decided itself, and did not ask it again
    finally:
        fake.close()


def test_a_socket_folder_anyone_can_write_is_never_used(home, env):
    path = gate_socket(home.resolve())
    path.parent.mkdir()
    path.parent.chmod(0o777)
    refused = run(home, env, "gate", "claude-code", "--warm", "1", event=sample("claude-code", command="rm -rf /"))
    assert answer(refused) == deny("claude-code", "no rm -rf here (claude-code)")
    assert list(path.parent.iterdir()) == []  # no server started there
    served = run(home, env, "gate-server", "--idle", "1")
    assert served.returncode == 1 and not path.exists()


def test_rienda_gate_decides_itself_without_a_server_starts_one_and_the_server_answers_next(home, env):
    path = gate_socket(home.resolve())
    refused = lean(home, env, "--idle", "2", event=sample("claude-code", command="rm -rf /"))
    assert answer(refused) == deny("claude-code", "no rm -rf here (claude-code)")
    wait_until(path.exists, "the server it started")
    assert answer(lean(home, env, "--idle", "2")) == REWRITTEN_CLAUDE
    wait_until(lambda: not path.exists(), "the server to end after 2 s without a call")
    assert gate_session_file(home, "claude-code", sample("claude-code")["session_id"]).read_text().count(
        '"role": "assistant"') == 2


def test_rienda_gate_hands_words_it_does_not_take_to_the_full_command(home, env):
    done = lean(home, env, "--bogus")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, b"", b"rienda: gate has no option --bogus; rienda gate --help lists its options\n")
    done = lean(home, env, "--timeout", "soon")
    assert done.returncode == 2 and b"--timeout must be a number, got 'soon'" in done.stderr


SPILL = 'module.exports = { beforeToolExecute(ctx) { return { allow: false, reason: "key " + ctx.env.TEAM_API_KEY }; } };'


def test_the_asking_processes_secrets_never_reach_its_output(home, env):
    """The server was started without the asking process's secret: it scrubs with both."""
    write_extension(home, "hooks", "policy", SPILL)
    secret = {**env, "TEAM_API_KEY": "sk-gate-0123456789abcdef"}
    command = [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate-server", "--idle", "60"]
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=env)
    try:
        wait_until(gate_socket(home.resolve()).exists, "the server's socket")
        for done in (run(home, secret, "gate", "claude-code"), lean(home, secret)):
            reason = answer(done)["hookSpecificOutput"]["permissionDecisionReason"]
            assert reason == "key [redacted]" and "sk-gate" not in done.stderr.decode()
    finally:
        server.send_signal(signal.SIGTERM)
        log = server.communicate(timeout=60)[1].decode()
    assert log.splitlines() == ["served claude-code: deny"]  # the second call: the server's
    assert "sk-gate" not in next((home / "sessions").glob("*.jsonl")).read_text()


class FakeServer:
    """A socket at the home's place that accepts and then does ``behaviour`` with each
    connection: ``silent`` (never answers), ``promise`` (says it will answer within half a
    second, then nothing), ``hangup`` (reads the request and closes)."""

    def __init__(self, home: Path, behaviour: str) -> None:
        self.path = gate_socket(home.resolve())
        self.path.parent.mkdir(mode=0o700, exist_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.path))
        self.listener.listen(8)
        self.behaviour = behaviour
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(connection)
            if self.behaviour == "promise":
                connection.sendall(netstring(b"until 0.5"))
            elif self.behaviour == "hangup":
                connection.recv(1 << 20)
                connection.close()

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()
        self.path.unlink(missing_ok=True)


@pytest.mark.parametrize("command", ["lean", "full"])
def test_a_server_that_accepts_and_never_answers_leaves_the_decision_to_the_client_in_time(home, env, command):
    """Before, the client waited its timeout plus 5 s, then asked the same socket again:
    14 s for a 2 s timeout, past which an agent kills its hook and runs the call. Now the
    server must say at once how long it will take; one that does not is left, and the
    client decides itself in the time left (the subprocess bound is far below 14 s)."""
    fake = FakeServer(home, "silent")
    try:
        event = sample("claude-code", command="rm -rf /")
        if command == "lean":
            done = subprocess.run([*LEAN, "claude-code", "--home", str(home), "--timeout", "2"], capture_output=True,
                                  env=env, input=json.dumps(event).encode(), timeout=12)
        else:
            done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate",
                                   "claude-code", "--timeout", "2", "--warm"], capture_output=True, env=env,
                                  input=json.dumps(event).encode(), timeout=12)
        assert answer(done) == deny("claude-code", "no rm -rf here (claude-code)")
        assert len(fake.held) == 1  # asked once, not again by the fallback
    finally:
        fake.close()


def test_a_server_that_does_not_answer_in_the_time_it_gave_is_a_deny(home, env):
    fake = FakeServer(home, "promise")
    try:
        done = lean(home, env, "--timeout", "5")
        assert answer(done) == deny("claude-code", "denied by the Rienda gate: the gate server did not answer within "
                                                   "the 0.5 s it had left")
    finally:
        fake.close()


@pytest.mark.parametrize("value,shown", [("inf", "inf"), ("1e10", "1e+10")])
def test_an_unusable_timeout_with_the_server_up_is_a_deny_not_a_traceback(home, env, value, shown):
    command = [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate-server", "--idle", "60"]
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=env)
    try:
        wait_until(gate_socket(home.resolve()).exists, "the server's socket")
        why = f"denied by the Rienda gate: --timeout must be a positive number of seconds up to 3600, got {shown}"
        for done in (lean(home, env, "--timeout", value), run(home, env, "gate", "claude-code", "--warm",
                                                              "--timeout", value)):
            assert answer(done) == deny("claude-code", why)
            assert done.stderr.decode() == f"rienda gate: {why}\n"
    finally:
        server.send_signal(signal.SIGTERM)
        log = server.communicate(timeout=60)[1].decode()
    assert log.splitlines() == ["served claude-code: deny", "served claude-code: deny"]


def test_an_unusable_idle_is_the_full_commands_to_refuse(home, env):
    for words in (("--idle", "inf"),):
        done = lean(home, env, *words)
        assert done.returncode == 2 and b"must be a positive number of seconds up to a week, got 'inf'" in done.stderr
    done = run(home, env, "gate", "claude-code", "--warm", "nan")
    assert done.returncode == 2 and b"got 'nan'" in done.stderr
