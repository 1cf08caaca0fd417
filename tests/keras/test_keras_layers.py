"""Graph-mode tf.keras layers: names, weights, values, training flags, errors.

Behaviour as TF 1.x's tf.keras in graph mode (tensorflow/python/keras/layers/
core_test.py, convolutional_test.py, pooling_test.py, normalization_test.py,
embeddings_test.py, merge_test.py), checked on hand-computed values.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
K = tf.keras
L = tf.keras.layers


def _eval(*tensors, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(tensors), feed)


def test_layer_names_are_unique_per_class_and_per_graph():
    names = [L.Dense(1).name, L.Dense(1).name, L.Conv2D(1, 1).name, L.MaxPooling2D().name,
             L.MaxPool2D().name, L.BatchNormalization().name, L.Dense(1, name="x").name]
    assert names == ["dense", "dense_1", "conv2d", "max_pooling2d", "max_pooling2d_1",
                     "batch_normalization", "x"]
    with tf.Graph().as_default():
        assert L.Dense(1).name == "dense"


def test_dense_values_weights_and_collections():
    layer = L.Dense(2, activation="relu", kernel_initializer=K.initializers.Constant(0.5),
                    bias_initializer=K.initializers.Constant([1.0, -10.0]))
    y = layer(tf.constant([[1.0, 2.0, 3.0]]))
    assert y.op.type == "Relu" and y.op.name == "dense/Relu"
    assert [w.name for w in layer.weights] == ["dense/kernel:0", "dense/bias:0"]
    assert tf.trainable_variables() == layer.trainable_weights
    assert _eval(y)[0].tolist() == [[4.0, 0.0]]
    # a second call shares the weights and builds new ops
    y2 = layer(tf.constant([[0.0, 0.0, 0.0]]))
    assert len(tf.global_variables()) == 2 and y2.op.name == "dense_1/Relu"


def test_dense_tensordot_for_rank_3_inputs_and_input_dim():
    layer = L.Dense(3, kernel_initializer="ones", input_dim=4)
    assert layer._batch_input_shape == (None, 4)
    y = layer(tf.ones([2, 5, 4]))
    assert y.shape.as_list() == [2, 5, 3]
    assert np.all(_eval(y)[0] == 4.0)


def test_unknown_keyword_and_bad_arguments_are_named():
    with pytest.raises(TypeError, match="'units_count'"):
        L.Dense(2, units_count=3)
    with pytest.raises(ValueError, match="Unknown activation function: 'relux'"):
        L.Dense(2, activation="relux")
    with pytest.raises(ValueError, match="Unknown initializer: 'onez'"):
        L.Dense(2, kernel_initializer="onez")
    with pytest.raises(ValueError, match="padding"):
        L.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="kernel_size"):
        L.Conv2D(2, (3, 3, 3))


def test_l2_regularizer_is_a_layer_loss_not_a_collection_entry():
    layer = L.Dense(2, kernel_initializer="ones", kernel_regularizer=K.regularizers.l2(0.1),
                    bias_regularizer="l1")
    layer(tf.ones([1, 3]))
    assert len(layer.losses) == 2
    assert layer.losses[0].name.startswith("dense/kernel/Regularizer/")
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == []   # as TF's Keras
    assert _eval(layer.losses[0])[0] == pytest.approx(0.6)
    both = K.regularizers.l1_l2(l1=1.0, l2=1.0)(tf.constant([1.0, -2.0]))
    assert _eval(both)[0] == pytest.approx(8.0)


def test_conv2d_shapes_values_and_channels_first():
    layer = L.Conv2D(2, 3, strides=2, padding="same", kernel_initializer="ones")
    y = layer(tf.ones([1, 5, 5, 3]))
    assert y.shape.as_list() == [1, 3, 3, 2]
    assert layer.kernel.shape.as_list() == [3, 3, 3, 2]
    out = _eval(y)[0]
    assert out[0, 1, 1, 0] == 27.0 and out[0, 0, 0, 0] == 12.0   # interior, corner
    cf = L.Conv2D(4, (2, 2), data_format="channels_first", dilation_rate=2)
    assert cf(tf.ones([1, 3, 5, 5])).shape.as_list() == [1, 4, 3, 3]


def test_pooling_layers():
    x = tf.constant(np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1))
    mx = L.MaxPooling2D()(x)
    avg = L.AveragePooling2D(pool_size=(2, 2), strides=(1, 1))(x)
    gavg, gmax = L.GlobalAveragePooling2D()(x), L.GlobalMaxPooling2D()(x)
    assert mx.shape.as_list() == [1, 2, 2, 1] and avg.shape.as_list() == [1, 3, 3, 1]
    m, a, ga, gm = _eval(mx, avg, gavg, gmax)
    assert m[0, :, :, 0].tolist() == [[5.0, 7.0], [13.0, 15.0]]
    assert a[0, 0, 0, 0] == 2.5
    assert ga.tolist() == [[7.5]] and gm.tolist() == [[15.0]]


def test_flatten_reshape_and_activation():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    flat = L.Flatten()(x)
    back = L.Reshape((3, 2))(flat)
    free = L.Reshape((-1, 2))(flat)
    act = L.Activation("softmax")(tf.constant([[0.0, 0.0]]))
    assert flat.shape.as_list() == [None, 6]
    assert back.shape.as_list() == [None, 3, 2] and free.shape.as_list() == [None, 3, 2]
    value = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    f, b, s = _eval(flat, back, act, feed={x: value})
    assert f.tolist() == value.reshape(2, 6).tolist()
    assert b.tolist() == value.reshape(2, 3, 2).tolist() and s.tolist() == [[0.5, 0.5]]


def test_dropout_respects_training_and_learning_phase():
    x = tf.ones([100, 100])
    layer = L.Dropout(0.5)
    on, off, phase = layer(x, training=True), layer(x, training=False), layer(x)
    a, b, c = _eval(on, off, phase)
    assert 4000 < np.count_nonzero(a) < 6000 and set(np.unique(a)) == {0.0, 2.0}
    assert np.all(b == 1.0) and np.all(c == 1.0)
    fed = _eval(phase, feed={K.backend.learning_phase(): True})[0]
    assert 4000 < np.count_nonzero(fed) < 6000


def test_set_learning_phase_fixes_training_for_later_calls():
    K.backend.set_learning_phase(1)
    y = L.Dropout(0.5)(tf.ones([100, 100]))
    assert 4000 < np.count_nonzero(_eval(y)[0]) < 6000
    with pytest.raises(ValueError, match="0 or 1"):
        K.backend.set_learning_phase(2)


def test_keras_batch_normalization_updates_stay_on_the_layer():
    bn = L.BatchNormalization(momentum=0.0)
    x = tf.constant([[1.0, 10.0], [3.0, 30.0]])
    y = bn(x, training=True)
    assert len(bn.updates) == 2 and tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y)
        sess.run(bn.updates)
        mean, var = sess.run([bn.moving_mean, bn.moving_variance])
    np.testing.assert_allclose(out, [[-1.0, -1.0], [1.0, 1.0]], rtol=1e-3)
    np.testing.assert_allclose(mean, [2.0, 20.0])
    np.testing.assert_allclose(var, [1.0, 100.0])  # 2-D: the biased batch variance


def test_keras_batch_normalization_with_tensor_training_updates_only_when_true():
    bn = L.BatchNormalization(momentum=0.0, center=False, scale=False)
    x = tf.constant([[1.0], [3.0]])
    y = bn(x)   # training from the learning phase placeholder
    phase = K.backend.learning_phase()
    assert [w.name for w in bn.weights] == ["batch_normalization/moving_mean:0",
                                            "batch_normalization/moving_variance:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        inferred = sess.run(y)
        sess.run(bn.updates)
        assert sess.run(bn.moving_mean).tolist() == [0.0]   # phase False: no change
        trained = sess.run(y, {phase: True})
        sess.run(bn.updates, {phase: True})
        assert sess.run(bn.moving_mean).tolist() == [2.0]
    np.testing.assert_allclose(inferred, [[1.0], [3.0]], rtol=1e-3)
    np.testing.assert_allclose(trained, [[-1.0], [1.0]], rtol=1e-3)


def test_batch_normalization_rejects_unsupported_options():
    with pytest.raises(ValueError, match="renorm"):
        L.BatchNormalization(renorm=True)


def test_embedding_looks_up_rows():
    emb = L.Embedding(10, 3, embeddings_initializer=K.initializers.Constant(
        np.arange(30, dtype=np.float32).reshape(10, 3)))
    ids = tf.constant([[0, 2], [9, 1]])
    out = emb(ids)
    assert out.shape.as_list() == [2, 2, 3] and emb.embeddings.name == "embedding/embeddings:0"
    got = _eval(out)[0]
    assert got[1, 0].tolist() == [27.0, 28.0, 29.0] and got[0, 1].tolist() == [6.0, 7.0, 8.0]
    assert L.Embedding(5, 2, input_length=4)._batch_input_shape == (None, 4)
    uniform = L.Embedding(100, 10)
    table = _eval(uniform(tf.constant([0])), uniform.embeddings)[1]
    assert np.abs(table).max() <= 0.05 and table.std() > 0.01


def test_merge_layers():
    a, b = tf.constant([[1.0, 2.0]]), tf.constant([[3.0, 5.0]])
    cat = L.Concatenate()([a, b])
    cat0 = L.concatenate([a, b], axis=0)
    outs = _eval(cat, cat0, L.Add()([a, b]), L.Subtract()([a, b]), L.Multiply()([a, b]),
                 L.Average()([a, b]), L.Maximum()([a, b]), L.minimum([a, b]))
    assert [o.tolist() for o in outs] == [
        [[1.0, 2.0, 3.0, 5.0]], [[1.0, 2.0], [3.0, 5.0]], [[4.0, 7.0]], [[-2.0, -3.0]],
        [[3.0, 10.0]], [[2.0, 3.5]], [[3.0, 5.0]], [[1.0, 2.0]]]
    with pytest.raises(ValueError, match="list of at least 2"):
        L.Add()(a)
    with pytest.raises(ValueError, match="exactly 2"):
        L.Subtract()([a, b, a])


def test_custom_layer_with_add_weight_and_lambda():
    class Scale(L.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [int(input_shape[-1])], initializer="ones")
            self.count = self.add_weight("count", [], trainable=False,
                                         initializer="zeros", dtype=tf.int32)
            super().build(input_shape)

        def call(self, inputs):
            return inputs * self.w * 3.0

    layer = Scale()
    y = layer(tf.constant([[1.0, 2.0]]))
    assert layer.name == "scale" and [w.name for w in layer.weights] == ["scale/w:0",
                                                                         "scale/count:0"]
    assert layer.count.dtype.base_dtype == tf.int32
    doubled = L.Lambda(lambda t: t * 2.0)(y)
    assert _eval(doubled)[0].tolist() == [[6.0, 12.0]]


def test_activations_and_initializers_by_name():
    x = tf.constant([-2.0, 0.0, 2.0])
    acts = K.activations
    got = _eval(acts.get("relu")(x), acts.get("linear")(x), acts.softsign(x),
                acts.hard_sigmoid(x), acts.relu(x, max_value=1.0), acts.elu(x, alpha=2.0))
    np.testing.assert_allclose(got[0], [0.0, 0.0, 2.0])
    np.testing.assert_allclose(got[1], [-2.0, 0.0, 2.0])
    np.testing.assert_allclose(got[2], [-2 / 3, 0.0, 2 / 3], rtol=1e-6)
    np.testing.assert_allclose(got[3], [0.1, 0.5, 0.9], rtol=1e-6)
    np.testing.assert_allclose(got[4], [0.0, 0.0, 1.0])
    np.testing.assert_allclose(got[5], [2 * (np.exp(-2.0) - 1), 0.0, 2.0], rtol=1e-6)
    init = K.initializers.get("he_normal")
    assert isinstance(init, K.initializers.VarianceScaling) and init.scale == 2.0
    assert K.initializers.get(None) is None
    assert K.initializers.RandomUniform().minval == -0.05


def test_keras_layers_compute_gradients():
    x = tf.placeholder(tf.float32, [None, 4, 4, 1])
    h = L.Conv2D(2, 2, activation="tanh")(x)
    h = L.BatchNormalization()(L.MaxPooling2D(pool_size=1)(h), training=True)
    y = L.Dense(1)(L.Flatten()(h))
    grads = tf.gradients(tf.reduce_sum(y), tf.trainable_variables())
    assert all(g is not None for g in grads)
    values = _eval(*grads, feed={x: np.random.RandomState(0).rand(3, 4, 4, 1)})
    assert all(np.all(np.isfinite(v)) for v in values)


def test_calling_a_layer_in_another_graph_is_an_error():
    layer = L.Dense(2)
    layer(tf.ones([1, 3]))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="another graph"):
            layer(tf.ones([1, 3]))


def test_compute_output_shape():
    ts = tf.TensorShape
    dense = L.Dense(2)
    assert dense.compute_output_shape((None, 3)).as_list() == [None, 2]
    assert dense.compute_output_shape(ts([None, 4, 3])).as_list() == [None, 4, 2]
    for bad in (ts(None), ts([]), ts([1]), ts([None, None])):
        with pytest.raises(ValueError, match="innermost dimension"):
            dense.compute_output_shape(bad)
    assert L.Flatten().compute_output_shape((1, 2, 3, 2)).as_list() == [1, 12]
    assert L.Flatten().compute_output_shape((None, 3, None)).as_list() == [None, None]
    assert L.Reshape((-1, 2)).compute_output_shape((None, 6)).as_list() == [None, 3, 2]
    assert L.Conv2D(4, 3, strides=2, padding="same").compute_output_shape(
        (None, 7, 7, 1)).as_list() == [None, 4, 4, 4]
    assert L.Conv2D(4, 3, data_format="channels_first").compute_output_shape(
        (1, 2, 7, 5)).as_list() == [1, 4, 5, 3]
    assert L.MaxPooling2D().compute_output_shape((2, 5, 5, 3)).as_list() == [2, 2, 2, 3]
    assert L.GlobalAveragePooling2D().compute_output_shape((2, 5, 5, 3)).as_list() == [2, 3]
    assert L.Embedding(5, 4).compute_output_shape((None, 7)).as_list() == [None, 7, 4]
    assert L.Dropout(0.5).compute_output_shape((None, 7)).as_list() == [None, 7]
    assert L.BatchNormalization().compute_output_shape((None, 7)).as_list() == [None, 7]
    with pytest.raises(NotImplementedError, match="Lambda"):
        L.Lambda(lambda t: t).compute_output_shape((None, 1))


def test_weight_constraints_are_refused_rather_than_ignored():
    # TF's optimizers project constrained weights after each step; ours do not, so a
    # constraint is an error here (a deliberate difference from TF 1.x).
    with pytest.raises(ValueError, match="constraint"):
        L.Dense(2, kernel_constraint=lambda w: w)(tf.ones([1, 2]))
    with pytest.raises(ValueError, match="constraints"):
        L.LSTM(2, recurrent_constraint=lambda w: w)


def test_add_weight_refuses_arguments_it_cannot_honour():
    class Part(L.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [4, 2], partitioner=lambda *a, **k: [2, 1])

    with pytest.raises(TypeError, match="partitioner"):
        Part()(tf.ones([1, 4]))

    class Plain(L.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [2], use_resource=True, synchronization=None)

    Plain()(tf.ones([1, 2]))
