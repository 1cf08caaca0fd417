"""A remote part that only waits for this task's tensors starts with them.

The master runs its own task's part in its thread; a ps part of a training step has
nothing to do before the worker's ids (or gradients) arrive. So its RunGraph goes out
with the worker's first Sends for it, in the same write (unix transport), and the
ps answers its variable reads and the gathered rows in one message: per ps and step,
one message fewer each way and a wake-up fewer on each side (wide & deep, 2 ps + 2
workers: 13 -> 9 writes a global step). A part with work of its own starts at once,
as before; a step that fails before it needs a deferred part never runs that part.
"""
import socket
import threading

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import master_step
from tensorweave.distributed.transport.unix import framing
from tensorweave.runtime.partition import partition
from tensorweave.runtime.plan import prune

pytestmark = [pytest.mark.usefixtures("fresh_graph"), pytest.mark.cluster_shape(ps=1, workers=1)]


class _Deferrals(list):
    """The tasks whose parts a master leaves to its own part, one list per step that
    defers any; `.outboxes` keeps every step's DeferredStarts (the master's record)."""

    def __init__(self):
        super().__init__()
        self.outboxes = []

    def left_behind(self):
        return [o.pending() for o in self.outboxes if o.pending()]


def _deferred(monkeypatch):
    record = _Deferrals()
    real = master_step.DeferredStarts.__init__

    def init(self, worker, starts):
        if starts:
            record.append(sorted(starts))
        record.outboxes.append(self)
        real(self, worker, starts)
    monkeypatch.setattr(master_step.DeferredStarts, "__init__", init)
    return record


def _events(monkeypatch, server):
    """What the server's worker service sees, in order: ("deliver"|"run_graph", step)."""
    events = []
    service = server.worker
    real_deliver, real_run = service.deliver, service.run_graph

    def deliver(step_id, items):
        events.append(("deliver", step_id))
        return real_deliver(step_id, items)

    def run_graph(req, tensors=()):
        events.append(("run_graph", req.step_id))
        return real_run(req, tensors)
    monkeypatch.setattr(service, "deliver", deliver)
    monkeypatch.setattr(service, "run_graph", run_graph)
    return events


def _started_with_its_tensors(events, request):
    """The ps part ran once, for the step whose tensors it was sent with: after them where
    one connection carries both (unix: one write); over tcp the tensors (bulk channel) and
    the RunGraph (gRPC) travel on two connections, so they may arrive in either order."""
    kinds = [kind for kind, _ in events]
    if request.node.callspec.params["inprocess_cluster"] == "tcp":
        assert sorted(kinds) == ["deliver", "run_graph"], events
    else:
        assert kinds == ["deliver", "run_graph"], events
    assert events[0][1] == events[1][1]


def test_a_part_waiting_for_this_task_starts_after_its_tensors(inprocess_cluster, monkeypatch,
                                                               request):
    _, servers = inprocess_cluster
    with tf.device("/job:ps/task:0"):
        scale = tf.Variable(10.0, name="scale")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [3])
        ids = tf.multiply(x, 2.0, name="ids")
    with tf.device("/job:ps/task:0"):
        gathered = tf.add(ids, scale, name="gathered")   # needs the worker's ids
    with tf.device("/job:worker/task:0"):
        back = tf.multiply(gathered, 3.0, name="back")
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        events = _events(monkeypatch, servers[("ps", 0)])
        deferred = _deferred(monkeypatch)
        got = sess.run(back, {x: np.arange(3, dtype=np.float32)})
    np.testing.assert_allclose(got, [30.0, 36.0, 42.0])
    assert deferred == [["/job:ps/replica:0/task:0"]]
    _started_with_its_tensors(events, request)


def test_a_part_with_work_of_its_own_starts_at_once(inprocess_cluster, monkeypatch):
    _, servers = inprocess_cluster
    with tf.device("/job:ps/task:0"):
        table = tf.Variable(np.arange(6, dtype=np.float32), name="table")
        own = tf.reduce_sum(tf.exp(table), name="own")   # needs nothing from the worker
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [])
        ids = tf.multiply(x, 2.0, name="ids")
    with tf.device("/job:ps/task:0"):
        gathered = tf.add(ids, own, name="gathered")
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        deferred = _deferred(monkeypatch)
        got = sess.run(gathered, {x: 1.0})
    np.testing.assert_allclose(got, 2.0 + np.exp(np.arange(6)).sum(), rtol=1e-6)
    assert deferred == []


