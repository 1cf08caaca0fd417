"""MetaGraphDef: tf.train.export_meta_graph / import_meta_graph, Saver .meta files.

Covers what TF 1.x's meta_graph_test.py and the meta-graph parts of saver_test.py
check: collections of every common kind survive the round trip (variables,
trainable variables, train_op, global step, local variables, summaries, update
ops, string/int/float lists), the SaverDef comes back as a working Saver,
import_scope and clear_devices, binary and text files, and graphs real
TensorFlow wrote (tests/data/tf_written, made by tools/make_tf_fixtures.py).
"""
import json
import logging
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.proto import meta_graph_pb2
from suite_paths import TEST_DATA

pytestmark = pytest.mark.usefixtures("fresh_graph")

DATA = os.path.join(TEST_DATA, "tf_written")


def _training_graph():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [2.0]], name="w")
    local = tf.Variable(0.0, name="local_count", trainable=False,
                        collections=[tf.GraphKeys.LOCAL_VARIABLES])
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)), name="loss")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    tf.add_to_collection(tf.GraphKeys.TRAIN_OP, train)
    tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(local, 1.0).op)
    tf.summary.scalar("loss", loss)
    tf.add_to_collection("names", "alpha")
    tf.add_to_collection("names", b"beta")
    tf.add_to_collection("counts", 3)
    tf.add_to_collection("rates", 0.5)
    return x, w, train


def test_collections_round_trip():
    _training_graph()
    summaries = [t.name for t in tf.get_collection(tf.GraphKeys.SUMMARIES)]
    mg = tf.train.export_meta_graph()
    kinds = {k: v.WhichOneof("kind") for k, v in mg.collection_def.items()}
    assert kinds["variables"] == "bytes_list" and kinds["trainable_variables"] == "bytes_list"
    assert kinds["train_op"] == "node_list" and kinds["summaries"] == "node_list"
    assert (kinds["names"], kinds["counts"], kinds["rates"]) == \
        ("bytes_list", "int64_list", "float_list")
    var_def = meta_graph_pb2.VariableDef.FromString(
        mg.collection_def["trainable_variables"].bytes_list.value[0])
    assert (var_def.variable_name, var_def.initializer_name, var_def.snapshot_name) == \
        ("w:0", "w/Assign", "w/read:0")
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(mg)
        assert [v.name for v in tf.global_variables()] == ["w:0", "global_step:0"]
        assert [v.name for v in tf.trainable_variables()] == ["w:0"]
        assert [v.name for v in tf.local_variables()] == ["local_count:0"]
        assert tf.global_variables()[0] is tf.trainable_variables()[0]
        assert tf.train.get_global_step().name == "global_step:0"
        assert g.get_collection("names") == [b"alpha", b"beta"]
        assert g.get_collection("counts") == [3] and g.get_collection("rates") == [0.5]
        assert [s.name for s in g.get_collection(tf.GraphKeys.SUMMARIES)] == summaries
        assert g.get_collection(tf.GraphKeys.UPDATE_OPS)[0].type == "AssignAdd"
        train = g.get_collection(tf.GraphKeys.TRAIN_OP)[-1]
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(train, {"x:0": np.ones((3, 2))})
            assert sess.run(tf.train.get_global_step()) == 1


def test_unserializable_collection_is_left_out_with_a_warning(caplog):
    tf.Variable(1.0, name="v")
    tf.add_to_collection("objects", object())   # (warned once per process and kind)
    with caplog.at_level(logging.WARNING):
        mg = tf.train.export_meta_graph()
    assert "objects" not in mg.collection_def
    assert "objects" in caplog.text


