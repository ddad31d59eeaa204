"""Paths in a cell are written for the notebook's reader: relative to the notebook's folder
(the kernel's), so a saved notebook shows ``quickstart/home``, not the absolute path of the
machine that ran it; and under ``~/`` when they are in the home directory."""

from __future__ import annotations

import json


def test_a_home_beside_the_notebook_is_shown_relative_to_it(frontend_factory, home):
    _, work = home
    fe = frontend_factory()
    reply, messages = fe.run("%rienda home beside/home")
    assert reply["status"] == "ok", reply
    shown = json.dumps([m["content"] for m in messages], default=str)
    assert "Using RIENDA_HOME beside/home (a new session starts at the next prompt)." in shown
    assert str(work) not in shown
    reply, messages = fe.run("%rienda agents")
    shown = json.dumps([m["content"] for m in messages], default=str)
    assert "in beside/home/agents" in shown and str(work) not in shown
