"""SyncReplicasOptimizer: aggregation, stale drops, tokens, backups, clean end."""
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.train.sync_replicas_optimizer import SyncReplicasOptimizer

pytestmark = [pytest.mark.usefixtures("fresh_graph"), pytest.mark.cluster_shape(ps=1, workers=3)]


def _replica_graph(spec, task, total, aggregate, lr=1.0):
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(
                cluster=spec, worker_device=f"/job:worker/task:{task}")):
            step = tf.train.get_or_create_global_step()
            w = tf.Variable([0.0], name="w")
            target = tf.placeholder(tf.float32, [1], name="target")
            loss = tf.reduce_sum(tf.square(w - target)) / 2.0  # grad = w - target
            opt = SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(lr),
                                        replicas_to_aggregate=aggregate,
                                        total_num_replicas=total)
            train = opt.minimize(loss, global_step=step)
    return g, opt, train, target, w, step


def _session(spec, g, opt, task, chief):
    hook = opt.make_session_run_hook(chief)
    with g.as_default():
        hook.begin()
        init = tf.global_variables_initializer()
        local = tf.local_variables_initializer()
    sess = tf.Session(f"grpc://{spec['worker'][task]}", graph=g)
    if chief:
        sess.run(init)
    sess.run(local)
    coord = tf.train.Coordinator()
    hook.after_create_session(sess, coord)
    return sess, hook, coord


@pytest.mark.slow
def test_averaged_update_applied_once_per_step(inprocess_cluster):
    spec, _ = inprocess_cluster
    graphs = [_replica_graph(spec, i, total=2, aggregate=2) for i in range(2)]
    s0, h0, c0 = _session(spec, graphs[0][0], graphs[0][1], 0, chief=True)
    s1, h1, c1 = _session(spec, graphs[1][0], graphs[1][1], 1, chief=False)
    results = {}

    def run(i, sess, g):
        results[i] = sess.run(g[2], {g[3]: [2.0 if i == 0 else 4.0]})
    ts = [threading.Thread(target=run, args=(i, s, g)) for i, (s, g) in
          enumerate([(s0, graphs[0]), (s1, graphs[1])])]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    # Both workers took one of the initial tokens, so their runs may return before the
    # chief's queue runner has applied the average: wait (bounded) for global step 1.
    deadline = time.monotonic() + 30
    while s0.run(graphs[0][5]) < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    # grads are (0-2) and (0-4); their average -3 applied once with lr 1 gives w = 3
    np.testing.assert_allclose(s0.run(graphs[0][4]), [3.0])
    assert s0.run(graphs[0][5]) == 1
    h0.end(s0)
    c0.request_stop()
    for s in (s0, s1):
        s.close()


