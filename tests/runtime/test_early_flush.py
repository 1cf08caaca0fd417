"""A block's Sends leave as soon as its last one is made.

Sends are held until the executor runs out of work, so a burst leaves as one
message. A worker's first block also computes much that no Send needs (a wide &
deep worker: 209 of 491 nodes): the block runs what its Sends need first, flushes,
then goes on, so the ps gathers while the worker computes the rest.
"""
import numpy as np
import pytest

import tensorweave as tf
pytestmark = [pytest.mark.usefixtures("fresh_graph"), pytest.mark.cluster_shape(ps=1, workers=1)]


def _round_trip(servers, trailing):
    """Runs x -> ids (worker) -> +1 (ps) -> *3 (worker, a Recv: the worker's part runs
    as blocks), with `trailing(x)` beside it on the worker; the block that made the ids,
    as its lines' op types (None: a line that is no op), and the values."""
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [4])
        extra = trailing(x)
        ids = tf.multiply(x, 2.0, name="ids")
    with tf.device("/job:ps/task:0"):
        gathered = tf.add(ids, 1.0, name="gathered")
    with tf.device("/job:worker/task:0"):
        back = tf.multiply(gathered, 3.0, name="back")
    with tf.Session(servers[("worker", 0)].target) as sess:
        got = sess.run([back] + extra, {x: np.arange(4, dtype=np.float32)})
        block = next(b for b in _blocks_of(servers[("worker", 0)])
                     if any(op.name == "ids" for op in b.lines.values()))
    code = [None] * (max(block.lines) + 1)
    for line, op in block.lines.items():
        code[line] = op.type
    return code, got


def _blocks_of(server):
    plans = [reg.executor._blocks for reg in server.worker._graphs.values()
             if getattr(reg.executor, "_blocks", None) is not None]
    return [b for plan in plans for b in plan.blocks]


def test_sends_first_then_flush_then_the_rest(inprocess_cluster):
    _, servers = inprocess_cluster
    code, got = _round_trip(servers, lambda x: [  # no Send needs it
        tf.reduce_sum(tf.square(x) + tf.exp(x), name="rest")])
    send_at = code.index("_Send")
    flush_at = code.index(None, send_at)       # the flush: the line that is no op
    assert set(code[send_at + 1:flush_at]) <= {"_Recv"}, code
    assert "Mul" not in code[flush_at:], code  # what the Send needs comes first
    assert {"Square", "Exp", "Sum"} <= set(code[flush_at:]), code
    np.testing.assert_allclose(got[0], [3.0, 9.0, 15.0, 21.0])
    np.testing.assert_allclose(got[1], np.sum(np.arange(4) ** 2 + np.exp(np.arange(4))),
                               rtol=1e-6)


def test_a_block_that_only_feeds_sends_keeps_its_order(inprocess_cluster):
    _, servers = inprocess_cluster
    code, got = _round_trip(servers, lambda x: [])
    assert None not in code[2:], code          # every line an op: no flush line
    np.testing.assert_allclose(got[0], [3.0, 9.0, 15.0, 21.0])
