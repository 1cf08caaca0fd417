"""Issue 33: a ps's state lives on another task, and a restarted ps carries on from it.

Where the replica lives, what travels (whole variables, then changed rows), what the
holder refuses, and a ps server started again on its address in this process: the
model is there, the chief's new session restores no checkpoint over it, the global step
goes on. The kill -9 cases on task processes are in test_ps_replication_faults.py.
"""
from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.base import knobs
from tensorweave.distributed import replica, replica_store
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.server import Server
from tensorweave.framework import errors
from tensorweave.runtime import update_gate
from tensorweave.runtime.resource_mgr import ResourceMgr, VariableResource
from tensorweave.testing.cluster import cluster_dict
from replication_helpers import DirectHolder, ReplicatingCluster

PS0, PS1 = "/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"
W0 = "/job:worker/replica:0/task:0"


def _spec(**jobs):
    return tf.train.ClusterSpec({job: list(addrs) for job, addrs in jobs.items()})


def test_the_holder_is_a_standby_then_the_ps_before_then_the_chief():
    assert replica.holder_of(_spec(ps=["h1:1"], worker=["h2:1", "h3:1"]), PS0) == W0
    assert replica.holder_of(_spec(ps=["h1:1"], chief=["h2:1"], worker=["h3:1"]), PS0) \
        == "/job:chief/replica:0/task:0"
    two = _spec(ps=["h1:1", "h2:1"], worker=["h3:1"])
    assert replica.holder_of(two, PS1) == PS0  # ps i backs up ps i + 1
    assert replica.holder_of(two, PS0) == PS1
    standby = _spec(ps=["h1:1", "h2:1"], ps_standby=["h4:1", "h5:1"], worker=["h3:1"])
    assert replica.holder_of(standby, PS1) == "/job:ps_standby/replica:0/task:1"
    assert replica.holder_of(_spec(ps=["h1:1"]), PS0) is None  # nobody else


def test_the_holder_is_on_another_host_when_the_cluster_has_one():
    # ps 0 and ps 1 share host a; the chief is on b: ps 1's replica goes to the chief
    spec = _spec(ps=["a:1", "a:2"], worker=["b:1"])
    assert replica.holder_of(spec, PS1) == W0
    # all on one host: the first choice stands
    assert replica.holder_of(_spec(ps=["localhost:1", "127.0.0.1:2"], worker=["localhost:3"]),
                             PS1) == PS0


def _variable(resources, name, value):
    res = VariableResource(name, tf.float32, tf.TensorShape(np.shape(value)))
    res.value = np.array(value, np.float32)
    resources.lookup_or_create("", name, lambda: res)
    update_gate.note_variable(res, resources, None, PS0)
    return res


def _update(res, change):
    """`change(value)` as an update kernel makes it: holding the task's update gate (a
    copy is only taken after some step updated a variable)."""
    with update_gate.gated_update(res):
        change(res.value)


def test_first_put_is_whole_then_only_what_changed_then_changed_rows():
    resources, store = ResourceMgr(), replica_store.ReplicaStore()
    peer = DirectHolder(store)
    emb = _variable(resources, "emb", np.zeros((100, 4)))
    bias = _variable(resources, "bias", np.zeros(4))
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: peer, 0.1)
    assert sender.lag_secs() == -1.0
    assert sender.send_once()
    req, tensors = peer.puts[-1]
    assert req.full and {e.name for e in req.entry} == {"emb", "bias"}
    assert sender.send_once() and len(peer.puts) == 1  # nothing changed: no put
    _update(emb, lambda v: v.__setitem__([3, 50], v[[3, 50]] + 1.0))
    assert sender.send_once()
    req, tensors = peer.puts[-1]
    assert not req.full and [(e.name, e.rows) for e in req.entry] == [("emb", True)]
    np.testing.assert_array_equal(tensors[0], [3, 50])  # only those rows travel
    _update(bias, lambda v: v.__iadd__(2.0))
    resources.delete("", "emb")
    assert sender.send_once()
    req, _ = peer.puts[-1]
    assert [(e.name, e.rows) for e in req.entry] == [("bias", False)]
    assert list(req.removed) == ["/emb"]
    resp, values = store.get(PS0)
    assert resp.found and resp.seq == 3 and [e.name for e in resp.entry] == ["bias"]
    np.testing.assert_array_equal(values[0], [2.0] * 4)
    assert 0 <= sender.lag_secs() < 5


