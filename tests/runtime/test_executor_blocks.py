"""The executor's compiled blocks (runtime/blocks.py): plans with async kernels
(queues, Recv) run as blocks of nodes sharing the async nodes they depend on."""
import threading

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.runtime.executor import Executor, FunctionLibrary
from tensorweave.runtime.resource_mgr import DeviceContext
from tensorweave.runtime.step import StepState

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _executor(fetches, targets=()):
    lib = FunctionLibrary(DeviceContext("/job:localhost/replica:0/task:0/device:CPU:0"))
    return Executor([], list(fetches), list(targets), lib)


def test_nodes_group_by_the_async_nodes_they_wait_for():
    q1 = tf.FIFOQueue(4, [tf.float32], shapes=[[2]])
    q2 = tf.FIFOQueue(4, [tf.float32], shapes=[[2]])
    a = q1.dequeue()
    b = q2.dequeue()
    c = tf.constant([1.0, 2.0])
    only_a = tf.square(a + c) * 2.0          # waits for q1 only
    both = tf.reduce_sum(only_a + b) + 1.0   # waits for q1 and q2
    ex = _executor([only_a, both], [q1.enqueue([[3.0, 4.0]]), q2.enqueue([[5.0, 6.0]])])
    out = ex.run([], StepState())
    np.testing.assert_allclose(out[0], [32.0, 72.0])
    np.testing.assert_allclose(out[1], 32.0 + 72.0 + 11.0 + 1.0)
    plan = ex._blocks
    # The constant and the enqueues' inputs, then one block per signature:
    # {dequeue q1}, {dequeue q1, dequeue q2}; far fewer blocks than nodes.
    assert len(plan.blocks) == 3
    assert len(ex._nodes) > 10


def test_blocked_dequeue_does_not_stop_an_enqueue_of_the_same_step():
    q = tf.FIFOQueue(2, [tf.int32], shapes=[[]])
    x = q.dequeue() * 10
    feed = tf.placeholder(tf.int32, [])
    with tf.Session() as sess:
        # The queue is empty when the step starts: its dequeue waits for the enqueue
        # that the same run performs.
        got, _ = sess.run([x, q.enqueue(feed)], {feed: 7})
        assert got == 70


def test_dequeue_of_several_components_fills_each_output():
    q = tf.FIFOQueue(4, [tf.int32, tf.float32], shapes=[[], [2]])
    i, v = q.dequeue()
    with tf.Session() as sess:
        sess.run(q.enqueue([3, [1.5, 2.5]]))
        # Already there: the dequeue completes while it is dispatched.
        got_i, got_v = sess.run([i + 1, v * 2.0])
        assert got_i == 4
        np.testing.assert_allclose(got_v, [3.0, 5.0])


def test_failure_after_an_async_node_names_the_failing_node():
    q = tf.FIFOQueue(4, [tf.float32])
    # The shape is only known when the step runs: the matmul fails in its kernel.
    m = tf.matmul(tf.reshape(q.dequeue(), [1, -1]), tf.ones([2, 2]), name="bad_matmul")
    with tf.Session() as sess:
        sess.run(q.enqueue([[1.0, 2.0, 3.0]]))
        with pytest.raises(errors.InvalidArgumentError, match="bad_matmul"):
            sess.run(m)


def test_completion_from_another_thread_unblocks_its_block():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    y = tf.sqrt(q.dequeue()) + 1.0
    enq = q.enqueue(tf.constant(16.0))
    with tf.Session() as sess:
        timer = threading.Timer(0.2, lambda: sess.run(enq))
        timer.start()
        assert sess.run(y) == 5.0
        timer.join()


def test_a_second_thread_never_sees_a_half_built_plan():
    # Queue runners run one enqueue on several threads; the first runs build the step's
    # plan lazily. Thread A is paused inside the tables' build at every line after
    # `_succ` exists (where the old code published it first, then filled `_preds`), while
    # thread B runs the same step: B must wait for A's plan, not build on half a table
    # (an IndexError in BlockPlan._group, once in a whole-suite run).
    import sys
    import threading
    import numpy as np
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        y = x
        for _ in range(20):
            y = tf.identity(y + 1.0)
        queue = tf.FIFOQueue(10, [tf.float32], shapes=[[3]])
        enqueue = queue.enqueue([y])
        with tf.Session() as sess:
            go, b_done = threading.Event(), threading.Event()
            errors = []

            def pause_mid_build(frame, event, arg):
                if frame.f_code.co_name != "_build_dataflow_tables":
                    return pause_mid_build
                if event == "line" and hasattr(frame.f_locals.get("self"), "_succ") \
                        and not go.is_set():
                    go.set()
                    b_done.wait(1.0)   # the fixed code's B waits for A: time out
                return pause_mid_build

            def a():
                sys.settrace(pause_mid_build)
                try:
                    sess.run(enqueue, {x: np.ones(3, np.float32)})
                finally:
                    sys.settrace(None)
                    go.set()

            def b():
                go.wait(5.0)
                try:
                    sess.run(enqueue, {x: np.ones(3, np.float32)})
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)
                finally:
                    b_done.set()
            threads = [threading.Thread(target=a), threading.Thread(target=b)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
            assert not errors, errors
            assert sess.run(queue.size()) == 2
