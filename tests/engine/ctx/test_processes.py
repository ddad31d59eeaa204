"""run_command against real /bin/sh subprocesses."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from rienda_kernel.engine.cancel import CancelToken
from rienda_kernel.engine.errors import Interrupted
from rienda_kernel.engine.ctx.processes import CommandResult, run_command

from ...helpers.processes import alive, wait_exit


class Recorder:
    """Collects on_output chunks and signals when ``marker`` has been seen."""

    def __init__(self, marker: str | None = None) -> None:
        self.chunks: list[tuple[str, str]] = []
        self.marker = marker
        self.seen = threading.Event()

    def __call__(self, stream: str, text: str) -> None:
        self.chunks.append((stream, text))
        if self.marker is not None and self.marker in self.text("stdout"):
            self.seen.set()

    def text(self, stream: str) -> str:
        return "".join(text for name, text in self.chunks if name == stream)


class Background:
    """Runs run_command on a thread; keeps the result or the exception."""

    def __init__(self, command: str, **kwargs) -> None:
        self.result: CommandResult | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(command,), kwargs=kwargs, daemon=True)
        self._thread.start()

    def _run(self, command: str, **kwargs) -> None:
        try:
            self.result = run_command(command, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - inspected by the test
            self.error = exc

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float = 10.0) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "run_command did not return"


def test_output_and_exit_code(tmp_path):
    result = run_command("echo out; echo err >&2; exit 3", cwd=tmp_path)
    assert result == CommandResult(code=3, stdout="out\n", stderr="err\n")


def test_runs_in_cwd_with_stdin_from_dev_null(tmp_path):
    (tmp_path / "here.txt").write_text("x")
    result = run_command("ls; cat", cwd=str(tmp_path))
    assert result.stdout == "here.txt\n"
    assert result.code == 0


def test_signal_killed_process_reports_128_plus_signal(tmp_path):
    assert run_command("kill -9 $$", cwd=tmp_path).code == 137
    assert run_command("kill -TERM $$", cwd=tmp_path).code == 143


def test_env_is_added_to_the_inherited_environment(tmp_path):
    result = run_command('printf "%s|%s" "$RIENDA_TEST_VAR" "$PATH"', cwd=tmp_path, env={"RIENDA_TEST_VAR": "añadido"})
    assert result.stdout == f"añadido|{os.environ['PATH']}"


def test_output_streams_live_while_the_process_runs(tmp_path):
    recorder = Recorder(marker="first")
    run = Background(
        "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second >&2; echo third",
        cwd=tmp_path,
        on_output=recorder,
    )
    assert recorder.seen.wait(5), "first line never arrived"
    assert run.running, "first chunk only arrived after the command returned"
    assert recorder.text("stdout") == "first\n"
    (tmp_path / "go").touch()
    run.join()
    assert run.error is None
    assert run.result.stdout == "first\nthird\n"
    assert run.result.stderr == "second\n"
    assert recorder.text("stderr") == "second\n"


def test_chunks_are_delivered_without_waiting_for_a_newline(tmp_path):
    recorder = Recorder(marker="prompt> ")
    run = Background("printf 'prompt> '; while [ ! -e go ]; do sleep 0.02; done", cwd=tmp_path, on_output=recorder)
    assert recorder.seen.wait(5)
    assert run.running
    (tmp_path / "go").touch()
    run.join()
    assert run.result.stdout == "prompt> "


# Writes the first byte of "é" (C3 A9), waits until the reader has taken it out of the pipe
# (FIONREAD on the pipe: no unread bytes), then writes the second: two separate reads.
SPLIT_WRITER = """
import fcntl, os, struct, sys, termios, time
os.write(1, b"\\xc3")
deadline = time.monotonic() + 30
while struct.unpack("i", fcntl.ioctl(1, termios.FIONREAD, b"\\0" * 4))[0]:
    if time.monotonic() > deadline:
        sys.exit("the reader never read the first byte")
    time.sleep(0.001)
