"""nce_loss and sampled_softmax_loss: values and gradients against numbers recorded from
TF 2.21's compat.v1 for fixed inputs and fixed sampled_values, NumPy references,
accidental-hit removal, partitioned weights ("mod" and "div"), sparse (IndexedSlices)
weight gradients, and a word2vec-shaped training program."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.nn import candidate_sampling_ops as cs
from tensorweave.nn_impl.sampled_losses import nce_loss, sampled_softmax_loss
from tensorweave.testing.gradient_checker import check_gradients

pytestmark = pytest.mark.usefixtures("graph")

W = (np.arange(21, dtype=np.float32).reshape(7, 3) % 5 - 2) * 0.3
B = np.array([0.1, -0.2, 0.3, 0.0, -0.1, 0.2, 0.05], np.float32)
X = np.array([[0.5, -1.0, 0.25], [1.5, 0.5, -0.5], [-0.75, 0.2, 1.0]], np.float32)
L2 = np.array([[0, 3], [5, 1], [2, 2]], np.int64)
L1 = np.array([[3], [1], [4]], np.int64)
S = np.array([1, 4, 3, 6], np.int64)
TEC2 = np.array([[0.3, 0.6], [0.2, 0.9], [0.5, 0.5]], np.float32)
TEC1 = np.array([[0.6], [0.9], [0.4]], np.float32)
SEC = np.array([0.9, 0.4, 0.6, 0.1], np.float32)

# tf.compat.v1.nn.{nce_loss, sampled_softmax_loss}(W, B, labels, X, 4, 7, num_true=...,
# sampled_values=(S, TEC, SEC), remove_accidental_hits=...) in TF 2.21.
TF_LOSSES = {
    ("nce", 2, False): [6.760953, 8.874014, 6.320934],
    ("ssm", 2, False): [1.6508191, 2.900383, 1.4698739],
    ("nce", 2, True): [5.1916847, 7.593189, 6.3209343],
    ("ssm", 2, True): [1.4339395, 2.8378022, 1.4698739],
    ("nce", 1, False): [5.2008953, 7.632762, 4.6123133],
    ("ssm", 1, False): [1.4255773, 2.751266, 1.2381078],
    ("nce", 1, True): [3.6316264, 6.351937, 2.930242],
    ("ssm", 1, True): [1.1506538, 2.6852896, 0.8957128],
}
# d(sum nce_loss(num_true=2, remove_accidental_hits=True)) / d(W, B, X) in TF 2.21.
TF_GW = [[0.14325142, -0.28650284, 0.07162571], [0.2672118, -0.15988529, 0.28225714],
         [-0.4803982, 0.12810619, 0.64053094], [1.0062842, 0.18001336, 0.09452596],
         [0.71083534, -0.1675337, 0.64884365], [0.2718476, 0.09061587, -0.09061587],
         [1.2488939, -0.20067309, 0.5677414]]
TF_GB = [0.28650284, 0.86529636, 0.64053094, 1.4821303, 2.135356, 0.18123174, 2.6586282]
TF_GX = [[0.35876405, 0.6483374, -0.4023058], [0.71575505, 0.39031747, -0.55133355],
         [0.39913648, 0.6867081, -0.13198173]]


def _sv(num_true):
    tec = TEC2 if num_true == 2 else TEC1
    return tf.constant(S), tf.constant(tec), tf.constant(SEC)


def _loss(kind, w, b, x, labels, num_true, rah, **kw):
    fn = nce_loss if kind == "nce" else sampled_softmax_loss
    return fn(w, b, labels, x, 4, 7, num_true=num_true, sampled_values=_sv(num_true),
              remove_accidental_hits=rah, **kw)


def _run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


@pytest.mark.parametrize("key", sorted(TF_LOSSES))
def test_losses_match_tensorflow(key):
    kind, num_true, rah = key
    out = _loss(kind, W, B, X, L2 if num_true == 2 else L1, num_true, rah)
    assert out.shape.as_list() == [3]
    np.testing.assert_allclose(_run(out), TF_LOSSES[key], rtol=2e-6)


def _ref_logits(labels, tec, rah):
    """NumPy: logits of true then sampled classes, less log expected counts."""
    true = np.einsum("bd,btd->bt", X, W[labels]) + B[labels] - np.log(tec)
    sampled = X @ W[S].T + B[S] - np.log(SEC)
    if rah:
        sampled = np.where((S[None, None, :] == labels[:, :, None]).any(1), -np.inf, sampled)
    return true, sampled


def test_nce_and_sampled_softmax_from_their_definitions():
    true, sampled = _ref_logits(L2, TEC2, True)
    # Sigmoid cross-entropy, true classes labelled 1/num_true, sampled ones 0.
    nce_ref = (np.logaddexp(0, true) - true / 2).sum(1) + np.logaddexp(0, sampled).sum(1)
    logits = np.concatenate([true, sampled], 1)
    log_z = np.log(np.exp(logits).sum(1))
    ssm_ref = -(true - log_z[:, None]).mean(1)  # each true class has label 1/num_true
    nce, ssm = _run([_loss("nce", W, B, X, L2, 2, True), _loss("ssm", W, B, X, L2, 2, True)])
    np.testing.assert_allclose(nce, nce_ref, rtol=1e-5)
    np.testing.assert_allclose(ssm, ssm_ref, rtol=1e-5)


def test_all_classes_sampled_is_the_full_softmax():
    labels = tf.constant(L1)
    sv = cs.all_candidate_sampler(labels, 1, 7, True)
    loss = sampled_softmax_loss(W, B, labels, X, 7, 7, sampled_values=sv)
    full = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=L1[:, 0], logits=tf.matmul(X, W, transpose_b=True) + B)
    a, b = _run([loss, full])
    np.testing.assert_allclose(a, b, rtol=1e-5)


def test_gradients_match_tensorflow_and_weights_get_indexed_slices():
    w, b = tf.Variable(W), tf.Variable(B)
    x = tf.constant(X)
    loss = tf.reduce_sum(_loss("nce", w, b, x, L2, 2, True))
    gw, gb, gx = tf.gradients(loss, [w, b, x])
    assert isinstance(gw, IndexedSlices) and isinstance(gb, IndexedSlices)
    gwv, gbv, gxv = _run([tf.convert_to_tensor(gw), tf.convert_to_tensor(gb), gx])
    np.testing.assert_allclose(gwv, TF_GW, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gbv, TF_GB, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gxv, TF_GX, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["nce", "ssm"])
def test_gradient_check(kind):
    def fn(w, b, x):
        return _loss(kind, w, b, x, L2, 2, True)
    check_gradients(fn, [W.astype(np.float64), B.astype(np.float64), X.astype(np.float64)],
                    rtol=1e-5, atol=1e-6)


def _shards(values, n, strategy):
    if strategy == "mod":
        return [values[i::n] for i in range(n)]
    return np.array_split(values, n)  # "div": the first (rows % n) shards one row longer


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("kind", ["nce", "ssm"])
def test_sharded_weights_give_the_unpartitioned_loss(kind, strategy):
    ws = [tf.Variable(s) for s in _shards(W, 3, strategy)]
    bs = [tf.Variable(s) for s in _shards(B, 3, strategy)]
    loss = _loss(kind, ws, bs, X, L2, 2, True, partition_strategy=strategy)
    grads = tf.gradients(tf.reduce_sum(loss), ws)
    assert all(isinstance(g, IndexedSlices) for g in grads)
    np.testing.assert_allclose(_run(loss), TF_LOSSES[(kind, 2, True)], rtol=2e-6)


def _rows_of(full):
    """An initializer giving each partition its rows of `full`."""
    def init(shape, dtype=None, partition_info=None):
        start = partition_info.single_offset(shape) if partition_info else 0
        return tf.constant(full[start:start + int(list(shape)[0])])
    return init


def test_partitioned_variable_weights():
    w = tf.get_variable("w", [7, 3], initializer=_rows_of(W),
                        partitioner=tf.fixed_size_partitioner(3))
    b = tf.get_variable("b", [7], initializer=_rows_of(B),
                        partitioner=tf.fixed_size_partitioner(3))
    assert len(list(w)) == 3
    loss = _loss("ssm", w, b, X, L2, 2, True, partition_strategy="div")
    np.testing.assert_allclose(_run(loss), TF_LOSSES[("ssm", 2, True)], rtol=2e-6)


def test_optimizer_step_touches_only_looked_up_rows():
    w = tf.Variable(np.tile(W, (3, 1)))  # 21 classes; the batch sees rows {0..6}
    b = tf.Variable(np.zeros(21, np.float32))
    loss = tf.reduce_mean(nce_loss(w, b, L2, X, 4, 21, num_true=2, sampled_values=_sv(2)))
    opt = tf.train.GradientDescentOptimizer(0.5)
    (gw, _), (gb, _) = opt.compute_gradients(loss, [w, b])
    assert isinstance(gw, IndexedSlices) and isinstance(gb, IndexedSlices)
    step = opt.apply_gradients([(gw, w), (gb, b)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(w)
        sess.run(step)
        after = sess.run(w)
    touched = sorted(set(L2.ravel()) | set(S.tolist()))
    changed = np.flatnonzero(np.abs(after - before).sum(1) > 0).tolist()
    assert changed == touched


def test_default_sampler_and_seed():
    labels = tf.constant(L1)
    a = sampled_softmax_loss(W, B, labels, X, 4, 7, seed=3)
    b = sampled_softmax_loss(W, B, labels, X, 4, 7, seed=3)
    n = nce_loss(W, B, labels, X, 4, 7)
    assert n.shape.as_list() == [3]
    sampler = [op for op in tf.get_default_graph().get_operations()
               if op.type == "LogUniformCandidateSampler"]
    assert len(sampler) == 3 and all(op.get_attr("unique") for op in sampler)
    av, bv, nv = _run([a, b, n])
    np.testing.assert_array_equal(av, bv)  # same seed, same sample
    assert np.isfinite(nv).all() and (nv > 0).all()


def test_bad_labels_and_strategy_are_named():
    with pytest.raises(TypeError, match=r"integer class ids.*float32.*tf.cast"):
        nce_loss(W, B, tf.constant([[1.0]]), X[:1], 2, 7)
    with pytest.raises(ValueError, match=r"\[batch_size, num_true\].*tf.reshape\(labels"):
        nce_loss(W, B, tf.constant([1, 2, 3], tf.int64), X, 2, 7)
    with pytest.raises(ValueError, match="2 columns but num_true=1"):
        sampled_softmax_loss(W, B, L2, X, 2, 7)
    with pytest.raises(ValueError, match="partition_strategy 'rows'"):
        nce_loss(W, B, L1, X, 2, 7, partition_strategy="rows")
    with pytest.raises(ValueError, match=r"num_sampled=9 unique.*range_max=7"):
        nce_loss(W, B, L1, X, 9, 7)
    # int32 labels are cast, as TF does.
    np.testing.assert_allclose(_run(_loss("nce", W, B, X, L1.astype(np.int32), 1, False)),
                               TF_LOSSES[("nce", 1, False)], rtol=2e-6)


def test_word2vec_shaped_program_learns():
    vocab, dim, batch = 40, 8, 32
    rng = np.random.default_rng(0)
    tf.set_random_seed(1)
    train_inputs = tf.placeholder(tf.int32, shape=[batch])
    train_labels = tf.placeholder(tf.int64, shape=[batch, 1])
    embeddings = tf.Variable(tf.random_uniform([vocab, dim], -1.0, 1.0))
    embed = tf.nn.embedding_lookup(embeddings, train_inputs)
    nce_weights = tf.Variable(tf.truncated_normal([vocab, dim], stddev=1.0 / np.sqrt(dim)))
    nce_biases = tf.Variable(tf.zeros([vocab]))
    loss = tf.reduce_mean(nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                   inputs=embed, num_sampled=8, num_classes=vocab))
    optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(150):
            words = rng.integers(0, vocab, batch)
            context = (words + 1) % vocab  # each word's context is its successor
            _, lv = sess.run([optimizer, loss], {train_inputs: words,
                                                 train_labels: context[:, None]})
            losses.append(lv)
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:20]), (losses[:5], losses[-5:])