def test_a_part_this_task_first_waits_for_starts_at_once(inprocess_cluster, monkeypatch):
    """An MLP's ps part: the worker needs its weights before it sends anything."""
    _, servers = inprocess_cluster
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.eye(2, dtype=np.float32), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [1, 2])
        grad = tf.matmul(x, w) * 2.0
    with tf.device("/job:ps/task:0"):
        update = tf.assign_add(w, tf.tile(grad, [2, 1]))
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        deferred = _deferred(monkeypatch)
        got = sess.run(update, {x: [[1.0, 2.0]]})
    np.testing.assert_allclose(got, [[3.0, 4.0], [2.0, 5.0]])
    assert deferred == []


def test_variable_reads_and_gathered_rows_answer_in_one_message(inprocess_cluster,
                                                                flushed_messages):
    _, servers = inprocess_cluster
    with tf.device("/job:ps/task:0"):
        dense = tf.Variable(np.ones((2, 2), np.float32), name="dense")
        rows = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2), name="rows")
    with tf.device("/job:worker/task:0"):
        ids = tf.placeholder(tf.int32, [None])
        doubled = tf.identity(ids * 2 // 2, name="ids")
    with tf.device("/job:ps/task:0"):
        picked = tf.gather(rows, doubled, name="picked")
    with tf.device("/job:worker/task:0"):
        out = tf.matmul(picked, dense)
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        flushed_messages.clear()
        got = sess.run(out, {ids: [3, 0]})
    np.testing.assert_allclose(got, [[13.0, 13.0], [1.0, 1.0]])
    to_worker = [names for src, dst, names in flushed_messages if dst.startswith("/job:worker")]
    assert len(to_worker) == 1, flushed_messages
    assert {"dense/read:0", "picked:0"} <= set(to_worker[0]), to_worker


def test_a_step_failing_before_it_needs_the_part_never_runs_it(inprocess_cluster,
                                                               monkeypatch, request):
    _, servers = inprocess_cluster
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [2])
        check = tf.assert_positive(x, message="bad input", name="checked")
        with tf.control_dependencies([check]):
            ids = tf.multiply(x, 2.0, name="ids")
    with tf.device("/job:ps/task:0"):
        gathered = tf.add(ids, 1.0, name="gathered")
    with tf.device("/job:worker/task:0"):
        back = tf.multiply(gathered, 3.0, name="back")
    config = tf.ConfigProto(operation_timeout_in_ms=20000)
    with tf.Session(servers[("worker", 0)].target, config=config) as sess:
        events = _events(monkeypatch, servers[("ps", 0)])
        deferred = _deferred(monkeypatch)
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad input") as info:
            sess.run(back, {x: [1.0, -1.0]})
        assert "checked" in str(info.value)
        assert events == []                       # the ps part never started
        assert deferred == [["/job:ps/replica:0/task:0"]]
        assert deferred.left_behind() == []       # ... and the master holds nothing of it
        np.testing.assert_allclose(sess.run(back, {x: [1.0, 2.0]}), [9.0, 15.0])
    _started_with_its_tensors(events, request)


def _ps_part(fetches, targets):
    ops = prune(fetches, targets, [])
    placement = {id(op): op.device + "/device:CPU:0" for op in ops}
    return partition(ops, placement, [], fetches)["/job:ps/replica:0/task:0"]


