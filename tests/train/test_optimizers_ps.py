"""The parameter-server optimizers: FTRL (with l1, l2, l2 shrinkage, lr power),
ProximalAdagrad, ProximalGradientDescent, Adadelta and LazyAdam, dense and sparse,
against reference formulas written here from TF's kernel documentation.

Specification: TF 1.x training/ftrl_test.py, proximal_adagrad_test.py,
proximal_gradient_descent_test.py, adadelta_test.py and
contrib/opt/python/training/lazy_adam_optimizer_test.py (what they check: several
steps, dense and sparse, slot names, argument errors). Our own values; a scratch run
against real TF 2.21 agreed to float32 rounding (see the anchors below).
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")

VAR0 = np.array([[1.0, 2.0], [4.0, 3.0], [-0.5, 0.25]])
GRADS = [np.array([[0.1, 0.2], [0.01, 0.02], [-0.3, 0.4]]),
         np.array([[-0.2, 0.05], [0.3, -0.1], [0.0, 0.7]]),
         np.array([[0.4, -0.4], [0.02, 0.03], [0.1, 0.1]])]
ROWS = np.array([2, 0, 2])  # sparse steps: index 2 twice, so its rows are summed


# ---- reference formulas (TF's training_ops documentation) -------------------------------
def ftrl(s, g, lr, l1=0.0, l2=0.0, shrink=0.0, power=-0.5, init=0.1):
    var = s["var"]
    accum = s.setdefault("accum", np.full_like(var, init))
    linear = s.setdefault("linear", np.zeros_like(var))
    new_accum = accum + g * g
    linear += g + 2 * shrink * var - (new_accum ** -power - accum ** -power) / lr * var
    quadratic = new_accum ** -power / lr + 2 * l2
    s["var"] = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / quadratic, 0.0)
    s["accum"] = new_accum


def proximal_adagrad(s, g, lr, l1=0.0, l2=0.0, init=0.1):
    s["accum"] = s.get("accum", np.full_like(s["var"], init)) + g * g
    step = lr / np.sqrt(s["accum"])
    prox = s["var"] - step * g
    s["var"] = np.sign(prox) * np.maximum(np.abs(prox) - step * l1, 0) / (1 + step * l2)


def proximal_gd(s, g, lr, l1=0.0, l2=0.0):
    prox = s["var"] - lr * g
    s["var"] = np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0) / (1 + lr * l2)


def adadelta(s, g, lr, rho, eps):
    accum = rho * s.get("accum", 0.0) + (1 - rho) * g * g
    update = np.sqrt(s.get("accum_update", 0.0) + eps) / np.sqrt(accum + eps) * g
    s["accum"], s["var"] = accum, s["var"] - lr * update
    s["accum_update"] = rho * s.get("accum_update", 0.0) + (1 - rho) * update * update


def reference(rule, sparse, **hyper):
    """Runs `rule` over GRADS; sparse steps touch only ROWS' (summed) rows."""
    state = {"var": VAR0.copy()}
    for g in GRADS:
        if not sparse:
            rule(state, g, **hyper)
            continue
        uniq = np.unique(ROWS)
        summed = np.stack([g[ROWS == r].sum(0) for r in uniq])
        rows = {k: v[uniq] for k, v in _with_slots(rule, state, hyper).items()}
        rule(rows, summed, **hyper)
        for k, v in rows.items():
            state[k][uniq] = v
    return state["var"]


def _with_slots(rule, state, hyper):
    # Slots start full-size so that untouched rows keep their initial values.
    init = hyper.get("init", 0.1)
    if rule in (ftrl, proximal_adagrad):
        state.setdefault("accum", np.full_like(VAR0, init))
    if rule is ftrl:
        state.setdefault("linear", np.zeros_like(VAR0))
    if rule is adadelta:
        state.setdefault("accum", np.zeros_like(VAR0))
        state.setdefault("accum_update", np.zeros_like(VAR0))
    return state


