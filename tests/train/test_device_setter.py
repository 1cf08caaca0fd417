"""replica_device_setter placement, exactly as TF 1.x places ops."""
from __future__ import annotations

import pytest

import tensorweave as tf
from tensorweave.contrib import framework as contrib_framework
from tensorweave.contrib import training as contrib_training
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.train.device_setter import (
    STANDARD_PS_OPS, GreedyLoadBalancingStrategy, byte_size_load_fn, replica_device_setter)

pytestmark = pytest.mark.usefixtures("graph")

CLUSTER = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222"]}


def test_round_robin_over_variables_only_and_worker_for_the_rest():
    with tf.device(replica_device_setter(cluster=CLUSTER)):
        v0 = tf.Variable(tf.zeros([2]), name="v0")
        y = v0 * 2.0                       # non-variable ops use no slot
        v1 = tf.Variable(1.0, name="v1")
        v2 = tf.Variable(2.0, name="v2")
    assert [v.device for v in (v0, v1, v2)] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert y.device == "/job:worker"
    # Assign/read follow their variable; the initial value ran on the worker.
    assert v1.initializer.device == v1.value().device == "/job:ps/task:1"
    assert v0.initial_value.device == "/job:worker"


def test_worker_device_merges_under_inner_specs():
    setter = replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")
    with tf.device(setter):
        a = tf.constant(1.0, name="a")
        with tf.device("/cpu:0"):
            b = tf.constant(2.0, name="b")
            v = tf.Variable(3.0, name="v")
        with tf.device("/job:worker/task:0"):
            c = tf.constant(4.0, name="c")
    assert a.device == "/job:worker/task:1"
    assert b.device == "/job:worker/task:1/device:CPU:0"
    assert v.device == "/job:ps/task:0/device:CPU:0"
    assert c.device == "/job:worker/task:0"


def test_outer_scope_fills_fields_the_setter_left_unset():
    with tf.device("/job:worker/replica:0"), tf.device(replica_device_setter(ps_tasks=1)):
        v = tf.Variable(1.0, name="v")
    assert v.device == "/job:ps/replica:0/task:0"


def test_op_pinned_to_another_job_keeps_it_and_uses_no_slot():
    with tf.device(replica_device_setter(ps_tasks=2)):
        v0 = tf.Variable(1.0, name="v0")
        with tf.device("/job:worker/task:3"):
            local = tf.Variable(1.0, name="local")
        with tf.device("/job:ps/task:1"):
            pinned_ps = tf.Variable(1.0, name="pinned_ps")  # same job: consumes a slot
        v1 = tf.Variable(1.0, name="v1")
    assert v0.device == "/job:ps/task:0"
    assert local.device == "/job:worker/task:3"
    assert pinned_ps.device == "/job:ps/task:1"   # the op's own task wins
    assert v1.device == "/job:ps/task:0"          # slot 1 went to pinned_ps


def test_merge_devices_false_leaves_placed_ops_alone():
    with tf.device(replica_device_setter(ps_tasks=2, merge_devices=False)):
        with tf.device("/cpu:0"):
            v = tf.Variable(1.0, name="v")
        w = tf.Variable(1.0, name="w")
    assert v.device == "/device:CPU:0"
    assert w.device == "/job:ps/task:0"


def test_no_ps_tasks_returns_none_which_clears_outer_scopes():
    assert replica_device_setter() is None
    assert replica_device_setter(ps_tasks=0) is None
    assert replica_device_setter(cluster={"worker": ["w0:1"]}) is None
    assert replica_device_setter(cluster=ClusterSpec({"worker": ["w0:1"]})) is None
    with tf.device("/job:worker/task:1"), tf.device(replica_device_setter(ps_tasks=0)):
        c = tf.constant(1.0)
    assert c.device == ""


def test_cluster_gives_ps_tasks_and_custom_ps_job():
    cluster = ClusterSpec({"param": ["p0:1", "p1:1", "p2:1"], "worker": ["w:1"]})
    setter = replica_device_setter(cluster=cluster, ps_device="/job:param",
                                   worker_device="/job:worker/task:0")
    with tf.device(setter):
        vs = [tf.Variable(float(i)) for i in range(4)]
    assert [v.device for v in vs] == ["/job:param/task:0", "/job:param/task:1",
                                      "/job:param/task:2", "/job:param/task:0"]


def test_ps_ops_customization():
    setter = replica_device_setter(ps_tasks=2, ps_ops=["Const"])
    with tf.device(setter):
        c0 = tf.constant(1.0)
        c1 = tf.constant(2.0)
        v = tf.Variable(c0, name="v")        # VariableV2 is no longer a ps op
    assert (c0.device, c1.device) == ("/job:ps/task:0", "/job:ps/task:1")
    assert v.device == "/job:worker"
    assert "VariableV2" in STANDARD_PS_OPS and "VarHandleOp" in STANDARD_PS_OPS


def test_colocate_with_beats_the_setter():
    with tf.device(replica_device_setter(ps_tasks=2)):
        v = tf.Variable(tf.zeros([3]), name="v")
        with tf.colocate_with(v):
            c = tf.identity(v, name="c")
            w = tf.Variable(tf.zeros([3]), name="w")
        u = tf.Variable(1.0, name="u")
    assert c.device == w.device == v.device == "/job:ps/task:0"
    assert u.device == "/job:ps/task:1"  # w used no round-robin slot


def test_byte_size_load_fn():
    v = tf.Variable(tf.zeros([10, 4]), name="v")
    d = tf.Variable(tf.zeros([3], dtype=tf.float64), name="d")
    assert byte_size_load_fn(v.op) == 160
    assert byte_size_load_fn(d.op) == 24
    with pytest.raises(ValueError, match="single output"):
        byte_size_load_fn(tf.no_op())


def test_greedy_spreads_big_variables_better_than_round_robin():
    sizes = [[1000, 100], [10, 10], [20, 10]]   # 400000, 400, 800 bytes

    def place(strategy):
        with tf.Graph().as_default():
            with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
                vs = [tf.Variable(tf.zeros(s)) for s in sizes]
            loads = [0, 0]
            for v in vs:
                loads[int(v.device.split("task:")[1])] += byte_size_load_fn(v.op)
            return [v.device for v in vs], max(loads)

    rr_devices, rr_max = place(None)
    greedy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    g_devices, g_max = place(greedy)
    assert rr_devices == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert g_devices == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1"]
    assert g_max < rr_max and g_max == 400000
    assert greedy.loads == [400000, 1200]


def test_contrib_and_train_aliases():
    assert contrib_training.GreedyLoadBalancingStrategy is GreedyLoadBalancingStrategy
    assert contrib_training.byte_size_load_fn is byte_size_load_fn
    step = contrib_framework.get_or_create_global_step()
    assert step.dtype.base_dtype == tf.int64


def test_bad_arguments_name_the_value():
    with pytest.raises(TypeError, match="ps_strategy"):
        replica_device_setter(ps_tasks=1, ps_strategy=3)
    with pytest.raises(ValueError, match="num_tasks"):
        GreedyLoadBalancingStrategy(0, byte_size_load_fn)
    with pytest.raises(ValueError, match="job:ps/bogus"):
        replica_device_setter(ps_tasks=1, ps_device="/job:ps/bogus")
