"""Big dense Apply* updates run slice by slice (training_ops._apply_dense), and over
several threads where the task has update threads (a ps): the same values as the
whole-array NumPy rule, variables updated in place."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.training import training_ops
from tensorweave.runtime import intra_op

pytestmark = pytest.mark.usefixtures("fresh_graph")


@pytest.fixture(params=[1, 2, 3], ids=["one-thread", "two-threads", "three-threads"])
def update_threads(request, monkeypatch):
    """Runs the test with that many update threads; yields the parallel calls made."""
    monkeypatch.setattr(intra_op, "_update_threads", request.param)
    calls = []
    real = intra_op.run_parallel
    monkeypatch.setattr(intra_op, "run_parallel", lambda parts: (calls.append(len(parts)),
                                                                  real(parts)))
    yield request.param, calls

_ROWS, _COLS = 300, 1000  # 300k elements: several slices, the last one partial


def _run(optimizer, grad_value):
    rng = np.random.default_rng(0)
    init = rng.normal(size=(_ROWS, _COLS)).astype(np.float32)
    var = tf.Variable(init)
    grad = tf.constant(grad_value)
    train = optimizer.apply_gradients([(grad, var)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        return init, sess.run(var)


def _check_split(update_threads):
    threads, calls = update_threads
    assert _ROWS * _COLS >= training_ops._PARALLEL_MIN
    # Two steps, each one update split into `threads` parts (none when 1).
    assert calls == ([] if threads == 1 else [threads, threads]), calls


def test_adagrad_sliced_matches_the_rule(update_threads):
    assert _ROWS * _COLS >= 4 * training_ops._SLICE
    g = np.random.default_rng(1).normal(size=(_ROWS, _COLS)).astype(np.float32)
    init, got = _run(tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.2), g)
    accum = np.full_like(init, 0.2)
    want = init.copy()
    for _ in range(2):
        accum += g * g
        want -= 0.1 * g / np.sqrt(accum)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    _check_split(update_threads)


def test_adam_sliced_with_a_transposed_gradient_matches_the_rule(update_threads):
    g = np.random.default_rng(2).normal(size=(_COLS, _ROWS)).astype(np.float32).T
    assert not g.flags.c_contiguous
    init, got = _run(tf.train.AdamOptimizer(0.01), g)
    m = np.zeros_like(init)
    v = np.zeros_like(init)
    want = init.copy()
    for t in (1, 2):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        alpha = 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        want -= alpha * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    _check_split(update_threads)


def test_small_updates_are_not_split(update_threads, monkeypatch):
    threads, calls = update_threads
    var = tf.Variable(np.ones((200, 1000), np.float32))   # 200k < _PARALLEL_MIN
    train = tf.train.GradientDescentOptimizer(0.5).apply_gradients(
        [(tf.constant(np.full((200, 1000), 2.0, np.float32)), var)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_array_equal(sess.run(var), 0.0)
    assert calls == []
