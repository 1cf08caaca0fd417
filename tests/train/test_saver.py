"""tf.train.Saver: round trips, retention, state file, damage, sharding, ps re-layout, gate."""
import contextlib
import os
import threading

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server
from tensorweave.framework import errors
from tensorweave.testing.cluster import InProcessCluster, cluster_dict
from tensorweave.train import checkpoint_management
from tensorweave.state.partitioned_variables import SaveSliceInfo
from tensorweave.train.saver import Saver

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _model():
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    names = tf.Variable(np.array([b"alpha", b"", b"\xffbin"], dtype=object), name="names")
    step = tf.train.get_or_create_global_step()
    return w, names, step


def test_round_trip_float_string_int64(tmp_path):
    w, names, step = _model()
    saver = Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(step, 7))
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        assert path == str(tmp_path / "model.ckpt-7")
        sess.run([tf.assign(w, tf.zeros([2, 3])), tf.assign(step, 0)])
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3))
        assert list(sess.run(names)) == [b"alpha", b"", b"\xffbin"]
        got = sess.run(step)
        assert got == 7 and got.dtype == np.int64


def test_optimizer_slots_are_saved(tmp_path):
    v = tf.Variable([1.0, 2.0], name="v")
    train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(v * v))
    saver = Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        path = saver.save(sess, str(tmp_path / "m"))
    names = dict(tf.train.list_variables(path)) if hasattr(tf.train, "list_variables") \
        else dict(checkpoint_management.list_variables(path))
    assert {"v", "v/Adam", "v/Adam_1"} <= set(names)


def test_max_to_keep_and_state_file(tmp_path):
    _model()
    saver = Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for s in (1, 2, 3):
            saver.save(sess, prefix, global_step=s)
    assert saver.last_checkpoints == [f"{prefix}-2", f"{prefix}-3"]
    assert not os.path.exists(f"{prefix}-1.index")
    assert not any(f.startswith("model.ckpt-1") for f in os.listdir(tmp_path))
    text = (tmp_path / "checkpoint").read_text()
    assert text.startswith(f'model_checkpoint_path: "{prefix}-3"\n')
    assert f'all_model_checkpoint_paths: "{prefix}-2"' in text
    st = checkpoint_management.get_checkpoint_state(str(tmp_path))
    assert st.model_checkpoint_path == f"{prefix}-3"
    assert st.all_model_checkpoint_paths == [f"{prefix}-2", f"{prefix}-3"]
    assert checkpoint_management.latest_checkpoint(str(tmp_path)) == f"{prefix}-3"


