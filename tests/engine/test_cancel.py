"""``run_interruptibly``: the work runs on a thread while the caller waits for it or a signal."""

from __future__ import annotations

import pytest

from rienda_kernel.engine import ConfigError, run_interruptibly


def test_what_the_work_returns_comes_back_with_no_signal():
    assert run_interruptibly(lambda cancel: 42) == (42, None)


def test_an_exception_of_the_work_is_raised_on_the_calling_thread_not_taken_for_a_stop():
    def work(cancel):
        raise ConfigError("config.yaml: broken")

    with pytest.raises(ConfigError, match="config.yaml: broken"):
        run_interruptibly(work)


def test_a_signal_the_system_hands_to_another_thread_still_stops_the_work(tmp_path):
    """The main thread blocks SIGINT, so the system must deliver it to the work's thread
    (as it may whenever that thread sits in a system call): the wait still wakes."""
    import signal
    import subprocess
    import sys
    import textwrap

    from ..helpers.processes import wait_for_file

    ready = tmp_path / "ready"
    program = textwrap.dedent(f"""\
        import signal, sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).resolve().parents[2])!r})
        from rienda_kernel.engine import run_interruptibly

        def work(cancel):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}})  # only this thread takes it
            open({str(ready)!r}, "w").write("ready\\n")
            cancel.wait()
            return "stopped"

        signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGINT}})
        print(run_interruptibly(work))
        """)
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        wait_for_file(ready)
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate(timeout=30)
    assert out.strip() == f"('stopped', {int(signal.SIGINT)})"
