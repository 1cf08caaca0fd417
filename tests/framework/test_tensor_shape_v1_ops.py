"""TF 1.x programs hand `x.shape[i]` (a tf.Dimension) to ops wherever an int goes: shape
and size arguments, lists mixing Dimensions and ints, attrs, layer sizes."""
import numpy as np
import pytest

import tensorweave as tf


@pytest.fixture
def x():
    tf.reset_default_graph()
    return tf.placeholder(tf.float32, [None, 3, 4], name="x")


def test_dimensions_in_shape_arguments(x):
    flat = tf.reshape(x, [-1, x.shape[1] * x.shape[2]])
    assert flat.shape.as_list() == [None, 12]
    zeros = tf.zeros([2, x.shape[1]])
    assert zeros.shape.as_list() == [2, 3]
    assert tf.ones(x.shape[1:]).shape.as_list() == [3, 4]
    assert tf.fill([x.shape[2]], 1.5).shape.as_list() == [4]
    assert tf.random_normal([x.get_shape()[1], 2]).shape.as_list() == [3, 2]
    assert tf.tile(x, [1, x.shape[1], 1]).shape.as_list() == [None, 9, 4]
    sliced = tf.slice(x, [0, 0, 0], [-1, x.shape[1] - 1, 2])
    assert sliced.shape.as_list() == [None, 2, 2]
    with tf.Session() as sess:
        out = sess.run([flat, zeros], {x: np.ones((2, 3, 4), np.float32)})
    assert out[0].shape == (2, 12) and out[1].shape == (2, 3)


def test_dimensions_convert_to_tensors(x):
    with tf.Session() as sess:
        assert sess.run(tf.convert_to_tensor([x.shape[1], x.shape[2]])).tolist() == [3, 4]
        assert sess.run(tf.constant(x.shape[2])) == 4
        assert sess.run(tf.convert_to_tensor(x.shape[1:])).tolist() == [3, 4]
        assert sess.run(tf.range(x.shape[1])).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="unknown Dimension"):
        tf.constant([x.shape[0], 2])
    with pytest.raises(ValueError, match=r"partially known TensorShape \(\?, 3, 4\)"):
        tf.convert_to_tensor(x.shape)


def test_dimensions_as_counts_axes_and_depths(x):
    assert tf.one_hot([0, 2], x.shape[1]).shape.as_list() == [2, 3]
    parts = tf.split(x, x.shape[1], axis=1)
    assert len(parts) == 3 and parts[0].shape.as_list() == [None, 1, 4]
    rows = tf.unstack(x, num=x.shape[1], axis=1)
    assert len(rows) == 3 and rows[0].shape.as_list() == [None, 4]
    assert tf.reduce_sum(x, axis=x.shape[1] - 2).shape.as_list() == [None, 4]
    assert np.zeros(x.shape[1]).shape == (3,)
    assert list(range(x.shape[2])) == [0, 1, 2, 3]


def test_dimensions_size_variables_and_layers(x):
    w = tf.get_variable("w", [x.shape[2], 5])
    assert w.shape.as_list() == [4, 5]
    v = tf.get_variable("v", shape=x.shape[1:])
    assert v.shape.as_list() == [3, 4]
    y = tf.layers.dense(tf.reshape(x, [-1, 12]), x.shape[1])
    assert y.shape.as_list() == [None, 3]
    nodes = {n.name: n for n in tf.get_default_graph().as_graph_def().node}
    assert [d.size for d in nodes["w"].attr["shape"].shape.dim] == [4, 5]


def test_unknown_dimension_where_a_number_is_needed(x):
    with pytest.raises(TypeError, match="unknown Dimension"):
        tf.split(x, x.shape[0], axis=0)
    with pytest.raises(ValueError, match="unknown Dimension"):
        tf.zeros([x.shape[0], 2])


@pytest.mark.transports()
def test_dimensions_as_cell_and_layer_sizes(x):
    cell = tf.nn.rnn_cell.LSTMCell(x.shape[2])
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    assert outputs.shape.as_list()[-1] == 4
    image = tf.placeholder(tf.float32, [None, 5, 5, 2])
    net = tf.contrib.slim.conv2d(image, image.get_shape()[-1], [3, 3])
    assert net.shape.as_list() == [None, 5, 5, 2]


def test_dimensions_index_and_slice_tensors(x):
    d = x.shape[1]
    assert x[:, :d - 1].shape.as_list() == [None, 2, 4]
    assert x[:, d - 1].shape.as_list() == [None, 4]
    assert x[..., :x.shape[2] // 2].shape.as_list() == [None, 3, 2]
    with tf.Session() as sess:
        got = sess.run(x[:, d - 1, :x.shape[2] - 1], {x: np.arange(24.).reshape(2, 3, 4)})
    assert got.tolist() == [[8, 9, 10], [20, 21, 22]]
    with pytest.raises(TypeError, match="unknown Dimension"):
        x[x.shape[0]]
