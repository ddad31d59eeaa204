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
