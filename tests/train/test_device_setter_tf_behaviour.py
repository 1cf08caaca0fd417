"""What TF 1.x's device_setter_test.py checks, in our own tests.

Cluster of the spec: 2 ps tasks and 3 workers. Variables go round robin over
the ps tasks, their initializers follow them, other ops go to the worker job,
and device scopes inside the setter merge field by field. Not covered:
`testResource` (tensorweave has no ResourceVariable; VarHandleOp is a ps op all
the same, see test_device_setter.py).
"""
from __future__ import annotations

import pytest

import tensorweave as tf
from tensorweave.framework.device import DeviceSpec

pytestmark = pytest.mark.usefixtures("graph")

CLUSTER = tf.train.ClusterSpec({"ps": ["ps0:2222", "ps1:2222"],
                                "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]})
SUN_MOON = tf.train.ClusterSpec({"sun": ["sun0:2222", "sun1:2222", "sun2:2222"],
                                 "moon": ["moon0:2222", "moon1:2222"]})


def same_device(a: str, b: str) -> bool:
    """Device strings are equal as specs ("/cpu:0" == "/device:CPU:0")."""
    return DeviceSpec.from_string(a) == DeviceSpec.from_string(b)


def _two_variables_and_a_sum():
    v = tf.Variable([1, 2])
    w = tf.Variable([2, 1])
    return v, w, v + w


@pytest.mark.parametrize("cluster", [CLUSTER, CLUSTER.as_dict(), CLUSTER.as_cluster_def()],
                         ids=["ClusterSpec", "dict", "ClusterDef"])
def test_two_ps_tasks_from_any_cluster_form(cluster):
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        v, w, a = _two_variables_and_a_sum()
    assert same_device(v.device, "/job:ps/task:0")
    assert same_device(v.initializer.device, "/job:ps/task:0")
    assert same_device(w.device, "/job:ps/task:1")
    assert same_device(w.initializer.device, "/job:ps/task:1")
    assert same_device(a.device, "/job:worker")


def test_cpu_scope_inside_the_setter_is_kept():
    with tf.device(tf.train.replica_device_setter(cluster=CLUSTER)):
        with tf.device("/cpu:0"):
            v = tf.Variable([1, 2])
        w = tf.Variable([2, 1])
        with tf.device("/cpu:0"):
            a = v + w
    assert same_device(v.device, "/job:ps/task:0/cpu:0")
    assert same_device(v.initializer.device, "/job:ps/task:0/cpu:0")
    assert same_device(w.device, "/job:ps/task:1")
    assert same_device(w.initializer.device, "/job:ps/task:1")
    assert same_device(a.device, "/job:worker/cpu:0")


def test_variable_pinned_to_another_job_stays_and_explicit_ps_gets_a_task():
    with tf.device(tf.train.replica_device_setter(cluster=CLUSTER)):
        v = tf.Variable([1, 2])
        with tf.device("/job:moon"):
            w = tf.Variable([2, 1])
            with tf.device("/job:ps"):  # the ps job named explicitly: a task is added
                x = tf.Variable([0, 1])
        a = v + w + x
    assert same_device(v.device, "/job:ps/task:0")
    assert same_device(v.initializer.device, "/job:ps/task:0")
    assert same_device(w.device, "/job:moon")
    assert same_device(w.initializer.device, "/job:moon")
    assert same_device(x.device, "/job:ps/task:1")
    assert same_device(x.initializer.device, "/job:ps/task:1")
    assert same_device(a.device, "/job:worker")


def test_ps_device_without_a_job_is_a_cpu():
    with tf.device(tf.train.replica_device_setter(ps_tasks=1, ps_device="/cpu:0")):
        v = tf.Variable([1, 2])
        with tf.device("/job:moon"):
            w = tf.Variable([2, 1])
        a = v + w
    assert same_device(v.device, "/cpu:0")
    assert same_device(v.initializer.device, "/cpu:0")
    assert same_device(w.device, "/job:moon/cpu:0")
    assert same_device(w.initializer.device, "/job:moon/cpu:0")
    assert same_device(a.device, "/job:worker")


def test_no_merging_leaves_a_job_only_ps_scope_without_task():
    with tf.device(tf.train.replica_device_setter(cluster=CLUSTER, merge_devices=False)):
        v = tf.Variable([1, 2])
        with tf.device("/job:ps"):
            w = tf.Variable([2, 1])
        a = v + w
    assert same_device(v.device, "/job:ps/task:0")
    assert same_device(v.initializer.device, "/job:ps/task:0")
    assert same_device(w.device, "/job:ps")
    assert same_device(w.initializer.device, "/job:ps")
    assert same_device(a.device, "/job:worker")


@pytest.mark.parametrize("ps_device, suffix", [("/job:moon", ""), ("/job:moon/cpu:0", "/cpu:0")])
def test_custom_job_names_and_cpu_constraint(ps_device, suffix):
    setter = tf.train.replica_device_setter(ps_device=ps_device, worker_device="/job:sun",
                                            cluster=SUN_MOON.as_cluster_def())
    with tf.device(setter):
        v, w, a = _two_variables_and_a_sum()
    assert same_device(v.device, "/job:moon/task:0" + suffix)
    assert same_device(v.initializer.device, "/job:moon/task:0" + suffix)
    assert same_device(w.device, "/job:moon/task:1" + suffix)
    assert same_device(w.initializer.device, "/job:moon/task:1" + suffix)
    assert same_device(a.device, "/job:sun")