def run(opt, sparse, dtype=tf.float64, init=VAR0):
    var = tf.Variable(init.astype(dtype.as_numpy_dtype))
    g = tf.placeholder(dtype, [3, 2])
    grad = tf.IndexedSlices(g, tf.constant(ROWS, tf.int64), tf.constant([3, 2])) if sparse else g
    train = opt.apply_gradients([(grad, var)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in GRADS:
            sess.run(train, {g: step})
        return sess.run(var), opt


CASES = [
    ("ftrl", lambda: tf.train.FtrlOptimizer(3.0), ftrl, dict(lr=3.0)),
    ("ftrl_l1_l2", lambda: tf.train.FtrlOptimizer(
        3.0, l1_regularization_strength=0.001, l2_regularization_strength=2.0),
     ftrl, dict(lr=3.0, l1=0.001, l2=2.0)),
    ("ftrl_shrinkage", lambda: tf.train.FtrlOptimizer(
        3.0, l1_regularization_strength=0.001, l2_regularization_strength=2.0,
        l2_shrinkage_regularization_strength=0.1),
     ftrl, dict(lr=3.0, l1=0.001, l2=2.0, shrink=0.1)),
    ("ftrl_power", lambda: tf.train.FtrlOptimizer(
        0.5, learning_rate_power=-0.3, initial_accumulator_value=0.3,
        l1_regularization_strength=0.05),
     ftrl, dict(lr=0.5, power=-0.3, init=0.3, l1=0.05)),
    ("proximal_adagrad", lambda: tf.train.ProximalAdagradOptimizer(
        0.5, l1_regularization_strength=0.05, l2_regularization_strength=0.2),
     proximal_adagrad, dict(lr=0.5, l1=0.05, l2=0.2)),
    ("proximal_gd", lambda: tf.train.ProximalGradientDescentOptimizer(
        0.5, l1_regularization_strength=0.05, l2_regularization_strength=0.2),
     proximal_gd, dict(lr=0.5, l1=0.05, l2=0.2)),
    ("proximal_gd_plain", lambda: tf.train.ProximalGradientDescentOptimizer(3.0),
     proximal_gd, dict(lr=3.0)),
    ("adadelta", lambda: tf.train.AdadeltaOptimizer(1.0, rho=0.95, epsilon=1e-6),
     adadelta, dict(lr=1.0, rho=0.95, eps=1e-6)),
]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name, make, rule, hyper", CASES, ids=[c[0] for c in CASES])
def test_optimizer_matches_its_reference_formula(name, make, rule, hyper, sparse):
    got, _ = run(make(), sparse)
    # Python-float hyperparameters become float32 tensors (as in TF), hence not 1e-12.
    np.testing.assert_allclose(got, reference(rule, sparse, **hyper), rtol=1e-7, atol=1e-9)
    if sparse:  # row 1 was never touched
        np.testing.assert_array_equal(got[1], VAR0[1])


def test_values_real_tensorflow_printed_for_the_same_steps():
    # Anchors from a scratch run of TF 2.21's compat.v1 optimizers (float32) on VAR0,
    # GRADS and ROWS: FTRL with l1=0.001, l2=2, shrinkage 0.1, lr=3; Adadelta sparse.
    ftrl_opt = tf.train.FtrlOptimizer(3.0, l1_regularization_strength=0.001,
                                      l2_regularization_strength=2.0,
                                      l2_shrinkage_regularization_strength=0.1)
    got, _ = run(ftrl_opt, sparse=True, dtype=tf.float32)
    np.testing.assert_allclose(got, [[-0.11980596, -0.07642803], [4.0, 3.0],
                                     [-0.00845019, -0.22929958]], rtol=2e-5)
    got, _ = run(tf.train.AdadeltaOptimizer(1.0, rho=0.95, epsilon=1e-6), sparse=True,
                 dtype=tf.float32)
    np.testing.assert_allclose(got, [[0.98928559, 1.99925017], [4.0, 3.0],
                                     [-0.49777511, 0.24300139]], rtol=2e-6)


def test_ftrl_slots_and_the_v2_op_only_with_shrinkage():
    _, opt = run(tf.train.FtrlOptimizer(1.0, initial_accumulator_value=0.5), sparse=False)
    assert opt.get_slot_names() == ["accum", "linear"]
    assert [v.op.name for v in opt.variables()] == ["Variable/Ftrl", "Variable/Ftrl_1"]
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "ApplyFtrl" in types and "ApplyFtrlV2" not in types
    run(tf.train.FtrlOptimizer(1.0, l2_shrinkage_regularization_strength=0.5), sparse=True)
    assert "SparseApplyFtrlV2" in {op.type for op in tf.get_default_graph().get_operations()}


@pytest.mark.parametrize("kwargs, message", [
    (dict(learning_rate_power=0.5), "learning_rate_power 0.5 needs to be less than or equal"),
    (dict(initial_accumulator_value=-0.1), "initial_accumulator_value -0.1 needs to be"),
    (dict(l1_regularization_strength=-1.0), "l1_regularization_strength -1.0"),
    (dict(l2_regularization_strength=-1.0), "l2_regularization_strength -1.0"),
    (dict(l2_shrinkage_regularization_strength=-1.0), "l2_shrinkage_regularization_strength"),
])
def test_ftrl_rejects_out_of_range_hyperparameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tf.train.FtrlOptimizer(0.1, **kwargs)


def test_proximal_adagrad_and_adadelta_slots():
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
    _, opt = run(tf.train.ProximalAdagradOptimizer(0.1), sparse=True)
    assert [v.op.name for v in opt.variables()] == ["Variable/ProximalAdagrad"]
    _, opt = run(tf.train.AdadeltaOptimizer(), sparse=False)
    assert opt.get_slot_names() == ["accum", "accum_update"]
    assert [v.op.name for v in opt.variables()] == ["Variable_1/Adadelta",
                                                    "Variable_1/Adadelta_1"]


def test_proximal_l1_sets_small_weights_exactly_to_zero():
    var = tf.Variable([0.05, -2.0], dtype=tf.float64)
    step = tf.train.ProximalGradientDescentOptimizer(
        1.0, l1_regularization_strength=0.1).apply_gradients([(tf.constant([0.0, 0.0],
                                                                           tf.float64), var)])
    with tf.Session() as sess:
        sess.run(var.initializer)
        sess.run(step)
        np.testing.assert_allclose(sess.run(var), [0.0, -1.9])


# ---- LazyAdam ------------------------------------------------------------------------------
def lazy_adam_reference(lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    # The hyperparameters reach the kernel as float32 tensors; beta powers are variables
    # of the var's dtype (float64 here), as in TF.
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    var, m, v = VAR0.copy(), np.zeros_like(VAR0), np.zeros_like(VAR0)
    uniq = np.unique(ROWS)
    for t, g in enumerate(GRADS, start=1):
        summed = np.stack([g[ROWS == r].sum(0) for r in uniq])
        m[uniq] = f32(b1) * m[uniq] + (1 - f32(b1)) * summed
        v[uniq] = f32(b2) * v[uniq] + (1 - f32(b2)) * summed * summed
        step = f32(lr) * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        var[uniq] -= step * m[uniq] / (np.sqrt(v[uniq]) + f32(eps))
    return var, m, v


def test_lazy_adam_sparse_update_matches_the_lazy_formula():
    got, _ = run(tf.contrib.opt.LazyAdamOptimizer(0.1), sparse=True)
    np.testing.assert_allclose(got, lazy_adam_reference()[0], rtol=1e-10)
    np.testing.assert_array_equal(got[1], VAR0[1])
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "SparseApplyLazyAdam" in types and "SparseApplyAdam" not in types


def test_lazy_adam_moments_of_untouched_rows_stay_and_dense_is_adam():
    var = tf.Variable(VAR0)
    g = tf.placeholder(tf.float64, [3, 2])
    opt = tf.contrib.opt.LazyAdamOptimizer(0.1)
    train = opt.apply_gradients([(tf.IndexedSlices(g, tf.constant(ROWS)), var)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in GRADS:
            sess.run(train, {g: step})
        m, v = sess.run([opt.get_slot(var, "m"), opt.get_slot(var, "v")])
    _, want_m, want_v = lazy_adam_reference()
    np.testing.assert_allclose(m, want_m, rtol=1e-10)
    np.testing.assert_allclose(v, want_v, rtol=1e-10)
    dense_lazy, _ = run(tf.contrib.opt.LazyAdamOptimizer(0.1), sparse=False)
    dense_adam, _ = run(tf.train.AdamOptimizer(0.1), sparse=False)
    np.testing.assert_allclose(dense_lazy, dense_adam, rtol=1e-12)


# ---- equivalences TF's tests rely on ------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("make, make_twin", [
    # Without regularization, the proximal map is the identity.
    (lambda: tf.train.ProximalAdagradOptimizer(3.0, initial_accumulator_value=0.1),
     lambda: tf.train.AdagradOptimizer(3.0, initial_accumulator_value=0.1)),
    (lambda: tf.train.ProximalGradientDescentOptimizer(3.0),
     lambda: tf.train.GradientDescentOptimizer(3.0)),
    # From zero, FTRL with a constant step (lr power 0, no accumulator) is gradient descent.
    (lambda: tf.train.FtrlOptimizer(3.0, learning_rate_power=-0.0,
                                    initial_accumulator_value=0.0),
     lambda: tf.train.GradientDescentOptimizer(3.0)),
], ids=["proximal_adagrad=adagrad", "proximal_gd=gd", "ftrl_power0=gd"])
def test_unregularized_optimizers_equal_their_plain_twins(make, make_twin, sparse):
    got, _ = run(make(), sparse, init=np.zeros_like(VAR0))
    want, _ = run(make_twin(), sparse, init=np.zeros_like(VAR0))
    assert np.abs(got).max() > 0.1
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_ftrl_beta_folds_into_l2_and_slot_names_can_be_chosen():
    with_beta, _ = run(tf.train.FtrlOptimizer(0.5, l2_regularization_strength=0.1, beta=0.2),
                       sparse=True)
    folded, _ = run(tf.train.FtrlOptimizer(0.5, l2_regularization_strength=0.1 + 0.2 / 1.0),
                    sparse=True)
    np.testing.assert_allclose(with_beta, folded, rtol=1e-6)
    _, opt = run(tf.train.FtrlOptimizer(0.5, accum_name="acc", linear_name="lin"),
                 sparse=False)
    assert sorted(v.op.name.split("/")[-1] for v in opt.variables()) == ["acc", "lin"]
