"""Who a sync step waits for: accumulators record each gradient's replica (issue 13).

Beyond TF 1.x (whose chief waited silently forever): SyncReplicasOptimizer marks
each worker's apply ops with its task, the accumulators keep the step and time
of each replica's last gradient, and the chief's hook names the replicas missing
from a step that waits too long, then gives up with DeadlineExceededError.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.data_flow.accumulator_ops import REPLICA_ATTR, from_replica
from tensorweave.train.sync_replicas_watch import TIMEOUT_ENV, WARN_ENV, missing_replicas

W0, W1 = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


def test_accumulator_keeps_each_replicas_last_step_and_departure(graph):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="a")
    apply0 = from_replica(acc.apply_grad([1.0, 1.0], local_step=0), W0)
    apply1 = from_replica(acc.apply_grad([3.0, 3.0], local_step=1), W1)
    unnamed = acc.apply_grad([5.0, 5.0], local_step=1)  # TF's own graphs name no replica
    gone = from_replica(acc.replica_departed(), W1)
    names, steps, idle, departed = acc.replica_status()
    with tf.Session() as sess:
        sess.run(apply0)
        sess.run([apply1])
        sess.run(unnamed)
        n, s, t, d = sess.run([names, steps, idle, departed])
        assert list(n) == [b"", W0.encode(), W1.encode()] and list(s) == [1, 0, 1]
        assert all(0 <= x < 60 for x in t) and list(d) == [False, False, False]
        sess.run(gone)
        assert list(sess.run(departed)) == [False, False, True]
        np.testing.assert_allclose(sess.run(acc.take_grad(1)), [3.0, 3.0])  # all 3 counted


def test_stale_gradient_still_shows_its_replica_alive(graph):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[], shared_name="b")
    with tf.Session() as sess:
        sess.run(acc.set_global_step(5))
        sess.run(from_replica(acc.apply_grad(1.0, local_step=3), W1))  # dropped: stale
        assert sess.run(acc.num_accumulated()) == 0
        n, s, _, _ = sess.run(acc.replica_status()[:2] + acc.replica_status()[2:])
        assert list(n) == [W1.encode()] and list(s) == [3]


def test_missing_replicas_are_those_without_a_gradient_for_the_step():
    missing, never = missing_replicas(
        7, [W0.encode(), W1.encode(), b"/job:worker/replica:0/task:2"], [7, 6, 2],
        [0.1, 12.0, 30.0], [False, False, True], total=4)
    assert missing == [f"{W1} (its last was for step 6, 12 s ago)"]  # task 2 departed
    assert never == 1


def test_sync_optimizer_marks_each_workers_apply_ops_with_its_task(graph):
    with tf.device(f"{W1}/device:CPU:0"):
        v = tf.Variable([1.0, 2.0])
        step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
        opt.minimize(tf.reduce_sum(v * v), global_step=step)
    marked = [op for op in graph.get_operations()
              if op.type in ("AccumulatorApplyGradient", "AccumulatorReplicaDeparted")]
    assert len(marked) == 2
    assert all(op._attrs[REPLICA_ATTR] == W1 for op in marked)


@pytest.fixture
def quick_watch(monkeypatch):
    monkeypatch.setenv(WARN_ENV, "0.2")
    monkeypatch.setenv(TIMEOUT_ENV, "1")


def test_chief_names_a_replica_that_never_sent_a_gradient_and_gives_up(graph, quick_watch,
                                                                        caplog):
    # One process, the chief only, of 2 replicas with none to spare and no initial
    # tokens: its first step can never complete. TF 1.x hung here; we stop and say why.
    v = tf.Variable([1.0, 2.0])
    step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                         replicas_to_aggregate=2, total_num_replicas=2)
    train = opt.minimize(tf.reduce_sum(v * v), global_step=step)
    with pytest.raises(tf.errors.DeadlineExceededError,
                       match=r"waiting at global step 0 .* 1 replica that never sent a "
                             r"gradient; it needs 2 of 2 replicas\. Gave up after 1 s"):
        with tf.train.MonitoredTrainingSession(
                is_chief=True, hooks=[opt.make_session_run_hook(True, num_tokens=0)]) as sess:
            sess.run(train)
    assert any("Sync training is waiting at global step 0" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_watch_settings_must_be_seconds(graph, monkeypatch):
    v = tf.Variable(1.0)
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 1)
    opt.minimize(v * v, global_step=tf.train.get_or_create_global_step())
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=rf"{TIMEOUT_ENV}='soon' must be a number"):
        opt.make_session_run_hook(True).begin()


def test_supervisor_chief_names_missing_replicas_while_its_step_waits(graph, quick_watch,
                                                                      caplog, tmp_path):
    # Seed 001's way (Supervisor + the chief queue runner, no hooks): the watch reads
    # the global step and only logs; the program's own loop decides when to stop.
    import threading
    import time
    v = tf.Variable([1.0, 2.0])
    step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                         replicas_to_aggregate=2, total_num_replicas=2)
    train = opt.minimize(tf.reduce_sum(v * v), global_step=step)
    qr = opt.get_chief_queue_runner()
    sv = tf.train.Supervisor(is_chief=True, logdir=str(tmp_path), global_step=step,
                             init_op=tf.global_variables_initializer(),
                             local_init_op=opt.chief_init_op,
                             ready_for_local_init_op=opt.ready_for_local_init_op,
                             save_model_secs=0, save_summaries_secs=0, stop_grace_secs=1)
    sess = sv.prepare_or_wait_for_session("")
    sv.start_queue_runners(sess, [qr])  # no initial tokens: the first step waits
    raised: list[BaseException] = []

    def step_once():
        try:
            sess.run(train)
        except tf.errors.OpError as e:
            raised.append(e)
    t = threading.Thread(target=step_once, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            "Sync training is waiting at global step 0" in r.getMessage()
            for r in caplog.records):
        time.sleep(0.05)
    said = [r.getMessage() for r in caplog.records if "Sync training" in r.getMessage()]
    sv.request_stop()  # the queue runner closes the token queue: the step ends
    t.join(30)
    sv.stop(ignore_live_threads=True)  # the queue runner still waits in take_grad:
    sess.close()                       # closing the session cancels that step
    assert said and "1 replica that never sent a gradient" in said[0], said
    assert "the Supervisor's chief does not give up" in said[0]
    assert not t.is_alive() and isinstance(raised[0], tf.errors.OutOfRangeError), raised
