"""tf.cond / tf.while_loop / tf.case (functional If and While), grouping and assertions."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.func_graph import FuncGraph, func_graph_from_py_func


def run(fetches, feed=None, graph=None):
    with tf.Session(graph=graph or tf.get_default_graph()) as sess:
        return sess.run(fetches, feed)


# ---- FuncGraph -----------------------------------------------------------------
def test_func_graph_captures_outer_tensor_once(graph):
    c = tf.constant(2.0, name="c")
    body = func_graph_from_py_func("f", lambda x: x * c + c, [tf.float32], graph)
    assert isinstance(body, FuncGraph) and body.building_function
    assert body.outer_graph is graph
    assert len(body.inputs) == 2  # the argument + one capture of c (reused)
    assert [outer for outer, _ in body.captures] == [c]
    assert body.inputs[1].op.type == "Placeholder"


def test_func_graph_inherits_seed(graph):
    graph.seed = 1234
    body = func_graph_from_py_func("f", lambda: tf.constant(1), [], graph)
    assert body.seed == 1234


def test_nested_func_graph_captures_through_outer():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(5.0)
        outer = FuncGraph("outer", g)
        inner = FuncGraph("inner", outer)
        t = inner.capture(c)
        assert t.graph is inner
        assert [o for o, _ in outer.captures] == [c]
        assert [o for o, _ in inner.captures] == [c]


def test_plain_graph_refuses_foreign_tensor():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0)
    with g2.as_default():
        with pytest.raises(ValueError, match="same graph"):
            tf.identity(a)


# ---- cond --------------------------------------------------------------------------
def test_cond_takes_branch(graph):
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.cond(x > 0, lambda: x * 2.0, lambda: x - 10.0)
    assert y.op.type == "If"
    assert run(y, {x: 3.0}) == 6.0
    assert run(y, {x: -1.0}) == -11.0


def test_cond_only_taken_branch_runs(graph):
    p = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32, [])
    bad = tf.Assert(tf.constant(False), ["false branch ran"])

    def false_fn():
        with tf.control_dependencies([tf.Assert(tf.constant(False), ["false branch ran"])]):
            return tf.identity(x)
    y = tf.cond(p, lambda: x + 1.0, false_fn)
    assert run(y, {p: True, x: 1.0}) == 2.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="false branch ran"):
        run(y, {p: False, x: 1.0})
    del bad


def test_cond_nested_structure_and_shapes(graph):
    p = tf.placeholder(tf.bool, [])
    a = tf.constant([1.0, 2.0])
    b = tf.constant([3.0, 4.0, 5.0])
    out = tf.cond(p, lambda: {"v": a, "t": (a, tf.constant(1))},
                  lambda: {"v": b, "t": (b, tf.constant(2))})
    assert set(out) == {"v", "t"} and isinstance(out["t"], tuple)
    assert out["v"].shape.as_list() == [None]  # lengths 2 vs 3 merge to unknown
    r = run(out, {p: False})
    np.testing.assert_allclose(r["v"], [3, 4, 5])
    assert r["t"][1] == 2


def test_cond_single_element_list_unpacked_unless_strict(graph):
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)])
    assert isinstance(y, tf.Tensor)
    ys = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)], strict=True)
    assert isinstance(ys, list) and len(ys) == 1


def test_cond_structure_mismatch_names_both(graph):
    p = tf.placeholder(tf.bool, [])
    with pytest.raises(ValueError, match="true_fn returned .*false_fn returned"):
        tf.cond(p, lambda: (tf.constant(1.0), tf.constant(2.0)), lambda: tf.constant(1.0))


def test_cond_dtype_mismatch_names_both(graph):
    p = tf.placeholder(tf.bool, [])
    with pytest.raises(TypeError, match="float32.*int32"):
        tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(1))


def test_cond_rejects_python_bool_and_non_callables(graph):
    with pytest.raises(TypeError, match="Python bool"):
        tf.cond(True, lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="callable"):
        tf.cond(tf.constant(True), 1, lambda: 2)


def test_cond_with_op_output(graph):
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: tf.no_op(), lambda: tf.no_op())
    assert isinstance(r, tf.Operation) and r.type == "If"
    run(r, {p: True})


def test_cond_captured_python_constant_and_outer_passthrough(graph):
    p = tf.placeholder(tf.bool, [])
    a = tf.constant(7.0)
    y = tf.cond(p, lambda: a, lambda: 1.0)  # outer tensor returned directly; python float
    assert run(y, {p: True}) == 7.0
    assert run(y, {p: False}) == 1.0


def test_nested_cond(graph):
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 0, lambda: tf.cond(x > 10, lambda: x * 100.0, lambda: x * 10.0),
                lambda: -x)
    assert run(y, {x: 20.0}) == 2000.0
    assert run(y, {x: 2.0}) == 20.0
    assert run(y, {x: -2.0}) == 2.0


def test_cond_gradient(graph):
    x = tf.placeholder(tf.float32, [])
    w = tf.constant(3.0)
    y = tf.cond(x > 0, lambda: x * x * w, lambda: -x)
    dx, dw = tf.gradients(y, [x, w])
    assert dx.op.type == "If"
    assert run([dx, dw], {x: 2.0}) == [12.0, 4.0]
    r = run(dx, {x: -2.0})
    assert r == -1.0
    # dw is zero on the branch that does not use w (a zero, not None, since one branch does)
    assert run(dw, {x: -2.0}) == 0.0


def test_nested_cond_gradient(graph):
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 0, lambda: tf.cond(x > 10, lambda: x * x, lambda: 3.0 * x), lambda: -x)
    (dx,) = tf.gradients(y, [x])
    assert run(dx, {x: 20.0}) == 40.0
    assert run(dx, {x: 2.0}) == 3.0
    assert run(dx, {x: -2.0}) == -1.0


def test_cond_gradient_matches_finite_differences(graph):
    x = tf.placeholder(tf.float64, [3])
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.reduce_sum(tf.exp(x) * x),
                lambda: tf.reduce_sum(x * x * x))
    (dx,) = tf.gradients(y, [x])
    for v in (np.array([0.3, 0.5, 0.1]), np.array([-0.3, -0.5, 0.1])):
        got = run(dx, {x: v})
        eps = 1e-6
        num = [(run(y, {x: v + eps * e}) - run(y, {x: v - eps * e})) / (2 * eps)
               for e in np.eye(3)]
        np.testing.assert_allclose(got, num, rtol=1e-5)


def test_case(graph):
    x = tf.placeholder(tf.int32, [])
    r = tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))],
                default=lambda: tf.constant(0))
    assert [run(r, {x: v}) for v in (-5, 0, 5)] == [-1, 0, 1]


def test_case_exclusive_checks_at_run_time(graph):
    x = tf.placeholder(tf.int32, [])
    r = tf.case([(x > 0, lambda: tf.constant(1)), (x > 1, lambda: tf.constant(2))],
                default=lambda: tf.constant(0), exclusive=True)
    assert run(r, {x: 1}) == 1
    with pytest.raises(tf.errors.InvalidArgumentError, match="exclusive"):
        run(r, {x: 5})


def test_cond_control_dependency_on_outer_op_is_lifted(graph):
    v = tf.placeholder(tf.float32, [])
    outer = tf.identity(v, name="outer")
    p = tf.placeholder(tf.bool, [])

    def branch():
        with tf.control_dependencies([outer]):
            return tf.constant(1.0)
    y = tf.cond(p, branch, lambda: tf.constant(2.0))
    assert outer.op in y.op.control_inputs


# ---- while_loop --------------------------------------------------------------------
def test_while_loop_basic(graph):
    i, s = tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s + i),
                         [tf.constant(0), tf.constant(0)])
    assert i.op.type == "While"
    assert run([i, s]) == [10, 45]


def test_while_loop_single_var_and_one_element_list(graph):
    r = tf.while_loop(lambda i: i < 5, lambda i: i + 2, tf.constant(0))
    assert isinstance(r, tf.Tensor) and run(r) == 6
    r2 = tf.while_loop(lambda i: i < 5, lambda i: i + 2, [tf.constant(0)])
    assert isinstance(r2, tf.Tensor) and run(r2) == 6  # TF1 unwraps a one-element list
    r3 = tf.while_loop(lambda i: i < 5, lambda i: [i + 2], [tf.constant(0)],
                       return_same_structure=True)
    assert isinstance(r3, list) and run(r3) == [6]


def test_while_loop_nested_structure_and_captures(graph):
    step = tf.placeholder(tf.float32, [], name="step")
    out = tf.while_loop(lambda s: s["n"] < 3,
                        lambda s: {"n": s["n"] + 1, "acc": (s["acc"][0] + step,)},
                        [{"n": tf.constant(0), "acc": (tf.constant(0.0),)}])
    assert isinstance(out, dict)
    r = run(out, {step: 1.5})
    assert r["n"] == 3 and r["acc"][0] == 4.5


def test_while_loop_maximum_iterations(graph):
    i = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [tf.constant(0)],
                      maximum_iterations=7)
    assert run(i) == 7
    n = tf.placeholder(tf.int32, [])
    j = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [tf.constant(0)],
                      maximum_iterations=n)
    assert run(j, {n: 4}) == 4


def test_while_loop_shape_invariant_violation_names_var(graph):
    x = tf.constant([1.0], name="xs")
    with pytest.raises(ValueError, match=r"xs:0.*shape_invariants"):
        tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x], 0), [x])


def test_while_loop_shape_invariants_allow_growth(graph):
    x = tf.constant([1.0], name="xs")
    r = tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x], 0), [x],
                      shape_invariants=[tf.TensorShape([None])])
    assert r.shape.as_list() == [None]
    assert run(r).shape == (8,)


def test_while_loop_dtype_change_is_type_error(graph):
    with pytest.raises(TypeError, match="int32.*float32"):
        tf.while_loop(lambda i: i < 3, lambda i: tf.cast(i, tf.float32), [tf.constant(0)])


def test_while_loop_structure_mismatch(graph):
    with pytest.raises(ValueError, match="same structure"):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,),
                      [tf.constant(0), tf.constant(1)])


def test_while_loop_body_with_cond_and_nested_loop(graph):
    def body(i, acc):
        inner = tf.while_loop(lambda k: k < i, lambda k: k + 1, [tf.constant(0)])
        acc = tf.cond(tf.equal(i % 2, 0), lambda: acc + inner, lambda: acc)
        return i + 1, acc
    _, acc = tf.while_loop(lambda i, a: i < 6, body, [tf.constant(0), tf.constant(0)])
    assert run(acc) == 0 + 2 + 4


def test_while_gradient_power(graph):
    x = tf.placeholder(tf.float32, [])
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x),
                         [tf.constant(0), tf.constant(1.0)])
    (dx,) = tf.gradients(y, [x])  # d(x^3)/dx = 3x^2
    assert run(y, {x: 2.0}) == 8.0
    assert run(dx, {x: 2.0}) == pytest.approx(12.0)


def test_while_gradient_wrt_initial_value_and_capture(graph):
    x0 = tf.placeholder(tf.float32, [2])
    w = tf.placeholder(tf.float32, [2])
    _, x = tf.while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, x * w + 1.0),
                         [tf.constant(0), x0])
    loss = tf.reduce_sum(x)
    dx0, dw = tf.gradients(loss, [x0, w])
    xv, wv = np.array([0.5, -1.0], np.float32), np.array([0.9, 1.1], np.float32)
    gx0, gw = run([dx0, dw], {x0: xv, w: wv})
    np.testing.assert_allclose(gx0, wv ** 4, rtol=1e-5)

    def f(wv_):
        v = xv.astype(np.float64)
        for _ in range(4):
            v = v * wv_ + 1.0
        return v.sum()
    eps = 1e-4
    num = [(f(wv + eps * e) - f(wv - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(gw, num, rtol=1e-3)


def test_while_gradient_zero_iterations(graph):
    x = tf.placeholder(tf.float32, [])
    y = tf.while_loop(lambda y: y < 0.0, lambda y: y * 2.0, [x])
    (dx,) = tf.gradients(y, [x])
    assert run(dx, {x: 5.0}) == 1.0


def test_while_loop_timeout_is_deadline_exceeded(graph):
    i = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [tf.constant(0)])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(i, options=tf.RunOptions(timeout_in_ms=200))


def test_gradient_through_cond_inside_while_and_while_inside_cond(graph):
    x = tf.placeholder(tf.float32, [])

    def body(i, y):
        return i + 1, tf.cond(tf.equal(i % 2, 0), lambda: y * x, lambda: y + x)
    _, y = tf.while_loop(lambda i, y: i < 4, body, [tf.constant(0), tf.constant(1.0)])
    (dy,) = tf.gradients(y, [x])  # y = 2x^2 + x
    z = tf.cond(x > 0, lambda: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x),
                                             [0, 1.0])[1], lambda: x)
    (dz,) = tf.gradients(z, [x])  # x^3 for x > 0
    assert run([y, dy, z, dz], {x: 2.0}) == [10.0, 9.0, 8.0, 12.0]
    assert run(dz, {x: -2.0}) == 1.0


def test_cond_gradient_of_gather_is_dense_in_branch(graph):
    x = tf.placeholder(tf.float32, [])
    params = tf.placeholder(tf.float32, [4, 2])
    q = tf.cond(x > 0, lambda: tf.reduce_sum(tf.gather(params, [0, 2, 2])),
                lambda: tf.reduce_sum(params))
    (dp,) = tf.gradients(q, [params])
    np.testing.assert_array_equal(run(dp, {x: 1.0, params: np.ones((4, 2))}),
                                  [[1, 1], [0, 0], [2, 2], [0, 0]])
    np.testing.assert_array_equal(run(dp, {x: -1.0, params: np.ones((4, 2))}), np.ones((4, 2)))


def test_while_back_prop_false_stops_gradient(graph):
    x = tf.placeholder(tf.float32, [])
    r = tf.while_loop(lambda a: a < 10.0, lambda a: a * 2.0, [x], back_prop=False)
    assert tf.gradients(r, [x]) == [None]
    assert run(r, {x: 3.0}) == 12.0


def test_while_gradient_reuses_forward_random_draws(graph):
    x = tf.placeholder(tf.float32, [])

    def body(i, y):
        return i + 1, y * x * tf.random_uniform([], 0.5, 1.5)
    _, y = tf.while_loop(lambda i, y: i < 3, body, [tf.constant(0), tf.constant(1.0)])
    (dx,) = tf.gradients(y, [x])
    # y = x^3 * r0 * r1 * r2, so dy/dx = 3 y / x -- only if the gradient sees the same draws
    with tf.Session() as sess:
        for _ in range(3):
            yv, dv = sess.run([y, dx], {x: 2.0})
            assert dv == pytest.approx(3 * yv / 2.0, rel=1e-5)


def test_assign_inside_while_body_runs_each_iteration(graph):
    counter = tf.Variable(0, name="counter")

    def body(i):
        with tf.control_dependencies([tf.assign_add(counter, 1)]):
            return i + 1
    r = tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(r) == 3
        assert sess.run(counter) == 3
