"""tf.Session: fetch structures, feeds, defaults, errors and cancellation."""
import collections
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.framework.op_def import define_op
from tensorweave.framework.tensor_shape import TensorShape
from session_helpers import run_then_close

pytestmark = pytest.mark.usefixtures("fresh_graph")

# A test-only op that fails in its kernel, to check error attribution.
_fail = define_op("TestOnlyFail", inputs=("x",))
_fail.shape(lambda x: (x.dtype, x.shape))
_fail.no_gradient()


@_fail.kernel("CPU")
def _(x):
    raise ValueError(f"bad value {x!r}")


# A test-only async op that never completes unless cancelled.
_block = define_op("TestOnlyBlock", stateful=True)
_block.shape(lambda: (tf.float32, TensorShape([])))
_block.no_gradient()


@_block.kernel("CPU", kind="async")
def _(ctx, step, done):
    step.register_cancel(lambda err: done(err))


def test_hello_distributed_string_constant():
    c = tf.constant("Hello, distributed TensorFlow!")
    with tf.Session() as sess:
        assert sess.run(c) == b"Hello, distributed TensorFlow!"


def test_fetch_nested_structures():
    a = tf.constant(1.0, name="a")
    b = tf.constant([2, 3], name="b")
    Pair = collections.namedtuple("Pair", "x y")
    with tf.Session() as sess:
        out = sess.run({"a": a, "list": [a, (b, "b:0")], "pair": Pair(a, b), "op": a.op})
    assert out["a"] == 1.0 and isinstance(out["list"], list)
    assert isinstance(out["list"][1], tuple)
    np.testing.assert_array_equal(out["list"][1][1], [2, 3])
    assert isinstance(out["pair"], Pair) and out["op"] is None


def test_fetch_by_name_and_op_name():
    tf.constant(5, name="five")
    with tf.Session() as sess:
        assert sess.run("five:0") == 5
        assert sess.run("five") is None


def test_feeds_by_tensor_and_name_and_errors():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.identity(x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: [[1, 2]]}), [[1, 2]])
        np.testing.assert_allclose(sess.run(y, {"x:0": [[3, 4]]}), [[3, 4]])
        with pytest.raises(ValueError, match=r"shape \(3,\) for Tensor 'x:0'"):
            sess.run(y, {x: [1, 2, 3]})
        with pytest.raises(TypeError, match="'x:0'"):
            sess.run(y, {x: [["a", "b"]]})
        with pytest.raises(errors.InvalidArgumentError, match="must feed a value for placeholder"
                           ".*'x'"):
            sess.run(y)


def test_fed_value_is_returned_for_fed_fetch():
    x = tf.placeholder_with_default(tf.constant([1.0, 2.0]), [2])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(x), [1, 2])
        np.testing.assert_allclose(sess.run(x, {x: [5, 6]}), [5, 6])


def test_kernel_error_names_node_op_and_creation_site():
    x = tf.constant(1.0)
    bad = tf.get_default_graph().create_op("TestOnlyFail", [x], name="badnode").outputs[0]
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(bad)
    msg = str(info.value)
    assert "badnode" in msg and "TestOnlyFail" in msg and "test_session.py" in msg
    assert info.value.op is bad.op


def test_default_session_and_eval():
    c = tf.constant(3.0)
    sess = tf.Session()
    with sess.as_default():
        assert c.eval() == 3.0
        assert tf.get_default_session() is sess
    assert tf.get_default_session() is None
    with pytest.raises(ValueError, match="no default session"):
        c.eval()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_interactive_session_installs_itself():
    c = tf.constant(4)
    sess = tf.InteractiveSession()
    try:
        assert c.eval() == 4
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_close_cancels_a_blocked_step():
    blocked = tf.get_default_graph().create_op("TestOnlyBlock", [], name="blocker").outputs[0]
    sess = tf.Session()
    alive, error = run_then_close(sess, blocked)
    assert not alive
    assert isinstance(error, errors.CancelledError)


def test_run_timeout_gives_deadline_exceeded():
    blocked = tf.get_default_graph().create_op("TestOnlyBlock", [], name="blocker").outputs[0]
    with tf.Session() as sess:
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(blocked, options=tf.RunOptions(timeout_in_ms=300))
        assert time.monotonic() - start < 5


def test_make_callable():
    x = tf.placeholder(tf.float32, [])
    y = tf.identity(x)
    with tf.Session() as sess:
        f = sess.make_callable(y, [x])
        assert f(2.0) == 2.0


def test_config_proto_fields_exist():
    cfg = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                         device_filters=["/job:ps"], operation_timeout_in_ms=5000)
    assert cfg.operation_timeout_in_ms == 5000 and list(cfg.device_filters) == ["/job:ps"]
    assert tf.RunOptions(timeout_in_ms=10).timeout_in_ms == 10


def test_local_session_refuses_a_device_it_does_not_have():
    # The classic mistake: a cluster graph run in tf.Session() without the server's
    # target. TF's DirectSession refuses it; running it here would train a private copy.
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="weights")
        with tf.device("/gpu:0"):
            doubled = tf.constant(2.0, name="doubled") * 2
        with tf.device("/job:localhost/replica:0/task:0/cpu:0"):
            here = tf.constant(3.0, name="here")
        with tf.Session() as sess:
            assert sess.run(here) == 3.0  # the session's own device, spelled out
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"weights.*explicitly assigned to /job:ps/task:0 but "
                                     r"available devices are.*server\.target"):
                sess.run(v.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"/gpu:0|GPU:0"):
                sess.run(doubled)
        soft = tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(config=soft) as sess:
            sess.run(v.initializer)
            assert sess.run([v, doubled]) == [1.0, 4.0]


def test_local_session_offers_the_cpus_device_count_asks_for():
    # ConfigProto(device_count={"CPU": 2}) gives a local session CPU:0 and CPU:1 (TF's
    # sharded-Saver tests place variables on both); CPU:2 is still refused.
    with tf.Graph().as_default():
        with tf.device("/device:CPU:1"):
            on_1 = tf.constant(2.0) * 2
        with tf.device("/device:CPU:2"):
            on_2 = tf.constant(3.0) * 2
        two = tf.ConfigProto(device_count={"CPU": 2})
        with tf.Session(config=two) as sess:
            assert [d.name[-5:] for d in sess.list_devices()] == ["CPU:0", "CPU:1"]
            assert sess.run(on_1) == 4.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="CPU:2.*CPU:0, .*CPU:1"):
                sess.run(on_2)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="CPU:1"):
                sess.run(on_1)
