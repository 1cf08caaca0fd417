"""Issue 33: a ps's mutable tables (MutableHashTable, MutableDenseHashTable) travel in
its replica with its variables, and a ps restarted from the replica serves them again;
state a replica does not carry makes a restarted ps start empty rather than
half-restored."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import replica, replica_store, replica_tables
from tensorweave.framework import dtypes
from tensorweave.ops.lookup.dense_table_ops import DenseHashTableResource
from tensorweave.ops.lookup.mutable_table_ops import MutableHashTableResource
from tensorweave.runtime import update_gate
from tensorweave.runtime.resource_mgr import ResourceMgr
from replication_helpers import DirectHolder, ReplicatingCluster

PS0, W0 = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"


def _table(resources, name, value_shape=(2,)):
    res = MutableHashTableResource(name, dtypes.string, dtypes.float32, value_shape)
    resources.lookup_or_create("", name, lambda: res)
    update_gate.note_variable(res, resources, None, PS0)
    return res


def _insert(res, keys, values):
    with update_gate.gated_update(res):  # as the LookupTableInsert kernel does
        res.insert(np.array(keys, object), np.array(values, np.float32))


def test_a_table_is_sent_whole_when_it_changed_and_loaded_back():
    resources, holder = ResourceMgr(), DirectHolder()
    table = _table(resources, "ids")
    _insert(table, ["a", "b"], [[1, 2], [3, 4]])
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: holder, 0.1)
    assert sender.send_once()
    (entry,) = holder.puts[-1][0].entry
    assert entry.table_key_dtype == "string" and list(entry.table_value_shape) == [2]
    assert sender.send_once() and len(holder.puts) == 1  # unchanged: nothing sent
    _insert(table, ["c"], [[5, 6]])
    assert sender.send_once() and len(holder.puts) == 2
    resp, tensors = holder.store.get(PS0)
    restored = ResourceMgr()
    assert replica_store.load(restored, resp.entry, tensors) == (0, 1, 0)
    got = restored.lookup("", "ids")
    assert type(got) is MutableHashTableResource and got.size() == 3
    np.testing.assert_array_equal(
        got.find(np.array([b"c", b"a", b"z"], object), np.zeros(2, np.float32)),
        [[5, 6], [1, 2], [0, 0]])


def test_a_dense_table_comes_back_with_its_keys_buckets_and_load_factor():
    resources, holder = ResourceMgr(), DirectHolder()
    dense = DenseHashTableResource("dense", dtypes.int64, dtypes.float32, (2,),
                                   np.array([-1, -1]), np.array([-2, -2]), 8, 0.6)
    resources.lookup_or_create("", "dense", lambda: dense)
    update_gate.note_variable(dense, resources, None, PS0)
    with update_gate.gated_update(dense):   # as the LookupTableInsert kernel does
        dense.insert(np.array([[1, 2], [3, 4], [5, 6], [7, 8], [9, 9]]),
                     np.arange(10, dtype=np.float32).reshape(5, 2))   # grows to 16
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: holder, 0.1)
    assert sender.send_once()
    (entry,) = holder.puts[-1][0].entry
    assert entry.dense_table and entry.max_load_factor == pytest.approx(0.6)
    assert not holder.puts[-1][0].uncovered
    resp, tensors = holder.store.get(PS0)
    restored = ResourceMgr()
    assert replica_store.load(restored, resp.entry, tensors) == (0, 1, 0)
    got = restored.lookup("", "dense")
    assert type(got) is DenseHashTableResource and got.size() == 5
    assert len(got.slots) == len(dense.slots) == 16 and got.max_load_factor == 0.6
    np.testing.assert_array_equal(got.empty_key, [-1, -1])
    np.testing.assert_array_equal(
        got.find(np.array([[9, 9], [1, 2], [0, 0]]), np.array([-5.0, -5.0], np.float32)),
        [[8, 9], [0, 1], [-5, -5]])


def test_state_a_replica_does_not_carry_makes_the_restarted_ps_start_empty(monkeypatch):
    class Opaque:   # a resource type with training state replicas do not carry
        type_name = "OpaqueState"

    monkeypatch.setattr(replica_tables, "_UNCOVERED", ("OpaqueState",))
    resources, holder = ResourceMgr(), DirectHolder()
    resources.lookup_or_create("", "opaque", Opaque)
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: holder, 0.1)
    assert sender.send_once()
    assert list(holder.puts[-1][0].uncovered) == ["OpaqueState opaque"]
    restarted = ResourceMgr()
    level, message = replica_store.restore(PS0, restarted, W0, lambda t: holder, 1.0)
    assert level == logging.WARNING and "does not carry OpaqueState opaque" in message
    assert "restores the newest checkpoint" in message
    assert not list(restarted.resources())


@pytest.mark.cluster
@pytest.mark.transports()
@pytest.mark.parametrize("kind", ["MutableHashTable", "MutableDenseHashTable"])
def test_a_ps_started_again_serves_its_table_from_the_replica(tmp_path, monkeypatch, caplog,
                                                              kind):
    with ReplicatingCluster(monkeypatch) as c:
        with tf.device("/job:ps/task:0"):
            step = tf.train.get_or_create_global_step()
            table = tf.contrib.lookup.MutableHashTable(tf.int64, tf.float32, -1.0) \
                if kind == "MutableHashTable" else tf.contrib.lookup.MutableDenseHashTable(
                    tf.int64, tf.float32, -1.0, empty_key=-1, deleted_key=-2,
                    initial_num_buckets=8)
        key = tf.placeholder(tf.int64, [1])
        train = tf.group(tf.assign_add(step, 1), table.insert(key, tf.cast(key, tf.float32)))
        found = table.lookup(tf.constant([0, 24, 99], tf.int64))
        size = table.size()
        with tf.train.MonitoredTrainingSession(master=c.worker.target, is_chief=True,
                                               checkpoint_dir=str(tmp_path),
                                               log_step_count_steps=0) as sess:
            for i in range(25):
                sess.run(train, {key: [i]})
        caplog.set_level(logging.INFO, logger="tensorweave")
        c.restart_ps()
        assert "and 1 tables from its replica on " + W0 in caplog.text
        with tf.train.MonitoredTrainingSession(master=c.worker.target, is_chief=True,
                                               checkpoint_dir=str(tmp_path),
                                               log_step_count_steps=0) as sess:
            assert sess.run(step) == 25
            np.testing.assert_array_equal(sess.run(found), [0.0, 24.0, -1.0])
            assert sess.run(size) == 25

