"""Workspace against real temporary directories."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rienda_kernel.engine.ctx.files import Workspace


@pytest.fixture
def ws(tmp_path) -> Workspace:
    return Workspace(tmp_path)


def test_workdir_is_resolved_and_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w").mkdir()
    assert Workspace("w").workdir == (tmp_path / "w").resolve()


def test_resolve(ws, tmp_path):
    assert ws.resolve("notes.txt") == ws.workdir / "notes.txt"
    assert ws.resolve("sub/../a.txt") == ws.workdir / "sub/../a.txt"
    assert ws.resolve("/etc/hosts") == Path("/etc/hosts")
    assert ws.resolve("~/x") == Path.home() / "x"


def test_resolve_rejects_empty_and_non_strings(ws):
    with pytest.raises(ValueError, match="path must be a non-empty string"):
        ws.resolve("")
    with pytest.raises(TypeError, match="path must be a string, not int"):
        ws.resolve(3)  # type: ignore[arg-type]


def test_write_then_read_round_trips_utf8(ws, tmp_path):
    ws.write("notes.txt", "¡hola, ñandú! 🐎\n")
    assert (tmp_path / "notes.txt").read_bytes() == "¡hola, ñandú! 🐎\n".encode()
    assert ws.read("notes.txt") == "¡hola, ñandú! 🐎\n"


def test_write_creates_parents_and_leaves_no_temporary_files(ws, tmp_path):
    ws.write("a/b/c.txt", "one")
    ws.write("a/b/c.txt", "two")
    assert ws.read("a/b/c.txt") == "two"
    assert os.listdir(tmp_path / "a/b") == ["c.txt"]


def test_write_absolute_path(ws, tmp_path):
    target = tmp_path / "elsewhere" / "abs.txt"
    ws.write(str(target), "x")
    assert target.read_text() == "x"


def test_overwrite_keeps_permissions(ws, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    ws.write("run.sh", "new")
    assert script.read_text() == "new"
    assert script.stat().st_mode & 0o777 == 0o750


def test_write_through_a_symlink_updates_the_target(ws, tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    (tmp_path / "link.txt").symlink_to(real)
    ws.write("link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink()
    assert real.read_text() == "new"


def test_read_replaces_invalid_utf8(ws, tmp_path):
    (tmp_path / "bin.dat").write_bytes(b"a\xffb")
    assert ws.read("bin.dat") == "a\ufffdb"


def test_missing_file_names_the_path_once_as_it_resolved(ws, tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        ws.read("notes.txt")
    assert str(caught.value) == f"no such file: {tmp_path / 'notes.txt'}"
    assert caught.value.errno == 2


def test_reading_a_directory(ws, tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError, match=re.escape(f"is a directory: {tmp_path / 'd'}")):
        ws.read("d")


def test_file_used_as_a_directory(ws, tmp_path):
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(NotADirectoryError, match=re.escape(f"not a directory: {tmp_path / 'f.txt' / 'inner'}")):
        ws.read("f.txt/inner")
    with pytest.raises(NotADirectoryError, match=re.escape(f"not a directory: {tmp_path / 'f.txt' / 'new.txt'}")):
        ws.write("f.txt/new.txt", "x")


def test_writing_over_a_directory(ws, tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError, match=re.escape(f"is a directory: {tmp_path / 'd'}")):
        ws.write("d", "x")


WORKSPACE_ERROR = """
import json, sys
from rienda_kernel.engine.ctx.files import Workspace
try:
    getattr(Workspace("."), sys.argv[1])(*sys.argv[2:])
    print(json.dumps(None))
except OSError as exc:
    print(json.dumps([type(exc).__name__, exc.errno, str(exc)]))
"""


def workspace_error(unprivileged, *call: str):
    """What ``Workspace(<the user's directory>).<call>`` raised, run as the unprivileged user."""
    return unprivileged.run(f"import sys; sys.argv[1:] = {list(call)!r}\n" + WORKSPACE_ERROR)


def test_permission_denied_on_read_names_the_file(unprivileged):
    secret = unprivileged.directory / "secret.txt"
    secret.write_text("x")
    secret.chmod(0)
    assert workspace_error(unprivileged, "read", "secret.txt") == [
        "PermissionError", 13, f"permission denied: {secret}"]


def test_permission_denied_on_write_names_the_file_and_changes_nothing(unprivileged):
    locked = unprivileged.directory / "locked"
    locked.mkdir()
    (locked / "kept.txt").write_text("old")
    locked.chmod(0o555)
    try:
        assert workspace_error(unprivileged, "write", "locked/kept.txt", "new") == [
            "PermissionError", 13, f"permission denied: {locked / 'kept.txt'}"]
    finally:
        locked.chmod(0o755)
    assert os.listdir(locked) == ["kept.txt"] and (locked / "kept.txt").read_text() == "old"


def test_write_rejects_non_string_text(ws):
    with pytest.raises(TypeError, match="text must be a string, not bytes"):
        ws.write("a.txt", b"x")  # type: ignore[arg-type]


def test_exists(ws, tmp_path):
    (tmp_path / "here.txt").write_text("x")
    assert ws.exists("here.txt")
    assert ws.exists(".")
    assert not ws.exists("gone.txt")


def test_list_sorts_and_marks_directories(ws, tmp_path):
    (tmp_path / "b.txt").write_text("")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "inner.txt").write_text("")
    (tmp_path / "c").mkdir()
    assert ws.list() == ["a/", "b.txt", "c/"]
    assert ws.list("a") == ["inner.txt"]


def test_list_errors(ws, tmp_path):
    (tmp_path / "f.txt").write_text("")
    with pytest.raises(FileNotFoundError, match=re.escape(f"no such directory: {tmp_path / 'src'}")):
        ws.list("src")
    with pytest.raises(NotADirectoryError, match=re.escape(f"not a directory: {tmp_path / 'f.txt'}")):
        ws.list("f.txt")
