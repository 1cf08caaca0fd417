"""tensorweave.base.files: the one atomic write every checkpoint file goes through."""
from __future__ import annotations

import doctest
import os

import pytest

from tensorweave.base import files as files_module
from tensorweave.base.files import atomic_write
from tensorweave.framework.checkpoint_files import temp_leftovers
from tensorweave.train import checkpoint_management


def _names(d) -> list[str]:
    return sorted(os.listdir(d))


def test_writes_bytes_text_and_chunks_and_returns_the_size(tmp_path):
    p = str(tmp_path / "f")
    assert atomic_write(p, b"abc") == 3 and open(p, "rb").read() == b"abc"
    assert atomic_write(p, "é\n") == 3 and open(p, encoding="utf-8").read() == "é\n"
    assert atomic_write(p, (bytes([i]) * 2 for i in range(3))) == 6
    assert open(p, "rb").read() == b"\0\0\1\1\2\2"
    assert _names(tmp_path) == ["f"]            # no temporary file stays


def test_make_dirs_creates_the_directory(tmp_path):
    p = str(tmp_path / "a" / "b" / "f")
    with pytest.raises(FileNotFoundError):
        atomic_write(p, b"x")
    assert atomic_write(p, b"x", make_dirs=True) == 1
    assert _names(tmp_path / "a" / "b") == ["f"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    p = str(tmp_path / "model.ckpt-1.index")
    atomic_write(p, b"old")

    def chunks():
        yield b"half of the new"
        raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        atomic_write(p, chunks())
    assert open(p, "rb").read() == b"old"
    assert _names(tmp_path) == ["model.ckpt-1.index"]


def test_a_failed_rename_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "is_a_dir"
    target.mkdir()
    (target / "keep").write_text("x")
    with pytest.raises(OSError):
        atomic_write(str(target), b"data")   # cannot replace a non-empty directory
    assert _names(tmp_path) == ["is_a_dir"]


def test_a_killed_write_s_temporary_name_is_what_temp_leftovers_finds(tmp_path, monkeypatch):
    prefix = str(tmp_path / "model.ckpt-7")
    seen = []
    real_replace = os.replace

    def killed(src, dst):       # look at the temporary file as a kill here would leave it
        seen.append(src)
        assert temp_leftovers(prefix) == [src]
        real_replace(src, dst)
    monkeypatch.setattr(files_module.os, "replace", killed)
    atomic_write(prefix + ".index", b"i")
    assert len(seen) == 1 and temp_leftovers(prefix) == []


def test_the_checkpoint_state_file_is_written_atomically(tmp_path, monkeypatch):
    calls = []
    real = checkpoint_management.atomic_write
    monkeypatch.setattr(checkpoint_management, "atomic_write",
                        lambda path, data, **kw: calls.append(path) or real(path, data, **kw))
    checkpoint_management.update_checkpoint_state(str(tmp_path), str(tmp_path / "m.ckpt-3"))
    assert calls == [str(tmp_path / "checkpoint")]
    assert "m.ckpt-3" in (tmp_path / "checkpoint").read_text()
    assert _names(tmp_path) == ["checkpoint"]


def test_doctests(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = doctest.testmod(files_module)
    assert result.attempted > 0 and result.failed == 0
