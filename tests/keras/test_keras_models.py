"""Graph-mode tf.keras models: Sequential, functional Model, training flag, training.

The behaviour checked is TF 1.x's Keras in graph mode (tensorflow/python/keras/
engine/sequential_test.py, network_test.py): names of layers and weights, where
the weights are built, `training` reaching Dropout/BatchNormalization, updates.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.datasets.digits import load_digits

pytestmark = pytest.mark.usefixtures("graph")
K = tf.keras


def _names(variables):
    return [v.name for v in variables]


def test_sequential_with_input_shape_builds_at_construction_with_plain_names():
    model = K.Sequential([K.layers.Dense(4, input_shape=(3,)), K.layers.Dense(2)])
    assert model.built
    assert _names(model.weights) == ["dense/kernel:0", "dense/bias:0",
                                     "dense_1/kernel:0", "dense_1/bias:0"]
    assert _names(tf.trainable_variables()) == _names(model.weights)
    assert model.inputs[0].name == "dense_input:0"
    assert model.outputs[0].shape.as_list() == [None, 2]


def test_sequential_without_input_shape_builds_on_first_call_inside_its_scope():
    model = K.Sequential()
    model.add(K.layers.Dense(3))
    assert not model.built and model.weights == []
    x = tf.placeholder(tf.float32, [None, 5])
    y = model(x)
    assert _names(model.weights) == ["sequential/dense/kernel:0", "sequential/dense/bias:0"]
    assert y.name == "sequential/dense/BiasAdd:0"
    assert model(x).shape.as_list() == [None, 3]
    assert len(tf.global_variables()) == 2  # a second call shares the weights


def test_sequential_build_with_an_input_shape_then_summary():
    model = K.Sequential([K.layers.Dense(4), K.layers.Dense(2)])
    with pytest.raises(ValueError, match="input_shape"):
        model.build()
    model.build((None, 3))
    assert model.outputs[0].shape.as_list() == [None, 2] and len(model.weights) == 4
    lines = []
    model.summary(print_fn=lines.append)
    assert any("Total params: 26" in line for line in lines)


def test_sequential_rejects_non_layers_and_duplicate_names():
    model = K.Sequential()
    with pytest.raises(TypeError, match="instance of class Layer"):
        model.add("dense")
    model.add(K.layers.Dense(2, name="a"))
    with pytest.raises(ValueError, match="unique names"):
        model.add(K.layers.Dense(2, name="a"))


def test_sequential_accepts_the_same_layer_instance_twice():
    pool = K.layers.MaxPooling2D((2, 2), (2, 2), padding="same")
    model = K.Sequential([K.layers.Reshape((8, 8, 1), input_shape=(64,)), pool,
                          K.layers.Conv2D(4, 3, padding="same"), pool, K.layers.Flatten()])
    assert model.outputs[0].shape.as_list() == [None, 16]
    assert [w.name for w in model.weights] == ["conv2d/kernel:0", "conv2d/bias:0"]
    assert model(tf.zeros([2, 64])).shape.as_list() == [2, 16]


def test_sequential_pop_and_layers():
    model = K.Sequential([K.layers.Dense(4, input_shape=(3,)), K.layers.Dense(2)])
    assert [la.name for la in model.layers] == ["dense", "dense_1"]
    model.pop()
    assert [la.name for la in model.layers] == ["dense"]
    assert model.outputs[0].shape.as_list() == [None, 4]


def test_functional_model_replays_its_layers_on_new_inputs():
    inp = K.Input(shape=(5,))
    assert inp.name == "input_1:0" and inp.shape.as_list() == [None, 5]
    h = K.layers.Dense(4, activation="relu")(inp)
    out = K.layers.Dense(2)(h)
    model = K.Model(inp, out)
    assert model.name == "model"
    assert _names(model.weights) == ["dense/kernel:0", "dense/bias:0",
                                     "dense_1/kernel:0", "dense_1/bias:0"]
    assert [type(la).__name__ for la in model.layers] == ["InputLayer", "Dense", "Dense"]
    assert model.input is inp and model.output is out
    assert model.get_layer("dense_1").units == 2
    x = tf.placeholder(tf.float32, [None, 5])
    y = model(x)
    assert y.name.startswith("model/dense_1/")
    assert len(tf.global_variables()) == 4
    feed = np.arange(10, dtype=np.float32).reshape(2, 5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([out, y], {inp: feed, x: feed})
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_functional_model_with_two_inputs_and_concatenate():
    a = K.Input(shape=(2,), name="a")
    b = K.Input(shape=(3,), name="b")
    merged = K.layers.Concatenate()([a, b])
    out = K.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")(merged)
    model = K.Model(inputs=[a, b], outputs=out)
    xa, xb = tf.constant([[1.0, 2.0]]), tf.constant([[3.0, 4.0, 5.0]])
    y = model([xa, xb])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y).tolist() == [[15.0]]


def test_functional_model_graph_disconnected_names_the_tensor():
    a = K.Input(shape=(2,), name="first")
    b = K.Input(shape=(2,), name="second")
    out = K.layers.Add()([a, b])
    with pytest.raises(ValueError, match="Graph disconnected.*second"):
        K.Model(a, out)
    with pytest.raises(ValueError, match="tf.keras.Input"):
        K.Model(a, tf.constant([1.0]))


def test_training_flag_reaches_dropout_through_the_model():
    model = K.Sequential([K.layers.Dropout(0.5, input_shape=(1000,))])
    x = tf.ones([1, 1000])
    train, infer, default = model(x, training=True), model(x, training=False), model(x)
    with tf.Session() as sess:
        t, i, d = sess.run([train, infer, default])
        fed = sess.run(default, {K.backend.learning_phase(): True})
    assert i.tolist() == d.tolist() == np.ones([1, 1000]).tolist()
    assert set(np.unique(t)) <= {0.0, 2.0} and 300 < np.count_nonzero(t) < 700
    assert 300 < np.count_nonzero(fed) < 700


def test_learning_phase_is_a_bool_placeholder_with_default_false():
    phase = K.backend.learning_phase()
    assert phase.name == "keras_learning_phase:0" and phase.dtype == tf.bool
    assert K.backend.learning_phase() is phase
    with tf.Session() as sess:
        assert not sess.run(phase)
        assert sess.run(phase, {phase: True})


def test_model_updates_collect_batch_norm_moving_averages():
    model = K.Sequential([K.layers.Dense(3, input_shape=(2,)), K.layers.BatchNormalization()])
    y = model(tf.placeholder(tf.float32, [None, 2]), training=True)
    assert y.shape.as_list() == [None, 3]
    updates = model.updates
    assert updates and all(u.type == "AssignSub" for u in updates)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []  # Keras keeps them on the model
    assert _names(model.non_trainable_weights) == ["batch_normalization/moving_mean:0",
                                                   "batch_normalization/moving_variance:0"]


def test_get_updates_for_picks_the_updates_of_one_call():
    model = K.Sequential([K.layers.Dense(3, input_shape=(2,)), K.layers.BatchNormalization()])
    features = tf.constant([[1.0, 2.0], [3.0, 5.0]])
    model(features, training=True)
    mine = model.get_updates_for(features)
    assert len(model.updates) == 4 and len(mine) == 2
    assert all(u.name.startswith("sequential/") for u in mine)
    with tf.Session() as sess:   # runnable without feeding the model's own Input
        sess.run(tf.global_variables_initializer())
        sess.run(mine)


def test_model_trainable_false_moves_weights_to_non_trainable():
    model = K.Sequential([K.layers.Dense(2, input_shape=(2,))])
    model.trainable = False
    assert model.trainable_weights == []
    assert len(model.non_trainable_weights) == 2


def test_subclassed_model_tracks_layers_assigned_to_attributes():
    class TwoLayer(K.Model):
        def __init__(self):
            super().__init__()
            self.hidden = K.layers.Dense(4, activation="relu")
            self.out = K.layers.Dense(1)

        def call(self, inputs, training=None):
            return self.out(self.hidden(inputs))

    model = TwoLayer()
    y = model(tf.placeholder(tf.float32, [None, 3]))
    assert model.name == "two_layer"
    assert _names(model.weights) == ["two_layer/dense/kernel:0", "two_layer/dense/bias:0",
                                     "two_layer/dense_1/kernel:0", "two_layer/dense_1/bias:0"]
    assert y.shape.as_list() == [None, 1]


def test_get_and_set_weights_through_the_default_session():
    model = K.Sequential([K.layers.Dense(2, input_shape=(3,))])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel = np.arange(6, dtype=np.float32).reshape(3, 2)
        model.set_weights([kernel, np.array([1.0, -1.0], np.float32)])
        got = model.get_weights()
        np.testing.assert_array_equal(got[0], kernel)
        out = sess.run(model.outputs[0], {model.inputs[0]: [[1.0, 1.0, 1.0]]})
    assert out.tolist() == [[7.0, 8.0]]
    with pytest.raises(ValueError, match="expecting 2 weights"):
        model.set_weights([kernel])


def test_summary_lists_layers_and_parameter_counts():
    model = K.Sequential([K.layers.Dense(4, input_shape=(3,)), K.layers.Dense(2)])
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "dense (Dense)" in text and "(None, 4)" in text
    assert "Total params: 26" in text and "Trainable params: 26" in text


def test_sequential_conv_net_trains_on_digits():
    """The Estimator MNIST sample's model shape, trained on the shipped 8x8 digits."""
    x_train, y_train, x_test, y_test = load_digits()
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.int64, [None])
    model = K.Sequential([
        K.layers.Reshape((8, 8, 1), input_shape=(64,)),
        K.layers.Conv2D(8, 3, padding="same", activation="relu"),
        K.layers.MaxPooling2D((2, 2), (2, 2), padding="same"),
        K.layers.Conv2D(16, 3, padding="same", activation="relu"),
        K.layers.MaxPooling2D((2, 2), (2, 2), padding="same"),
        K.layers.Flatten(),
        K.layers.Dense(32, activation="relu"),
        K.layers.Dropout(0.3),
        K.layers.Dense(10)])
    logits = model(x, training=True)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    predictions = tf.argmax(model(x, training=False), axis=1)
    acc, acc_op = tf.metrics.accuracy(labels=y, predictions=predictions)
    rng = np.random.RandomState(0)
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        first = sess.run(loss, {x: x_train[:256], y: y_train[:256]})
        for _ in range(300):
            idx = rng.randint(0, len(x_train), 64)
            sess.run(train_op, {x: x_train[idx], y: y_train[idx]})
        sess.run(acc_op, {x: x_test, y: y_test})
        accuracy = sess.run(acc)
        last = sess.run(loss, {x: x_train[:256], y: y_train[:256]})
    assert last < first / 3
    assert accuracy >= 0.9


def test_clear_session_starts_a_new_default_graph():
    with tf.Graph().as_default():
        with pytest.raises(AssertionError, match="nested"):
            K.backend.clear_session()



def test_clear_session_resets_the_default_graph_and_layer_names():
    # The test's graph fixture is this thread's; a new thread sees the global default.
    import threading
    seen = []

    def body():
        K.backend.clear_session()   # earlier tests may have used the global graph
        before = tf.get_default_graph()
        seen.append(K.layers.Dense(1).name)
        seen.append(K.layers.Dense(1).name)
        K.backend.clear_session()
        seen.append(tf.get_default_graph() is not before)
        seen.append(K.layers.Dense(1).name)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == ["dense", "dense_1", True, "dense"]
