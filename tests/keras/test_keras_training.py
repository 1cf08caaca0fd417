"""tf.keras Model.compile / fit / evaluate / predict in graph mode, and the Keras losses.

As TF 1.x's Keras (tensorflow/python/keras/engine/training_test.py, losses_test.py):
history per epoch ("acc" for metrics=["accuracy"] in TF 1.x), evaluate returning
[loss, metric], updates and weight penalties taking part in training.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.datasets.digits import load_digits

pytestmark = pytest.mark.usefixtures("graph")
K = tf.keras
L = tf.keras.layers


def test_fit_evaluate_predict_on_digits():
    x_train, y_train, x_test, y_test = load_digits()
    tf.set_random_seed(3)
    model = K.Sequential([L.Dense(32, activation="relu", input_shape=(64,)), L.Dropout(0.1),
                          L.Dense(10, activation="softmax")])
    model.compile(K.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=6, verbose=0,
                        validation_split=0.1)
    assert sorted(history.history) == ["acc", "loss", "val_acc", "val_loss"]
    assert history.epoch == list(range(6))
    assert history.history["loss"][-1] < history.history["loss"][0]
    loss, acc = model.evaluate(x_test, y_test, verbose=0)
    assert model.metrics_names == ["loss", "acc"]
    assert acc >= 0.9 and loss < 0.5
    probs = model.predict(x_test[:5])
    assert probs.shape == (5, 10)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_fit_builds_a_sequential_model_without_input_shape():
    model = K.Sequential([L.Dense(1, kernel_initializer="zeros")])
    model.compile("sgd", "mse")
    x = np.random.RandomState(0).rand(64, 3).astype(np.float32)
    y = x @ np.array([[1.0], [2.0], [-1.0]], np.float32)
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert [w.name for w in model.weights] == ["sequential/dense/kernel:0",
                                               "sequential/dense/bias:0"]
    assert history.history["loss"][2] < history.history["loss"][0]
    assert isinstance(model.evaluate(x, y, verbose=0), float)


def test_functional_model_trains_with_batch_norm_updates_and_penalty():
    inp = K.Input(shape=(2,))
    h = L.Dense(4, kernel_regularizer=K.regularizers.l2(0.01))(inp)
    bn = L.BatchNormalization()
    out = L.Dense(1)(bn(h))
    model = K.Model(inp, out)
    model.compile(K.optimizers.Adam(0.05), "mean_squared_error")
    x = np.random.RandomState(1).normal(5.0, 1.0, (32, 2)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    losses = [model.train_on_batch(x, y) for _ in range(30)]
    assert losses[-1] < losses[0] / 2
    moving_mean = K.backend.get_value(bn.moving_mean)
    assert np.any(moving_mean != 0.0)   # the model's updates ran with the train op


def test_loss_includes_the_model_penalties():
    model = K.Sequential([L.Dense(1, input_shape=(1,), kernel_initializer="ones",
                                  kernel_regularizer=K.regularizers.l2(0.5))])
    model.compile("sgd", "mse")
    # prediction 2 for target 2: the loss is only 0.5 * 1 ** 2
    assert model.evaluate(np.array([[2.0]]), np.array([[2.0]]), verbose=0) == pytest.approx(0.5)


def test_training_errors_are_named():
    model = K.Sequential([L.Dense(1, input_shape=(2,))])
    with pytest.raises(RuntimeError, match="must compile"):
        model.fit(np.zeros((2, 2)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="Unknown loss function: 'msee'"):
        model.compile("sgd", "msee")
    with pytest.raises(ValueError, match="optimizer identifier"):
        model.compile("sgdd", "mse")
    model.compile("sgd", "mse")
    with pytest.raises(TypeError, match="Callback instances"):
        model.fit(np.zeros((2, 2)), np.zeros((2, 1)), callbacks=[object()], verbose=0)
    with pytest.raises(ValueError, match="class_weight"):
        model.fit(np.zeros((2, 2)), np.zeros((2, 1)), class_weight={0: 1.0})
    with pytest.raises(ValueError, match="same number of samples"):
        model.fit(np.zeros((3, 2)), np.zeros((2, 1)), verbose=0)


def _run(*tensors):
    with tf.Session() as sess:
        return sess.run(list(tensors))


def test_keras_losses_by_hand():
    y = tf.constant([[0.0, 1.0], [1.0, 0.0]])
    p = tf.constant([[0.2, 0.8], [0.6, 0.4]])
    ids = tf.constant([1, 0])
    logits = tf.log(p)
    got = _run(K.losses.categorical_crossentropy(y, p),
               K.losses.sparse_categorical_crossentropy(ids, p),
               K.losses.sparse_categorical_crossentropy(ids, logits, from_logits=True),
               K.losses.mean_squared_error(y, p), K.losses.mean_absolute_error(y, p),
               K.losses.binary_crossentropy(tf.constant([[1.0], [0.0]]),
                                            tf.constant([[0.9], [0.2]])))
    want = [-np.log([0.8, 0.6])] * 3 + [[0.04, 0.16], [0.2, 0.4]] + [-np.log([0.9, 0.8])]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_keras_accuracy_metrics():
    got = _run(K.metrics.sparse_categorical_accuracy(tf.constant([[1], [1]]),
                                                     tf.constant([[0.1, 0.9], [0.8, 0.2]])),
               K.metrics.categorical_accuracy(tf.constant([[0.0, 1.0]]),
                                              tf.constant([[0.3, 0.7]])),
               K.metrics.binary_accuracy(tf.constant([[1.0, 0.0]]), tf.constant([[0.6, 0.7]])))
    assert [g.tolist() for g in got] == [[1.0, 0.0], [1.0], [0.5]]


def test_to_categorical():
    got = K.utils.to_categorical([[0], [2]], num_classes=3)
    assert got.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]] and got.dtype == np.float32
    assert K.utils.to_categorical([1, 0]).shape == (2, 2)
    with pytest.raises(ValueError, match="class ids"):
        K.utils.to_categorical([3], num_classes=3)


def test_save_and_load_weights(tmp_path):
    model = K.Sequential([L.Dense(2, input_shape=(3,))])
    path = str(tmp_path / "weights")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = model.get_weights()
        model.save_weights(path)
        sess.run(tf.global_variables_initializer())   # new random values
        model.load_weights(path)
        after = model.get_weights()
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="HDF5"):
        model.save_weights(str(tmp_path / "w.h5"))


def test_fit_evaluate_predict_on_a_dataset():
    x_train, y_train, x_test, y_test = load_digits()
    tf.set_random_seed(5)
    model = K.Sequential([L.Dense(32, activation="relu", input_shape=(64,)),
                          L.Dense(10, activation="softmax")])
    model.compile(K.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    train = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(2000).batch(32)
    test = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(64)
    history = model.fit(train, epochs=4, verbose=0, validation_data=test)
    assert sorted(history.history) == ["acc", "loss", "val_acc", "val_loss"]
    assert history.history["loss"][-1] < history.history["loss"][0]
    loss, acc = model.evaluate(test, verbose=0)
    assert acc >= 0.9
    # the same model on numpy arrays agrees with the dataset path
    assert model.evaluate(x_test, y_test, verbose=0)[1] == pytest.approx(acc, abs=1e-6)
    probs = model.predict(tf.data.Dataset.from_tensor_slices(x_test[:10]).batch(4))
    assert probs.shape == (10, 10)
    one = model.fit(train.repeat(), epochs=1, steps_per_epoch=3, verbose=0)
    assert len(one.history["loss"]) == 1
    with pytest.raises(ValueError, match="ended after"):
        model.evaluate(test, steps=1000, verbose=0)
    with pytest.raises(ValueError, match="no `y`"):
        model.fit(train, y_train)


def test_pad_sequences():
    pad = K.preprocessing.sequence.pad_sequences
    assert pad([[1, 2, 3], [4]]).tolist() == [[1, 2, 3], [0, 0, 4]]
    assert pad([[1, 2, 3], [4]], maxlen=2).tolist() == [[2, 3], [0, 4]]
    assert pad([[1, 2, 3], [4]], maxlen=2, padding="post", truncating="post",
               value=9).tolist() == [[1, 2], [4, 9]]
    assert pad([[1], []], maxlen=2).dtype == np.int32
    with pytest.raises(ValueError, match="padding type"):
        pad([[1]], padding="middle")


def test_one_dimensional_targets_become_columns_as_in_keras():
    # binary labels of shape [n] against a [n, 1] sigmoid output (no [n, n] broadcast)
    rng = np.random.RandomState(0)
    x = rng.rand(200, 2).astype(np.float32)
    y = (x[:, 0] > x[:, 1]).astype(np.float32)
    tf.set_random_seed(1)
    model = K.Sequential([L.Dense(1, activation="sigmoid", input_shape=(2,))])
    model.compile(K.optimizers.Adam(0.1), "binary_crossentropy", metrics=["accuracy"])
    model.fit(x, y, epochs=20, batch_size=50, verbose=0)
    assert model.evaluate(x, y, verbose=0)[1] > 0.9
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(50)
    assert model.evaluate(ds, verbose=0)[1] == pytest.approx(
        model.evaluate(x, y, verbose=0)[1], abs=1e-6)
