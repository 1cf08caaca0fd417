"""A block's Sends leave as soon as its last one is made.

Sends are held until the executor runs out of work, so a burst leaves as one
message. A worker's first block also computes much that no Send needs (a wide &
deep worker: 209 of 491 nodes): the block runs what its Sends need first, flushes,
then goes on, so the ps gathers while the worker computes the rest.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server
from tensorweave.testing.cluster import cluster_dict

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _blocks_of(server):
    plans = [reg.executor._blocks for reg in server.worker._graphs.values()
             if getattr(reg.executor, "_blocks", None) is not None]
    return [b for plan in plans for b in plan.blocks]


def test_sends_first_then_flush_then_the_rest():
    spec = cluster_dict(ps=1, workers=1)
    servers = [Server(spec, job_name=j, task_index=i) for j in spec for i in range(len(spec[j]))]
    try:
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [4])
            rest = tf.reduce_sum(tf.square(x) + tf.exp(x), name="rest")  # no Send needs it
            ids = tf.multiply(x, 2.0, name="ids")                        # the Send's input
        with tf.device("/job:ps/task:0"):
            gathered = tf.add(ids, 1.0, name="gathered")
        with tf.device("/job:worker/task:0"):
            back = tf.multiply(gathered, 3.0, name="back")  # a Recv: the part runs as blocks
        with tf.Session(servers[-1].target) as sess:
            got = sess.run([back, rest], {x: np.arange(4, dtype=np.float32)})
            block = next(b for b in _blocks_of(servers[-1])
                         if any(op.name == "rest" for op in b.lines.values()))
        code = [None] * (max(block.lines) + 1)
        for line, op in block.lines.items():
            code[line] = op.type
        send_at = code.index("_Send")
        flush_at = code.index(None, send_at)       # the flush: the line that is no op
        assert set(code[send_at + 1:flush_at]) <= {"_Recv"}, code
        assert "Mul" not in code[flush_at:], code  # what the Send needs comes first
        assert {"Square", "Exp", "Sum"} <= set(code[flush_at:]), code
        np.testing.assert_allclose(got[0], [3.0, 9.0, 15.0, 21.0])
        np.testing.assert_allclose(got[1], np.sum(np.arange(4) ** 2 + np.exp(np.arange(4))),
                                   rtol=1e-6)
    finally:
        for s in servers:
            s.stop()


def test_a_block_that_only_feeds_sends_keeps_its_order():
    spec = cluster_dict(ps=1, workers=1)
    servers = [Server(spec, job_name=j, task_index=i) for j in spec for i in range(len(spec[j]))]
    try:
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [4])
            ids = tf.multiply(x, 2.0, name="ids")
        with tf.device("/job:ps/task:0"):
            gathered = tf.add(ids, 1.0, name="gathered")
        with tf.device("/job:worker/task:0"):
            back = tf.multiply(gathered, 3.0, name="back")
        with tf.Session(servers[-1].target) as sess:
            sess.run(back, {x: np.ones(4, np.float32)})
            block = next(b for b in _blocks_of(servers[-1])
                         if any(op.name == "ids" for op in b.lines.values()))
        assert len(block.lines) == max(block.lines) - 1   # every line an op: no flush line
    finally:
        for s in servers:
            s.stop()