def test_the_holder_applies_rows_and_gives_back_whole_values():
    resources, store = ResourceMgr(), replica_store.ReplicaStore()
    peer = DirectHolder(store)
    emb = _variable(resources, "emb", np.zeros((80, 2)))
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: peer, 0.1)
    sender.send_once()
    _update(emb, lambda v: v.__setitem__(5, [1.0, 2.0]))
    sender.send_once()
    resp, values = store.get(PS0)
    assert not resp.entry[0].rows
    np.testing.assert_array_equal(values[0], emb.value)
    restored = ResourceMgr()
    assert replica_store.load(restored, resp.entry, values) == (1, 0, 0)
    got = restored.lookup("", "emb")
    np.testing.assert_array_equal(got.value, emb.value)
    assert got.dtype == tf.float32 and got.shape.as_list() == [80, 2]


def test_a_delta_the_holder_cannot_apply_is_refused_and_the_next_put_is_whole():
    resources, store = ResourceMgr(), replica_store.ReplicaStore()
    peer = DirectHolder(store)
    v = _variable(resources, "v", np.zeros(3))
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: peer, 0.1)
    sender.send_once()
    store._replicas.clear()  # the holder restarted: it holds nothing now
    _update(v, lambda x: x.__iadd__(1.0))
    with pytest.raises(errors.FailedPreconditionError, match="holds no replica"):
        store.put(pb.ReplicaPutRequest(task=PS0, incarnation=7, seq=2), [])
    assert not sender.send_once()  # refused the same way
    assert sender.send_once() and peer.puts[-1][0].full
    np.testing.assert_array_equal(store.get(PS0)[1][0], [1.0] * 3)


def test_a_replica_never_overwrites_a_live_variable():
    resources = ResourceMgr()
    live = _variable(resources, "v", [5.0])
    entry = pb.ReplicaEntry(container="", name="v", dtype="float32", shape=[1],
                            shape_known=True)
    assert replica_store.load(resources, [entry], [np.array([1.0], np.float32)]) == (0, 0, 0)
    assert resources.lookup("", "v") is live and live.value[0] == 5.0


def _model(spec):
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        step = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", [3], initializer=tf.zeros_initializer())
        train = tf.group(tf.assign_add(w, tf.ones([3])), tf.assign_add(step, 1))
    return step, w, train


@pytest.mark.cluster
@pytest.mark.transports()
def test_a_ps_started_again_carries_on_from_its_replica(tmp_path, monkeypatch, caplog):
    with ReplicatingCluster(monkeypatch) as c:
        step, w, train = _model(c.spec)
        hooks = [tf.train.StopAtStepHook(last_step=10_000)]
        with tf.train.MonitoredTrainingSession(
                master=c.worker.target, is_chief=True, checkpoint_dir=str(tmp_path),
                hooks=hooks, save_checkpoint_secs=600, log_step_count_steps=0) as sess:
            for _ in range(25):
                sess.run(train)
        assert c.ps._replica_sender is not None and c.ps._replica_sender.holder == W0
        caplog.set_level(logging.INFO, logger="tensorweave")
        ps = c.restart_ps()  # the holder had step 25 when the ps stopped
        assert any("loaded 2 variables from its replica on " + W0 in r.getMessage()
                   for r in caplog.records), caplog.text
        with tf.train.MonitoredTrainingSession(
                master=c.worker.target, is_chief=True, checkpoint_dir=str(tmp_path),
                hooks=hooks, save_checkpoint_secs=600, log_step_count_steps=0) as sess:
            assert sess.run(step) == 25  # not the checkpoint's step 0
            np.testing.assert_array_equal(sess.run(w), [25.0] * 3)
            sess.run(train)
            assert sess.run(step) == 26
        assert any("live on the ps tasks" in r.getMessage() for r in caplog.records)
        status, _ = ps.peer(ps.task).call("get_status", pb.GetStatusRequest())
        assert status.replica_holder == W0


