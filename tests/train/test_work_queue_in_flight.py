"""A WorkQueue's slices in flight (issue 35): when a slice counts as trained, and when it
comes back to the queue (its worker restarted, its session closed mid-epoch), on the
resource itself and through the sessions of an in-process cluster."""
from __future__ import annotations

import pytest

import tensorweave as tf
from tensorweave.kernels.work_queue_resource import Taker, WorkQueueResource
from tensorweave.ops.data_flow.work_queue_ops import work_queue_handle

W1 = "/job:worker/replica:0/task:1"


def _queue(n: int = 6, epochs: int = 1) -> WorkQueueResource:
    return WorkQueueResource("wq", [f"w{i}".encode() for i in range(n)], epochs,
                             shuffle=False, seed=None)


def _taker(session: str, incarnation: int | None = 1, task: str | None = W1) -> Taker:
    return Taker(f"{session}/take", session, task, incarnation)


def test_a_taker_holds_as_many_slices_as_its_pipeline_keeps():
    q = _queue()
    one, three = _taker("s1"), _taker("s2", task="/job:worker/replica:0/task:2")
    assert [q.take(one, holds=1) for _ in range(2)] == [b"w0", b"w1"]
    assert q.in_flight() == [b"w1"]            # taking w1 means w0 was trained
    assert [q.take(three, holds=3) for _ in range(4)] == [b"w2", b"w3", b"w4", b"w5"]
    assert q.in_flight() == [b"w1", b"w3", b"w4", b"w5"]
    assert q.save().tolist() == [b"w1", b"w3", b"w4", b"w5"]   # in flight: not trained
    with pytest.raises(tf.errors.OutOfRangeError, match="All works in work queue wq"):
        q.take(one, holds=1)
    assert q.in_flight() == [b"w3", b"w4", b"w5"]   # the end: its last one trained too


def test_a_restarted_worker_gets_its_predecessors_slices_back_first():
    q = _queue()
    old, other = _taker("worker.1.s1.i1"), _taker("worker.2.s1.i7", 7, "/job:worker/task:2")
    q.take(old, holds=3), q.take(old, holds=3)            # w0, w1 in its pipeline
    assert q.take(other, holds=1) == b"w2"
    same_process = _taker("worker.1.s2.i1")               # a second session, same process
    assert q.take(same_process, holds=1) == b"w3"          # ... takes nothing back
    restarted = _taker("worker.1.s1.i2", incarnation=2)   # a new incarnation of task 1
    # Every slice of the old process comes back, in the order it was handed out.
    assert [q.take(restarted, holds=1) for _ in range(4)] == [b"w0", b"w1", b"w3", b"w4"]
    assert q.in_flight() == [b"w2", b"w4"]


def test_a_session_closed_mid_epoch_gives_its_slices_back_one_at_the_end_does_not():
    q = _queue(3)
    stopped, finished = _taker("a", task=None), _taker("b", task=None)
    assert q.take(stopped, holds=3) == b"w0"
    assert q.take(finished, holds=1) == b"w1"
    q.session_closed("a")                  # closed before the end: w0 was not trained
    assert q.take(finished, holds=1) == b"w0"
    assert q.take(finished, holds=1) == b"w2"
    with pytest.raises(tf.errors.OutOfRangeError):
        q.take(finished, holds=1)
    q.session_closed("b")
    assert q.size() == 0 and q.in_flight() == [] and q.save().tolist() == []


def test_restore_replaces_what_is_left_only_for_the_same_works():
    fresh = _queue(3)   # a restarted ps: nothing in flight
    assert not fresh.restore(b"x,y", [b"x"])           # another queue's checkpoint
    assert fresh.save().tolist() == [b"w0", b"w1", b"w2"]
    assert fresh.restore(fresh.digest, [b"w2", b"w0"])
    assert fresh.in_flight() == [] and fresh.save().tolist() == [b"w2", b"w0"]
    # Restored over a live worker (a restarted chief), with the model: what the worker
    # trained of w1 since the checkpoint was rewound, so w1 is handed out again.
    live = _queue(3)
    live.take(_taker("a"), holds=1), live.take(_taker("a"), holds=1)
    assert live.restore(live.digest, [b"w1", b"w2"])
    assert live.in_flight() == [] and live.take(_taker("b"), holds=1) == b"w1"


def test_ps_replicas_leave_the_queue_to_the_checkpoint():
    # A ps restarted from its replica would find a fresh queue beside a trained model;
    # holding a queue, it starts empty and the chief restores both from the checkpoint.
    from tensorweave.distributed import replica_tables
    from tensorweave.runtime.resource_mgr import ResourceMgr
    resources = ResourceMgr()
    resources.lookup_or_create("", "wq", _queue)
    assert replica_tables.uncovered(resources) == ["WorkQueue wq"]


def test_a_queue_with_the_same_name_and_other_works_is_refused():
    with tf.Graph().as_default():
        a = tf.WorkQueue(["a", "b"], name="shared")
        with tf.Session() as sess:
            sess.run(a.take())
            other = work_queue_handle([b"c"], 1, True, 0, 0, shared_name="shared")
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="exists with 2 works.*asks for 1 works"):
                sess.run(other)


def _worker_graph(spec: dict, index: int):
    with tf.device(tf.train.replica_device_setter(
            cluster=spec, worker_device=f"/job:worker/task:{index}")):
        queue = tf.WorkQueue([f"w{i}" for i in range(5)], shuffle=False)
        return queue.take()


@pytest.mark.transports("inprocess", why="it checks the queue's bookkeeping of sessions "
                        "(who holds which slice), not the wire")
def test_workers_share_one_queue_and_a_closed_session_gives_its_slice_back(
        inprocess_cluster):
    spec, servers = inprocess_cluster
    graphs = [tf.Graph(), tf.Graph()]
    takes = []
    for i, g in enumerate(graphs):
        with g.as_default():
            takes.append(_worker_graph(spec, i))
    s0 = tf.Session(servers[("worker", 0)].target, graph=graphs[0])
    s1 = tf.Session(servers[("worker", 1)].target, graph=graphs[1])
    try:
        assert s0.run(takes[0]) == b"w0"
        assert s1.run(takes[1]) == b"w1"
        s1.close()                          # worker 1 stops with w1 untrained
        rest = []
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                rest.append(s0.run(takes[0]))
    finally:
        s0.close()
        s1.close()
    assert rest == [b"w1", b"w2", b"w3", b"w4"]   # w1 first: it was in flight
