"""What TF's tfconfig_cluster_resolver_test.py checks, in our own tests.

Deliberate differences (named in the tests): `master()` puts "grpc://" in
front of a task's address when neither the call nor TF_CONFIG names an rpc
layer (TF returns the bare "host:port", which is no session target), and
`num_accelerators()` is {} because tensorweave tasks have CPUs only.
"""
import json

import pytest

import tensorweave as tf
from tensorweave.distribute.cluster_resolver import TFConfigClusterResolver

CLUSTER = {"ps": ["ps0:2222", "ps1:2222"],
           "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]}


def _set(monkeypatch, **config):
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))


def test_cluster_spec_read_and_round_trips(monkeypatch):
    _set(monkeypatch, cluster=CLUSTER, task={"type": "ps", "index": 0})
    spec = TFConfigClusterResolver().cluster_spec()
    expected = tf.train.ClusterSpec(CLUSTER).as_cluster_def()
    assert spec.as_cluster_def() == expected
    assert tf.train.ClusterSpec(spec).as_cluster_def() == expected
    assert tf.train.ClusterSpec(spec.as_cluster_def()).as_cluster_def() == expected
    assert tf.train.ClusterSpec(spec.as_dict()).as_cluster_def() == expected


def test_master_is_this_task_bare_without_an_rpc_layer(monkeypatch):
    # As TF: no rpc_layer anywhere, no scheme (the address as the cluster lists it).
    _set(monkeypatch, cluster=CLUSTER, task={"type": "ps", "index": 0})
    r = TFConfigClusterResolver()
    assert r.master() == "ps0:2222"
    assert r.master("worker", 1) == "worker1:2222"
    assert r.master("worker", 1, rpc_layer="grpc") == "grpc://worker1:2222"


def test_session_master_wins(monkeypatch):
    _set(monkeypatch, cluster=CLUSTER, session_master="sessionmaster:2222",
         task={"type": "ps", "index": 0})
    assert TFConfigClusterResolver().master() == "sessionmaster:2222"


def test_rpc_layer_from_tf_config(monkeypatch):
    _set(monkeypatch, cluster=CLUSTER, rpc_layer="grpc", task={"type": "ps", "index": 0})
    r = TFConfigClusterResolver()
    assert r.master() == "grpc://ps0:2222"
    assert (r.task_type, r.task_id, r.rpc_layer) == ("ps", 0, "grpc")


def test_constructor_and_attribute_overrides(monkeypatch):
    _set(monkeypatch, cluster=CLUSTER, rpc_layer="grpc", task={"type": "ps", "index": 1})
    r = TFConfigClusterResolver(task_type="ps", task_id=0)
    assert (r.master(), r.task_type, r.task_id) == ("grpc://ps0:2222", "ps", 0)
    r.task_type, r.task_id, r.rpc_layer = "worker", 1, "test"
    assert r.master() == "test://worker1:2222"
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, "test")


def test_numeric_task_type_is_read_as_text(monkeypatch):
    _set(monkeypatch, cluster={"123456": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222"]},
         rpc_layer="grpc", task={"type": 123456, "index": 0})
    assert TFConfigClusterResolver().task_type == "123456"


def test_string_task_index_is_read_as_int(monkeypatch):
    _set(monkeypatch, cluster=CLUSTER, task={"type": "ps", "index": "1"})
    assert TFConfigClusterResolver().task_id == 1


def test_task_id_override(monkeypatch):
    _set(monkeypatch, cluster={"worker": ["worker0:2222", "worker1:2222"]},
         task={"type": "worker", "index": "0"})
    assert TFConfigClusterResolver(task_id=1).task_id == 1


@pytest.mark.parametrize("config", [{}, {"cluster": {"worker": ["worker0:2222"]}},
                                    {"cluster": {"worker": ["worker0:2222"]},
                                     "task": {"type": "worker", "index": 0}}],
                         ids=["empty", "one-task", "one-task-with-task"])
def test_no_or_one_task_means_a_local_master(monkeypatch, config):
    _set(monkeypatch, **config)
    assert TFConfigClusterResolver().master() == ""


def test_num_accelerators_is_empty_differs_from_tf(monkeypatch):
    # TF counts the GPUs/TPUs the task's session lists; tensorweave tasks have CPUs only.
    _set(monkeypatch, cluster={"worker1": ["w10:2222"], "worker2": ["w21:2222", "w22:2222"]},
         rpc_layer="grpc", task={"type": "worker1", "index": "0"})
    r = TFConfigClusterResolver()
    assert r.num_accelerators() == {}
    assert r.num_accelerators(task_type="worker2", task_id=1) == {}