@pytest.mark.transports()
def test_without_replication_a_restarted_ps_is_restored_from_the_checkpoint(tmp_path):
    spec = cluster_dict(1, 1)
    worker = Server(spec, job_name="worker", task_index=0, exit_when_done=False)
    ps = Server(spec, job_name="ps", task_index=0, exit_when_done=False)
    try:
        step, w, train = _model(spec)
        with tf.train.MonitoredTrainingSession(
                master=worker.target, is_chief=True, checkpoint_dir=str(tmp_path),
                save_checkpoint_secs=600, log_step_count_steps=0) as sess:
            for _ in range(5):
                sess.run(train)
        assert ps._replica_sender is None
        ps.stop()
        ps = Server(spec, job_name="ps", task_index=0, exit_when_done=False)
        with tf.train.MonitoredTrainingSession(
                master=worker.target, is_chief=True, checkpoint_dir=str(tmp_path),
                save_checkpoint_secs=600, log_step_count_steps=0) as sess:
            assert sess.run(step) == 5  # the checkpoint saved when the first session ended
    finally:
        ps.stop()
        worker.stop()


@pytest.mark.transports("grpc", "tcp", "unix", why="two ps tasks that ask each other while "
                        "starting, over sockets ('inprocess' servers are called directly)")
def test_two_ps_starting_together_answer_each_other(monkeypatch, caplog):
    # Each ps holds the other's replica and asks for its own before it runs graphs: both
    # serve while they ask, so neither waits out TENSORWEAVE_PS_REPLICA_WAIT_SECS.
    import threading
    monkeypatch.setenv(knobs.PS_REPLICATION.name, "1")
    monkeypatch.setenv(knobs.PS_REPLICA_WAIT_SECS.name, "60")
    caplog.set_level(logging.INFO, logger="tensorweave")
    spec = cluster_dict(2, 1)
    servers = {}
    threads = [threading.Thread(target=lambda i=i: servers.__setitem__(
        i, Server(spec, job_name="ps", task_index=i, exit_when_done=False))) for i in (0, 1)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        said = [r.getMessage() for r in caplog.records if "replica" in r.getMessage()]
        assert any(f"{PS0}: no replica on {PS1}" in m for m in said), said
        assert any(f"{PS1}: no replica on {PS0}" in m for m in said), said
        assert not any("did not answer" in m for m in said), said
    finally:
        for s in servers.values():
            s.stop()


class _Frozen(DirectHolder):
    """A holder that takes no put while frozen: the call times out, as a SIGSTOPped or
    cut-off task's does (its late answer never counts)."""

    def __init__(self, store: replica_store.ReplicaStore) -> None:
        super().__init__(store)
        self.thawed = threading.Event()
        self.thawed.set()
        self.waited: list[float] = []

    def call(self, method, request, tensors=(), timeout=None):
        if not self.thawed.is_set():
            self.waited.append(timeout)
            self.thawed.wait(timeout)
            raise errors.DeadlineExceededError(None, None, f"{method} timed out")
        return super().call(method, request, tensors, timeout)


def test_with_interval_0_a_frozen_holder_holds_steps_up_only_once_then_catches_up(
        monkeypatch, caplog):
    monkeypatch.setattr(replica, "STEP_WAIT_S", 0.2)
    resources, store = ResourceMgr(), replica_store.ReplicaStore()
    peer = _Frozen(store)
    v = _variable(resources, "v", np.zeros(3))
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: peer, 0.0)
    caplog.set_level(logging.INFO, "tensorweave.replica")
    try:
        sender.after_step()
        assert len(peer.puts) == 1  # healthy: the step's state is there before it ends
        peer.thawed.clear()
        _update(v, lambda x: x.__iadd__(1.0))
        sender.after_step()  # waits STEP_WAIT_S for the frozen holder, once
        assert 0.15 <= peer.waited[0] <= 0.2
        assert "steps no longer wait" in caplog.text
        t0 = time.monotonic()
        for _ in range(20):  # later steps do not wait at all
            _update(v, lambda x: x.__iadd__(1.0))
            sender.after_step()
        assert time.monotonic() - t0 < 0.2 * 5
        assert all(w == replica_store.CALL_TIMEOUT_S for w in peer.waited[1:])  # the catch-up's
        peer.thawed.set()
        deadline = time.monotonic() + 10
        while "steps wait for it again" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "caught up: steps wait for it again" in caplog.text
        _update(v, lambda x: x.__iadd__(1.0))
        sender.after_step()  # waits again: the step is in the replica when it ends
        np.testing.assert_array_equal(store.get(PS0)[1][0], v.value)
        assert v.value[0] == 22.0
    finally:
        peer.thawed.set()
        sender.stop()


