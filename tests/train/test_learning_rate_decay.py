"""Learning-rate schedules against TF 1.x's learning_rate_decay_test.py and the value
checks of keras' learning_rate_schedule_test.py (our own tests and reference formulas).

Deliberate difference: the result op is named "<Scope>/<Scope>" (e.g.
"ExponentialDecay/ExponentialDecay:0"); TF 1.x named it "ExponentialDecay:0".
"""
import math

import numpy as np
import pytest

import tensorweave as tf


def _values_over_steps(make_lr, steps, dtype=tf.int64):
    """Evaluates the schedule built on a step variable at each of `steps`."""
    tf.reset_default_graph()
    step = tf.Variable(0, dtype=dtype, name="step", trainable=False)
    lr = make_lr(step)
    out = []
    with tf.Session() as sess:
        sess.run(step.initializer)
        for s in steps:
            step.load(s, sess)
            out.append(float(sess.run(lr)))
    return out


def test_exponential_decay_continuous_with_python_step():
    lr = tf.train.exponential_decay(0.05, 5, 10, 0.96)
    with tf.Session() as sess:
        assert sess.run(lr) == pytest.approx(0.05 * 0.96 ** 0.5, rel=1e-6)


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_exponential_decay_staircase_holds_then_drops(dtype):
    got = _values_over_steps(lambda s: tf.train.exponential_decay(0.1, s, 3, 0.96,
                                                                  staircase=True),
                             [1, 2, 3, 100], dtype)
    assert got == pytest.approx([0.1, 0.1, 0.1 * 0.96, 0.1 * 0.96 ** (100 // 3)], rel=1e-5)


def test_exponential_decay_reads_a_global_step_variable_updated_by_training():
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(1.0, step, 1, 0.5)
    bump = tf.assign_add(step, 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        seen = []
        for _ in range(3):
            seen.append(float(sess.run(lr)))
            sess.run(bump)
    assert seen == pytest.approx([1.0, 0.5, 0.25])


def test_schedules_need_a_global_step():
    for fn in (lambda: tf.train.exponential_decay(0.1, None, 10, 0.9),
               lambda: tf.train.natural_exp_decay(0.1, None, 10, 0.9),
               lambda: tf.train.inverse_time_decay(0.1, None, 10, 0.9),
               lambda: tf.train.polynomial_decay(0.1, None, 10),
               lambda: tf.train.cosine_decay(0.1, None, 10),
               lambda: tf.train.cosine_decay_restarts(0.1, None, 10),
               lambda: tf.train.linear_cosine_decay(0.1, None, 10)):
        with pytest.raises(ValueError, match="global_step is required"):
            fn()


def test_piecewise_constant_values_at_and_between_boundaries():
    got = _values_over_steps(
        lambda s: tf.train.piecewise_constant(s, [100, 110, 120], [1.0, 0.1, 0.01, 0.001]),
        [-999, 100, 105, 110, 120, 999], tf.int32)
    assert got == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01, 0.001])


def test_piecewise_constant_widens_int32_boundaries_for_an_int64_step():
    got = _values_over_steps(
        lambda s: tf.train.piecewise_constant(s, [1, 2, 3], [0.4, 0.5, 0.6, 0.7]),
        [1, 2, 3, 4], tf.int64)
    assert got == pytest.approx([0.4, 0.5, 0.6, 0.7])


def test_piecewise_constant_dtype_and_length_errors():
    x_int = tf.Variable(0, dtype=tf.int32)
    with pytest.raises(ValueError, match="same dtype as x"):
        tf.train.piecewise_constant(x_int, [-1.0, 1.0], [1, 2, 3])
    x_float = tf.Variable(0.0)
    with pytest.raises(ValueError, match="same dtype"):
        tf.train.piecewise_constant(x_float, [-1.0, 1.0], [1.0, 2, 3])  # float vs int
    with pytest.raises(ValueError, match="1 less than the length of values"):
        tf.train.piecewise_constant(x_float, [-1.0, 1.0], [1.0, 2.0])


def _np_polynomial(step, lr, steps, end, power, cycle):
    if cycle:
        steps = steps * max(1.0, math.ceil(step / steps))
    else:
        step = min(step, steps)
    return (lr - end) * (1 - step / steps) ** power + end


@pytest.mark.parametrize("cycle", [False, True])
@pytest.mark.parametrize("power", [1.0, 0.5])
def test_polynomial_decay_no_cycle_end_beyond_end_and_cycle(cycle, power):
    steps = [0, 5, 10, 15, 20, 25]
    got = _values_over_steps(lambda s: tf.train.polynomial_decay(
        0.05, s, 10, end_learning_rate=0.001, power=power, cycle=cycle), steps)
    want = [_np_polynomial(s, 0.05, 10, 0.001, power, cycle) for s in steps]
    assert got == pytest.approx(want, rel=1e-5)
    if not cycle:
        assert got[2:] == pytest.approx([0.001] * 4)  # stays at the end rate
    else:
        assert got[3] > got[2]  # restarted at step 15 (period now 20)


@pytest.mark.parametrize("staircase", [False, True])
def test_natural_exp_and_inverse_time_decay(staircase):
    k, rate, steps = 10, 0.96, list(range(0, 25, 3))
    p = [(s // k if staircase else s / k) for s in steps]
    got = _values_over_steps(lambda s: tf.train.natural_exp_decay(
        0.1, s, k, rate, staircase=staircase), steps)
    assert got == pytest.approx([0.1 * math.exp(-rate * q) for q in p], rel=1e-5)
    got = _values_over_steps(lambda s: tf.train.inverse_time_decay(
        0.1, s, k, rate, staircase=staircase), steps)
    assert got == pytest.approx([0.1 / (1 + rate * q) for q in p], rel=1e-5)


def _np_cosine(step, steps, alpha):
    step = min(step, steps)
    return (1 - alpha) * 0.5 * (1 + math.cos(math.pi * step / steps)) + alpha


@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_cosine_decay(alpha):
    steps = list(range(0, 1500, 250))
    got = _values_over_steps(lambda s: tf.train.cosine_decay(1.0, s, 1000, alpha=alpha), steps)
    assert got == pytest.approx([_np_cosine(s, 1000, alpha) for s in steps], abs=1e-6)


def _np_restarts(step, period, t_mul, m_mul, alpha):
    fac = 1.0
    while step >= period:
        step, period, fac = step - period, period * t_mul, fac * m_mul
    return (1 - alpha) * fac * 0.5 * (1 + math.cos(math.pi * step / period)) + alpha


@pytest.mark.parametrize("t_mul,m_mul,alpha", [(2.0, 1.0, 0.0), (2.0, 1.0, 0.1),
                                               (2.0, 0.9, 0.0), (1.0, 1.0, 0.0),
                                               (1.5, 0.8, 0.05)])
def test_cosine_decay_restarts(t_mul, m_mul, alpha):
    steps = list(range(0, 7000, 250))
    got = _values_over_steps(lambda s: tf.train.cosine_decay_restarts(
        1.0, s, 1000, t_mul=t_mul, m_mul=m_mul, alpha=alpha), steps)
    want = [_np_restarts(s, 1000, t_mul, m_mul, alpha) for s in steps]
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_cosine_decay_restarts_rejects_non_positive_t_mul():
    with pytest.raises(ValueError, match="t_mul must be positive"):
        tf.train.cosine_decay_restarts(1.0, tf.train.get_or_create_global_step(), 10,
                                       t_mul=0.0)


@pytest.mark.parametrize("alpha,beta,periods", [(0.0, 0.001, 0.5), (0.1, 1e-4, 5)])
def test_linear_cosine_decay(alpha, beta, periods):
    def ref(s, n=1000):
        s = min(s, n)
        cosine = 0.5 * (1 + math.cos(math.pi * 2 * periods * s / n))
        return (alpha + (n - s) / n) * cosine + beta
    steps = list(range(0, 1500, 250))
    got = _values_over_steps(lambda s: tf.train.linear_cosine_decay(
        1.0, s, 1000, num_periods=periods, alpha=alpha, beta=beta), steps)
    assert got == pytest.approx([ref(s) for s in steps], abs=1e-6)


def test_learning_rate_dtype_follows_the_initial_rate():
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(tf.constant(0.1, tf.float64), step, 10, 0.5)
    assert lr.dtype == tf.float64
    with pytest.raises(TypeError, match="learning_rate must be a float"):
        tf.train.exponential_decay(1, step, 10, 0.5)


def test_worker_reads_the_schedule_from_the_global_step_on_the_ps(local_cluster):
    lc = local_cluster
    graph = tf.Graph()
    with graph.as_default(), tf.device(
            tf.train.replica_device_setter(cluster=tf.train.ClusterSpec(lc.spec))):
        step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(1.0, step, 10, 0.5, staircase=True)
        set_step = tf.assign(step, 25)
        init = tf.global_variables_initializer()
    assert "/job:ps" in step.device
    with tf.Session(lc.target("worker", 1), graph=graph) as other_worker:
        other_worker.run(init)
        other_worker.run(set_step)
    with tf.Session(lc.target("worker", 0), graph=graph) as worker:
        assert worker.run(lr) == pytest.approx(0.25)  # 0.5 ** (25 // 10)


def test_cos_and_sin_ops_used_by_the_cosine_schedules():
    from tensorweave.ops.math.unary_ops import cos, sin
    x = tf.constant([0.0, 0.5, 2.0], dtype=tf.float64)
    with tf.Session() as sess:
        got_cos, got_sin = sess.run([cos(x), sin(x)])
    np.testing.assert_allclose(got_cos, np.cos([0.0, 0.5, 2.0]))
    np.testing.assert_allclose(got_sin, np.sin([0.0, 0.5, 2.0]))
    grad = tf.gradients(cos(x) + 2.0 * sin(x), x)[0]
    with tf.Session() as sess:
        v = np.array([0.0, 0.5, 2.0])
        np.testing.assert_allclose(sess.run(grad), -np.sin(v) + 2.0 * np.cos(v))


@pytest.mark.parametrize("make_opt", [tf.train.GradientDescentOptimizer,
                                      lambda lr: tf.train.MomentumOptimizer(lr, 0.9),
                                      tf.train.AdamOptimizer, tf.train.RMSPropOptimizer,
                                      tf.train.AdagradOptimizer])
def test_optimizers_take_the_schedule_as_their_rate(make_opt):
    w = tf.Variable(1.0)
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, step, 1, 0.5, staircase=True)
    train = make_opt(lr).minimize(tf.square(w), global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        rates = []
        for _ in range(3):
            rates.append(float(sess.run(lr)))
            sess.run(train)
        assert rates == pytest.approx([0.1, 0.05, 0.025])
        if make_opt is tf.train.GradientDescentOptimizer:  # w -= lr * 2w each step
            assert sess.run(w) == pytest.approx(1.0 * 0.8 * 0.9 * 0.95)