def test_waits_for_counts_only_work_before_the_tasks_tensors():
    worker = "/job:worker/replica:0/task:0"
    with tf.Graph().as_default():
        with tf.device("/job:ps/replica:0/task:0"):
            v = tf.Variable(np.ones(3, np.float32), name="v")
        with tf.device(worker):
            grad = tf.square(tf.constant([1.0, 2.0, 3.0]), name="grad")
            read = tf.identity(v, name="read")       # the ps sends v: no work there
        with tf.device("/job:ps/replica:0/task:0"):
            update = tf.assign_sub(v, grad)            # only once the gradient is in
            busy = tf.reduce_sum(tf.exp(v), name="busy")
        ps_part = _ps_part([read], [update.op])
        assert ps_part.waits_for(worker)
        assert ps_part.early_sends() == {worker}             # v's read: before any Recv
        assert not _ps_part([read, busy], [update.op]).waits_for(worker)
        assert not _ps_part([busy], []).waits_for(worker)


def test_resource_lookups_and_shapes_are_no_work_before_the_tasks_tensors():
    """A sync replica's ps part: its accumulators, the token queue and a sparse
    gradient's dense_shape (the shape of the variable, cast) need nothing from the
    worker; the apply and the dequeue behind it wait for the gradient."""
    worker = "/job:worker/replica:0/task:0"
    with tf.Graph().as_default():
        with tf.device("/job:ps/replica:0/task:0"):
            v = tf.Variable(np.ones([4, 2], np.float32), name="v")
            acc = tf.SparseConditionalAccumulator(tf.float32, shape=[4, 2], shared_name="acc")
            q = tf.FIFOQueue(-1, tf.int64, shapes=[[]], name="token_q")
            dense_shape = tf.cast(tf.shape(v), tf.int64)
        with tf.device(worker):
            rows = tf.constant([[1.0, 2.0]]) * 3.0
        with tf.device("/job:ps/replica:0/task:0"):
            apply = acc.apply_grad([1], rows, dense_shape, local_step=0)
            with tf.control_dependencies([apply]):
                token = q.dequeue()
            expensive = tf.reduce_sum(tf.exp(tf.cast(tf.shape(v), tf.float32)))
        with tf.device(worker):
            got = tf.identity(token)
        assert _ps_part([got], []).waits_for(worker)
        # Shapes feeding real math are still work: that part starts at once.
        assert not _ps_part([got, expensive], []).waits_for(worker)


class _CountingSocket(socket.socket):
    writes = 0

    def sendall(self, data, *args):
        type(self).writes += 1
        return super().sendall(data, *args)


def test_send_many_writes_frames_in_order_in_one_write():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    counting = _CountingSocket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=a.detach())
    out, into = framing.Conn(counting), framing.Conn(b)
    ids = np.array([3, 1, 4], np.int64)
    try:
        out.send_many([(framing.PUSH, 1, 0, 7, b"ps;worker;ids:0", [ids]),
                       (framing.REQUEST, 1, 3, 42, b"request", [])])
        got = [into.read(), into.read()]
    finally:
        out.close()
        into.close()
    assert _CountingSocket.writes == 1
    assert got[0][:5] == (framing.PUSH, 1, 0, 7, b"ps;worker;ids:0")
    np.testing.assert_array_equal(got[0][5][0], ids)
    assert got[1][:5] == (framing.REQUEST, 1, 3, 42, b"request") and got[1][5] == []


def test_many_steps_from_two_threads_each_get_their_own_part(inprocess_cluster, monkeypatch):
    """Deferred starts are per step: concurrent steps of one session never mix."""
    _, servers = inprocess_cluster
    deferred = _deferred(monkeypatch)
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [])
        ids = tf.multiply(x, 2.0)
    with tf.device("/job:ps/task:0"):
        gathered = tf.add(ids, 1.0)
    with tf.device("/job:worker/task:0"):
        back = tf.multiply(gathered, 3.0)
    results: dict[int, list[float]] = {0: [], 1: []}
    with tf.Session(servers[("worker", 0)].target) as sess:
        def loop(k):
            for i in range(30):
                results[k].append(float(sess.run(back, {x: float(i + 100 * k)})))
        threads = [threading.Thread(target=loop, args=(k,)) for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    for k in (0, 1):
        assert results[k] == [3.0 * (2.0 * (i + 100 * k) + 1.0) for i in range(30)]
    assert len(deferred) == 60 and deferred.left_behind() == []