def test_relative_paths_and_recover(tmp_path):
    _model()
    saver = Saver(save_relative_paths=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"), global_step=5)
    assert 'model_checkpoint_path: "m-5"' in (tmp_path / "checkpoint").read_text()
    assert checkpoint_management.latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-5")
    other = Saver()
    other.recover_last_checkpoints([str(tmp_path / "m-5"), str(tmp_path / "m-9")])
    assert other.last_checkpoints == [str(tmp_path / "m-5")]


def test_list_and_load_variable(tmp_path):
    _model()
    saver = Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"), global_step=1)
    assert checkpoint_management.list_variables(str(tmp_path)) == [
        ("global_step", []), ("names", [3]), ("w", [2, 3])]
    np.testing.assert_array_equal(checkpoint_management.load_variable(str(tmp_path), "w:0"),
                                  np.arange(6).reshape(2, 3))
    with pytest.raises(errors.NotFoundError, match="nope"):
        checkpoint_management.load_variable(str(tmp_path), "nope")


def test_missing_variable_and_missing_checkpoint(tmp_path):
    _model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        Saver({"w": tf.global_variables()[0]}).save(sess, str(tmp_path / "m"))
        with pytest.raises(errors.NotFoundError, match="names"):
            Saver().restore(sess, str(tmp_path / "m"))
        with pytest.raises(ValueError, match="not a valid checkpoint"):
            Saver().restore(sess, str(tmp_path / "absent"))
    with pytest.raises(ValueError, match="No variables"):
        tf.reset_default_graph()
        Saver()


def _damage(path, how):
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        if how == "flip":
            f.write(data[:10] + bytes([data[10] ^ 0xFF]) + data[11:])
        else:
            f.write(data[: len(data) // 2])


@pytest.mark.parametrize("how", ["flip", "truncate"])
def test_damaged_checkpoint_detected_and_previous_used(tmp_path, how):
    w, _, _ = _model()
    saver = Saver()
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        good = saver.save(sess, prefix, global_step=1)
        sess.run(tf.assign(w, tf.fill([2, 3], 9.0)))
        bad = saver.save(sess, prefix, global_step=2)
        shard = f"{bad}-00000-of-00001"
        _damage(shard, how)
        with pytest.raises(errors.DataLossError, match="model.ckpt-2-00000-of-00001"):
            saver.restore(sess, bad)
        assert checkpoint_management.latest_valid_checkpoint(str(tmp_path)) == good
        assert saver.restore(sess, bad, fallback=True) == good
        np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3))
    with pytest.raises(errors.DataLossError):
        checkpoint_management.load_variable(bad, "w")


def test_unfinished_save_leaves_previous_latest(tmp_path):
    _model()
    saver = Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        good = saver.save(sess, str(tmp_path / "m"), global_step=1)
    # A crash after the shards but before the manifest: no checkpoint "m-2" exists.
    open(tmp_path / "m-2-00000-of-00001", "wb").write(b"partial")
    assert not checkpoint_management.checkpoint_exists(str(tmp_path / "m-2"))
    assert checkpoint_management.latest_checkpoint(str(tmp_path)) == good


def test_partitioned_slices_restore_onto_other_partitioning(tmp_path):
    full = np.arange(12, dtype=np.float32).reshape(4, 3)
    p0 = tf.Variable(full[:3], name="emb/part_0")
    p1 = tf.Variable(full[3:], name="emb/part_1")
    p0._save_slice_info = SaveSliceInfo("emb", [4, 3], [0, 0], [3, 3])
    p1._save_slice_info = SaveSliceInfo("emb", [4, 3], [3, 0], [1, 3])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = Saver([p0, p1]).save(sess, str(tmp_path / "m"))
    assert checkpoint_management.list_variables(path) == [("emb", [4, 3])]
    np.testing.assert_array_equal(checkpoint_management.load_variable(path, "emb"), full)
    tf.reset_default_graph()
    q0 = tf.Variable(tf.zeros([2, 3]), name="emb/part_0")
    q1 = tf.Variable(tf.zeros([2, 3]), name="emb/part_1")
    q0._save_slice_info = SaveSliceInfo("emb", [4, 3], [0, 0], [2, 3])
    q1._save_slice_info = SaveSliceInfo("emb", [4, 3], [2, 0], [2, 3])
    whole = tf.Variable(tf.zeros([4, 3]), name="emb")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        Saver([q0, q1]).restore(sess, path)
        np.testing.assert_array_equal(sess.run(q0), full[:2])
        np.testing.assert_array_equal(sess.run(q1), full[2:])
        Saver([whole]).restore(sess, path)   # unpartitioned now
        np.testing.assert_array_equal(sess.run(whole), full)


# ---- distributed ----------------------------------------------------------------
@contextlib.contextmanager
def _cluster(ps: int):
    with InProcessCluster(ps=ps, workers=1, protocol=None) as cluster:
        yield cluster.servers[("worker", 0)]


def _vars_on(devices):
    out = []
    for i, dev in enumerate(devices):
        with tf.device(dev):
            out.append(tf.Variable(np.full([2], float(i + 1), np.float32), name=f"v{i}"))
    return out


@pytest.mark.transports()
def test_sharded_save_one_shard_per_task_and_restore_onto_more_ps(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with _cluster(ps=1) as worker:
        vs = _vars_on(["/job:ps/task:0", "/job:worker/task:0", "/job:ps/task:0"])
        saver = Saver(sharded=True)
        with tf.Session(worker.target) as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, prefix, global_step=3)
    shards = sorted(f for f in os.listdir(tmp_path) if "-of-" in f)
    assert shards == ["model.ckpt-3-00000-of-00002", "model.ckpt-3-00001-of-00002"]
    tf.reset_default_graph()
    with _cluster(ps=2) as worker:
        vs = _vars_on(["/job:ps/task:1", "/job:ps/task:0", "/job:worker/task:0"])
        saver = Saver(sharded=True)
        with tf.Session(worker.target) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([tf.assign(v, tf.zeros([2])) for v in vs])
            saver.restore(sess, path)
            for i, v in enumerate(vs):
                np.testing.assert_array_equal(sess.run(v), [i + 1.0] * 2)
            path2 = saver.save(sess, prefix, global_step=4)
    assert len([f for f in os.listdir(tmp_path) if f.startswith("model.ckpt-4-")]) == 3
    assert checkpoint_management.load_variable(path2, "v2").tolist() == [3.0, 3.0]


def test_save_during_concurrent_updates_is_consistent(tmp_path):
    a = tf.Variable(0.0, name="a")
    b = tf.Variable(0.0, name="b")
    step = tf.group(tf.assign_add(a, 1.0), tf.assign_add(b, 1.0))
    saver = Saver([a, b], max_to_keep=None)
    stop = threading.Event()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())

        def train():
            while not stop.is_set():
                sess.run(step)
        threads = [threading.Thread(target=train) for _ in range(4)]
        for t in threads:
            t.start()
        paths = []
        try:
            for i in range(30):
                paths.append(saver.save(sess, str(tmp_path / "m"), global_step=i,
                                        write_meta_graph=False))
        finally:
            stop.set()
            for t in threads:
                t.join()
    values = [(checkpoint_management.load_variable(p, "a"),
               checkpoint_management.load_variable(p, "b")) for p in paths]
    assert values[-1][0] > 0
    assert all(x == y for x, y in values), values


