"""The context window against the real thing: llama.cpp's own server (``xllamacpp`` with
SmolLM2, as in ``test_real_model.py``) started with a small window of :data:`N_CTX` tokens.
It reports that window at ``/props``, and refuses a longer request in its own words."""

from __future__ import annotations

import os

import pytest

from rienda_kernel.engine.providers import provider_for
from rienda_kernel.engine.providers.window import Window

from .test_real_model import INSTALL, _missing, started

N_CTX = 512


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The origin of a llama.cpp server whose window is :data:`N_CTX` tokens, for this module."""
    missing = _missing()
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{missing} is not installed: {INSTALL}")
    with started(tmp_path_factory.mktemp("llama-small"), n_ctx=N_CTX) as (origin, _):
        yield origin


@pytest.mark.parametrize("api, suffix", [("openai", "/v1"), ("anthropic", "")])
def test_the_server_reports_its_window_at_props(small, api, suffix):
    provider, model = provider_for("local/smollm2", {"providers": {"local": {"api": api, "base_url": small + suffix}}})
    assert provider.context_window(model, {}) == Window(N_CTX, "server")


def test_a_configured_window_wins_over_the_servers(small):
    provider, model = provider_for("local/smollm2", {"providers": {"local": {
        "api": "openai", "base_url": small + "/v1", "context_window": 256}}})
    assert provider.context_window(model, {}) == Window(256, "config")
