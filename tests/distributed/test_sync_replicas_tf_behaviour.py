"""TF 1.x's sync_replicas_optimizer_test.py as the specification: workers on a cluster with
two ps tasks (real processes on loopback), each in a MonitoredTrainingSession with the
optimizer's hook; dense and sparse gradients averaged and applied once per global step;
stale gradients dropped; a backup worker; wrong usage refused.

Already covered in tests/distributed/test_sync_replicas.py (not repeated): the average applied once
per step on one ps, progress without the third of three replicas, and apply_gradients
without a global step.

Deliberate difference from TF 1.x: when the chief's training ends normally it closes the
token queue, so a worker still waiting for a token ends with OutOfRangeError (a clean end
of its MonitoredSession) instead of hanging (tested in tests/distributed/test_sync_replicas.py).
"""
from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from suite_markers import SYNC_JOB


@contextlib.contextmanager
def _replicas(n):
    """ps0/ps1 as server processes, the workers as in-process servers; one
    MonitoredTrainingSession per worker (worker 0 is the chief), replicas_to_aggregate=2."""
    spec = cluster_dict(ps=2, workers=n)
    workers = [("worker", i) for i in range(n)]
    with LocalCluster(spec=spec, in_process=tuple(workers)):
        servers = [tf.train.Server(spec, job_name="worker", task_index=i) for i in range(n)]
        sessions, graphs, trains = [], [], []
        try:
            for i in range(n):
                g, train, sess = _replica(servers[i].target, i, n)
                sessions.append(sess)
                graphs.append(g)
                trains.append(train)
            yield sessions, graphs, trains
        finally:
            for sess in reversed(sessions):
                if not sess._is_closed():
                    sess.close()
            for s in servers:
                s.stop()


@pytest.fixture(params=[2, 3], ids=["2workers", "3workers_1backup"])
def replicas(request):
    with _replicas(request.param) as r:
        yield r


