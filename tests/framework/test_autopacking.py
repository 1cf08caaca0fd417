"""Auto-packing: wherever a tensor is accepted, a (nested) list or tuple mixing
tensors, variables and Python numbers is packed with `Pack` ops, with TF's rules.

The dtype is the requested one, else the first tensor's (Python numbers become
constants of it); a tensor of another dtype is a TypeError naming it and its
position; a requested dtype other than the list's casts its tensors. Lists without
a tensor are plain constants, as before.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _run(t):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(t)


def test_reduce_mean_over_a_python_list_of_tensors():
    # the AGN program's `tf.reduce_mean(grad_list, axis=0)`
    grads = [tf.constant([1.0, 2.0]) * k for k in (1.0, 2.0, 3.0)]
    mean = tf.reduce_mean(grads, axis=0)
    assert mean.op.inputs[0].op.type == "Pack"
    np.testing.assert_allclose(_run(mean), [2.0, 4.0])


def test_tensors_variables_and_numbers_mix_in_one_list():
    a = tf.constant(1.5)
    v = tf.Variable(2.5)
    packed = tf.convert_to_tensor([a, v, 4, 0.5])
    assert packed.dtype == tf.float32 and packed.shape.as_list() == [4]
    np.testing.assert_allclose(_run(packed), [1.5, 2.5, 4.0, 0.5])


def test_nested_lists_and_tuples_pack_level_by_level():
    a = tf.constant(1)
    packed = tf.convert_to_tensor(((a, 2), [3, 4]))
    assert packed.dtype == tf.int32 and packed.shape.as_list() == [2, 2]
    # the level holding the tensor is a Pack of its own; the plain level a constant
    kinds = [t.op.type for t in packed.op.inputs]
    assert kinds == ["Pack", "Const"]
    np.testing.assert_array_equal(_run(packed), [[1, 2], [3, 4]])


def test_the_first_tensor_sets_the_dtype_of_python_numbers():
    assert tf.convert_to_tensor([tf.constant(1, tf.int64), 2]).dtype == tf.int64
    assert tf.convert_to_tensor([3.0, tf.constant(1.0, tf.float64)]).dtype == tf.float64


def test_a_tensor_of_another_dtype_is_an_error_naming_it_and_its_place():
    f, i = tf.constant(1.0, name="f"), tf.constant(1, name="i")
    with pytest.raises(TypeError, match=r"Cannot convert a list containing a tensor of "
                                        r"dtype int32 to float32") as info:
        tf.convert_to_tensor([[f, 1.0], [2.0, i]])
    assert "'i:0'" in str(info.value) and "[1][1]" in str(info.value)


def test_a_number_the_dtype_cannot_hold_is_an_error_naming_its_place():
    with pytest.raises(TypeError, match=r"2\.5.*element \[1\].*int32"):
        tf.convert_to_tensor([tf.constant(1), 2.5])


def test_a_requested_dtype_casts_the_lists_tensors():
    packed = tf.convert_to_tensor([tf.constant(1), 2], dtype=tf.float32)
    assert packed.dtype == tf.float32
    np.testing.assert_allclose(_run(packed), [1.0, 2.0])


def test_the_name_names_the_pack_op():
    packed = tf.convert_to_tensor([tf.constant(1.0), 2.0], name="grads")
    assert packed.op.name == "grads" and packed.op.type == "Pack"
    assert packed.op.inputs[1].op.name == "grads/1"


def test_lists_without_tensors_stay_constants():
    c = tf.convert_to_tensor([[1, 2], [3, 4]])
    assert c.op.type == "Const" and c.dtype == tf.int32


def test_op_arguments_accept_packed_lists():
    a, b = tf.constant(1.0), tf.constant(2.0)
    added = tf.add([a, b], 1.0)
    product = tf.matmul([[a, b]], [[1.0], [1.0]])
    stacked = tf.concat([[a, b], [3.0]], axis=0)
    maximum = tf.reduce_max([[a, 5.0], [b, 0.0]], axis=1)
    got = _run([added, product, stacked, maximum])
    np.testing.assert_allclose(got[0], [2.0, 3.0])
    np.testing.assert_allclose(got[1], [[3.0]])
    np.testing.assert_allclose(got[2], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(got[3], [5.0, 2.0])


def test_shape_arguments_pack_int64_tensors_and_refuse_mixed_ones():
    x = tf.zeros([6])
    n64 = tf.constant(2, tf.int64)
    assert tf.reshape(x, [n64, 3]).shape.as_list() == [2, 3]
    with pytest.raises(TypeError, match=r"dtype int32 to int64"):
        tf.reshape(x, [n64, tf.constant(3)])


def test_nested_shape_and_axis_arguments_holding_tensors():
    x = tf.reshape(tf.range(6.0), [2, 3])
    n, zero = tf.constant(1), tf.constant(0)
    padded = tf.pad(x, [[0, n], [zero, 0]])             # nested: paddings
    summed = tf.reduce_sum(x, axis=[zero])               # a reduction's axis list
    by_var = tf.reshape(x, [tf.Variable(3), -1])          # a variable in a shape
    spread = tf.broadcast_to(tf.constant(1.0), [n, 3])
    got = _run([padded, summed, by_var, spread])
    assert got[0].shape == (3, 3) and got[0][2].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(got[1], [3.0, 5.0, 7.0])
    assert got[2].shape == (3, 2)
    np.testing.assert_allclose(got[3], [[1.0, 1.0, 1.0]])


def test_ops_that_take_references_still_pack_lists():
    # identity converts its input "as a reference" to snapshot variables; a list has no
    # reference to keep, so it is packed like anywhere else (as TF's identity does)
    out = tf.identity([[tf.constant(1.0), 2.0]])
    np.testing.assert_allclose(_run(out), [[1.0, 2.0]])


def test_contains_tensor_and_constant_value_see_through_nesting():
    from tensorweave.framework.convert import constant_value, contains_tensor
    t = tf.constant(1)
    assert contains_tensor([[0, t], [0, 0]]) and contains_tensor((tf.Variable(1.0),))
    assert not contains_tensor([[1, 2], [3, 4]]) and not contains_tensor(t)
    assert constant_value([[0, t]]) is None  # known only when the Pack runs
    assert constant_value([[0, 1]]).tolist() == [[0, 1]]
