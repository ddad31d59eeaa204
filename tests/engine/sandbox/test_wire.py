"""The data channel between the host and a V8 worker: length-prefixed JSON frames over a
real socket pair, several per write, read as they come."""

from __future__ import annotations

import socket
import threading

import pytest

from rienda_kernel.engine.sandbox.wire import Channel, ChannelClosed


@pytest.fixture
def pair():
    left, right = socket.socketpair()
    left.settimeout(10)
    right.settimeout(10)
    yield Channel(left), Channel(right)
    left.close()
    right.close()


def test_messages_written_together_are_read_one_at_a_time_in_order(pair):
    writer, reader = pair
    writer.send_all([["step", 1, 0, {"kind": "object"}], ["done", 1, {}]])
    assert reader.receive() == ["step", 1, 0, {"kind": "object"}]
    assert reader.buffered  # the second came in the same read: no second wait for it
    assert reader.receive() == ["done", 1, {}]
    assert not reader.buffered


def test_a_message_larger_than_one_read_arrives_whole_between_two_others(pair):
    writer, reader = pair
    big = "é" * (3 * 1024 * 1024)  # 6 MiB of UTF-8: many reads, through a full socket buffer
    sender = threading.Thread(target=writer.send_all, args=([["a"], ["big", big], ["b"]],))
    sender.start()
    assert reader.receive() == ["a"]
    assert reader.receive() == ["big", big]
    assert reader.receive() == ["b"]
    sender.join(10)


def test_a_frame_cut_by_the_other_end_closing_is_channel_closed(pair):
    writer, reader = pair
    writer.sock.sendall(b"\x00\x00\x00\x10{\"a\":")  # 16 bytes announced, 5 sent
    writer.sock.close()
    with pytest.raises(ChannelClosed):
        reader.receive()
