"""Dimensions are signed 64-bit, as in TF: sizes past 2**31 keep their value in static
shapes, shape ops, GraphDefs and on the wire; sizes TF cannot hold are errors naming them.
No test here allocates a big tensor: static shapes only, small tensors at run time."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.transport.codec import TensorHeader, decode, encode
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value
from tensorweave.framework.op_def import get_op_def
from tensorweave.framework.tensor_shape import Dimension, TensorShape

BIG = 2 ** 32 + 5  # would wrap to 5 in 32 bits


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()


def test_static_shapes_keep_sizes_past_32_bits():
    assert tf.zeros([BIG]).shape.as_list() == [BIG]
    assert tf.ones([2, BIG], tf.int8).shape.as_list() == [2, BIG]
    assert tf.fill([BIG], 1.0).shape.as_list() == [BIG]
    assert tf.fill(tf.constant([BIG], tf.int64), 1.0).shape.as_list() == [BIG]
    assert tf.random_normal([BIG, 1]).shape.as_list() == [BIG, 1]
    assert tf.placeholder(tf.float32, [None, BIG]).shape.as_list() == [None, BIG]
    flat = tf.placeholder(tf.float32, [2 * BIG])
    assert tf.reshape(flat, [BIG, -1]).shape.as_list() == [BIG, 2]
    assert tf.zeros([2 ** 63 - 1]).shape.as_list() == [2 ** 63 - 1]
    assert tf.constant([BIG]).dtype == tf.int64


def test_sizes_tf_cannot_hold_are_named():
    with pytest.raises(ValueError, match="9223372036854775808"):
        TensorShape([2 ** 63])
    with pytest.raises(ValueError, match="9223372036854775808"):
        Dimension(2 ** 63)
    with pytest.raises(ValueError, match="9223372036854775808"):
        tf.zeros([2 ** 63])
    with pytest.raises(ValueError, match="-5"):
        TensorShape([3, -5])
    with pytest.raises(ValueError, match="Invalid value in tensor used for shape: -5"):
        tf.zeros([-5])
    assert TensorShape([-1, 2]).as_list() == [None, 2]  # -1 still means unknown


def test_shape_protos_and_graph_defs_keep_64_bit_sizes():
    proto = TensorShape([BIG, None]).as_proto()
    assert [d.size for d in proto.dim] == [BIG, -1]
    assert TensorShape(proto).as_list() == [BIG, None]
    tf.placeholder(tf.float32, [None, BIG], name="p")
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        p = tf.get_default_graph().get_tensor_by_name("p:0")
        assert p.shape.as_list() == [None, BIG]


def test_shape_and_size_fold_with_int64_out_type_only():
    z = tf.zeros([BIG, 2])
    assert constant_value(tf.shape(z, out_type=tf.int64)).tolist() == [BIG, 2]
    assert constant_value(tf.size(z, out_type=tf.int64)) == 2 * BIG
    # int32 cannot hold these: no constant is made; the kernel would refuse at run time
    assert constant_value(tf.shape(z)) is None
    assert constant_value(tf.size(z)) is None


def test_shape_and_size_kernels_refuse_int32_overflow():
    # A zero-stride view has the big shape without the memory.
    view = np.broadcast_to(np.zeros(1, np.int8), (3, BIG))
    shape_kernel = get_op_def("Shape").kernels["CPU"].fn
    size_kernel = get_op_def("Size").kernels["CPU"].fn
    assert shape_kernel(view, out_type=tf.int64).tolist() == [3, BIG]
    assert int(size_kernel(view, out_type=tf.int64)) == 3 * BIG
    with pytest.raises(errors.InvalidArgumentError, match="Shape output type is 32-bit"):
        shape_kernel(view, out_type=tf.int32)
    with pytest.raises(errors.InvalidArgumentError, match="larger than representable by 32"):
        size_kernel(view, out_type=tf.int32)


def test_int64_shapes_at_run_time():
    p = tf.placeholder(tf.float32, [None, 3])
    big_shape = tf.constant([BIG, 7], tf.int64)
    with tf.Session() as sess:
        shp, n, echoed = sess.run([tf.shape(p, out_type=tf.int64), tf.size(p, out_type=tf.int64),
                                   tf.identity(big_shape)], {p: np.zeros((2, 3), np.float32)})
    assert shp.dtype == np.int64 and shp.tolist() == [2, 3] and int(n) == 6
    assert echoed.tolist() == [BIG, 7]
    dims64 = tf.constant([2, 3], tf.int64)
    filled = tf.fill(dims64, 1.5)
    reshaped = tf.reshape(tf.range(6), tf.constant([3, -1], tf.int64))
    with tf.Session() as sess:
        f, r = sess.run([filled, reshaped])
    assert f.shape == (2, 3) and r.shape == (3, 2)


def test_wire_keeps_int64_shapes_and_values():
    shape_value = np.array([BIG, 2 ** 62], np.int64)
    header, chunks = encode(shape_value)
    wire_header = TensorHeader.FromString(header.SerializeToString())
    out = decode(wire_header, [c.tobytes() for c in chunks])
    assert out.dtype == np.int64 and out.tolist() == [BIG, 2 ** 62]
    # The header's shape field is int64: a size past 32 bits crosses as it is (here it
    # disagrees with the payload, and the error names it unwrapped).
    wire_header.shape[:] = [BIG]
    wire_header = TensorHeader.FromString(wire_header.SerializeToString())
    assert list(wire_header.shape) == [BIG]
    with pytest.raises(ValueError, match=str(BIG)):
        decode(wire_header, [c.tobytes() for c in chunks])


def test_int64_shape_through_a_cluster(inprocess_cluster):
    _, servers = inprocess_cluster
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([2, 3]), name="v")
        dims = tf.shape(v, out_type=tf.int64) * tf.constant(BIG // 2, tf.int64)
    with tf.device("/job:worker/task:0"):
        got = tf.identity(dims)
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(v.initializer)
        assert sess.run(got).tolist() == [BIG - 1, 3 * (BIG // 2)]


def test_shape_n_gives_each_shape_with_int64_out_type():
    p = tf.placeholder(tf.float32, [None])
    a, b = tf.shape_n([tf.zeros([BIG, 2]), p], out_type=tf.int64)
    assert a.dtype == tf.int64 and constant_value(a).tolist() == [BIG, 2]
    assert constant_value(b) is None and b.shape.as_list() == [1]
    assert constant_value(tf.shape_n([tf.zeros([BIG])])[0]) is None  # int32 cannot hold it
    with tf.Session() as sess:
        small, fed = sess.run(tf.shape_n([tf.zeros([2, 3]), p]), {p: np.zeros(4, np.float32)})
    assert small.dtype == np.int32 and small.tolist() == [2, 3] and fed.tolist() == [4]
