"""tf.train.Supervisor in the seed-001 style: chief/non-chief on in-process servers,
prepare_or_wait_for_session, managed_session, should_stop, stop and background services."""
from __future__ import annotations

import glob
import os
import threading
import time

import pytest

import tensorweave as tf
from tensorweave.data_flow.data_flow_ops import FIFOQueue
from tensorweave.summary import scalar, summary_iterator
from tensorweave.train.coordinator import Coordinator
from tensorweave.train.device_setter import replica_device_setter
from tensorweave.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from tensorweave.train.checkpoint_management import latest_checkpoint
from tensorweave.train.supervisor import Supervisor


def _model(spec=None, task=0):
    dev = replica_device_setter(cluster=spec, worker_device=f"/job:worker/task:{task}") \
        if spec else None
    with tf.device(dev):
        global_step = tf.train.get_or_create_global_step()
        w = tf.Variable(1.0, name="w")
        loss = tf.square(w)
        train_step = tf.group(tf.assign_sub(w, 0.1 * w), tf.assign_add(global_step, 1))
    return global_step, w, loss, train_step


def test_seed_style_chief_and_worker(inprocess_cluster, tmp_path):
    spec, servers = inprocess_cluster
    worker_log: dict = {}

    def worker():
        with tf.Graph().as_default():
            global_step, w, loss, train_step = _model(spec, 1)
            sv = Supervisor(is_chief=False, logdir=str(tmp_path),
                            init_op=tf.global_variables_initializer(), recovery_wait_secs=1,
                            global_step=global_step)
            t0 = time.monotonic()
            sess = sv.prepare_or_wait_for_session(servers[("worker", 1)].target)
            worker_log["ready_at"] = time.monotonic()
            worker_log["waited"] = worker_log["ready_at"] - t0
            _, step = sess.run([train_step, global_step])
            worker_log["step"] = step
            sv.stop()
    t = threading.Thread(target=worker, daemon=True)
    t.start()
    time.sleep(0.4)
    assert "ready_at" not in worker_log
    with tf.Graph().as_default() as g:
        global_step, w, loss, train_step = _model(spec, 0)
        init_op = tf.global_variables_initializer()
        sv = Supervisor(is_chief=True, logdir=str(tmp_path), init_op=init_op,
                        recovery_wait_secs=1, global_step=global_step)
        assert g.finalized and sv.is_chief and sv.global_step is global_step
        sess = sv.prepare_or_wait_for_session(servers[("worker", 0)].target)
        chief_ready = time.monotonic()
        t.join(10)
        assert not t.is_alive()
        for _ in range(3):
            # The seed starts queue runners with a fresh Coordinator each step.
            coord = Coordinator()
            threads = start_queue_runners(sess=sess, coord=coord)
            sess.run(train_step)
            coord.request_stop()
            coord.join(threads)
        assert sess.run(global_step) == 4  # one worker step + three chief steps
        assert not sv.should_stop()
        sv.request_stop()
        assert sv.should_stop()
        sv.stop()
    assert worker_log["waited"] >= 0.3
    assert worker_log["ready_at"] - chief_ready < 5.0  # a 1 s settle; TF 1.x polled every 30 s
    assert (tmp_path / "graph.pbtxt").exists()
    assert latest_checkpoint(str(tmp_path)) is not None  # the chief's first checkpoint


def test_non_chief_needs_devices_and_times_out(inprocess_cluster):
    spec, servers = inprocess_cluster
    with tf.Graph().as_default():
        tf.Variable(1.0, name="nodevice")
        with pytest.raises(ValueError, match="nodevice"):
            Supervisor(is_chief=False)
    with tf.Graph().as_default():
        _model(spec, 1)
        sv = Supervisor(is_chief=False, recovery_wait_secs=30)
        t0 = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError, match="w"):
            sv.prepare_or_wait_for_session(servers[("worker", 1)].target, max_wait_secs=0.5)
        assert time.monotonic() - t0 < 2.0


def test_managed_session_restores_and_stops(tmp_path):
    with tf.Graph().as_default():
        global_step, w, loss, train_step = _model()
        # No checkpoint thread: its first save would race with the explicit one below.
        sv = Supervisor(logdir=str(tmp_path), save_model_secs=0)
        with sv.managed_session() as sess:
            while not sv.should_stop():
                if sess.run(global_step) >= 3:
                    sv.saver.save(sess, sv.save_path, global_step=global_step)
                    sv.request_stop()
                else:
                    sess.run(train_step)
        assert sv.coord.joined
    with tf.Graph().as_default():
        global_step, w, loss, train_step = _model()
        sv = Supervisor(logdir=str(tmp_path))
        with sv.managed_session() as sess:
            # Restored from the first supervisor's checkpoint, not re-initialized.
            assert sess.run(global_step) == 3
            assert abs(sess.run(w) - 0.9 ** 3) < 1e-6


def test_managed_session_reraises_errors_and_swallows_out_of_range():
    with tf.Graph().as_default():
        _model()
        sv = Supervisor()
        with pytest.raises(ValueError, match="boom"), sv.managed_session():
            raise ValueError("boom")
        assert sv.should_stop()
    with tf.Graph().as_default():
        q = FIFOQueue(2, [tf.float32], shapes=[[]])
        close = q.close()
        item = q.dequeue()
        sv = Supervisor()
        with sv.managed_session() as sess:
            sess.run(close)
            sess.run(item)  # OutOfRangeError: a clean stop
            raise AssertionError("not reached")
        assert sv.should_stop()


def test_background_services_write_checkpoints_and_summaries(tmp_path):
    with tf.Graph().as_default():
        global_step, w, loss, train_step = _model()
        scalar("loss", loss)
        sv = Supervisor(logdir=str(tmp_path), save_model_secs=0.2, save_summaries_secs=0.2)
        sess = sv.prepare_or_wait_for_session("")
        assert latest_checkpoint(str(tmp_path)) is not None or _wait_for_checkpoint(tmp_path)
        for _ in range(5):
            sess.run(train_step)
        time.sleep(0.5)
        sv.stop()
        assert sv.should_stop()
        saved = latest_checkpoint(str(tmp_path))
        assert saved is not None and int(saved.rsplit("-", 1)[1]) == 5
    tags = set()
    for path in glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*")):
        for event in summary_iterator(path):
            tags.update(v.tag for v in event.summary.value)
    assert {"loss", "global_step/sec"} <= tags


def _wait_for_checkpoint(tmp_path, timeout=2.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if latest_checkpoint(str(tmp_path)):
            return True
        time.sleep(0.02)
    return False


def test_queue_runners_and_loop():
    with tf.Graph().as_default():
        q = FIFOQueue(4, [tf.float32], shapes=[[]])
        add_queue_runner(QueueRunner(q, [q.enqueue([tf.constant(2.0)])]))
        item = q.dequeue()
        sv = Supervisor(stop_grace_secs=5)
        ticks = []
        with sv.managed_session() as sess:
            assert [sess.run(item) for _ in range(5)] == [2.0] * 5
            sv.loop(0.01, lambda: ticks.append(1))
            time.sleep(0.1)
        assert len(ticks) >= 2
        n = len(ticks)
        time.sleep(0.05)
        assert len(ticks) == n  # the looper stopped with the supervisor
