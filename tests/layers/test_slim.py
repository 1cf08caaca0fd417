"""tf.contrib.slim: a LeNet-style slim program trains; variable helpers (model_variable,
get_variables*, get_variables_to_restore, assign_from_checkpoint_fn) restore part of a
model; slim.losses takes contrib's argument order; slim.learning trains.

Specification: TF 1.x tensorflow/contrib/framework/python/ops/variables_test.py and
TF-Slim's documented usage (README); tests our own.
"""
import numpy as np
import pytest

import tensorweave as tf
import tensorweave.contrib.slim as slim_module

pytestmark = pytest.mark.usefixtures("graph")
slim = tf.contrib.slim


def _data(n=32, seed=0):
    """12x12 images whose label (0..3) is the quadrant holding a bright square."""
    rng = np.random.RandomState(seed)
    x = rng.uniform(0, 0.2, size=(n, 12, 12, 1)).astype(np.float32)
    y = rng.randint(0, 4, size=n)
    for i, label in enumerate(y):
        r, c = divmod(int(label), 2)
        x[i, r * 6 + 1:r * 6 + 5, c * 6 + 1:c * 6 + 5, 0] += 1.0
    return x, y


def lenet(images, num_classes=4):
    with slim.arg_scope([slim.conv2d, slim.fully_connected], activation_fn=tf.nn.relu,
                        weights_regularizer=slim.l2_regularizer(0.0005)):
        net = slim.conv2d(images, 8, [5, 5], scope="conv1")
        net = slim.max_pool2d(net, [2, 2], scope="pool1")
        net = slim.conv2d(net, 16, [3, 3], scope="conv2")
        net = slim.max_pool2d(net, [2, 2], scope="pool2")
        net = slim.flatten(net, scope="flatten")
        net = slim.fully_connected(net, 32, scope="fc3")
        return slim.fully_connected(net, num_classes, activation_fn=None, scope="logits")


def test_namespace():
    assert slim_module is slim
    assert slim.losses is tf.contrib.losses and callable(slim.learning.train)
    for name in ("conv2d", "fully_connected", "max_pool2d", "avg_pool2d", "flatten", "dropout",
                 "batch_norm", "repeat", "stack", "one_hot_encoding", "l2_regularizer",
                 "xavier_initializer", "variance_scaling_initializer", "arg_scope",
                 "model_variable", "variable", "get_variables", "get_model_variables",
                 "get_variables_to_restore", "assign_from_checkpoint_fn"):
        assert callable(getattr(slim, name)), name
    assert tf.contrib.framework.get_variables_to_restore is slim.get_variables_to_restore


@pytest.mark.transports()
def test_lenet_trains_with_regularization():
    x, y = _data()
    images = tf.placeholder(tf.float32, [None, 12, 12, 1])
    labels = tf.placeholder(tf.int64, [None])
    logits = lenet(images)
    names = [v.op.name for v in slim.get_model_variables()]
    assert names == ["conv1/weights", "conv1/biases", "conv2/weights", "conv2/biases",
                     "fc3/weights", "fc3/biases", "logits/weights", "logits/biases"]
    assert logits.op.name == "logits/BiasAdd"
    assert len(tf.losses.get_regularization_losses()) == 4  # one per weights
    slim.losses.softmax_cross_entropy(logits, slim.one_hot_encoding(labels, 4))
    total = slim.losses.get_total_loss()
    train = tf.train.AdamOptimizer(0.01).minimize(total)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {images: x, labels: y}
        first = sess.run(total, feed)
        for _ in range(40):
            sess.run(train, feed)
        last = sess.run(total, feed)
        acc = (sess.run(logits, feed).argmax(1) == y).mean()
    assert last < 0.5 * first, (first, last)
    assert acc > 0.9


def test_losses_take_contrib_argument_order():
    logits = tf.constant([[2.0, 0.0], [0.0, 1.0]])
    onehot = tf.constant([[1.0, 0.0], [0.0, 1.0]])
    a = slim.losses.softmax_cross_entropy(logits, onehot)
    b = slim.losses.sparse_softmax_cross_entropy(logits, tf.constant([0, 1]))
    c = slim.losses.mean_squared_error(tf.constant([1.0, 3.0]), tf.constant([0.0, 0.0]))
    h = slim.losses.hinge_loss(tf.constant([2.0, 0.5]), tf.constant([1.0, 0.0]))
    assert len(slim.losses.get_losses()) == 3
    with tf.Session() as sess:
        got_a, got_b, got_c, got_h = sess.run([a, b, c, h])
    want = np.mean([np.log(1 + np.exp(-2.0)), np.log(1 + np.exp(-1.0))])
    assert got_a == pytest.approx(want, rel=1e-5) and got_b == pytest.approx(want, rel=1e-5)
    assert got_c == pytest.approx(5.0)
    assert got_h.tolist() == [0.0, 1.5]


