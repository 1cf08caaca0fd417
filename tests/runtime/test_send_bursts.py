"""Sends made ready by Recvs that arrive together leave in one message.

A frame often delivers several tensors of a step at once (a worker pushes all of a
step's ids for a ps in one). The executor takes every completion already queued
before it flushes, so the ps answers with one message, not one per gathered tensor
(wide & deep: a ps's frames per worker step 8.9 -> 3.0).
"""
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.runtime import executor
from tensorweave.testing.cluster import InProcessCluster

pytestmark = pytest.mark.usefixtures("fresh_graph")


@pytest.mark.transports()
def test_recvs_arriving_together_answer_in_one_message(monkeypatch, flushed_messages):
    pushes = flushed_messages
    real_wait = executor.Executor._wait

    def wait(self, done_q, step):
        # The first of a frame's tensors wakes the executor; let the others land
        # before it goes on, as they do when the deliverer holds the GIL.
        got = real_wait(self, done_q, step)
        time.sleep(0.02)
        return got
    monkeypatch.setattr(executor.Executor, "_wait", wait)
    with InProcessCluster(ps=1, workers=1, protocol=None) as cluster:
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [3])
            # The worker's burst waits for the test's go, so the ps is already
            # waiting for its Recvs when they arrive (the case of a real step).
            go_q = tf.FIFOQueue(1, tf.float32, shapes=[[]])
            go = go_q.dequeue()
            parts = [tf.identity(x + go + float(k), name=f"part{k}") for k in range(3)]
        with tf.device("/job:ps/task:0"):
            doubled = [tf.multiply(p, 2.0, name=f"doubled{k}") for k, p in enumerate(parts)]
        with tf.device("/job:worker/task:0"):
            total = tf.add_n(doubled)
        with tf.Session(cluster.servers[("worker", 0)].target) as sess:
            result = []
            run = threading.Thread(
                target=lambda: result.append(sess.run(total, {x: np.ones(3, np.float32)})))
            run.start()
            time.sleep(0.3)
            pushes.clear()        # only the step's own messages from here
            sess.run(go_q.enqueue(0.0))
            run.join(30)
            got = result[0]
    np.testing.assert_allclose(got, [12.0, 12.0, 12.0])   # 2 * (3 + 0 + 1 + 2)
    to_worker = [names for src, dst, names in pushes if dst.startswith("/job:worker")]
    to_ps = [names for src, dst, names in pushes if dst.startswith("/job:ps")]
    assert len(to_ps) == 1 and len(to_ps[0]) == 3, pushes     # the worker's burst
    assert len(to_worker) == 1 and len(to_worker[0]) == 3, pushes   # answered at once
