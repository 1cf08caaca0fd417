"""tf.contrib.layers: regularizers, initializers, fully_connected, flatten, dropout,
batch_norm, embed_sequence, optimize_loss.

Specification: TF 1.x tensorflow/contrib/layers/python/layers/regularizers_test.py,
initializers_test.py, layers_test.py and optimizers_test.py; our own values.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.contrib import layers_impl as L

pytestmark = pytest.mark.usefixtures("graph")


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# ---- regularizers ---------------------------------------------------------------
def test_l1_l2_values_hand_computed():
    w = tf.constant([[1.0, -2.0], [3.0, -4.0]])
    l1, l2 = L.l1_regularizer(0.5)(w), L.l2_regularizer(0.5)(w)
    both = L.l1_l2_regularizer(0.5, 0.25)(w)
    got = _run([l1, l2, both])
    np.testing.assert_allclose(got, [0.5 * 10, 0.5 * 30 / 2, 0.5 * 10 + 0.25 * 15],
                               rtol=1e-6)
    assert l2.name == "l2_regularizer:0" and l1.name == "l1_regularizer:0"
    assert both.name == "l1_l2_regularizer:0"


def test_regularizer_scale_validation():
    for make in (L.l1_regularizer, L.l2_regularizer):
        with pytest.raises(ValueError, match="less than 0"):
            make(-1.0)
        with pytest.raises(ValueError, match="integer"):
            make(0)
        with pytest.raises(ValueError, match="scale"):
            make("0.1")
        assert make(0.0)(None) is None
    with pytest.raises(ValueError, match="scale_l2"):
        L.l1_l2_regularizer(0.1, -0.5)
    assert L.l1_l2_regularizer(0.0, 0.0)(None) is None


def test_sum_regularizer_skips_none():
    w = tf.constant([1.0, -1.0])
    assert L.sum_regularizer([None, None]) is None
    reg = L.sum_regularizer([L.l1_regularizer(1.0), None, L.l2_regularizer(2.0)])
    assert _run(reg(w)) == pytest.approx(2.0 + 2.0)
    assert L.sum_regularizer([L.l1_regularizer(0.0)])(w) is None


def test_apply_regularization_defaults_to_weights_and_collects():
    a = tf.get_variable("a", initializer=tf.constant([1.0, 2.0]))
    b = tf.get_variable("b", initializer=tf.constant([[3.0]]))
    tf.add_to_collection(tf.GraphKeys.WEIGHTS, a)
    tf.add_to_collection(tf.GraphKeys.WEIGHTS, b)
    total = L.apply_regularization(L.l2_regularizer(0.1))
    assert total in tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert total.name == "get_regularization_penalty:0"
    assert _run(total) == pytest.approx(0.1 * (1 + 4 + 9) / 2)
    only_a = L.apply_regularization(L.l1_regularizer(1.0), [a])
    assert _run(only_a) == pytest.approx(3.0)
    assert _run(L.apply_regularization(L.l1_regularizer(0.0), [a])) == 0.0


def test_apply_regularization_errors():
    with pytest.raises(ValueError, match="No weights"):
        L.apply_regularization(L.l2_regularizer(0.1))
    w = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="scalar"):
        L.apply_regularization(lambda t: t * 2.0, [w])


# ---- initializers -----------------------------------------------------------------
def _sample(init, shape, graph_seed=None):
    with tf.Graph().as_default():  # a fresh graph per sample
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        v = tf.get_variable("v", shape, initializer=init)
        return _run(v)


@pytest.mark.parametrize("uniform", [True, False])
def test_xavier_std(uniform):
    vals = _sample(L.xavier_initializer(uniform=uniform, seed=3), [400, 600])
    # contrib: variance 1/n uniform, 1.3/n truncated normal (truncation shrinks it
    # back to ~1.006/n); n = (400 + 600) / 2.
    assert np.std(vals) == pytest.approx(np.sqrt(1.0 / 500), rel=0.03)
    if uniform:
        assert np.abs(vals).max() <= np.sqrt(6.0 / 1000) + 1e-6
    else:
        assert np.abs(vals).max() <= 2 * np.sqrt(1.3 / 500) + 1e-6


@pytest.mark.parametrize("mode, n", [("FAN_IN", 32 * 9), ("FAN_OUT", 64 * 9),
                                     ("FAN_AVG", 48 * 9)])
def test_variance_scaling_modes_conv_shape(mode, n):
    vals = _sample(L.variance_scaling_initializer(mode=mode, seed=7), [3, 3, 32, 64])
    assert np.std(vals) == pytest.approx(np.sqrt(2.0 / n), rel=0.03)
    vals = _sample(L.variance_scaling_initializer(factor=1.0, mode=mode, uniform=True,
                                                  seed=7), [3, 3, 32, 64])
    assert np.abs(vals).max() <= np.sqrt(3.0 / n) + 1e-6
    assert np.std(vals) == pytest.approx(np.sqrt(1.0 / n), rel=0.03)


def test_initializer_errors_and_determinism():
    with pytest.raises(TypeError, match="non-floating"):
        L.xavier_initializer(dtype=tf.int32)
    with pytest.raises(TypeError, match="Unknown mode"):
        L.variance_scaling_initializer(mode="fan_in")
    assert L.xavier_initializer_conv2d is L.xavier_initializer
    b = _sample(L.xavier_initializer(uniform=False, seed=11), [5, 5], graph_seed=1)
    c = _sample(L.xavier_initializer(uniform=False, seed=11), [5, 5], graph_seed=1)
    np.testing.assert_array_equal(b, c)
    assert b.shape == (5, 5)


# ---- fully_connected ------------------------------------------------------------------
def test_fully_connected_shapes_names_collections():
    x = tf.placeholder(tf.float32, [None, 4])
    y = L.fully_connected(x, 3)
    y2 = L.fully_connected(y, 2, activation_fn=None, scope="logits")
    assert y.shape.as_list() == [None, 3] and y2.shape.as_list() == [None, 2]
    names = [v.op.name for v in tf.global_variables()]
    assert names == ["fully_connected/weights", "fully_connected/biases",
                     "logits/weights", "logits/biases"]
    assert [v.op.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)] == names
    assert len(tf.trainable_variables()) == 4
    assert y.op.type == "Relu" and y.name.startswith("fully_connected/")
    L.fully_connected(x, 3)
    assert "fully_connected_1/weights" in [v.op.name for v in tf.global_variables()]


def test_fully_connected_values_and_no_bias_with_normalizer():
    x = tf.constant([[1.0, -2.0]])
    y = L.fully_connected(x, 2, activation_fn=None,
                          weights_initializer=tf.constant_initializer([[1.0, 2.0], [3.0, 4.0]]),
                          biases_initializer=tf.constant_initializer(0.5))
    np.testing.assert_allclose(_run(y), [[1 - 6 + 0.5, 2 - 8 + 0.5]])
    relu = L.fully_connected(x, 2, weights_initializer=tf.constant_initializer(
        [[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_allclose(_run(relu), [[0.0, 0.0]])
    L.fully_connected(x, 2, normalizer_fn=L.batch_norm, scope="bn_fc")
    bn_vars = [v.op.name for v in tf.global_variables() if v.op.name.startswith("bn_fc/")]
    assert "bn_fc/biases" not in bn_vars and "bn_fc/BatchNorm/beta" in bn_vars
    with pytest.raises(ValueError, match="num_outputs"):
        L.fully_connected(x, 2.0)


def test_fully_connected_rank3_inputs():
    x = tf.placeholder(tf.float32, [None, 5, 4])
    y = L.fully_connected(x, 3, activation_fn=None,
                          weights_initializer=tf.ones_initializer())
    assert y.shape.as_list() == [None, 5, 3]
    out = _run(y, {x: np.ones((2, 5, 4), np.float32)})
    np.testing.assert_allclose(out, np.full((2, 5, 3), 4.0))


def test_fully_connected_regularization_and_reuse():
    x = tf.constant(np.ones((2, 3), np.float32))
    L.fully_connected(x, 2, weights_regularizer=L.l2_regularizer(0.1),
                      biases_regularizer=L.l1_regularizer(0.2),
                      weights_initializer=tf.ones_initializer(),
                      biases_initializer=tf.constant_initializer(-1.0), scope="fc")
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name for t in losses] == ["fc/weights/Regularizer/l2_regularizer:0",
                                        "fc/biases/Regularizer/l1_regularizer:0"]
    np.testing.assert_allclose(_run(losses), [0.1 * 6 / 2, 0.2 * 2], rtol=1e-6)
    y2 = L.fully_connected(x, 2, weights_regularizer=L.l2_regularizer(0.1), scope="fc",
                           reuse=True)
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 2
    assert len(tf.global_variables()) == 2
    assert y2.shape.as_list() == [2, 2]
    with pytest.raises(ValueError, match="already exists"):
        L.fully_connected(x, 2, scope="fc")


def test_fully_connected_variables_and_outputs_collections():
    x = tf.constant(np.ones((1, 3), np.float32))
    y = L.fully_connected(x, 2, variables_collections={"weights": [tf.GraphKeys.WEIGHTS],
                                                       "biases": ["my_biases"]},
                          outputs_collections="outs", scope="fc")
    assert [v.op.name for v in tf.get_collection(tf.GraphKeys.WEIGHTS)] == ["fc/weights"]
    assert [v.op.name for v in tf.get_collection("my_biases")] == ["fc/biases"]
    assert tf.get_collection("outs") == [y]
    L.fully_connected(x, 2, variables_collections=["all_vars"], scope="fc2")
    assert len(tf.get_collection("all_vars")) == 2
    # WEIGHTS filled explicitly above: apply_regularization's default list.
    assert _run(L.apply_regularization(L.l1_regularizer(1.0))) > 0.0


def test_fully_connected_trainable_false_and_unknown_last_dim():
    L.fully_connected(tf.zeros([2, 3]), 4, trainable=False)
    assert tf.trainable_variables() == []
    with pytest.raises(ValueError, match="last dimension"):
        L.fully_connected(tf.placeholder(tf.float32, [None, None]), 4)


# ---- flatten / dropout -------------------------------------------------------------------
def test_flatten():
    x = tf.placeholder(tf.float32, [None, 2, 3, 4])
    y = L.flatten(x)
    assert y.shape.as_list() == [None, 24] and y.name.startswith("Flatten/")
    data = np.arange(48, dtype=np.float32).reshape(2, 2, 3, 4)
    np.testing.assert_array_equal(_run(y, {x: data}), data.reshape(2, 24))
    z = tf.placeholder(tf.float32, [None, None, 3])
    np.testing.assert_array_equal(_run(L.flatten(z), {z: np.ones((2, 5, 3))}),
                                  np.ones((2, 15)))
    with pytest.raises(ValueError, match="2 dimensions"):
        L.flatten(tf.zeros([5]))


def test_dropout_training_and_inference():
    x = tf.ones([200, 50])
    train = L.dropout(x, keep_prob=0.5, seed=1)
    infer = L.dropout(x, keep_prob=0.5, is_training=False)
    is_training = tf.placeholder(tf.bool, [])
    switch = L.dropout(x, keep_prob=0.25, is_training=is_training)
    assert train.name.startswith("Dropout/") and infer.name.startswith("Dropout_1/")
    t, i = _run([train, infer])
    assert set(np.unique(t)) <= {0.0, 2.0}
    assert np.mean(t == 0.0) == pytest.approx(0.5, abs=0.03)
    np.testing.assert_array_equal(i, np.ones((200, 50)))
    with tf.Session() as sess:
        on = sess.run(switch, {is_training: True})
        off = sess.run(switch, {is_training: False})
    assert set(np.unique(on)) <= {0.0, 4.0} and np.mean(on == 0.0) > 0.6
    np.testing.assert_array_equal(off, np.ones((200, 50)))


# ---- batch_norm ------------------------------------------------------------------------
def test_batch_norm_variables_and_training_normalizes():
    rng = np.random.RandomState(0)
    data = (rng.randn(64, 3) * [1.0, 2.0, 5.0] + [3.0, -1.0, 10.0]).astype(np.float32)
    x = tf.constant(data)
    y = L.batch_norm(x, scale=True)
    names = [v.op.name for v in tf.global_variables()]
    assert names == ["BatchNorm/beta", "BatchNorm/gamma", "BatchNorm/moving_mean",
                     "BatchNorm/moving_variance"]
    assert [v.op.name for v in tf.trainable_variables()] == names[:2]
    assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == 4
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    out = _run(y)
    np.testing.assert_allclose(out.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.var(0), data.var(0) / (data.var(0) + 1e-3), rtol=1e-4)


def test_batch_norm_moving_averages_update_and_inference_uses_them():
    data = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 30.0], [7.0, 40.0]], np.float32)
    x = tf.placeholder(tf.float32, [None, 2])
    y = L.batch_norm(x, decay=0.5, scope="bn")
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    infer = L.batch_norm(x, decay=0.5, scope="bn", reuse=True, is_training=False)
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    mm, mv = [v for v in tf.global_variables() if "moving" in v.op.name]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(y, {x: data})
        np.testing.assert_allclose(sess.run(mm), [0.0, 0.0])  # not run: unchanged
        sess.run(updates, {x: data})
        mean, var = data.mean(0), data.var(0)
        np.testing.assert_allclose(sess.run(mm), 0.5 * mean, rtol=1e-6)
        np.testing.assert_allclose(sess.run(mv), 0.5 + 0.5 * var, rtol=1e-6)
        got = sess.run(infer, {x: data})
    np.testing.assert_allclose(got, (data - 0.5 * mean) / np.sqrt(0.5 + 0.5 * var + 1e-3),
                               rtol=1e-5)


def test_batch_norm_updates_inline_and_tensor_is_training():
    data = np.array([[2.0], [4.0]], np.float32)
    x = tf.constant(data)
    y = L.batch_norm(x, decay=0.0, updates_collections=None, scope="inline")
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    is_training = tf.placeholder(tf.bool, [])
    z = L.batch_norm(x, decay=0.0, is_training=is_training, scope="switch")
    mm = {v.op.name: v for v in tf.global_variables()}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(y)
        assert sess.run(mm["inline/moving_mean"]) == pytest.approx([3.0])
        ups = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        sess.run([z] + ups, {is_training: False})
        assert sess.run(mm["switch/moving_mean"]) == pytest.approx([0.0])
        np.testing.assert_allclose(sess.run(z, {is_training: False}),
                                   data / np.sqrt(1.0 + 1e-3), rtol=1e-6)
        out = sess.run([z] + ups, {is_training: True})[0]
        np.testing.assert_allclose(out, [[-1.0 / np.sqrt(1 + 1e-3)],
                                         [1.0 / np.sqrt(1 + 1e-3)]], rtol=1e-5)
        assert sess.run(mm["switch/moving_mean"]) == pytest.approx([3.0])


def test_batch_norm_nchw_and_fused_unbiased_variance():
    rng = np.random.RandomState(1)
    data = rng.randn(2, 3, 4, 4).astype(np.float32)
    x = tf.constant(data)
    y = L.batch_norm(x, data_format="NCHW", decay=0.0, updates_collections=None)
    mv = [v for v in tf.global_variables() if "moving_variance" in v.op.name][0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y)
        got_mv = sess.run(mv)
    np.testing.assert_allclose(out.mean((0, 2, 3)), 0.0, atol=1e-5)
    n = 2 * 4 * 4
    np.testing.assert_allclose(got_mv, data.var((0, 2, 3)) * n / (n - 1), rtol=1e-5)
    with pytest.raises(ValueError, match="data_format"):
        L.batch_norm(x, data_format="NWHC")


# ---- embed_sequence ---------------------------------------------------------------------
@pytest.mark.parametrize("unique", [False, True])
def test_embed_sequence(unique):
    ids = tf.constant([[0, 2, 2], [1, 0, 3]])
    table = np.arange(16, dtype=np.float32).reshape(4, 4)
    emb = L.embed_sequence(ids, vocab_size=4, embed_dim=4, unique=unique,
                           initializer=tf.constant_initializer(table))
    assert emb.shape.as_list() == [2, 3, 4]
    assert [v.op.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)] == \
        ["EmbedSequence/embeddings"]
    np.testing.assert_array_equal(_run(emb), table[[[0, 2, 2], [1, 0, 3]]])
    again = L.embed_sequence(ids, scope="EmbedSequence", reuse=True)
    assert again.shape.as_list() == [2, 3, 4]
    with pytest.raises(ValueError, match="vocab size"):
        L.embed_sequence(ids, vocab_size=4)


# ---- optimize_loss ------------------------------------------------------------------------
def _quadratic():
    w = tf.get_variable("w", initializer=tf.constant([3.0, -2.0]))
    return w, tf.reduce_sum(tf.square(w - [1.0, 1.0]))


@pytest.mark.parametrize("name", ["Adagrad", "Adam", "Ftrl", "Momentum", "RMSProp", "SGD"])
def test_optimize_loss_each_optimizer_name(name):
    _, loss = _quadratic()
    step = tf.train.get_or_create_global_step()
    train = L.optimize_loss(loss, step, learning_rate=0.1, optimizer=name)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(20):
            sess.run(train)
        assert sess.run(loss) < first
        assert sess.run(step) == 20
    assert "OptimizeLoss/learning_rate" in [v.op.name for v in tf.global_variables()]


def test_optimize_loss_class_instance_function_and_clipping():
    w, loss = _quadratic()
    step = tf.train.get_or_create_global_step()
    by_class = L.optimize_loss(loss, step, 0.1, tf.train.GradientDescentOptimizer,
                               clip_gradients=0.5, name="cls")
    by_obj = L.optimize_loss(loss, step, None, tf.train.GradientDescentOptimizer(0.1),
                             summaries=["gradients", "gradient_norm"], name="obj")
    by_fn = L.optimize_loss(loss, step, 0.1, lambda lr: tf.train.AdamOptimizer(lr),
                            learning_rate_decay_fn=lambda lr, s: lr * 0.5, name="fn")
    assert tf.get_collection(tf.GraphKeys.SUMMARIES)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(w)
        sess.run(by_class)
        moved = sess.run(w) - before
        # gradient (4, -6) has norm sqrt(52): clipped to norm 0.5, times lr 0.1.
        np.testing.assert_allclose(np.linalg.norm(moved), 0.05, rtol=1e-5)
        start = sess.run(loss)
        for t in (by_obj, by_fn):
            for _ in range(5):
                sess.run(t)
        assert sess.run(loss) < start


def test_optimize_loss_runs_update_ops_first_and_errors():
    counter = tf.get_variable("counter", initializer=tf.constant(0.0), trainable=False)
    tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(counter, 1.0))
    _, loss = _quadratic()
    step = tf.train.get_or_create_global_step()
    train = L.optimize_loss(loss, step, 0.1, "SGD", gradient_multipliers={"w:0": 0.0},
                            gradient_noise_scale=None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        assert sess.run(train) == pytest.approx(first)  # multiplier 0: w unchanged
        assert sess.run(counter) == 1.0
    with pytest.raises(ValueError, match="Optimizer name"):
        L.optimize_loss(loss, step, 0.1, "Nope")
    with pytest.raises(ValueError, match="Learning rate is None"):
        L.optimize_loss(loss, step, None, "SGD")
    with pytest.raises(ValueError, match="Summaries"):
        L.optimize_loss(loss, step, 0.1, "SGD", summaries=["bogus"])
    with pytest.raises(ValueError, match="clip_gradients"):
        L.optimize_loss(loss, step, 0.1, "SGD", clip_gradients=1)
    with pytest.raises(ValueError, match="Learning rate should be"):
        L.optimize_loss(loss, step, 1, "SGD")


# ---- a TF1-style model -----------------------------------------------------------------------
@pytest.mark.transports()
def test_mnist_style_model_trains():
    rng = np.random.RandomState(0)
    centers = rng.randn(10, 20).astype(np.float32) * 3
    labels = rng.randint(0, 10, 500)
    images = centers[labels] + rng.randn(500, 20).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 20])
    y = tf.placeholder(tf.int64, [None])
    net = L.fully_connected(x, 32, weights_regularizer=L.l2_regularizer(1e-3))
    net = L.dropout(net, keep_prob=0.9)
    logits = L.fully_connected(net, 10, activation_fn=None)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits) + \
        tf.losses.get_regularization_loss()
    train = L.optimize_loss(loss, tf.train.get_or_create_global_step(), 0.01, "Adam")
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    feed = {x: images, y: labels}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(150):
            sess.run(train, feed)
        assert sess.run(loss, feed) < first * 0.5
        assert sess.run(accuracy, feed) > 0.9
