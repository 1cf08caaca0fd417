"""tf.group, tf.tuple, tf.Assert, the tf.assert_* family and tf.Print."""
import numpy as np
import pytest

import tensorweave as tf


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# ---- group / tuple / Assert ------------------------------------------------------
def test_group_and_tuple(graph):
    a = tf.constant(1.0)
    b = tf.identity(a)
    grp = tf.group(a, [b.op], name="both")
    assert grp.type == "NoOp" and grp.name == "both"
    assert {op.name for op in grp.control_inputs} == {a.op.name, b.op.name}
    a2, none, b2 = tf.tuple([a, None, b])
    assert none is None
    assert run([a2, b2]) == [1.0, 1.0]
    assert a2.op.control_inputs and a2.op.control_inputs[0].type == "NoOp"


def test_assert_prints_data(graph):
    x = tf.placeholder(tf.float32, [3])
    check = tf.Assert(tf.reduce_all(x > 0), ["x must be positive:", x], summarize=2)
    assert check.type == "Assert"
    with tf.control_dependencies([check]):
        y = tf.identity(x)
    np.testing.assert_allclose(run(y, {x: [1, 2, 3]}), [1, 2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"assertion failed: x must be positive: \[1.0 -2.0\.\.\.\]"):
        run(y, {x: [1, -2, 3]})


def test_assert_equal_static_and_dynamic(graph):
    with pytest.raises(tf.errors.InvalidArgumentError, match="x == y"):
        tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3]))
    ok = tf.assert_equal(tf.constant(1), tf.constant(1))
    run(ok)
    p = tf.placeholder(tf.int32, [])
    chk = tf.assert_equal(p, 3, message="p must be 3")
    run(chk, {p: 3})
    with pytest.raises(tf.errors.InvalidArgumentError, match="p must be 3"):
        run(chk, {p: 4})


def test_assert_comparisons(graph):
    p = tf.placeholder(tf.float32, [None])
    checks = {"less": tf.assert_less(p, 5.0), "greater": tf.assert_greater(p, 0.0),
              "nonneg": tf.assert_non_negative(p), "pos": tf.assert_positive(p)}
    run(list(checks.values()), {p: [1.0, 2.0]})
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(checks["less"], {p: [1.0, 7.0]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be positive"):
        run(checks["pos"], {p: [0.0]})
    run(checks["nonneg"], {p: [0.0]})
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(checks["nonneg"], {p: [-1.0]})


def test_assert_rank(graph):
    with pytest.raises(ValueError, match="must have rank 3"):
        tf.assert_rank(tf.zeros([2, 2]), 3)
    tf.assert_rank(tf.zeros([2, 2]), 2)
    p = tf.placeholder(tf.float32)
    chk = tf.assert_rank(p, 1)
    run(chk, {p: [1.0]})
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(chk, {p: [[1.0]]})


def test_print_passes_value_through(graph, capsys):
    x = tf.constant([1, 2])
    y = tf.Print(x, [x], "x is ")
    np.testing.assert_array_equal(run(y), [1, 2])
    assert "x is [1 2]" in capsys.readouterr().err
