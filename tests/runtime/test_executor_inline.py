"""Compiled plans write Const, Identity, StopGradient, PlaceholderWithDefault and NoOp
as expressions, and pass attrs as keyword arguments (runtime/inline.py): each is
checked against the node-by-node loop (a traced step), which calls the kernels as
registered, with their attrs bound."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.framework.op_def import define_op, get_op_def
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.runtime.executor import Executor, FunctionLibrary
from tensorweave.runtime.resource_mgr import DeviceContext
from tensorweave.runtime.step import StepState

pytestmark = pytest.mark.usefixtures("fresh_graph")

# Test-only ops whose kernels report the attrs they got, one of each kind, with attr
# names a keyword argument cannot spell ("not-an-identifier", "lambda").
_ATTRS = {"T": None, "scale": 1.0, "not-an-identifier": 0.0, "lambda": 0.0}
_plain = define_op("TestOnlyAttrsPlain", inputs=("x",), attrs=dict(_ATTRS))
_ctx = define_op("TestOnlyAttrsContext", inputs=("x",), attrs=dict(_ATTRS))
_async = define_op("TestOnlyAttrsAsync", inputs=("x",), attrs=dict(_ATTRS))
for _d in (_plain, _ctx, _async):
    _d.shape(lambda x, **attrs: (x.dtype, x.shape))
    _d.no_gradient()


def _mix(x, attrs):
    return np.asarray(x) * attrs["scale"] + attrs["not-an-identifier"] - attrs["lambda"]


@_plain.kernel("CPU")
def _(x, **attrs):
    return _mix(x, attrs)


@_ctx.kernel("CPU", kind="context")
def _(ctx, step, x, **attrs):
    assert ctx.type == "TestOnlyAttrsContext" and step is not None
    return _mix(x, attrs)


@_async.kernel("CPU", kind="async")
def _(ctx, step, done, x, **attrs):
    done(_mix(x, attrs))


def _traced(sess, fetches, feed=None):
    """The node-by-node loop: kernels called through their bound `fn`."""
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    return sess.run(fetches, feed, options=opts, run_metadata=tf.RunMetadata())


def _attr_ops(x, kind):
    attrs = {"T": tf.float32, "scale": 3.0, "not-an-identifier": 10.0, "lambda": 1.0}
    return tf.get_default_graph().create_op(kind, [x], attrs).outputs[0]


def _plan_names(ex):
    ns = ex._fn.__globals__ if not ex.is_async else ex._blocks.blocks[0].fn.__globals__
    return ns


def test_inlined_kernels_give_what_the_kernel_calls_give():
    x = tf.placeholder(tf.float32, [3])
    c = tf.constant([1.0, 2.0, 3.0])
    v = tf.Variable([4.0, 5.0, 6.0])
    d = tf.placeholder_with_default(tf.constant([7.0, 8.0, 9.0]), [3])
    y = tf.stop_gradient(tf.identity(x) + c) * tf.identity(v) + d
    with tf.control_dependencies([y]):
        done = tf.no_op()
    fetches = [y, c, tf.identity(v), d]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fast = sess.run(fetches + [done], {x: [1.0, 1.0, 1.0]})
        slow = _traced(sess, fetches + [done], {x: [1.0, 1.0, 1.0]})
        fed = sess.run(d, {d: [0.0, 0.5, 1.0]})
    for a, b in zip(fast[:4], slow[:4]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fast[0], [(1 + 1) * 4 + 7, (1 + 2) * 5 + 8, (1 + 3) * 6 + 9])
    assert fast[4] is None and slow[4] is None
    np.testing.assert_array_equal(fed, [0.0, 0.5, 1.0])


def test_constants_are_baked_into_the_straight_line_plan():
    c = tf.constant([1.0, 2.0])
    y = tf.identity(c) * 2.0
    lib = FunctionLibrary(DeviceContext("/job:localhost/replica:0/task:0/device:CPU:0"))
    ex = Executor([], [y], [], lib)
    np.testing.assert_array_equal(ex.run([], StepState()), [[2.0, 4.0]])
    ns = _plan_names(ex)
    const_kernel = get_op_def("Const").kernels["CPU"].fn
    # The fast path took: the constants are names of the plan, their kernel is not.
    assert any(k.startswith("C") and v is c.op.get_attr("value") for k, v in ns.items())
    assert not any(v is const_kernel for v in ns.values())
    assert not any(v is get_op_def("Identity").kernels["CPU"].fn for v in ns.values())


def test_constants_are_baked_into_blocks_too():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[2]])
    y = q.dequeue() + tf.identity(tf.constant([1.0, 2.0]))
    with tf.Session() as sess:
        sess.run(q.enqueue([[10.0, 20.0]]))
        sess.run(q.enqueue([[30.0, 40.0]]))
        np.testing.assert_array_equal(sess.run(y), [11.0, 22.0])
        np.testing.assert_array_equal(_traced(sess, y), [31.0, 42.0])


def test_a_replaced_kernel_is_called_not_inlined(monkeypatch):
    reg = get_op_def("Const").kernels["CPU"]
    calls = []

    def counting(*, value, dtype):
        calls.append(value)
        return value + 1  # a different result: inlining it would show

    monkeypatch.setattr(reg, "fn", counting)
    x = tf.placeholder(tf.float32, [])
    y = tf.constant([1.0, 2.0]) * x
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: 1.0}), [2.0, 3.0])
    assert len(calls) == 1


@pytest.mark.parametrize("with_queue", [False, True], ids=["straight_line", "blocks"])
def test_an_inlined_read_of_an_uninitialized_variable_names_its_node(with_queue):
    v = tf.Variable([1.0, 2.0], name="never_initialized")
    read = tf.identity(v, name="the_read")
    if with_queue:
        q = tf.FIFOQueue(1, [tf.float32], shapes=[[2]])
        read = tf.identity(v, name="the_read_after")
        fetch = [read + q.dequeue(), q.enqueue([[0.0, 0.0]])]
    else:
        fetch = read * 1.0
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError) as info:
            sess.run(fetch)
    assert "never_initialized" in str(info.value)
    assert info.value.op is read.op


@pytest.mark.parametrize("kind", ["TestOnlyAttrsPlain", "TestOnlyAttrsContext",
                                  "TestOnlyAttrsAsync"])
def test_attrs_reach_kernels_of_every_kind_as_keywords_or_through_a_dict(kind):
    x = tf.placeholder(tf.float32, [2])
    y = _attr_ops(x, kind)
    q = tf.FIFOQueue(1, [tf.float32], shapes=[[2]])
    z = _attr_ops(q.dequeue(), kind)  # the same op in a block plan
    with tf.Session() as sess:
        got = sess.run(y, {x: [1.0, 2.0]})
        traced = _traced(sess, y, {x: [1.0, 2.0]})
        sess.run(q.enqueue([[1.0, 2.0]]))
        in_block = sess.run(z)
    np.testing.assert_array_equal(got, [12.0, 15.0])  # 3x + 10 - 1
    np.testing.assert_array_equal(traced, got)
    np.testing.assert_array_equal(in_block, got)


def test_shape_of_a_baked_constant_fetch_is_a_copy():
    c = tf.constant([1.0, 2.0])
    with tf.Session() as sess:
        got = sess.run(c)
        got[0] = 100.0  # the fetched array is the caller's to change
        np.testing.assert_array_equal(sess.run(c), [1.0, 2.0])
    assert TensorShape([2]) == c.shape