def test_saver_meta_file_restores_and_trains_on(tmp_path):
    x, w, train = _training_graph()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: np.ones((3, 2))})
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
        saved_w = sess.run(w)
    mg = meta_graph_pb2.MetaGraphDef.FromString(open(path + ".meta", "rb").read())
    assert mg.saver_def.restore_op_name == "save/restore_all"
    assert mg.saver_def.filename_tensor_name == saver.as_saver_def().filename_tensor_name
    assert mg.saver_def.filename_tensor_name.startswith("save/")
    with tf.Graph().as_default():
        restorer = tf.train.import_meta_graph(path + ".meta")
        assert isinstance(restorer, tf.train.Saver)
        with tf.Session() as sess:
            restorer.restore(sess, path)
            np.testing.assert_allclose(sess.run("w:0"), saved_w)
            sess.run(tf.get_collection(tf.GraphKeys.TRAIN_OP)[-1], {"x:0": np.ones((3, 2))})
            assert sess.run("global_step:0") == 2
            again = restorer.save(sess, str(tmp_path / "again"))
    assert tf.train.load_variable(again, "global_step") == 2


def test_import_scope_and_clear_devices(tmp_path):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="v")
    tf.identity(v * 2.0, name="double")
    saver = tf.train.Saver()
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
    with tf.Graph().as_default():
        # Kept devices name a ps task this in-process session does not have (as TF).
        tf.train.import_meta_graph(path + ".meta", clear_devices=False)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="/job:ps/task:0"):
                sess.run(tf.global_variables_initializer())
    with tf.Graph().as_default() as g:
        restorer = tf.train.import_meta_graph(path + ".meta", import_scope="copy",
                                              clear_devices=True)
        assert g.get_operation_by_name("copy/v").device == ""
        assert [x.name for x in tf.global_variables()] == ["copy/v:0"]
        with tf.Session() as sess:
            restorer.restore(sess, path)
            np.testing.assert_allclose(sess.run("copy/double:0"), [2.0, 4.0])


def test_text_and_binary_files(tmp_path):
    tf.Variable(3.0, name="v")
    tf.train.export_meta_graph(str(tmp_path / "g.pbtxt"), as_text=True)
    tf.train.export_meta_graph(str(tmp_path / "g.meta"))
    assert open(tmp_path / "g.pbtxt").read().startswith("meta_info_def")
    for name in ("g.pbtxt", "g.meta"):
        with tf.Graph().as_default():
            saver = tf.train.import_meta_graph(str(tmp_path / name))
            assert saver is not None and [v.name for v in tf.global_variables()] == ["v:0"]
    with pytest.raises(OSError, match="does not exist"):
        tf.train.import_meta_graph(str(tmp_path / "absent.meta"))


def test_no_variables_no_saver():
    tf.constant(1.0, name="c")
    mg = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(mg) is None


def test_unknown_op_is_named():
    mg = meta_graph_pb2.MetaGraphDef()
    mg.graph_def.node.add(name="weird", op="NoSuchTFOp")
    with pytest.raises(ValueError, match="NoSuchTFOp"):
        tf.train.import_meta_graph(mg)


def test_saver_export_meta_graph_and_saver_def(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver(max_to_keep=3, keep_checkpoint_every_n_hours=2.0)
    sd = saver.as_saver_def()
    assert (sd.max_to_keep, sd.keep_checkpoint_every_n_hours, sd.version) == (3, 2.0, 2)
    mg = saver.export_meta_graph(str(tmp_path / "s.meta"))
    assert mg.saver_def == sd and os.path.exists(tmp_path / "s.meta")


def test_import_meta_graph_written_by_tensorflow():
    expected = json.load(open(os.path.join(DATA, "expected.json")))
    prefix = os.path.join(DATA, "ckpt", "model.ckpt-7")
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(prefix + ".meta")
        names = sorted(v.op.name for v in tf.global_variables())
        assert names == sorted(["dense/kernel", "dense/bias", "out/kernel", "global_step",
                                "counts", "scale", "vocab", "emb/part_0", "emb/part_1"])
        assert tf.global_variables()[0].to_proto().variable_name == "dense/kernel:0"
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            got = sess.run("probs:0", {"x:0": np.asarray(expected["x"], np.float32)})
            assert sess.run(tf.train.get_global_step()) == 7
            np.testing.assert_array_equal(sess.run("emb/part_1:0"),
                                          np.arange(6, 12).reshape(3, 2))
    np.testing.assert_allclose(got, expected["probs"], rtol=1e-5)


def test_strip_default_attrs(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [2.0]], name="w")
    tf.matmul(x, w, name="mm")
    full = tf.train.export_meta_graph()
    stripped = tf.train.export_meta_graph(strip_default_attrs=True)
    node = {n.name: n for n in stripped.graph_def.node}
    assert "transpose_a" in {n.name: n for n in full.graph_def.node}["mm"].attr
    assert "transpose_a" not in node["mm"].attr
    assert stripped.meta_info_def.stripped_default_attrs
    with tf.Graph().as_default():
        tf.train.import_meta_graph(stripped)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run("mm:0", {"x:0": [[1.0, 1.0]]}), [[3.0]])