def _replica(target, task, n):
    """Worker `task`'s graph: v0 and the int global step on ps0, v1 and a 2x1 variable
    (with a sparse gradient on row 1) on ps1; gradients are constants that depend on the
    task, applied with SGD at rate 2."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            step = tf.Variable(0, name="global_step", trainable=False)
            v0 = tf.Variable(0.0, name="v0")
        with tf.device("/job:ps/task:1"):
            v1 = tf.Variable(1.0, name="v1")
            vs = tf.Variable([[3.0], [4.0]], name="v_sparse")
        with tf.device(f"/job:worker/task:{task}"):
            g0 = tf.constant(0.1 + task * 0.2)
            g1 = tf.constant(0.9 + task * 0.2)
            gs = tf.IndexedSlices(tf.constant([0.1 + task * 0.2], shape=[1, 1]),
                                  tf.constant([1]), tf.constant([2, 1]))
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(2.0),
                                                 replicas_to_aggregate=2, total_num_replicas=n)
            train = [opt.apply_gradients([(g0, v0), (g1, v1), (gs, vs)], global_step=step)]
            hook = opt.make_session_run_hook(task == 0, num_tokens=n)
        sess = tf.train.MonitoredTrainingSession(master=target, is_chief=(task == 0),
                                                 hooks=[hook], max_wait_secs=30)
    return g, train, sess


def _get(sess, graph, name):
    return sess.run(graph.get_tensor_by_name(name + ":0"))


def _wait_for_step(sess, graph, step):
    deadline = time.monotonic() + 15
    while _get(sess, graph, "global_step") != step:
        assert time.monotonic() < deadline, f"global step never reached {step}"
        time.sleep(0.01)


def _run_together(pairs):
    errors_seen = []

    def run(sess, train):
        try:
            sess.run(train)
        except Exception as e:  # noqa: BLE001 - reported below
            errors_seen.append(e)
    threads = [threading.Thread(target=run, args=p, daemon=True) for p in pairs]
    for t in threads:
        t.start()
    return threads, errors_seen


def _join(threads, errors_seen):
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads), "a worker hung waiting for its step"
    assert not errors_seen, errors_seen


@pytest.mark.transports("grpc", why=SYNC_JOB)
def test_sync_training_with_stale_gradients_dropped(replicas):
    sessions, graphs, trains = replicas
    n = len(sessions)
    s0, s1, g1 = sessions[0], sessions[1], graphs[1]
    # The chief initialized everything; every worker's local step starts at 0.
    assert _get(s0, graphs[0], "v0") == 0.0 and _get(s0, graphs[0], "v1") == 1.0
    assert _get(s1, g1, "global_step") == 0
    assert all(_get(s, g, "sync_rep_local_step") == 0 for s, g in zip(sessions, graphs))
    np.testing.assert_allclose(_get(s1, g1, "v_sparse"), [[3.0], [4.0]])

    # Initial tokens (num_tokens = n) let the first two replicas step one after the
    # other; the chief applies their average once (the last of three is not needed).
    first = [0, n - 1]
    for i in first:
        sessions[i].run(trains[i])
    _wait_for_step(s1, g1, 1)
    mean0 = np.mean([0.1 + i * 0.2 for i in first])
    mean1 = np.mean([0.9 + i * 0.2 for i in first])
    np.testing.assert_allclose(_get(s1, g1, "v0"), -2.0 * mean0, rtol=1e-6)
    np.testing.assert_allclose(_get(s1, g1, "v1"), 1.0 - 2.0 * mean1, rtol=1e-6)
    np.testing.assert_allclose(_get(s1, g1, "v_sparse"), [[3.0], [4.0 - 2.0 * mean0]],
                               rtol=1e-6)
    v0_after_1, v1_after_1 = _get(s1, g1, "v0"), _get(s1, g1, "v1")

    if n == 3:  # the backup replica hands in its step-0 gradient late: dropped
        sessions[1].run(trains[1])
    # The initial tokens carried step 0, so the next gradients of every replica are
    # computed at local step 0 < global step 1: stale, dropped, nothing applied.
    for s, t in zip(sessions, trains):
        s.run(t)
    assert _get(s1, g1, "global_step") == 1
    assert all(_get(s, g, "sync_rep_local_step") == 1 for s, g in zip(sessions, graphs))
    assert (_get(s1, g1, "v0"), _get(s1, g1, "v1")) == (v0_after_1, v1_after_1)

    # No spare tokens now: one replica alone waits (the step needs two gradients)...
    threads, errs = _run_together([(s0, trains[0])])
    threads[0].join(0.3)
    assert _get(s1, g1, "global_step") == 1
    # ...and the step completes once a second replica joins in.
    more, errs2 = _run_together([(s1, trains[1])])
    _join(threads + more, errs + errs2)
    assert _get(s1, g1, "global_step") == 2
    np.testing.assert_allclose(_get(s1, g1, "v0"), v0_after_1 - 2.0 * 0.2, rtol=1e-6)
    np.testing.assert_allclose(_get(s1, g1, "v1"), v1_after_1 - 2.0 * 1.0, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=SYNC_JOB)
def test_worker_loop_ends_cleanly_when_the_chief_finishes(monkeypatch):
    """Deliberate difference from TF 1.x (where the worker would wait for a token
    forever): the finished chief serves the worker for TENSORWEAVE_SYNC_SERVE_SECS, then
    closes the token queue; the worker's step fails with OutOfRangeError and its `with`
    block ends like at the end of input."""
    monkeypatch.setenv("TENSORWEAVE_SYNC_SERVE_SECS", "1.5")
    with _replicas(2) as (sessions, _, trains):
        chief, worker = sessions
        outcome = {}

        def worker_loop():
            steps = 0
            try:
                with worker:
                    while not worker.should_stop():
                        worker.run(trains[1])
                        steps += 1
                outcome["steps"] = steps
            except Exception as e:  # noqa: BLE001 - checked below
                outcome["error"] = e
        t = threading.Thread(target=worker_loop, daemon=True)
        t.start()
        with chief:
            for _ in range(3):
                chief.run(trains[0])
        t.join(20)
        assert not t.is_alive(), "the worker kept waiting after the chief finished"
        assert "error" not in outcome, outcome
        assert outcome["steps"] >= 2 and worker._is_closed()


# ---- usage errors (no cluster) ---------------------------------------------------------
def _sync(aggregate=1, total=1, inner=None):
    return tf.train.SyncReplicasOptimizer(inner or tf.train.GradientDescentOptimizer(1.0),
                                          replicas_to_aggregate=aggregate,
                                          total_num_replicas=total)


def test_hook_before_apply_gradients_is_refused_at_begin(graph):
    opt = _sync()
    hook = opt.make_session_run_hook(True)
    with pytest.raises(ValueError, match="apply_gradient should be called"):
        hook.begin()
    for use in (opt.get_chief_queue_runner, opt.get_init_tokens_op):
        with pytest.raises(ValueError, match="apply_gradient should be called"):
            use()


def test_hook_made_before_minimize_works_after_it(graph):
    opt = _sync()
    hook = opt.make_session_run_hook(True)
    v = tf.Variable([0.0])
    opt.minimize(v, global_step=tf.Variable(0, name="global_step", trainable=False))
    hook.begin()


def test_variables_are_the_wrapped_optimizers(graph):
    opt = _sync(inner=tf.train.AdamOptimizer(0.01))
    v = tf.Variable([0.0], name="fetch_variable_test")
    opt.minimize(v, global_step=tf.Variable(0, name="global_step", trainable=False))
    names = {x.op.name for x in opt.variables()}
    assert {"beta1_power", "beta2_power"} <= names


def test_too_few_initial_tokens_for_the_first_step(graph):
    opt = _sync(aggregate=4, total=2)
    v = tf.Variable([0.0])
    opt.minimize(tf.reduce_sum(v), global_step=tf.Variable(0, trainable=False))
    with pytest.raises(ValueError, match="Too few tokens"):
        opt.get_init_tokens_op(1)
    assert opt.get_init_tokens_op(2).type == "QueueEnqueueMany"