def test_steps_ending_together_on_a_frozen_holder_each_wait_at_most_step_wait(monkeypatch):
    """Two sessions' steps end at once: the second waits its turn behind the first's put,
    and that turn counts in its bound too."""
    monkeypatch.setattr(replica, "STEP_WAIT_S", 0.3)
    resources, store = ResourceMgr(), replica_store.ReplicaStore()
    peer = _Frozen(store)
    v = _variable(resources, "v", np.zeros(3))
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: peer, 0.0)
    sender.after_step()
    peer.thawed.clear()
    _update(v, lambda x: x.__iadd__(1.0))
    took: list[float] = []

    def step() -> None:
        t0 = time.monotonic()
        sender.after_step()
        took.append(time.monotonic() - t0)
    try:
        threads = [threading.Thread(target=step) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert len(took) == 2 and max(took) < 0.3 * 1.5, took
    finally:
        peer.thawed.set()
        sender.stop()


def test_a_part_that_updated_nothing_here_does_not_wait_for_the_holder(monkeypatch):
    """A sync worker's gradient push changes no variable of the ps: its part ends at once,
    even while the holder takes no put (only parts that updated the task wait)."""
    monkeypatch.setattr(replica, "STEP_WAIT_S", 0.3)
    resources, store = ResourceMgr(), replica_store.ReplicaStore()
    peer = _Frozen(store)
    v = _variable(resources, "v", np.zeros(3))
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: peer, 0.0)
    try:
        sender.after_step()
        peer.thawed.clear()
        _update(v, lambda x: x.__iadd__(1.0))
        t0 = time.monotonic()
        sender.after_step(updated=False)
        assert time.monotonic() - t0 < 0.1 and peer.waited == []
        sender.after_step(updated=True)  # this one waits (and then falls behind)
        assert peer.waited and 0.2 <= peer.waited[0] <= 0.3
    finally:
        peer.thawed.set()
        sender.stop()


def test_a_densely_updated_variable_is_sent_whole_unchecked_then_rechecked():
    """A dense layer changes every row each step: after a compare finds that, it is sent
    whole without comparing for a few puts; the next compare notices it stopped changing."""
    resources, store = ResourceMgr(), replica_store.ReplicaStore()
    peer = DirectHolder(store)
    dense = _variable(resources, "dense", np.zeros((100, 4)))
    other = _variable(resources, "other", np.zeros(3))
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: peer, 0.1)
    sender.send_once()

    def put_names():
        return [(e.name, e.rows) for e in peer.puts[-1][0].entry]
    _update(dense, lambda v: v.__iadd__(1.0))
    assert sender.send_once() and put_names() == [("dense", False)]  # compared: all rows
    for _ in range(replica._DENSE_RECHECK):  # unchecked: sent whole while it is skipped
        _update(other, lambda v: v.__iadd__(1.0))
        assert sender.send_once() and ("dense", False) in put_names()
    _update(other, lambda v: v.__iadd__(1.0))
    assert sender.send_once() and put_names() == [("other", False)]  # rechecked: unchanged
    np.testing.assert_array_equal(store.get(PS0)[1][0], dense.value)
