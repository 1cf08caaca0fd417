"""Numerics checks: tf.is_nan/is_inf/is_finite, tf.check_numerics (and its gradient),
tf.verify_tensor_all_finite, tf.add_check_numerics_ops, the tf.debugging names.

Specification: TF 1.x python/kernel_tests/numerics_test.py and
check_ops / math_ops tests of IsNan, IsInf, IsFinite; our own values.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = [pytest.mark.usefixtures("graph"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]  # numpy on NaN/Inf
NAN, INF = float("nan"), float("inf")


def test_is_nan_is_inf_is_finite():
    x = tf.constant([0.0, NAN, INF, -INF, -2.5])
    with tf.Session() as sess:
        got = sess.run([tf.is_nan(x), tf.is_inf(x), tf.is_finite(x)])
    np.testing.assert_array_equal(got[0], [False, True, False, False, False])
    np.testing.assert_array_equal(got[1], [False, False, True, True, False])
    np.testing.assert_array_equal(got[2], [True, False, False, False, True])
    assert tf.is_nan(x).dtype == tf.bool and tf.is_nan(x).shape.as_list() == [5]
    with pytest.raises(TypeError, match="IsNan"):
        tf.is_nan(tf.constant([1, 2]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_check_numerics_passes_finite_values_through(dtype):
    value = np.array([[1.5, -2.0], [0.0, 3.25]], dtype)
    y = tf.check_numerics(tf.constant(value), "fine")
    with tf.Session() as sess:
        got = sess.run(y)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, value)


@pytest.mark.parametrize("value, found", [
    ([1.0, NAN], "Tensor had NaN values"),
    ([INF, 1.0], "Tensor had Inf values"),
    ([-INF, NAN], "Tensor had Inf and NaN values"),
])
def test_check_numerics_fails_the_step_with_the_message_and_the_op(value, found):
    x = tf.placeholder(tf.float32, [2])
    y = tf.check_numerics(x, "activations of layer 3", name="check_layer3")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"activations of layer 3 : {found}") as info:
            sess.run(y, {x: value})
    assert "check_layer3" in str(info.value)


def test_check_numerics_gradient_checks_the_gradient():
    x = tf.constant([1.0, 2.0])
    y = tf.check_numerics(x, "forward")
    scale = tf.placeholder(tf.float32, [])
    (grad,) = tf.gradients(y * scale, [x])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad, {scale: 3.0}), [3.0, 3.0])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Not a number \(NaN\) or infinity \(Inf\) values detected "
                                 r"in gradient. forward"):
            sess.run(grad, {scale: NAN})


def test_verify_tensor_all_finite():
    x = tf.placeholder(tf.float32, [3])
    y = tf.verify_tensor_all_finite(x, "Input is not a number.")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0, 3.0]}), [1.0, 2.0, 3.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not a number."):
            sess.run(y, {x: [1.0, NAN, 3.0]})


def test_add_check_numerics_ops_names_the_first_bad_tensor():
    x = tf.placeholder(tf.float32, [2], name="x")
    log = tf.log(x, name="log_x")
    total = tf.reduce_sum(log * 2.0, name="total")
    check = tf.add_check_numerics_ops()
    with tf.Session() as sess:
        got, _ = sess.run([total, check], {x: [1.0, np.e]})
        assert got == pytest.approx(2.0)
        # log(0) = -Inf: the check of "log_x:0" reports it, naming the tensor.
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="log_x:0 : Tensor had Inf values"):
            sess.run([total, check], {x: [0.0, 1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="log_x:0 : Tensor had NaN"):
            sess.run(check, {x: [-1.0, 1.0]})


def test_add_check_numerics_ops_checks_only_float_tensors():
    ints = tf.constant([1, 2]) * 2
    floats = tf.cast(ints, tf.float32) / 0.0  # Inf
    check = tf.add_check_numerics_ops()
    checked = {op.get_attr("message") for op in tf.get_default_graph().get_operations()
               if op.type == "CheckNumerics"}
    assert checked == {f"{floats.op.inputs[0].op.name}:0", f"{floats.op.name}:0",
                       f"{floats.op.inputs[1].op.name}:0"}
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=f"{floats.op.name}:0 : Tensor had Inf"):
        sess.run(check)


def test_debugging_namespace():
    assert tf.debugging.check_numerics is tf.check_numerics
    assert tf.debugging.is_nan is tf.is_nan and tf.debugging.is_finite is tf.is_finite
    assert tf.debugging.assert_equal is tf.assert_equal
