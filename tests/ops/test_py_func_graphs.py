"""tf.py_func in graphs, functions and processes: inside dataset maps and while loops,
imported GraphDefs (the function token, another process's token, TF's), the function's
lifetime with its graph, and py_funcs on server tasks (split from test_py_func.py).

Specification: TF 1.x python/kernel_tests/py_func_test.py and python/ops/script_ops.py;
our own values.
"""
import gc
import re
import weakref

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops import script_ops
from tensorweave.testing.cluster import LocalCluster
from suite_markers import OTHER_PROCESSES

pytestmark = pytest.mark.usefixtures("graph")
py_func = script_ops.py_func


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_inside_a_dataset_map():
    def parse(line):
        return np.array([int(v) for v in line.split(b",")], np.int64)
    ds = tf.data.Dataset.from_tensor_slices(["1,2", "3,40"])
    ds = ds.map(lambda s: py_func(parse, [s], tf.int64))
    ds = ds.map(lambda v: (v * 2, py_func(lambda a: a.sum(), [v], tf.int64)))
    it = ds.make_one_shot_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        first = sess.run(nxt)
        second = sess.run(nxt)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)
    np.testing.assert_array_equal(first[0], [2, 4])
    assert first[1] == 3
    np.testing.assert_array_equal(second[0], [6, 80])
    assert second[1] == 43


def test_inside_a_dataset_map_with_a_graph_int64_range():
    ds = tf.data.Dataset.range(4).map(lambda x: py_func(lambda a: a * a, [x], tf.int64))
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [sess.run(nxt) for _ in range(4)] == [0, 1, 4, 9]


def test_error_inside_a_dataset_map_names_the_func():
    def reject(x):
        raise ValueError(f"bad record {int(x)}")
    ds = tf.data.Dataset.range(3).map(lambda x: py_func(reject, [x], tf.int64, name="check"))
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="calling .*reject.*bad record 0"):
        sess.run(nxt)


def test_inside_a_while_loop_body():
    calls = []

    def step(i, acc):
        calls.append(int(i))
        return acc + i * i

    def body(i, acc):
        new = py_func(step, [i, acc], tf.int32)
        new.set_shape([])
        return i + 1, new
    _, total = tf.while_loop(lambda i, acc: i < 4, body, [tf.constant(0), tf.constant(0)])
    assert _run(total) == 0 + 1 + 4 + 9
    assert calls == [0, 1, 2, 3]


def test_numpy_function_is_a_stateful_py_func():
    y = script_ops.numpy_function(np.sort, [tf.constant([3.0, 1.0, 2.0])], tf.float32,
                                  name="sorted")
    assert y.op.type == "PyFunc" and y.op.name == "sorted"
    np.testing.assert_array_equal(_run(y), [1.0, 2.0, 3.0])


def test_imported_graph_def_finds_the_function_while_its_graph_lives(graph):
    y = py_func(lambda a: a + 1, [tf.constant(1)], tf.int32, name="inc")
    gd = graph.as_graph_def()
    with tf.Graph().as_default():
        (z,) = tf.import_graph_def(gd, name="", return_elements=["inc:0"])
        z.set_shape([])
        assert _run(z) == 2
    assert y.op.name == "inc"


def _with_token(gd, name, token):
    for node in gd.node:
        if node.name == name:
            node.attr["token"].s = token.encode()
    return gd


def test_token_of_another_process_says_where_to_place_the_op(graph):
    py_func(lambda: 1, [], tf.int32, name="remote_fn")
    token = graph.get_operation_by_name("remote_fn").get_attr("token")
    other = re.sub(r"@.*", "@otherhost:4242:0123abcd", token)
    gd = _with_token(graph.as_graph_def(), "remote_fn", other)
    with tf.Graph().as_default():
        (z,) = tf.import_graph_def(gd, name="", return_elements=["remote_fn:0"])
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(z)
    msg = str(info.value)
    assert "PyFunc op 'remote_fn'" in msg and other in msg
    assert "callback" in msg and "not found" in msg
    assert "registered by the Python process otherhost:4242" in msg
    assert 'tf.device("/job:worker/task:N")' in msg and "in-process server" in msg


def test_tensorflow_written_token_is_not_found(graph):
    py_func(lambda: 1, [], tf.int32, name="tf_fn")
    gd = _with_token(graph.as_graph_def(), "tf_fn", "pyfunc_0")
    with tf.Graph().as_default():
        (z,) = tf.import_graph_def(gd, name="", return_elements=["tf_fn:0"])
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="another Python process.*GraphDef "
                                                       "written by TensorFlow"):
            sess.run(z)


def test_function_is_released_with_its_graph():
    # TF's testCleanup (issue 18292): a function closing over a tensor of its own graph
    # must not keep that graph, and itself, alive.
    def build():
        g = tf.Graph()
        with g.as_default():
            c = tf.constant([1.0])

            def f(x):
                return x + c.shape[0]
            y = py_func(f, [c], tf.float32)
            token = y.op.get_attr("token")
        return weakref.ref(g), weakref.ref(f), token, g.as_graph_def()
    g_ref, f_ref, token, gd = build()
    gc.collect()
    assert g_ref() is None and f_ref() is None
    assert token not in script_ops._CALLBACKS
    # The op imported elsewhere in this process now explains what happened.
    with tf.Graph().as_default():
        (z,) = tf.import_graph_def(gd, name="", return_elements=[gd.node[-1].name + ":0"])
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="This process built it, but the "
                                                       "graph .* was garbage-collected"):
            sess.run(z)


def test_runs_on_an_in_process_server_task(inprocess_cluster):
    spec, servers = inprocess_cluster
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            y = py_func(lambda a: a * 10, [tf.constant(4)], tf.int32)
        with tf.Session(servers[("worker", 0)].target) as sess:
            assert sess.run(y) == 40


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_placed_on_another_process_fails_naming_the_process():
    # The ps process registers PyFunc (tensorweave imports script_ops) but never saw
    # the func: the error names both processes and the fix.
    assert tf.py_func is py_func
    with LocalCluster(ps=1, workers=1, in_process=(("worker", 0),)) as lc:
        server = tf.train.Server(lc.spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    y = py_func(lambda: 1, [], tf.int32, name="on_ps")
                with tf.Session(server.target) as sess, \
                        pytest.raises(tf.errors.InvalidArgumentError) as info:
                    sess.run(y)
        finally:
            server.stop()
    msg = str(info.value)
    assert "PyFunc op 'on_ps'" in msg and "is not registered in this process" in msg
    assert "Place the op on a device of the building process" in msg
