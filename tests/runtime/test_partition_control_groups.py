"""Ops that wait for the same set of ops on another task share one control token
(runtime/partition.py, _Builder.control_inputs): a SyncReplicasOptimizer step, whose
every aggregated gradient waits for every take_grad, sends one token each way between
two ps tasks instead of one per gradient. Order and values are checked on a cluster."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.device import device_task
from tensorweave.runtime.partition import partition
from tensorweave.runtime.plan import prune

pytestmark = pytest.mark.usefixtures("graph")


def _parts(fetches, targets):
    ops = prune(fetches, targets, [])
    return partition(ops, {id(op): op.device for op in ops}, [], fetches)


def _control_recvs(part):
    return sorted(op.get_attr("tensor_name") for op in part.graph.get_operations()
                  if op.type == "_Recv" and op.get_attr("tensor_name").startswith("^"))


def _program():
    with tf.device("/job:ps/task:0"):
        a, b = tf.Variable(1.0, name="a"), tf.Variable(10.0, name="b")
        inc_a, inc_b = tf.assign_add(a, 1.0), tf.assign_add(b, 1.0)
    with tf.device("/job:worker/task:0"):
        with tf.control_dependencies([inc_a, inc_b]):
            x, y = a.read_value() * 2.0, b.read_value() * 3.0   # the same group twice
        with tf.control_dependencies([inc_a]):
            z = tf.identity(a.read_value(), name="z")            # one op: its own token
    return (a, b), (x, y, z)


def test_the_same_control_group_crosses_once_and_a_different_one_apart():
    _, (x, y, z) = _program()
    parts = _parts([x, y, z], [])
    recvs = _control_recvs(parts["/job:worker/replica:0/task:0"])
    assert len(recvs) == 2, recvs  # {inc_a, inc_b} once (for x and y), {inc_a} for z
    sends = [op for op in parts["/job:ps/replica:0/task:0"].graph.get_operations()
             if op.type == "_Send" and op.get_attr("tensor_name").startswith("^")]
    assert len(sends) == 2


@pytest.mark.cluster_shape(ps=1, workers=1)
def test_ops_sharing_a_token_still_run_after_every_op_of_the_group(inprocess_cluster):
    _, servers = inprocess_cluster
    variables, reads = _program()
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.variables_initializer(list(variables)))
        got = [sess.run(reads) for _ in range(3)]
    # Each step reads after both increments of that step.
    np.testing.assert_allclose(got, [[4.0, 33.0, 2.0], [6.0, 36.0, 3.0], [8.0, 39.0, 4.0]])


def test_sync_replicas_takes_barrier_is_one_token_each_way_between_ps_tasks():
    with tf.device(tf.train.replica_device_setter(
            ps_tasks=2, worker_device="/job:worker/task:0")):
        weights = [tf.Variable(tf.ones([3]), name=f"w{i}") for i in range(6)]
        loss = tf.add_n([tf.reduce_sum(w * w) for w in weights])
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 2)
        opt.minimize(loss, global_step=gs)
    parts = _parts([], opt.get_chief_queue_runner()._enqueue_ops)
    ps = sorted(t for t in parts if "/job:ps" in t)
    assert len(ps) == 2
    for task in ps:
        barrier = [op for op in parts[task].graph.get_operations()
                   if op.type == "_Send" and "sync_replicas" in op.get_attr("tensor_name")]
        # The other ps waits for this one's take_grads: one token, not one per gradient.
        assert [device_task(op.get_attr("recv_device")) for op in barrier] == \
            [p for p in ps if p != task], [op.name for op in barrier]