@pytest.mark.slow
def test_backup_worker_keeps_training_when_one_replica_is_absent(inprocess_cluster):
    spec, _ = inprocess_cluster
    graphs = [_replica_graph(spec, i, total=3, aggregate=2) for i in range(2)]
    s0, h0, c0 = _session(spec, graphs[0][0], graphs[0][1], 0, chief=True)
    s1, h1, c1 = _session(spec, graphs[1][0], graphs[1][1], 1, chief=False)
    stop = threading.Event()

    def loop(sess, g, t):
        for _ in range(5):
            sess.run(g[2], {g[3]: [t]})
    ts = [threading.Thread(target=loop, args=(s0, graphs[0], 1.0)),
          threading.Thread(target=loop, args=(s1, graphs[1], 1.0))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert not any(t.is_alive() for t in ts), "training stalled without the third replica"
    assert s0.run(graphs[0][5]) >= 2  # stale (dropped) gradients do not count
    stop.set()
    h0.end(s0)
    c0.request_stop()
    s0.close()
    s1.close()


@pytest.mark.slow
def test_end_of_training_serves_a_training_worker_then_releases_it(inprocess_cluster,
                                                                     monkeypatch):
    """Beyond TF 1.x (where the worker would wait for a token forever): the finished
    chief serves a worker still training for TENSORWEAVE_SYNC_SERVE_SECS, then closes
    the token queue and the worker's next step fails with OutOfRangeError."""
    monkeypatch.setenv("TENSORWEAVE_SYNC_SERVE_SECS", "1.5")
    spec, _ = inprocess_cluster
    graphs = [_replica_graph(spec, i, total=2, aggregate=2) for i in range(2)]
    s0, h0, c0 = _session(spec, graphs[0][0], graphs[0][1], 0, chief=True)
    s1, h1, c1 = _session(spec, graphs[1][0], graphs[1][1], 1, chief=False)
    box = {"steps": 0}

    def lonely():
        try:  # trains until the token queue closes (or blocks waiting for a token)
            for _ in range(100000):
                s1.run(graphs[1][2], {graphs[1][3]: [1.0]})
                box["steps"] += 1
        except BaseException as e:  # noqa: BLE001 - checked below
            box["error"] = e
    t = threading.Thread(target=lonely)
    t.start()
    t.join(1.0)
    assert t.is_alive()
    h0.end(s0)  # the chief finished training; returns once it stops serving
    served = box["steps"]
    t.join(10)
    assert not t.is_alive()
    assert isinstance(box["error"], errors.OutOfRangeError)
    assert served > 0, "the chief's end did not serve the worker still training"
    c0.request_stop()
    s0.close()
    s1.close()


def test_a_worker_a_few_steps_behind_finishes_after_the_chief(inprocess_cluster):
    """The seed-001 race: the chief ends first; the other worker still has steps to do.
    They are served (its departure then lets the chief close the queue), no error."""
    spec, _ = inprocess_cluster
    graphs = [_replica_graph(spec, i, total=2, aggregate=2) for i in range(2)]
    s0, h0, c0 = _session(spec, graphs[0][0], graphs[0][1], 0, chief=True)
    s1, h1, c1 = _session(spec, graphs[1][0], graphs[1][1], 1, chief=False)
    box = {}
    started = threading.Event()

    def behind():
        try:
            s1.run(graphs[1][2], {graphs[1][3]: [1.0]})  # waits for the chief's runner
            started.set()
            for _ in range(20):
                s1.run(graphs[1][2], {graphs[1][3]: [1.0]})
            h1.end(s1)  # this replica departs
        except BaseException as e:  # noqa: BLE001 - checked below
            box["error"] = e
            started.set()
    t = threading.Thread(target=behind)
    t.start()
    s0.run(graphs[0][2], {graphs[0][3]: [1.0]})
    assert started.wait(10)
    h0.end(s0)  # the chief is done while the worker has ~20 steps left
    t.join(20)
    assert not t.is_alive()
    assert "error" not in box, box
    c0.request_stop()
    s0.close()
    s1.close()


def test_apply_gradients_requires_global_step():
    w = tf.Variable(1.0)
    opt = SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
    with pytest.raises(ValueError, match="global_step"):
        opt.apply_gradients([(tf.constant(1.0), w)])


def test_save_while_the_chief_waits_for_a_second_gradient(inprocess_cluster, tmp_path):
    """A worker that stopped between its two gradient pushes leaves the chief's step
    waiting in take_grad for the second. The step must not have updated the first
    variable meanwhile: that update would hold the ps's update gate, and every save
    would fail after its pause timeout."""
    spec, _ = inprocess_cluster
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(
                cluster=spec, worker_device="/job:worker/task:0")):
            step = tf.train.get_or_create_global_step()
            a = tf.Variable([0.0], name="a")
            b = tf.Variable([0.0], name="b")
            x = tf.placeholder(tf.float32, [1])
            loss = tf.reduce_sum(tf.square(a - x) + tf.square(b - x))
            opt = SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                        replicas_to_aggregate=1, total_num_replicas=1)
            train = opt.minimize(loss, global_step=step)
            saver = tf.train.Saver(pause_timeout_s=5.0)
            # a's gradient alone: what a worker that stopped between its pushes leaves
            # (the accumulators are internal; their ops are what a worker's step runs).
            accum_a = opt._accumulators[0][0]
            only_a = accum_a.apply_grad(tf.constant([1.0]), local_step=tf.identity(step))
            accum_b = opt._accumulators[1][0]
            then_b = accum_b.apply_grad(tf.constant([1.0]), local_step=tf.identity(step))
    sess, hook, coord = _session(spec, g, opt, 0, chief=True)
    sess.run(train, {x: [1.0]})
    deadline = time.monotonic() + 30
    while sess.run(step) < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    np.testing.assert_allclose(sess.run([a, b]), [[0.2], [0.2]], rtol=1e-6)
    sess.run(only_a)
    time.sleep(0.5)    # the chief's queue runner takes a's gradient, waits for b's
    np.testing.assert_allclose(sess.run(a), [0.2], rtol=1e-6)   # not applied alone
    started = time.monotonic()
    saver.save(sess, str(tmp_path / "model"))      # DeadlineExceededError before the fix
    assert time.monotonic() - started < 5.0
    sess.run(then_b)
    deadline = time.monotonic() + 30
    while sess.run(step) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    np.testing.assert_allclose(sess.run([a, b]), [[0.1], [0.1]], rtol=1e-6)
    hook.end(sess)
    coord.request_stop()
    sess.close()
