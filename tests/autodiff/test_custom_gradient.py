"""tf.custom_gradient in graph mode (TF 1.x's IdentityN + registered gradient): the
cases of TF's CustomGradientTest, nested outputs, variables, training with a custom
gradient, and the errors for misuse."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.autodiff.custom_gradient import custom_gradient
from tensorweave.ops.array.identity_n_ops import identity_n

pytestmark = pytest.mark.usefixtures("graph")


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_trivial_gradient_composes():
    @custom_gradient
    def my_identity(x):
        return tf.identity(x), lambda dy: [3 * dy]

    x = tf.constant(3.0)
    y = my_identity(my_identity(x))
    (dy,) = tf.gradients(y, x)
    assert _run([y, dy]) == [3.0, 9.0]


def test_gradient_is_grad_fn_not_the_forward_graph():
    @custom_gradient
    def my_multiply(x1, x2):
        result = x1 * x2

        def grad(dy):
            return [dy * x1, dy * x2]  # swapped on purpose, as TF's test does
        return result, grad

    x1, x2 = tf.constant(3.0), tf.constant(5.0)
    y = my_multiply(x1, x2)
    assert _run(tf.gradients(y, [x1, x2])) == [3.0, 5.0]
    assert _run(y) == 15.0


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")  # exp(100) in float32
def test_numerically_stable_log1pexp():
    @custom_gradient
    def log1pexp(x):
        e = tf.exp(x)
        return tf.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))

    x = tf.constant([0.0, 100.0])
    (dx,) = tf.gradients(log1pexp(x), x)
    np.testing.assert_allclose(_run(dx), [0.5, 1.0])


def test_graph_holds_an_identity_n_with_the_gradient_name():
    @custom_gradient
    def f(x):
        return x * 2.0, lambda dy: dy

    f(tf.constant(1.0))
    ops = [op for op in tf.get_default_graph().get_operations() if op.type == "IdentityN"]
    assert len(ops) == 1
    assert ops[0].get_attr("_gradient_op_type").startswith("CustomGradient-")
    assert len(ops[0].inputs) == 2  # the result, then the argument


def test_nested_outputs_and_grad_fn_taking_one_gradient_per_leaf():
    seen = []

    @custom_gradient
    def f(x, y):
        out = {"sum": x + y, "pair": (x * y, x - y)}

        def grad(d_pair0, d_pair1, d_sum):  # flattened in sorted-key order
            seen.append(3)
            return d_sum + 10 * d_pair0 + 100 * d_pair1, None
        return out, grad

    x, y = tf.constant(2.0), tf.constant(4.0)
    out = f(x, y)
    assert set(out) == {"sum", "pair"} and isinstance(out["pair"], tuple)
    loss = out["sum"] + out["pair"][0] + out["pair"][1]
    dx, dy = tf.gradients(loss, [x, y])
    assert dy is None  # grad_fn said None for y
    assert _run([out["sum"], out["pair"][0], dx]) == [6.0, 8.0, 111.0]
    assert seen == [3]


def test_variables_reach_grad_fn_and_get_its_gradients():
    @custom_gradient
    def f(x):
        out = tf.layers.dense(x, 3, use_bias=False)

        def grad(out_grad, variables=None):
            assert len(variables) == 1
            grads = tf.gradients(out, [x, variables[0]], grad_ys=out_grad)
            return grads[0], [tf.ones((4, 3))]
        return out, grad

    x = tf.ones((2, 4))
    with tf.variable_scope("f") as vs:
        y = f(x)
    all_vars = [v for v in tf.global_variables() if v.name.startswith(vs.name)]
    assert len(all_vars) == 1
    gx, gw = tf.gradients(y, [x, all_vars[0]])
    assert gx is not None and gw is not None
    assert _run(tf.reduce_sum(gw)) == 12.0


def test_training_applies_the_custom_variable_gradient():
    v = tf.Variable([1.0, 2.0])

    @custom_gradient
    def scaled(x):
        def grad(dy, variables):
            return dy * 0.0, [tf.constant([10.0, 20.0])]
        return x * v, grad

    loss = tf.reduce_sum(scaled(tf.constant([1.0, 1.0])))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        np.testing.assert_allclose(sess.run(v), [0.0, 0.0])


def test_grad_fn_errors_surface_from_gradients():
    @custom_gradient
    def f(x):
        def grad(_):
            raise RuntimeError("from grad_fn")
        return x, grad

    x = tf.constant(1.0)
    with pytest.raises(RuntimeError, match="from grad_fn"):
        tf.gradients(f(x), x)


def test_wrong_number_of_gradients_is_named():
    @custom_gradient
    def f(x, y):
        return x * y, lambda dy: [dy, dy, dy]

    x, y = tf.constant(1.0), tf.constant(2.0)
    with pytest.raises(ValueError, match=r"grad_fn of f returned 3 gradients for 2 inputs"):
        tf.gradients(f(x, y), [x])

    v = tf.Variable(1.0)

    @custom_gradient
    def g(x):
        return x * v, lambda dy, variables: (dy, [dy, dy])

    with pytest.raises(ValueError, match=r"2 variable gradients for 1 variables"):
        tf.gradients(g(x), [x])


def test_variables_need_a_variables_argument():
    v = tf.Variable(1.0, name="weight")

    @custom_gradient
    def f(x):
        return x * v, lambda dy: dy

    with pytest.raises(TypeError, match=r"reads variables \['weight:0'\].*`variables`"):
        f(tf.constant(1.0))


def test_keyword_arguments_are_refused():
    @custom_gradient
    def f(x, scale=1.0):
        return x * scale, lambda dy: dy

    with pytest.raises(ValueError, match=r"keyword arguments \['scale'\]; pass them "
                                         "positionally"):
        f(tf.constant(1.0), scale=2.0)


def test_plain_identity_n_passes_values_and_gradients():
    x, y = tf.constant([1.0, 2.0]), tf.constant(3)
    a, b = identity_n([x, y])
    assert a.dtype == tf.float32 and b.dtype == tf.int32
    (gx,) = tf.gradients(tf.reduce_sum(a * a), [x])
    va, vb, vg = _run([a, b, gx])
    np.testing.assert_allclose(va, [1.0, 2.0])
    assert vb == 3
    np.testing.assert_allclose(vg, [2.0, 4.0])
    (single,) = identity_n([x])
    np.testing.assert_allclose(_run(single), [1.0, 2.0])
