"""A graph's scope stacks are per thread: ops built in one thread never pick up another
thread's device or control-dependency scopes, with or without TF1's
`Graph.switch_to_thread_local()` (which TF1's threaded programs call first)."""
import threading

import tensorweave as tf


def _build_in_thread(g):
    built = {}

    def body():
        with g.as_default():
            built["op"] = tf.constant(1.0, name="in_thread")
    t = threading.Thread(target=body)
    t.start()
    t.join()
    return built["op"].op


def test_other_threads_do_not_see_this_threads_scopes():
    for switch in (False, True):
        g = tf.Graph()
        if switch:
            g.switch_to_thread_local()
        with g.as_default(), g.device("/job:ps/task:0"):
            dep = tf.no_op(name="dep")
            with g.control_dependencies([dep]):
                op = _build_in_thread(g)
                here = tf.constant(2.0, name="here").op
        assert op.device == "" and op.control_inputs == []
        assert here.control_inputs == [dep] and "/job:ps/task:0" in here.device