def test_model_variable_and_selection_helpers():
    with tf.variable_scope("A"):
        a = slim.model_variable("a", shape=[2], initializer=tf.zeros_initializer())
        b = slim.variable("b", shape=[], regularizer=slim.l2_regularizer(0.1))
    with tf.variable_scope("B"):
        c = slim.variable("a", shape=[1], collections=["mine"])
        d = slim.local_variable(1.0, name="d")
    assert slim.get_model_variables() == [a]
    assert slim.get_variables("A") == [a, b] and slim.get_variables(suffix="a") == [a]
    assert slim.get_variables_by_name("a") == [a]
    assert slim.get_unique_variable("A/b") is b
    assert tf.get_collection("mine") == [c] and c not in slim.get_variables()
    assert slim.get_local_variables() == [d]
    assert slim.get_trainable_variables("A") == [a, b]
    with pytest.raises(ValueError, match="A/zz"):
        slim.get_unique_variable("A/zz")
    assert len(tf.losses.get_regularization_losses()) == 1
    with slim.arg_scope([slim.model_variable], initializer=tf.ones_initializer()):
        e = slim.model_variable("e", shape=[3])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(e).tolist() == [1.0, 1.0, 1.0]


def test_get_variables_to_restore_include_exclude():
    with tf.variable_scope("A"):
        a = slim.variable("a", shape=[1])
    with tf.variable_scope("B"):
        b = slim.variable("b", shape=[1])
    with tf.variable_scope("C"):
        c = slim.variable("c", shape=[1])
    assert slim.get_variables_to_restore() == [a, b, c]
    assert slim.get_variables_to_restore(include=["A", "C"]) == [a, c]
    assert slim.get_variables_to_restore(exclude=["B"]) == [a, c]
    assert slim.get_variables_to_restore(include=["A", "B"], exclude=["A"]) == [b]
    with pytest.raises(TypeError, match="include"):
        slim.get_variables_to_restore(include="A")
    with pytest.raises(TypeError, match="exclude"):
        slim.get_variables_to_restore(exclude="A")


def _build_and_save(tmp_path):
    g = tf.Graph()
    with g.as_default():
        lenet(tf.zeros([1, 12, 12, 1]), num_classes=4)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
            values = {v.op.name: sess.run(v) for v in tf.global_variables()}
    return path, values


@pytest.mark.transports()
def test_restore_part_of_a_model_with_saver_and_init_fn(tmp_path):
    path, saved = _build_and_save(tmp_path)
    lenet(tf.zeros([1, 12, 12, 1]), num_classes=7)  # a new head: logits differ in shape
    keep = slim.get_variables_to_restore(exclude=["logits"])
    assert all(not v.op.name.startswith("logits") for v in keep) and len(keep) == 6
    saver = tf.train.Saver(keep)
    init_fn = slim.assign_from_checkpoint_fn(path, keep)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.restore(sess, path)
        for v in keep:
            np.testing.assert_array_equal(sess.run(v), saved[v.op.name])
        sess.run(tf.global_variables_initializer())
        assert not np.array_equal(sess.run(keep[0]), saved["conv1/weights"])
        init_fn(sess)
        np.testing.assert_array_equal(sess.run(keep[0]), saved["conv1/weights"])
        assert sess.run(slim.get_variables("logits/weights")[0]).shape == (32, 7)
    with pytest.raises(tf.errors.InvalidArgumentError, match="logits/weights"):
        tf.train.Saver(slim.get_variables_to_restore()).restore(tf.Session(), path)
    with tf.variable_scope("extra"):
        extra = slim.variable("x", shape=[1])
    with pytest.raises(ValueError, match="extra/x"):
        slim.assign_from_checkpoint(path, keep + [extra])
    op, feed = slim.assign_from_checkpoint(path, keep + [extra], ignore_missing_vars=True)
    fn = slim.assign_from_checkpoint_fn(path, [extra], ignore_missing_vars=True)
    assert fn is None and len(feed) == 6
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(op, feed)
        np.testing.assert_array_equal(sess.run(keep[2]), saved["conv2/weights"])


@pytest.mark.transports()
def test_learning_create_train_op_and_train(tmp_path):
    x, y = _data(16, seed=1)
    logits = lenet(tf.constant(x))
    slim.losses.sparse_softmax_cross_entropy(logits, tf.constant(y))
    total = slim.losses.get_total_loss()
    train_op = slim.learning.create_train_op(total, tf.train.AdamOptimizer(0.01))
    assert train_op in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    final = slim.learning.train(train_op, str(tmp_path), number_of_steps=30,
                                save_summaries_secs=None, log_every_n_steps=10)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-30")
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        assert sess.run(total) == pytest.approx(final, rel=0.5)
        assert sess.run(total) < 1.0
