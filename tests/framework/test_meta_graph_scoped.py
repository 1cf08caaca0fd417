"""Meta graphs of a name scope, import scopes, and TF's meta_graph module functions."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import graph_export as meta_graph
from tensorweave.framework.proto import meta_graph_pb2

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _layer(scope: str, x: tf.Tensor | None = None) -> tf.Tensor:
    with tf.name_scope(scope):
        images = x if x is not None else tf.constant(1.0, tf.float32, shape=[3, 2],
                                                     name="images")
        w = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], name="weights")
        b = tf.Variable([0.1] * 3, name="biases")
        return tf.nn.relu(tf.matmul(images, w) + b, name="relu")


EXPECTED = np.full((3, 3), [5.1, 7.1, 9.1], dtype=np.float32)


def test_export_scope_strips_names_and_returns_scoped_variables():
    _layer("hidden1")
    _layer("other")
    mg, var_list = meta_graph.export_scoped_meta_graph(export_scope="hidden1")
    names = {n.name for n in mg.graph_def.node}
    assert {"images", "weights", "relu"} <= names
    assert not any(n.startswith(("hidden1/", "other")) for n in names)
    assert sorted(var_list) == ["biases:0", "weights:0"]
    assert var_list["weights:0"].name == "hidden1/weights:0"
    # Collections keep only the scope's items, their names stripped too.
    assert len(mg.collection_def["variables"].bytes_list.value) == 2


def test_copy_to_another_scope_and_graph_then_run():
    g1 = tf.Graph()
    with g1.as_default():
        _layer("hidden1")
        with pytest.raises(ValueError, match="need to be different"):
            meta_graph.copy_scoped_meta_graph("hidden1", "hidden1")
        same = meta_graph.copy_scoped_meta_graph("hidden1", "hidden2")
        assert same["weights:0"].name == "hidden2/weights:0"
    g2 = tf.Graph()
    copied = meta_graph.copy_scoped_meta_graph("hidden1", "new", from_graph=g1, to_graph=g2)
    assert sorted(copied) == ["biases:0", "weights:0"]
    with tf.Session(graph=g2) as sess:
        sess.run(tf.variables_initializer(list(copied.values())))
        np.testing.assert_allclose(sess.run("new/relu:0"), EXPECTED, rtol=1e-6)
    with tf.Session(graph=g1) as sess:
        sess.run(tf.variables_initializer(list(same.values())))
        np.testing.assert_allclose(sess.run("hidden2/relu:0"), EXPECTED, rtol=1e-6)


def test_inputs_from_outside_the_scope_must_be_mapped():
    x = tf.constant(1.0, tf.float32, shape=[3, 2], name="x")
    _layer("hidden1", x)
    mg, _ = meta_graph.export_scoped_meta_graph(export_scope="hidden1")
    assert list(mg.collection_def["unbound_inputs"].bytes_list.value) == [b"$unbound_inputs_x"]
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError, match=r"unbound inputs: \$unbound_inputs_x"):
            meta_graph.import_scoped_meta_graph(mg, import_scope="a")
        new_x = tf.constant(2.0, tf.float32, shape=[3, 2])
        var_list = meta_graph.import_scoped_meta_graph(
            mg, import_scope="b", input_map={"$unbound_inputs_x": new_x})
        assert g.get_operation_by_name("b/MatMul").inputs[0] is new_x
        assert sorted(var_list) == ["biases:0", "weights:0"]


def test_import_meta_graph_into_a_given_graph_and_the_current_name_scope():
    _layer("m")
    assert not tf.train.export_meta_graph().HasField("saver_def")   # as TF: none by default
    mg = tf.train.Saver().export_meta_graph()
    g = tf.Graph()
    with g.as_default(), tf.name_scope("outer"):
        pass
    with tf.name_scope("elsewhere"):   # the default graph's scope does not matter
        saver = tf.train.import_meta_graph(mg, graph=g, import_scope="copy")
    assert g.get_operation_by_name("copy/m/relu") is not None
    assert saver.saver_def.restore_op_name == "copy/save/restore_all"
    g2 = tf.Graph()
    with g2.as_default(), tf.name_scope("implicit"):
        saver2 = tf.train.import_meta_graph(mg)
    assert g2.get_operation_by_name("implicit/m/relu") is not None
    assert saver2.saver_def.filename_tensor_name.startswith("implicit/save/")


def test_no_saver_without_variables_in_the_import_scope():
    tf.constant([1, 2, 3], name="c")
    mg = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(mg, import_scope="a") is None
        tf.Variable(tf.zeros([2]), name="mine/v")
        assert tf.train.import_meta_graph(mg, import_scope="b") is None
        assert isinstance(tf.train.import_meta_graph(mg, import_scope="mine"), tf.train.Saver)


def test_saver_defs_follow_export_and_import_scopes():
    with tf.name_scope("hidden1"):
        v = tf.Variable([1.0], name="v")
        inner = tf.train.Saver([v])
    outer = tf.train.Saver([v], name="top")
    tf.add_to_collection(tf.GraphKeys.SAVERS, inner)
    tf.add_to_collection(tf.GraphKeys.SAVERS, outer)
    assert inner.to_proto("hidden1").restore_op_name == "save/restore_all"
    assert outer.to_proto("hidden1") is None
    mg, _ = meta_graph.export_scoped_meta_graph(export_scope="hidden1")
    assert len(mg.collection_def["savers"].bytes_list.value) == 1
    with tf.Graph().as_default() as g:
        meta_graph.import_scoped_meta_graph(mg, import_scope="new")
        (saver,) = g.get_collection(tf.GraphKeys.SAVERS)
        assert saver.saver_def.save_tensor_name.startswith("new/save/")


def test_create_meta_graph_def_defaults_and_stripped_op_list():
    tf.identity(tf.constant(1.0, name="c"), name="i")
    mg = meta_graph.create_meta_graph_def()
    assert mg.meta_info_def.tensorflow_version == "1.15.0"
    assert [op.name for op in mg.meta_info_def.stripped_op_list.op] == ["Const", "Identity"]
    ident = mg.meta_info_def.stripped_op_list.op[1]
    assert [a.name for a in ident.input_arg] == ["input"] and ident.input_arg[0].type_attr == "T"
    assert "_output_shapes" in mg.graph_def.node[0].attr   # TF's default: with shapes
    assert not mg.HasField("saver_def")
    with pytest.raises(TypeError, match="graph_def must be of type GraphDef"):
        meta_graph.create_meta_graph_def(graph_def=mg)


def test_any_protos_collections_and_write_graph_of_any_proto(tmp_path):
    from google.protobuf import any_pb2
    qr = meta_graph_pb2.QueueRunnerDef(queue_name="q")
    packed = any_pb2.Any()
    packed.Pack(qr)
    tf.add_to_collection("anys", packed)
    tf.add_to_collection("mixed", 1)
    tf.add_to_collection("mixed", 1.5)
    mg = tf.train.export_meta_graph()
    assert len(mg.collection_def["anys"].any_list.value) == 1
    assert "mixed" not in mg.collection_def   # as TF: mixed kinds are left out
    path = tf.train.write_graph(mg, str(tmp_path), "mg.pbtxt")
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(path)
        assert g.get_collection("anys")[0].Unpack(meta_graph_pb2.QueueRunnerDef()) is not False
    with pytest.raises(TypeError, match="Graph or a proto"):
        tf.train.write_graph(42, str(tmp_path), "x")


def test_unparsable_meta_graph_file_is_an_ioerror(tmp_path):
    tf.Variable(1.0)
    saver = tf.train.Saver()
    tf.train.write_graph(saver.saver_def, str(tmp_path), "bad.meta")
    with pytest.raises(IOError, match="Cannot parse file"):
        tf.train.import_meta_graph(str(tmp_path / "bad.meta"))
    with pytest.raises(IOError, match="does not exist"):
        tf.train.import_meta_graph(str(tmp_path / "absent.meta"))


def test_queue_runner_proto_round_trip():
    q = tf.FIFOQueue(10, tf.float32, name="queue")
    enq, close, cancel = tf.no_op(name="enq"), tf.no_op(name="close"), tf.no_op(name="cancel")
    qr = tf.train.QueueRunner(q, [enq], close, cancel,
                              (tf.errors.OutOfRangeError, tf.errors.CancelledError))
    proto = qr.to_proto()
    assert isinstance(proto, tf.train.QueueRunnerDef)
    back = tf.train.QueueRunner.from_proto(proto)
    assert back.queue.name == "queue" and back.enqueue_ops == [enq]
    assert back.close_op is close and back.cancel_op is cancel
    assert back.queue_closed_exception_types == (tf.errors.OutOfRangeError,
                                                 tf.errors.CancelledError)
    del proto.queue_closed_exception_types[:]   # written before TF had the field
    legacy = tf.train.QueueRunner.from_proto(proto)
    assert legacy.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
    assert qr.to_proto(export_scope="elsewhere") is None


def test_named_objects_in_other_collections_are_listed_by_name():
    v = tf.Variable(1.0, name="v0")
    tf.add_to_collection("my_vars", v)
    mg = tf.train.export_meta_graph()
    assert list(mg.collection_def["my_vars"].node_list.value) == ["v0:0"]
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(mg, import_scope="s")
        assert [t.name for t in g.get_collection("my_vars")] == ["s/v0:0"]
