"""Random ops: seeding semantics, reproducibility, bounds and statistics."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.random import random_ops as R

pytestmark = pytest.mark.usefixtures("graph")


def two_runs(t, n=2):
    with tf.Session() as s:
        return [s.run(t) for _ in range(n)]


def test_get_seed_semantics(graph):
    assert R.get_seed(None) == (None, None)
    assert R.get_seed(7) == (R.DEFAULT_GRAPH_SEED, 7)
    tf.set_random_seed(1)
    assert graph.seed == 1
    assert R.get_seed(7) == (1, 7)
    s1 = R.get_seed(None)
    assert s1[0] == 1 and s1[1] == len(graph.get_operations())
    tf.constant(1.0)
    assert R.get_seed(None)[1] == s1[1] + 1  # derived from the graph, not random
    tf.set_random_seed(0)
    assert R.get_seed(0) != (0, 0)


@pytest.mark.parametrize("make", [
    lambda: tf.random_normal([5], mean=1.0, stddev=2.0),
    lambda: tf.truncated_normal([5]),
    lambda: tf.random_uniform([5], -3.0, 3.0),
    lambda: tf.random_uniform([5], 0, 100, dtype=tf.int32),
    lambda: tf.random_shuffle(tf.range(20)),
])
def test_graph_seed_reproduces_across_sessions_and_varies_across_runs(make):
    tf.set_random_seed(1234)
    t = make()
    a1, a2 = two_runs(t)
    b1, b2 = two_runs(t)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, a2)


def test_same_graph_built_twice_gives_same_values():
    def build():
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(5)
            tf.constant(0.0)
            t = tf.random_normal([4])
        with tf.Session(graph=g) as s:
            return s.run(t)
    np.testing.assert_array_equal(build(), build())


def test_op_seed_only_is_reproducible_and_ops_differ_without_seed():
    a = tf.random_uniform([6], seed=3)
    b = tf.random_uniform([6], seed=3)
    c = tf.random_uniform([6])
    d = tf.random_uniform([6])
    with tf.Session() as s:
        va, vb, vc, vd = s.run([a, b, c, d])
    np.testing.assert_array_equal(va, vb)  # same (graph, op) seed pair
    assert not np.array_equal(vc, vd)
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(a), va)
        assert not np.array_equal(s.run(c), vc)  # unseeded: nondeterministic


def test_shapes_and_dtypes():
    n = tf.placeholder(tf.int32, [])
    t = tf.random_normal(tf.stack([n, 3]), dtype=tf.float64)
    assert t.dtype == tf.float64 and t.shape.as_list() == [None, 3]
    assert tf.random_uniform(tf.constant([2, 4])).shape.as_list() == [2, 4]
    assert tf.random_uniform((3,), maxval=5, dtype=tf.int64).dtype == tf.int64
    assert tf.random_shuffle(tf.zeros([4, 2])).shape.as_list() == [4, 2]
    with tf.Session() as s:
        assert s.run(t, {n: 2}).shape == (2, 3)
    with pytest.raises(ValueError, match="maxval"):
        tf.random_uniform([2], dtype=tf.int32)


def test_statistics_and_bounds():
    tf.set_random_seed(7)
    normal = tf.random_normal([10000], mean=3.0, stddev=2.0)
    trunc = tf.truncated_normal([10000], mean=-1.0, stddev=0.5)
    uni = tf.random_uniform([10000], 2.0, 4.0)
    ints = tf.random_uniform([10000], -2, 3, dtype=tf.int32)
    with tf.Session() as s:
        vn, vt, vu, vi = s.run([normal, trunc, uni, ints])
    # 10k samples: the standard error of the mean is stddev/100
    assert abs(vn.mean() - 3.0) < 0.08 and abs(vn.std() - 2.0) < 0.08
    assert vt.min() >= -2.0 and vt.max() <= 0.0  # mean +- 2 stddev
    assert abs(vt.mean() + 1.0) < 0.03
    # a normal truncated at 2 sigma has stddev ~0.88 sigma
    assert abs(vt.std() - 0.5 * 0.8796) < 0.02
    assert vu.min() >= 2.0 and vu.max() < 4.0 and abs(vu.mean() - 3.0) < 0.03
    assert set(np.unique(vi)) == {-2, -1, 0, 1, 2}
    assert abs(vi.mean()) < 0.06


def test_shuffle_is_a_permutation_of_rows():
    x = np.arange(12).reshape(6, 2)
    with tf.Session() as s:
        out = s.run(tf.random_shuffle(x, seed=1))
    assert sorted(map(tuple, out)) == sorted(map(tuple, x))


def test_random_ops_have_no_gradient_but_mean_and_stddev_do():
    mean = tf.placeholder(tf.float32, [])
    t = tf.random_normal([3], mean=mean, stddev=2.0, seed=1)
    (g,) = tf.gradients(tf.reduce_sum(t), [mean])
    with tf.Session() as s:
        assert s.run(g, {mean: 0.0}) == pytest.approx(3.0)
    from tensorweave.framework.op_def import get_op_def
    for op_type in ("RandomStandardNormal", "TruncatedNormal", "RandomUniform",
                    "RandomUniformInt", "RandomShuffle"):
        assert get_op_def(op_type).not_differentiable and get_op_def(op_type).stateful


def test_chunked_draws_give_the_values_of_one_draw(monkeypatch):
    # Big random tensors are drawn a chunk at a time (no float64 temporary of the whole
    # tensor); the values must be those one float64 draw gives, cast: the same seeds keep
    # giving the same initial models.
    import numpy as np
    from tensorweave.ops.random import random_ops as r
    monkeypatch.setattr(r, "_CHUNK", 1000)

    def one_draw_truncated(rng, dims):
        out = rng.standard_normal(dims)
        bad = np.abs(out) > 2.0
        while bad.any():
            out[bad] = rng.standard_normal(int(bad.sum()))
            bad = np.abs(out) > 2.0
        return out
    for dims in ([7], [2500, 3], [0]):
        for dt in (np.float32, np.float64, np.float16):
            want = one_draw_truncated(np.random.default_rng(5), dims).astype(dt)
            got = r._truncated(np.random.default_rng(5), dims, dt)
            assert got.dtype == dt and np.array_equal(got, want)
            want = np.random.default_rng(6).random(dims).astype(dt)
            assert np.array_equal(r._chunked(np.random.default_rng(6).random, dims, dt), want)