os.write(1, b"\\xa9 ok\\n")
"""


def test_multibyte_characters_split_across_reads_decode_cleanly(tmp_path):
    (tmp_path / "writer.py").write_text(SPLIT_WRITER)
    recorder = Recorder()
    result = run_command(f"{sys.executable} writer.py", cwd=tmp_path, on_output=recorder)
    assert (result.code, result.stderr) == (0, "")
    assert result.stdout == "é ok\n"
    assert all("\ufffd" not in text for _, text in recorder.chunks)
    assert recorder.text("stdout") == "é ok\n"


def test_invalid_utf8_is_replaced(tmp_path):
    result = run_command(r"printf 'a\377b'", cwd=tmp_path)
    assert result.stdout == "a\ufffdb"


def test_large_output_is_kept_in_full(tmp_path):
    result = run_command("i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done; head -c 300000 /dev/zero | tr '\\0' x >&2", cwd=tmp_path)
    assert result.stdout.count("\n") == 2000
    assert result.stdout.endswith("line-1999\n")
    assert len(result.stderr) == 300000


def test_timeout_kills_the_whole_process_group(tmp_path):
    recorder = Recorder()
    result = run_command("sleep 100 & echo $!; wait", cwd=tmp_path, timeout_ms=300, on_output=recorder)
    child = int(result.stdout.split()[0])
    assert result.timed_out
    assert result.code == 143
    assert result.stderr.endswith("\n[rienda] command timed out after 300 ms and was killed\n")
    assert "timed out" in recorder.text("stderr")
    assert result.to_js() == {"code": 143, "stdout": result.stdout, "stderr": result.stderr, "timedOut": True}
    assert wait_exit(child, 2.0), f"background child {child} survived the timeout"


def test_timeout_escalates_to_sigkill(tmp_path):
    """A command that ignores SIGTERM is killed with SIGKILL (exit code 137)."""
    run = Background("trap '' TERM; echo trapped; sleep 30", cwd=tmp_path, timeout_ms=100)
    run.join(30)
    assert run.error is None
    assert run.result.timed_out
    assert run.result.stdout == "trapped\n"
    assert run.result.code == 137


def test_background_process_holding_the_output_is_killed_after_the_shell_exits(tmp_path):
    result = run_command("sleep 100 & echo $!", cwd=tmp_path)
    child = int(result.stdout.split()[0])
    assert result.code == 0
    assert not result.timed_out
    assert "background processes kept the command's output open" in result.stderr
    assert wait_exit(child, 2.0)


def test_detached_background_process_is_left_running(tmp_path):
    result = run_command("sleep 30 > /dev/null 2>&1 & echo $!", cwd=tmp_path)
    child = int(result.stdout.split()[0])
    try:
        assert result.stderr == ""
        assert alive(child)
    finally:
        os.kill(child, 9)


def test_cancel_from_another_thread_interrupts_and_kills_the_group(tmp_path):
    """bench/bench_cancel.py measures how soon run_command returns after the cancel."""
    token = CancelToken()
    recorder = Recorder(marker="\n")
    run = Background("sleep 100 & echo $!; wait", cwd=tmp_path, cancel=token, on_output=recorder)
    assert recorder.seen.wait(30)
    child = int(recorder.text("stdout"))
    token.cancel()
    run.join(30)
    assert isinstance(run.error, Interrupted)
    assert wait_exit(child, 2.0)


def test_cancelled_token_prevents_the_start(tmp_path):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Interrupted):
        run_command("touch started", cwd=tmp_path, cancel=token)
    assert not (tmp_path / "started").exists()


def test_callback_failure_kills_the_command_and_propagates(tmp_path):
    pids: list[int] = []

    def explode(stream: str, text: str) -> None:
        pids.append(int(text.split()[0]))
        raise RuntimeError("front end gone")

    with pytest.raises(RuntimeError, match="front end gone"):
        run_command("sleep 100 & echo $!; wait", cwd=tmp_path, on_output=explode)
    assert wait_exit(pids[0], 2.0)


def test_missing_cwd_names_the_directory(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match="nope"):
        run_command("true", cwd=missing)


def test_to_js_without_timeout_has_no_timed_out_key():
    assert CommandResult(code=0, stdout="a", stderr="").to_js() == {"code": 0, "stdout": "a", "stderr": ""}
