"""tf.saved_model with real TensorFlow's formats and names: SavedModels TF wrote (a
tf.keras one on resource variables too), TF's op names and Saver in what we write,
signatures on ops TF lacks refused, unknown ops in collections, the TF1 names under
tf.saved_model (split from test_saved_model.py).
"""
import json
import os

import numpy as np
import pytest

import tensorweave as tf
from saved_model_helpers import batch as _batch, dense_model as _dense_model
from tensorweave.framework.proto import saved_model_pb2
from suite_paths import TEST_DATA

pytestmark = pytest.mark.usefixtures("fresh_graph")

SERVE = tf.saved_model.tag_constants.SERVING
TRAIN = tf.saved_model.tag_constants.TRAINING


def test_saved_model_pb_uses_tf_op_names_and_tf_saver(tmp_path):
    export = str(tmp_path / "m")
    x, probs = _dense_model()
    tf.add_to_collection(tf.GraphKeys.SAVERS, tf.train.Saver())   # as Estimator does
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, export, {"x": x}, {"probs": probs})
    sm = saved_model_pb2.SavedModel.FromString(open(os.path.join(export, "saved_model.pb"),
                                                    "rb").read())
    assert sm.saved_model_schema_version == 1
    (mg,) = sm.meta_graphs
    ops = {n.name: n for n in mg.graph_def.node}
    assert not {"GatePause", "SaveShard", "MergeCheckpoint", "RestoreShard"} & \
        {n.op for n in mg.graph_def.node}
    save = ops[mg.saver_def.save_tensor_name.split(":")[0]]
    assert save.op == "Identity"
    scope = mg.saver_def.restore_op_name.split("/")[0]
    restore_v2 = [n for n in mg.graph_def.node if n.op == "RestoreV2"]
    assert len(restore_v2) == 2 and all(len(n.attr["dtypes"].list.type) == 3
                                        for n in restore_v2)
    assert [n.name for n in restore_v2 if n.name.startswith(scope + "/")] == \
        [f"{scope}/RestoreV2"]
    assert ops["MatMul"].attr["T"].type == tf.float32.as_datatype_enum
    assert mg.saver_def.version == 2
    assert list(mg.meta_info_def.tags) == [SERVE]
    # The program's own Saver (our checkpoint ops) is written as TF's Saver ops: kept.
    assert len(mg.collection_def["savers"].bytes_list.value) == 1


def test_loads_a_saved_model_tensorflow_wrote():
    data = os.path.join(TEST_DATA, "tf_written")
    expected = json.load(open(os.path.join(data, "expected.json")))
    with tf.Session() as sess:
        mg = tf.saved_model.loader.load(sess, [SERVE], os.path.join(data, "saved_model"))
        sig = mg.signature_def["serving_default"]
        assert tf.saved_model.signature_def_utils.is_valid_signature(sig)
        x = tf.saved_model.utils.get_tensor_from_tensor_info(sig.inputs["x"])
        probs = tf.saved_model.utils.get_tensor_from_tensor_info(sig.outputs["probs"])
        got = sess.run(probs, {x: np.asarray(expected["x"], np.float32)})
        assert sorted(v.op.name for v in tf.trainable_variables()) == [
            "dense/bias", "dense/kernel", "out/kernel"]
    np.testing.assert_allclose(got, expected["probs"], rtol=1e-5)


def test_signature_on_an_op_tensorflow_lacks_is_refused(tmp_path):
    x, probs = _dense_model()
    # tf.scan's FunctionalScan has no TF op it could be written as.
    scanned = tf.scan(lambda a, v: a + v, tf.reduce_sum(probs, 1), name="scan")
    bad = tf.saved_model.signature_def_utils.predict_signature_def(
        {"x": x}, {"cumulative": scanned})
    b = tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(ValueError, match=r"depend on ops TensorFlow does not have.*"
                                             r"FunctionalScan \(node scan/scan\)"):
            b.add_meta_graph_and_variables(sess, [SERVE], signature_def_map={"s": bad})


def test_loads_a_tf_keras_saved_model_with_resource_variables(caplog):
    """TF 1.15-style Keras: VarHandleOp/ReadVariableOp variables, stateless random init."""
    data = os.path.join(TEST_DATA, "tf_written")
    expected = json.load(open(os.path.join(data, "expected.json")))
    with tf.Session() as sess:
        mg = tf.saved_model.loader.load(sess, [SERVE], os.path.join(data, "saved_model_keras"))
        sig = mg.signature_def["serving_default"]
        got = sess.run(sig.outputs["probs"].name,
                       {sig.inputs["x"].name: np.asarray(expected["x"], np.float32)})
        assert sorted(v.op.name for v in tf.global_variables()) == [
            "dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel"]
        assert sess.graph.get_operation_by_name("dense/kernel").type == "VariableV2"
    np.testing.assert_allclose(got, expected["keras_probs"], rtol=1e-5)
    assert "StatelessRandomUniformV2" in caplog.text


def test_builder_saver_must_write_tensorflow_format(tmp_path):
    x, probs = _dense_model()
    b = tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(ValueError, match="checkpoint_format='tensorflow'"):
            b.add_meta_graph_and_variables(sess, [SERVE], saver=tf.train.Saver())
        b.add_meta_graph_and_variables(
            sess, [SERVE], saver=tf.train.Saver(checkpoint_format="tensorflow", sharded=True))
    b.save()
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, [SERVE], str(tmp_path / "m"))
        assert sess.run("probs:0", {"x:0": _batch()}).shape == (6, 3)


def test_tf1_names_under_tf_saved_model(tmp_path):
    sm = tf.saved_model
    assert (sm.SERVING, sm.TRAINING, sm.EVAL, sm.GPU, sm.TPU) == \
        ("serve", "train", "eval", "gpu", "tpu")
    assert sm.PREDICT_METHOD_NAME == sm.signature_constants.PREDICT_METHOD_NAME
    assert (sm.VARIABLES_DIRECTORY, sm.SAVED_MODEL_FILENAME_PB) == ("variables", "saved_model.pb")
    assert sm.Builder is sm.builder.SavedModelBuilder and sm.load is sm.loader.load
    assert not sm.contains_saved_model(str(tmp_path))


def test_nodes_of_unknown_ops_in_collections_do_not_block_loading(tmp_path, caplog):
    export = str(tmp_path / "m")
    x, probs = _dense_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(probs, {x: _batch()})
        tf.saved_model.simple_save(sess, export, {"x": x}, {"probs": probs})
    path = os.path.join(export, "saved_model.pb")
    sm = saved_model_pb2.SavedModel.FromString(open(path, "rb").read())
    mg = sm.meta_graphs[0]
    mg.graph_def.node.add(name="summary_writer_thing", op="SomeTF2OnlyOp")
    mg.collection_def["summaries"].node_list.value.append("summary_writer_thing:0")
    open(path, "wb").write(sm.SerializeToString())
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, [SERVE], export)
        np.testing.assert_allclose(sess.run("probs:0", {"x:0": _batch()}), want, rtol=1e-6)
    assert "SomeTF2OnlyOp" in caplog.text or "summary_writer_thing" in caplog.text
    with tf.Graph().as_default(), pytest.raises(ValueError, match="SomeTF2OnlyOp"):
        tf.train.import_meta_graph(mg)   # strict outside the SavedModel loader
