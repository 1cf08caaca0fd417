"""A failed save leaves nothing behind (issue 32).

When a write of a save fails (disk full, permission), the save raises, and the
directory is as it was before it: no temporary `.tmp<N>` file, no shard, data file,
index or `.meta` of the failed checkpoint, no TF-format `_temp/` directory, and the
`checkpoint` state file untouched; the previous checkpoint is still the latest and
the next save works. For both checkpoint formats, sharded and not, failing at each
file a save writes: writes are made to fail mid-way (half the bytes written, then
ENOSPC) and, where this test may mount one, on a really full tmpfs.
"""
from __future__ import annotations

import errno
import os
import re
import subprocess

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.base import files
from tensorweave.framework import errors
from tensorweave.framework.checkpoint_files import discard_failed_save, file_ids
from tensorweave.testing.cluster import InProcessCluster
from tensorweave.train import checkpoint_management as cm

pytestmark = pytest.mark.usefixtures("fresh_graph")

FORMATS = [("tensorweave", False), ("tensorweave", True), ("tensorflow", False),
           ("tensorflow", True)]


class _HalfThenFull:
    """A file whose first write puts half its bytes on disk, then fails as a full disk."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        self._f.write(bytes(data)[:max(1, len(data) // 2)])
        self._f.flush()
        raise OSError(errno.ENOSPC, "No space left on device (injected)")

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


class _Injector:
    """`arm(pattern)`: base.files' atomic writes to a file whose name matches `pattern`
    fail mid-way (`failed` lists them) until `disarm()`."""

    def __init__(self) -> None:
        self.pattern: str | None = None
        self.failed: list[str] = []

    def arm(self, pattern: str) -> list[str]:
        self.pattern = pattern
        return self.failed

    def disarm(self) -> None:
        self.pattern = None

    def open(self, path, mode="r", *args, **kwargs):
        f = open(path, mode, *args, **kwargs)
        final = re.sub(r"\.tmp\d+$", "", os.path.basename(path))
        if self.pattern is not None and "w" in mode and re.search(self.pattern, final):
            self.failed.append(path)
            return _HalfThenFull(f)
        return f


@pytest.fixture
def fail_writes(monkeypatch):
    injector = _Injector()
    monkeypatch.setattr(files, "open", injector.open, raising=False)
    return injector


def _model():
    v = tf.Variable(np.arange(1000, dtype=np.float32), name="v")
    step = tf.train.get_or_create_global_step()
    return v, step


def _sharded_model():
    vs = []
    for i in range(2):
        with tf.device(f"/job:ps/task:{i}"):
            vs.append(tf.Variable(np.full(500, float(i), np.float32), name=f"v{i}"))
    with tf.device("/job:ps/task:0"):
        step = tf.train.get_or_create_global_step()
    return vs, step


def _listing(d):
    out = []
    for root, dirs, names in os.walk(d):
        out += [os.path.relpath(os.path.join(root, n), d) for n in dirs + names]
    return sorted(out)


def _session(sharded, stack):
    if not sharded:
        return tf.Session()
    cluster = stack.enter_context(InProcessCluster(ps=2, workers=1, protocol=None))
    return tf.Session(cluster.target("worker", 0))


def _check_failed_save_leaves_nothing(d, fmt, sharded, fail, heal):
    """Saves ckpt-1, fails the save of ckpt-2 with `fail()`, checks nothing is left,
    then, after `heal()`, saves ckpt-2 for real."""
    import contextlib
    with contextlib.ExitStack() as stack:
        _, step = _sharded_model() if sharded else _model()
        saver = tf.train.Saver(checkpoint_format=fmt, sharded=sharded, max_to_keep=2)
        sess = stack.enter_context(_session(sharded, stack))
        sess.run(tf.global_variables_initializer())
        prefix = os.path.join(d, "model.ckpt")
        first = saver.save(sess, prefix, global_step=1)
        state = open(os.path.join(d, "checkpoint"), "rb").read()
        failed = fail()
        listing = _listing(d)
        with pytest.raises((errors.OpError, OSError)):
            saver.save(sess, prefix, global_step=2)
        assert failed, "no write was made to fail: the test checks nothing"
        assert _listing(d) == listing, "the failed save left files behind"
        assert open(os.path.join(d, "checkpoint"), "rb").read() == state
        assert cm.latest_checkpoint(d) == first
        assert saver.last_checkpoints == [first]
        # Writes work again: the next save is whole and becomes the latest.
        heal()
        second = saver.save(sess, prefix, global_step=2)
        assert cm.get_checkpoint_state(d).all_model_checkpoint_paths == [first, second]
        assert not [f for f in _listing(d) if re.search(r"\.tmp\d+$|_temp", f)]
        saver.restore(sess, first)


# Which file of the save of model.ckpt-2 fails, per format and sharding.
DATA = {("tensorweave", False): r"^model\.ckpt-2-00000-of-00001$",
        ("tensorweave", True): r"^model\.ckpt-2-00001-of-00002$",   # shard 0 is written
        ("tensorflow", False): r"^model\.ckpt-2\.data-00000-of-00001$",
        ("tensorflow", True): r"^part-00001-of-00002\.data-00000-of-00001$"}


@pytest.mark.parametrize("fmt,sharded", FORMATS)
@pytest.mark.parametrize("which", ["data", "index", "meta", "state"])
@pytest.mark.transports()
def test_a_save_whose_write_fails_leaves_nothing_behind(tmp_path, fail_writes, fmt, sharded,
                                                        which):
    pattern = {"data": DATA[(fmt, sharded)], "index": r"^model\.ckpt-2\.index$",
               "meta": r"^model\.ckpt-2\.meta$", "state": r"^checkpoint$"}[which]
    _check_failed_save_leaves_nothing(str(tmp_path), fmt, sharded,
                                      lambda: fail_writes.arm(pattern), fail_writes.disarm)


def test_a_failed_save_keeps_an_earlier_checkpoint_s_files_it_did_not_touch(tmp_path):
    prefix = str(tmp_path / "model.ckpt-7")
    for suffix in (".index", "-00000-of-00002", "-00001-of-00002"):
        (tmp_path / f"model.ckpt-7{suffix}").write_bytes(b"old")
    before = file_ids(prefix)
    os.remove(prefix + "-00001-of-00002")
    (tmp_path / "model.ckpt-7-00001-of-00002").write_bytes(b"new")   # replaced by the save
    (tmp_path / "model.ckpt-7.meta.tmp123").write_bytes(b"half")     # a write cut short
    (tmp_path / "model.ckpt-7_temp").mkdir()
    (tmp_path / "model.ckpt-7_temp" / "part-00000-of-00002.index").write_bytes(b"p")
    removed = discard_failed_save(prefix, before)
    assert sorted(os.path.basename(f) for f in removed) == [
        "model.ckpt-7-00001-of-00002", "model.ckpt-7.meta.tmp123",
        "part-00000-of-00002.index"]
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt-7-00000-of-00002", "model.ckpt-7.index"]


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KiB tmpfs mounted at tmp_path/disk (root only), unmounted whatever happens."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield str(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.parametrize("fmt,sharded", FORMATS)
@pytest.mark.transports()
def test_a_save_on_a_full_disk_leaves_nothing_behind(full_disk, fmt, sharded):
    filler = os.path.join(full_disk, "filler")

    def fill():
        # Leave room for ~1/3 of a checkpoint: the next save's data cannot fit.
        st = os.statvfs(full_disk)
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - 2048))
        return [filler]

    _check_failed_save_leaves_nothing(full_disk, fmt, sharded, fill, lambda: os.remove(filler))


@pytest.mark.parametrize("as_text", [False, True])
def test_a_saved_model_whose_write_fails_leaves_no_partial_saved_model_file(
        tmp_path, fail_writes, as_text):
    v = tf.Variable([1.0, 2.0], name="v")
    export_dir = str(tmp_path / "export")
    builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
    with tf.Session() as sess:
        sess.run(v.initializer)
        builder.add_meta_graph_and_variables(sess, ["serve"])
    listing = _listing(export_dir)
    failed = fail_writes.arm(r"^saved_model\.pbt?x?t?$")
    with pytest.raises(OSError, match="No space left"):
        builder.save(as_text=as_text)
    assert failed and _listing(export_dir) == listing
    fail_writes.disarm()
    builder.save(as_text=as_text)
    name = "saved_model.pbtxt" if as_text else "saved_model.pb"
    assert name in os.listdir(export_dir)
