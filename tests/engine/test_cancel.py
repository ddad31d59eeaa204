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


def _blocking_threads() -> list:
    import threading

    return [t for t in threading.enumerate() if t.name == "rienda-blocking-call"]


def test_blocking_calls_reuse_their_threads_and_a_stuck_one_is_left_to_its_call(tmp_path):
    """``abandon_on_cancel`` keeps its threads between calls (no thread started per file
    operation), and a thread stuck in a system call an interrupt abandoned never takes
    the next call: that one gets a thread of its own and returns."""
    import os
    import threading

    from rienda_kernel.engine import CancelToken, Interrupted
    from rienda_kernel.engine.cancel import abandon_on_cancel

    token = CancelToken()
    for _ in range(50):
        assert abandon_on_cancel(lambda: 7, token, "a call") == 7
    kept = _blocking_threads()
    assert 1 <= len(kept) <= 2
    for _ in range(50):
        abandon_on_cancel(lambda: None, token, "a call")
    assert {t.ident for t in _blocking_threads()} == {t.ident for t in kept}

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    stuck = CancelToken()
    threading.Timer(0.2, stuck.cancel).start()
    with pytest.raises(Interrupted, match="reading the fifo interrupted"):
        abandon_on_cancel(lambda: fifo.read_bytes(), stuck, "reading the fifo")
    assert abandon_on_cancel(lambda: "next", token, "a call") == "next"  # not queued behind the FIFO
    with open(fifo, "wb"):  # the stuck read ends; its thread goes back to waiting, or ends
        pass
