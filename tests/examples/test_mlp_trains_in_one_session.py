"""End to end: an MLP trained in a local tf.Session learns a nonlinear classification task."""
import time

import numpy as np
import pytest

import tensorweave as tf


def _spirals(n_per_class: int, classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Interleaved 2-D spirals: not linearly separable, easy for a small MLP."""
    rng = np.random.RandomState(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.1, 1.0, n_per_class)
        t = np.linspace(c * 2 * np.pi / classes, c * 2 * np.pi / classes + 3.0, n_per_class)
        t = t + rng.randn(n_per_class) * 0.1
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(n_per_class, c))
    x = np.concatenate(xs).astype(np.float32)
    y = np.concatenate(ys).astype(np.int32)
    perm = rng.permutation(len(y))
    return x[perm], y[perm]


def _dense(x, units, name, activation=None):
    with tf.variable_scope(name):
        w = tf.get_variable("w", [x.shape[1], units])
        b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
        y = tf.matmul(x, w) + b
        return activation(y) if activation else y


@pytest.mark.parametrize("make_opt,sparse_labels", [
    (lambda: tf.train.AdamOptimizer(0.02), True),
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), False),
])
def test_mlp_reaches_high_accuracy(make_opt, sparse_labels):
    x_train, y_train = _spirals(300, 3, seed=0)
    with tf.Graph().as_default():
        tf.set_random_seed(42)
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        h = _dense(x, 64, "hidden1", tf.nn.relu)
        h = _dense(h, 64, "hidden2", tf.nn.relu)
        logits = _dense(h, 3, "logits")
        if sparse_labels:
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        else:
            xent = tf.nn.softmax_cross_entropy_with_logits(labels=tf.one_hot(y, 3),
                                                           logits=logits)
        loss = tf.reduce_mean(xent)
        step = tf.train.get_or_create_global_step()
        train_op = make_opt().minimize(loss, global_step=step)
        correct = tf.equal(tf.cast(tf.argmax(logits, 1), tf.int32), y)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        assert len(tf.trainable_variables()) == 6
        start = time.time()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert list(sess.run(tf.report_uninitialized_variables())) == []
            first_loss = sess.run(loss, {x: x_train, y: y_train})
            rng = np.random.RandomState(1)
            for _ in range(600):
                batch = rng.randint(0, len(y_train), 64)
                sess.run(train_op, {x: x_train[batch], y: y_train[batch]})
            final_loss, acc = sess.run([loss, accuracy], {x: x_train, y: y_train})
            assert tf.train.global_step(sess, step) == 600
        elapsed = time.time() - start
    print(f"loss {first_loss:.3f} -> {final_loss:.3f}, accuracy {acc:.3f}, {elapsed:.2f}s")
    assert final_loss < first_loss / 4, (first_loss, final_loss)
    assert acc >= 0.95, f"accuracy {acc:.3f} (loss {first_loss:.3f} -> {final_loss:.3f})"
    assert elapsed < 30, f"training took {elapsed:.1f}s"
