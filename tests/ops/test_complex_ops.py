"""tf.complex / tf.real / tf.imag, and their TF attrs in exported graphs."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_parts_round_trip_with_broadcasting_and_dtypes():
    z = tf.complex(tf.constant([[1.0], [3.0]]), tf.constant([2.0, 4.0]))
    z64 = tf.complex(tf.constant(1.0, tf.float64), tf.constant(2.0, tf.float64))
    assert z.dtype == tf.complex64 and z.shape.as_list() == [2, 2]
    assert z64.dtype == tf.complex128 and tf.real(z64).dtype == tf.float64
    with tf.Session() as sess:
        value, re, im = sess.run([z, tf.real(z), tf.imag(z)])
    np.testing.assert_array_equal(value, [[1 + 2j, 1 + 4j], [3 + 2j, 3 + 4j]])
    np.testing.assert_array_equal(re, [[1, 1], [3, 3]])
    np.testing.assert_array_equal(im, [[2, 4], [2, 4]])
    x = tf.constant([5.0])
    assert tf.real(x) is x   # a real tensor is its own real part (TF)
    with tf.Session() as sess:
        assert sess.run(tf.imag(x)).tolist() == [0.0]
    with pytest.raises(TypeError, match="float32 or two float64"):
        tf.complex(tf.constant(1.0), tf.constant(1.0, tf.float64))


def test_gradients_flow_through_the_parts():
    a, b = tf.constant([1.0, 2.0]), tf.constant(3.0)
    z = tf.complex(a, b)
    loss = tf.reduce_sum(3.0 * tf.real(z) + 5.0 * tf.imag(z))
    ga, gb = tf.gradients(loss, [a, b])
    with tf.Session() as sess:
        assert sess.run(ga).tolist() == [3.0, 3.0]
        assert sess.run(gb) == 10.0   # summed back over the broadcast


def test_type_attrs_are_written_and_default_ones_stripped():
    real = tf.Variable(1.0, name="real")
    imag = tf.Variable(2.0, name="imag")
    tf.complex(real, imag, name="complex")
    saver = tf.train.Saver({"real_num": real, "imag_num": imag})

    def node(mg):
        return next(n for n in mg.graph_def.node if n.name == "complex")
    kept = node(saver.export_meta_graph(strip_default_attrs=False))
    assert kept.attr["T"].type == tf.float32.as_datatype_enum
    assert kept.attr["Tout"].type == tf.complex64.as_datatype_enum
    stripped = saver.export_meta_graph(strip_default_attrs=True)
    assert "T" not in node(stripped).attr and "Tout" not in node(stripped).attr
    assert stripped.meta_info_def.stripped_default_attrs
    with tf.Graph().as_default() as g:   # the defaults come back on import
        tf.train.import_meta_graph(stripped)
        assert g.get_operation_by_name("complex").outputs[0].dtype == tf.complex64