def test_savers_collection_round_trips_as_saver_defs(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    tf.add_to_collection(tf.GraphKeys.SAVERS, saver)
    mg = tf.train.export_meta_graph()
    assert mg.collection_def["savers"].WhichOneof("kind") == "bytes_list"
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(mg, import_scope="s")
        (restored,) = g.get_collection(tf.GraphKeys.SAVERS)
        assert isinstance(restored, tf.train.Saver)
        assert restored.as_saver_def().restore_op_name == "s/save/restore_all"


def test_clear_extraneous_savers():
    tf.Variable(1.0, name="v")
    first, second = tf.train.Saver(), tf.train.Saver()
    tf.add_to_collection(tf.GraphKeys.SAVERS, first)
    tf.add_to_collection(tf.GraphKeys.SAVERS, second)
    mg = second.export_meta_graph(clear_extraneous_savers=True)
    scopes = {n.name.split("/")[0] for n in mg.graph_def.node}
    assert "save_1" in scopes and "save" not in scopes
    # As TF: the SAVERS collection keeps only the exported Saver's SaverDef.
    assert len(mg.collection_def["savers"].bytes_list.value) == 1
    assert len(first.export_meta_graph().collection_def["savers"].bytes_list.value) == 2
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(mg)
        assert saver.as_saver_def().restore_op_name == "save_1/restore_all"


def test_import_options_and_unknown_keywords():
    tf.Variable(1.0, name="v")
    tf.add_to_collection("extra", "x")
    mg = tf.train.export_meta_graph()
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(mg, restore_collections_predicate=lambda k: k != "extra")
        assert g.get_collection("extra") == [] and len(tf.global_variables()) == 1
    with tf.Graph().as_default(), pytest.raises(TypeError, match="bogus"):
        tf.train.import_meta_graph(mg, bogus=1)
    with pytest.raises(TypeError, match="bogus"):
        tf.train.export_meta_graph(bogus=1)


def test_tensorflow_written_saver_graph_saves_here(tmp_path):
    """TF's sharded Saver graph (StaticRegexFullMatch, StringJoin, ShardedFilename, SaveV2,
    MergeV2Checkpoints) runs here and writes a TF-format checkpoint."""
    prefix = os.path.join(DATA, "ckpt", "model.ckpt-7")
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(prefix + ".meta")
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            sess.run(tf.assign(tf.train.get_global_step(), 8))
            out = saver.save(sess, str(tmp_path / "resaved"))
    reader = tf.train.NewCheckpointReader(out)
    assert reader.get_tensor("global_step") == 8
    assert list(reader.get_tensor("vocab")) == [b"alpha", b"\x00b", b"\xff"]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "resaved.data-00000-of-00001",
                                            "resaved.index", "resaved.meta"]


def test_queue_runners_round_trip(tmp_path):
    queue = tf.FIFOQueue(10, [tf.float32], name="fifo")
    enqueue = queue.enqueue([tf.constant(1.5)], name="put")
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue]))
    queue.dequeue(name="take")
    tf.Variable(0.0, name="v")
    mg = tf.train.export_meta_graph()
    assert mg.collection_def["queue_runners"].WhichOneof("kind") == "bytes_list"
    qr_def = meta_graph_pb2.QueueRunnerDef.FromString(
        mg.collection_def["queue_runners"].bytes_list.value[0])
    assert (qr_def.queue_name, list(qr_def.enqueue_op_name)) == ("fifo", ["put"])
    assert sorted(qr_def.queue_closed_exception_types) == [1, 11]
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(mg)
        (qr,) = g.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord=coord)
            assert sess.run("take:0") == 1.5
            coord.request_stop()
            coord.join(threads)
        assert qr.name == "fifo"
