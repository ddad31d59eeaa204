"""Ports on 127.0.0.1."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (now): for a server to start on, or for a
    connection to be refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
