"""A constant read on another task is copied into that task's partition instead of
crossing as a _Send/_Recv pair every step (runtime/partition.py, _Builder.const_copy);
a constant with control inputs runs where it is read, after what it waits for.
Values are checked against the same program in one local session."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = [pytest.mark.usefixtures("graph"), pytest.mark.cluster_shape(ps=1, workers=1)]


def _partitions(md):
    out = {}
    for gd in md.partition_graphs:
        for node in gd.node:
            out.setdefault("ps" if "/job:ps" in node.device else "worker", []).append(node)
    return out


def _program(device_fn):
    with tf.device(device_fn):
        v = tf.Variable([1.0, 2.0, 3.0], name="v")
        x = tf.placeholder(tf.float32, [3], name="x")
        loss = tf.reduce_sum(v * x)
        step = tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.01).minimize(loss)
    with tf.device("/job:ps/task:0" if device_fn else None):
        after = v * 2.0  # a worker-side Const read on the ps below
    with tf.device("/job:worker/task:0" if device_fn else None):
        gate = tf.constant(1.0)
        with tf.control_dependencies([step]):
            ordered = tf.constant(5.0, name="after_step")  # has a control input
    with tf.device("/job:ps/task:0" if device_fn else None):
        total = ordered * 2.0
    return v, x, step, after, total, gate


def test_constants_are_copied_to_the_reading_task_with_the_same_results(inprocess_cluster):
    spec, servers = inprocess_cluster
    feed_value = [0.5, -1.0, 2.0]
    v, x, step, after, total, _ = _program(tf.train.replica_device_setter(cluster=spec))
    md = tf.RunMetadata()
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step, {x: feed_value}, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=md)
        got = sess.run([v, after, total], {x: feed_value})
    with tf.Graph().as_default():
        lv, lx, lstep, lafter, ltotal, _ = _program(None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(lstep, {lx: feed_value})
            want = sess.run([lv, lafter, ltotal], {lx: feed_value})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    parts = _partitions(md)
    recv_names = [n.attr["tensor_name"].s.decode() for n in parts["ps"] if n.op == "_Recv"]
    # FTRL's hyperparameters are Consts on the worker: copied, not received.
    assert not any(name.startswith("Ftrl/") for name in recv_names), recv_names
    assert any(n.op == "Const" and n.name.startswith("_const/Ftrl/") for n in parts["ps"])


def test_a_constant_with_control_inputs_runs_beside_its_reader_after_them(inprocess_cluster):
    # `after_step` (a Const behind the optimizer's update group, both placed on the
    # worker) is read only on the ps: both run there (partition._relocate_no_ops), so
    # nothing crosses for them, and the Const still waits for the update.
    spec, servers = inprocess_cluster
    v, x, step, after, total, _ = _program(tf.train.replica_device_setter(cluster=spec))
    md = tf.RunMetadata()
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(total, {x: [1.0, 1.0, 1.0]},
                       options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
        v0 = sess.run(v)[0]
    assert got == 10.0 and v0 != 1.0  # the step ran, and the value is the Const's
    ps = {n.name: n for n in _partitions(md)["ps"]}
    recv_names = [n.attr["tensor_name"].s.decode() for n in ps.values() if n.op == "_Recv"]
    assert "after_step:0" not in recv_names, recv_names
    assert ps["after_step"].op == "Const"
    assert [i for i in ps["after_step"].input if i.startswith("^")] == ["^" + step.name]
    assert any(i.startswith("^") for i in ps[step.name].input)  # the group waits for the apply
