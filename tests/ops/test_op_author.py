"""`tensorweave.ops.op_author`: the one module op families define and create ops with."""
import pathlib
import re

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.op_def import get_op_def
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops import op_author

pytestmark = pytest.mark.usefixtures("graph")


def test_create_op_returns_the_operation_with_every_output():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    op = op_author.create_op("Unpack", [x], {"num": 2, "axis": 0})
    assert isinstance(op, Operation)
    assert op.type == "Unpack" and op.name == "Unpack"
    with tf.Session() as sess:
        a, b = sess.run(op.outputs)
    np.testing.assert_array_equal(a, [1.0, 2.0])
    np.testing.assert_array_equal(b, [3.0, 4.0])


def test_create_tensor_returns_the_first_output_named_as_asked():
    x = tf.constant([1.0, -2.0])
    y = op_author.create_tensor("Neg", [x], name="negated")
    assert isinstance(y, Tensor)
    assert y.op.name == "negated" and y.op.type == "Neg"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [-1.0, 2.0])


def test_create_colocated_places_the_update_with_the_variable():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="v")
    with tf.device("/job:worker/task:0"):
        t = op_author.create_colocated("AssignAdd", [v._ref(), tf.constant([1.0, 1.0])],
                                       {"use_locking": False})
    assert t.op.colocation_groups() == [b"loc:@v"]


def test_define_op_registers_in_the_registry():
    op = op_author.define_op("OpAuthorTestDouble", inputs=("x",), attrs={"k": op_author.REQUIRED})
    op.shape(lambda x, *, k: (x.dtype, x.shape))
    op.kernel("CPU")(lambda x, *, k: x * k)
    op.no_gradient()
    assert get_op_def("OpAuthorTestDouble") is op
    y = op_author.create_tensor("OpAuthorTestDouble", [tf.constant([1.0, 2.0])], {"k": 3.0})
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [3.0, 6.0])


def test_no_private_create_helpers_remain_in_ops():
    # One home: op families create ops through op_author, not their own `_create`.
    root = pathlib.Path(op_author.__file__).parent
    found = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if re.search(r"^def _create\(", p.read_text(), re.M)]
    assert not found, f"use tensorweave.ops.op_author instead of a local _create: {found}"
