"""A session opened before a task restarted must not act on the restarted task (issue 13).

Found by the fault matrix: after a ps was killed and restarted, the chief's old
session ran its sync queue runner's close-on-stop op, which registered a new
graph on the fresh ps and closed the fresh sync token queue there, so the
chief's new session died with "FIFOQueue 'sync_token_q' is closed". As TF's
workers answer for a session they do not know, the old session now gets
AbortedError (its step is retried on a new session by MonitoredSession).
"""
import pytest

import tensorweave as tf
from tensorweave.testing.cluster import LocalCluster
from suite_markers import TASK_PROCESSES


@pytest.fixture
def ps_and_worker():
    with LocalCluster(ps=1, workers=1) as lc:
        yield lc


def _graph():
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(-1, tf.int64, shapes=[[]], shared_name="tokens")
        v = tf.Variable(3, name="v")
    return q, v


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_old_session_gets_aborted_on_a_restarted_ps_and_leaves_its_queue_open(
        graph, ps_and_worker):
    lc = ps_and_worker
    q, v = _graph()
    close, size, enqueue = q.close(cancel_pending_enqueues=True), q.size(), q.enqueue(7)
    old = tf.Session(lc.target("worker", 0))
    old.run(v.initializer)  # the old session has used the ps
    lc.restart("ps", 0)     # kill -9, then the same port again: its state is gone
    new = tf.Session(lc.target("worker", 0))
    new.run(v.initializer)
    with pytest.raises(tf.errors.AbortedError, match=r"/job:ps/replica:0/task:0 restarted"):
        old.run(close)  # a graph the old session never registered on the ps
    new.run(enqueue)    # the restarted ps's queue is still open
    assert new.run(size) == 1
    with pytest.raises(tf.errors.AbortedError):
        old.run(v)      # a graph registered before the restart: not known there
    old.close()
    new.close()


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_session_that_first_meets_a_task_after_its_restart_is_not_refused(
        graph, ps_and_worker):
    # Only a task seen before its restart is refused: the incarnation is noted the
    # first time a session registers a graph there.
    lc = ps_and_worker
    q, v = _graph()
    lc.restart("ps", 0)
    with tf.Session(lc.target("worker", 0)) as sess:
        sess.run(v.initializer)
        sess.run(q.enqueue(1))
        assert sess.run([v, q.size()]) == [3, 1]
