"""``run_interruptibly``: the work runs on a thread while the caller waits for it or a signal;
and the one way a result is handed from one thread to another (``settle``, ``on_thread``,
``wait_for``: a ``concurrent.futures.Future``), with each of its callers' stops and
timeouts."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from rienda_kernel.engine import CancelToken, ConfigError, Interrupted, run_interruptibly
from rienda_kernel.engine.cancel import abandon_on_cancel, on_thread, settle, wait_for


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


# -- a result handed from one thread to another -------------------------------------------------
def raising(error: BaseException):
    def work(*_):
        raise error

    return work


def test_settle_hands_over_what_the_work_returned_or_raised_a_base_exception_too():
    returned, failed, stopped = Future(), Future(), Future()
    error = ConfigError("config.yaml: broken")
    settle(returned, lambda: 42)
    settle(failed, raising(error))
    settle(stopped, raising(KeyboardInterrupt()))
    assert returned.result() == 42
    assert failed.exception() is error
    with pytest.raises(KeyboardInterrupt):
        stopped.result()


def test_settle_runs_nothing_for_a_future_cancelled_before_it_started():
    ran: list[int] = []
    future: Future = Future()
    future.cancel()
    settle(future, lambda: ran.append(1))
    assert ran == [] and future.cancelled()


def test_on_thread_runs_the_work_on_a_thread_of_its_own_and_the_reader_gets_its_error():
    names: list[str] = []
    future = on_thread(lambda: names.append(threading.current_thread().name) or "done", name="rienda-test")
    assert future.result(timeout=30) == "done" and names == ["rienda-test"]
    with pytest.raises(ConfigError, match="broken"):
        on_thread(raising(ConfigError("broken")), name="rienda-test").result(timeout=30)


def test_wait_for_returns_at_the_outcome_a_stop_or_the_timeout_whichever_comes_first():
    release = threading.Event()
    future = on_thread(lambda: "released" if release.wait(60) else "never released", name="rienda-test")
    assert wait_for(future, timeout=0.01) is False  # the timeout: not done, and nothing cancelled
    cancel = CancelToken()
    threading.Thread(target=cancel.cancel).start()
    assert wait_for(future, cancel) is False and not future.cancelled()  # the stop, from another thread
    release.set()
    assert wait_for(future, CancelToken()) is True and future.result() == "released"
    assert wait_for(future, cancel) is True  # done wins over a stop already made


def test_a_blocking_call_raises_what_its_work_raised_and_a_stop_made_before_it_runs_nothing():
    error = ConfigError("unreadable")
    with pytest.raises(ConfigError) as raised:
        abandon_on_cancel(raising(error), CancelToken(), "a call")
    assert raised.value is error
    stopped, ran = CancelToken(), []
    stopped.cancel()
    with pytest.raises(Interrupted, match="stopped"):
        abandon_on_cancel(lambda: ran.append(1), stopped, "a call")
    assert ran == []


def test_a_base_exception_of_the_work_is_raised_on_the_calling_thread():
    with pytest.raises(SystemExit):
        run_interruptibly(raising(SystemExit(3)))


def test_a_gate_decision_is_returned_raised_again_or_given_up_past_its_bound_with_its_hooks_stopped():
    from rienda_kernel.engine.gate.decision import GateTimeout, decide_within

    assert decide_within(lambda cancel: "decided", 30) == "decided"
    error = ConfigError("agent gate: no such file")
    with pytest.raises(ConfigError) as raised:
        decide_within(raising(error), 30)
    assert raised.value is error
    stopped: list[bool] = []

    def slow(cancel):
        stopped.append(cancel.wait(60))
        return "too late"

    with pytest.raises(GateTimeout, match="no decision within 0.05 s"):
        decide_within(slow, 0.05)
    deadline = time.monotonic() + 10  # its grace is a few milliseconds here: a loaded machine may wake it later
    while not stopped and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stopped == [True]  # cancelled at the bound (not woken by its own 60 s wait)
