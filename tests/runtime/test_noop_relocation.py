"""Control-only NoOps (and Consts behind control inputs) run where they cut messages.

An optimizer's update group (a NoOp) is placed on the worker by
replica_device_setter, between the ApplyX ops on every ps and the global-step
increment on one ps. Left there, each step ends with ps -> worker -> ps -> worker
(the worker wakes only to forward a token). The partitioner runs such a NoOp
beside its consumers, so the other ps tasks' tokens go straight there, and a
NoOp that nothing consumes beside its inputs when they share one task.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.device import device_task
from tensorweave.runtime.partition import partition

pytestmark = pytest.mark.usefixtures("fresh_graph")

PS0, PS1, W = "/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"


def _task_of(parts, name):
    hits = [task for task, p in parts.items()
            if any(op.name == name for op in p.graph.get_operations())]
    assert len(hits) == 1, (name, hits)
    return device_task(hits[0])


def _placed(ops):
    return {id(op): tf.DeviceSpec.from_string(op.device).to_string() + "/device:CPU:0"
            for op in ops}


def test_group_runs_beside_its_consumer_when_inputs_span_tasks():
    with tf.device(PS0):
        a = tf.Variable(1.0, name="a")
    with tf.device(PS1):
        b = tf.Variable(2.0, name="b")
        step = tf.Variable(0, name="step")
    with tf.device(PS0):
        up_a = tf.assign_add(a, 1.0)
    with tf.device(PS1):
        up_b = tf.assign_add(b, 1.0)
    with tf.device(W):
        group = tf.group(up_a, up_b, name="update")
        chained = tf.group(group, name="update_again")   # a chain of NoOps moves whole
        with tf.control_dependencies([chained]):
            one = tf.constant(1, name="one")   # as assign_add(step, 1) makes it
    with tf.device(PS1), tf.control_dependencies([chained]):
        inc = tf.assign_add(step, one)
    ops = tf.get_default_graph().get_operations()
    parts = partition(ops, _placed(ops), [], [inc])
    assert _task_of(parts, "update") == device_task(PS1 + "/replica:0")
    assert _task_of(parts, "update_again") == device_task(PS1 + "/replica:0")
    assert _task_of(parts, "one") == device_task(PS1 + "/replica:0")
    assert sorted(parts) == [device_task(PS0 + "/replica:0"), device_task(PS1 + "/replica:0")]
    ps1_recvs = [op.name for op in parts[device_task(PS1 + "/replica:0")].graph.get_operations()
                 if op.type == "_Recv"]
    assert len(ps1_recvs) == 1, ps1_recvs         # ps0's token, straight from ps0


def test_noop_with_consumers_on_several_tasks_stays():
    with tf.device(PS0):
        a = tf.Variable(1.0, name="a")
        up_a = tf.assign_add(a, 1.0)
    with tf.device(PS1):
        b = tf.Variable(2.0, name="b")
        up_b = tf.assign_add(b, 1.0)
    with tf.device(W):
        group = tf.group(up_a, up_b, name="update")
    with tf.device(PS0), tf.control_dependencies([group]):
        after_a = tf.identity(a.read_value(), name="after_a")
    with tf.device(PS1), tf.control_dependencies([group]):
        after_b = tf.identity(b.read_value(), name="after_b")
    ops = tf.get_default_graph().get_operations()
    parts = partition(ops, _placed(ops), [], [after_a, after_b])
    assert _task_of(parts, "update") == device_task(W + "/replica:0")


def test_target_noop_runs_beside_its_inputs_on_one_task():
    with tf.device(PS0):
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(2.0, name="b")
        ups = [tf.assign_add(a, 1.0), tf.assign_add(b, 1.0)]
    with tf.device(W):
        tf.group(*ups, name="train")
    ops = tf.get_default_graph().get_operations()
    parts = partition(ops, _placed(ops), [], [])
    assert _task_of(parts, "train") == device_task(PS0 + "/replica:0")


@pytest.mark.cluster_shape(ps=2, workers=1)
def test_training_step_on_two_ps_sends_the_worker_no_control_tokens(inprocess_cluster,
                                                                      flushed_messages):
    spec, servers = inprocess_cluster
    pushes = flushed_messages
    setter = tf.train.replica_device_setter(
        ps_tasks=2, worker_device="/job:worker/task:0", cluster=spec)
    with tf.device(setter):
        step = tf.train.get_or_create_global_step()
        w0 = tf.Variable([1.0, 2.0], name="w0")
        w1 = tf.Variable([3.0, 4.0], name="w1")
        x = tf.placeholder(tf.float32, [2])
        loss = tf.reduce_sum(w0 * x) + tf.reduce_sum(w1 * x)
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    assert {w0.device, w1.device} == {"/job:ps/task:0", "/job:ps/task:1"}
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        pushes.clear()
        sess.run(train, {x: np.array([1.0, -1.0], np.float32)})
        got = sess.run([w0, w1, step])
    np.testing.assert_allclose(got[0], [0.5, 2.5])
    np.testing.assert_allclose(got[1], [2.5, 4.5])
    assert got[2] == 1
    to_worker = [names for src, dst, names in pushes if dst.startswith("/job:worker")]
    tokens = [n for names in to_worker for n in names if n.startswith("^")]
    assert tokens == [], pushes          # the update group no longer runs on the worker
    between_ps = [(src, dst) for src, dst, _ in pushes
                  if src.startswith("/job:ps") and dst.startswith("/job:ps")]
    assert len(between_ps) == 1, pushes  # one ps's token goes straight to the other
