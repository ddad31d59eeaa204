"""The MCP tests read config.yaml files whose env and headers values become secrets of this
process (``secrets.remember``); each test's are forgotten after it, so that they do not
change what the other tests in this process scrub or hold back from a stream."""

from __future__ import annotations

import pytest

from rienda_kernel.engine import secrets


@pytest.fixture(autouse=True)
def forget_remembered_secrets():
    remembered = secrets._Current.remembered  # noqa: SLF001 - the process-wide set, restored as it was
    yield
    secrets._Current.remembered = remembered  # noqa: SLF001