def test_gate_pause_blocks_updates_until_resume():
    from tensorweave.runtime.update_gate import UpdateGate
    gate = UpdateGate("task0")
    assert gate.acquire_shared(1)
    with pytest.raises(errors.DeadlineExceededError, match="task0"):
        gate.pause(timeout_s=0.2)       # step 1 still holds it
    gate.release_shared(1)
    owner = gate.pause(timeout_s=1)
    entered = threading.Event()
    t = threading.Thread(target=lambda: (gate.acquire_shared(2), entered.set()))
    t.start()
    assert not entered.wait(0.3)
    gate.resume(owner)
    assert entered.wait(2)
    t.join()


@pytest.mark.transports()
def test_a_failed_save_does_not_leave_its_task_paused(tmp_path):
    # The save step raises after GatePause (here: the path is outside the task's
    # allowed directories)
    # and the caller keeps the exception, and with it the step, alive. The pause must
    # end with the step's part on the task, not when the step is freed: before, the
    # next save or update on that task waited out the pause's 60 s lease.
    from tensorweave.runtime import update_gate
    v = tf.Variable([1.0, 2.0], name="v")
    saver = Saver([v])
    (tmp_path / "allowed").mkdir()
    port = cluster_dict(1, 0)["ps"][0].split(":")[1]
    server = Server({"localhost": [f"localhost:{port}"]}, job_name="localhost", task_index=0,
                    allow_dirs=[str(tmp_path / "allowed")])
    try:
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            with pytest.raises(errors.OpError) as kept:
                saver.save(sess, str(tmp_path / "model"))
            paused = [g.name for g in list(update_gate._GATES.values()) if g.paused]
            assert paused == [], (paused, kept.value)
            sess.run(v.assign_add([1.0, 1.0]))
            path = saver.save(sess, str(tmp_path / "allowed" / "model"))
    finally:
        server.stop()
    assert checkpoint_management.load_variable(path, "v").tolist() == [2.0, 3.0]
