"""Exports hold only TensorFlow's ops: our own ops are written as TF's at export.

A model with the pieces users train (vocabulary-list columns with and without OOV
buckets, string and integer keys, a crossed column, an embedding over a
partitioned variable, variables partitioned over two ps tasks, a sharded Saver)
is exported as a SavedModel and as a TF-format meta graph. Real TF 2.21 loaded
both (`tf.compat.v1.saved_model.loader.load`; `import_meta_graph` plus the
lowered Saver's restore, sharded save and restore) and served the numbers
recorded below; the tests check the same graphs here without TF.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import meta_graph as _mg
from tensorweave.framework.proto import graph_pb2, saved_model_pb2
from tensorweave.framework.tf_graph_import_compat import from_tensorflow
from tensorweave.ops.lookup.cross_ops import sparse_feature_cross
from tensorweave.framework.tf_graph_compat import to_tensorflow
from tensorweave.framework.tf_lowering import check_tensorflow_ops, foreign_ops
from tensorweave.framework.tf_lowering_lookup import collect_table_initializers

fc = tf.feature_column

# What real TF 2.21 served from the SavedModel written by `_export` (and from the
# meta graph after restoring its variables): the probabilities for `_examples()`.
TF_PROBS = [0.6647923588752747, 0.8254501819610596, 0.7982626557350159,
            0.8401284217834473]


def _example(city, kind, color, age):
    e = tf.train.Example()
    e.features.feature["city"].bytes_list.value.append(city)
    e.features.feature["kind"].int64_list.value.append(kind)
    e.features.feature["color"].bytes_list.value.append(color)
    e.features.feature["age"].float_list.value.append(age)
    return e.SerializeToString()


def _examples():
    return [_example(b"rome", 3, b"red", 0.1), _example(b"nyc", 7, b"blue", 0.7),
            _example(b"oslo", 5, b"red", 0.3), _example(b"lima", 11, b"green", 0.9)]


def _model():
    """The graph (variables on 2 ps tasks, partitioned), its input, output, Saver."""
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        serialized = tf.placeholder(tf.string, [None], name="examples")
        city = fc.categorical_column_with_vocabulary_list(
            "city", ["rome", "oslo", "paris"], num_oov_buckets=2)
        kind = fc.categorical_column_with_vocabulary_list("kind", [3, 7, 11], num_oov_buckets=1)
        cross = fc.crossed_column([city, "color"], 16)
        age = fc.numeric_column("age")
        feats = tf.parse_example(serialized, fc.make_parse_example_spec([city, kind, cross,
                                                                         age]))
        with tf.variable_scope("lin", partitioner=tf.fixed_size_partitioner(2)):
            logits = fc.linear_model(feats, [city, kind, cross, age])
        with tf.variable_scope("deep", partitioner=tf.fixed_size_partitioner(2)):
            emb = fc.input_layer(feats, [fc.embedding_column(city, 3),
                                         fc.indicator_column(cross)])
            w = tf.get_variable("w", [emb.shape[1], 1])
        probs = tf.sigmoid(logits + tf.matmul(emb, w), name="probs")
        tf.train.get_or_create_global_step()
        saver = tf.train.Saver(sharded=True)
    return g, serialized, probs, saver


def _set_weights(sess, g):
    sess.run(tf.variables_initializer(g.get_collection("variables")))
    for v in g.get_collection("trainable_variables"):
        value = np.random.RandomState(len(v.op.name)).uniform(-1, 1, v.shape.as_list())
        sess.run(v.assign(value.astype(np.float32)))


def _export(d):
    """Exports the model (set weights) into `d`/sm; returns our numbers and the meta graph."""
    g, serialized, probs, saver = _model()
    with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        _set_weights(sess, g)
        ours = sess.run(probs, {serialized: _examples()}).ravel()
        b = tf.saved_model.builder.SavedModelBuilder(str(d / "sm"))
        sig = tf.saved_model.signature_def_utils.predict_signature_def(
            {"examples": serialized}, {"probs": probs})
        b.add_meta_graph_and_variables(sess, ["serve"], clear_devices=True,
                                       signature_def_map={"serving_default": sig})
        b.save()
    mg = _mg.create_meta_graph_def(graph=g, saver_def=saver.as_saver_def(), tf_compatible=True,
                                   keep_nodes={"probs", saver.as_saver_def().restore_op_name})
    return {"dir": d, "ours": ours, "meta": mg, "saver_def": saver.as_saver_def(), "graph": g}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return _export(tmp_path_factory.mktemp("export"))


def _saved_graph_def(d):
    return saved_model_pb2.SavedModel.FromString(
        (d / "sm" / "saved_model.pb").read_bytes()).meta_graphs[0]


def test_our_numbers_are_tensorflows(exported):
    np.testing.assert_allclose(exported["ours"], TF_PROBS, rtol=1e-6)


def test_saved_model_holds_only_tensorflow_ops(exported):
    mg = _saved_graph_def(exported["dir"])
    assert foreign_ops(mg.graph_def) == {}
    ops = {n.op for n in mg.graph_def.node}
    assert {"SparseCross", "HashTableV2", "InitializeTableV2", "LookupTableFindV2",
            "StringToHashBucketFast", "AsString", "DynamicPartition", "SaveV2", "RestoreV2",
            "ShardedFilename", "MergeV2Checkpoints"} <= ops
    # The loader's main op initializes the lowered tables, which TF's collection lists.
    inits = list(mg.collection_def["table_initializer"].node_list.value)
    assert len(inits) == 3
    main = mg.collection_def["saved_model_main_op"].node_list.value[0]
    node = next(n for n in mg.graph_def.node if n.name == main)
    assert sorted(i.lstrip("^") for i in node.input) == sorted(inits)


def test_saved_model_serves_tensorflows_numbers_here(exported):
    with tf.Graph().as_default(), tf.Session() as sess:
        mg = tf.saved_model.loader.load(sess, ["serve"], str(exported["dir"] / "sm"))
        sig = mg.signature_def["serving_default"]
        served = sess.run(sig.outputs["probs"].name,
                          {sig.inputs["examples"].name: _examples()})
    np.testing.assert_allclose(served.ravel(), TF_PROBS, rtol=1e-6)


def test_gates_are_dropped_and_their_control_edges_rewired(exported):
    gd = exported["meta"].graph_def
    names = {n.name for n in gd.node}
    assert not {n.op for n in gd.node} & {"GatePause", "GateResume", "SaveShard",
                                          "MergeCheckpoint", "RestoreShard"}
    for n in gd.node:   # every input, control or data, names a node still there
        for i in n.input:
            assert i.lstrip("^").split(":")[0] in names, (n.name, i)
    # The sharded save: one SaveV2 per ps task into a temporary part, then one merge.
    saves = [n for n in gd.node if n.op == "SaveV2"]
    filenames = {n.name: n for n in gd.node if n.op == "ShardedFilename"}
    assert len([s for s in saves if s.input[0] in filenames]) == 2
    assert len([n for n in gd.node if n.op == "MergeV2Checkpoints"]) == 1


def test_lowered_saver_restores_saves_and_restores_sharded(exported, tmp_path):
    """The lowered meta graph, as TF ran it: restore the SavedModel's variables
    (partitions read by slice), save sharded (2 parts merged into one bundle),
    restore that."""
    sd = exported["saver_def"]
    mg = exported["meta"]
    assert collect_table_initializers(mg)
    with tf.Graph().as_default() as g, tf.Session() as sess:
        for n in mg.graph_def.node:
            n.device = ""
        _mg.import_meta_graph_def(mg, g)
        feed = {"examples:0": _examples()}
        sess.run(sd.restore_op_name,
                 {sd.filename_tensor_name: str(exported["dir"] / "sm/variables/variables")})
        sess.run(tf.tables_initializer())
        np.testing.assert_allclose(sess.run("probs:0", feed).ravel(), TF_PROBS, rtol=1e-6)
        prefix = str(tmp_path / "model")
        assert sess.run(sd.save_tensor_name, {sd.filename_tensor_name: prefix}) == \
            prefix.encode()
        assert sorted(os.listdir(tmp_path)) == ["model.data-00000-of-00002",
                                                "model.data-00001-of-00002", "model.index"]
        reader = tf.train.NewCheckpointReader(prefix)
        assert reader.get_variable_to_shape_map()["lin/linear_model/city/weights"] == [5, 1]
        sess.run(tf.variables_initializer(tf.global_variables()))
        sess.run(sd.restore_op_name, {sd.filename_tensor_name: prefix})
        np.testing.assert_allclose(sess.run("probs:0", feed).ravel(), TF_PROBS, rtol=1e-6)


def test_check_names_each_op_tensorflow_lacks_and_its_nodes():
    gd = graph_pb2.GraphDef()
    gd.node.add(name="a", op="GatePause")
    gd.node.add(name="b", op="Identity")
    fn = gd.library.function.add()
    fn.signature.name = "body"
    fn.node_def.add(name="c", op="FunctionalScan")
    with pytest.raises(ValueError, match=r"FunctionalScan \(node body/c\); GatePause "
                                         r"\(node a\)"):
        check_tensorflow_ops(gd, "model.meta")
    gd2 = graph_pb2.GraphDef()
    gd2.node.add(name="b", op="Identity")
    check_tensorflow_ops(gd2)


def test_sparse_cross_of_int32_values_casts_to_int64():
    with tf.Graph().as_default() as g:
        a = tf.SparseTensor([[0, 0], [1, 0]], tf.constant([3, 4], tf.int32), [2, 1])
        b = tf.SparseTensor([[0, 0], [1, 0]], tf.constant(["x", "y"]), [2, 1])
        out = sparse_feature_cross([a, b], num_buckets=10)
        gd, _ = to_tensorflow(g, g.as_graph_def())
        with tf.Session() as sess:
            ours = sess.run(out.values)
    node = next(n for n in gd.node if n.op == "SparseCross")
    assert list(node.attr["sparse_types"].list.type) == [graph_pb2.DT_INT64,
                                                         graph_pb2.DT_STRING]
    assert node.attr["hashed_output"].b and node.attr["num_buckets"].i == 10
    assert node.attr["hash_key"].i == 0xDECAFCAFFE
    # Read back (TF's SparseCross -> ours), the graph computes the same ids.
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.import_graph_def(from_tensorflow(gd), name="")
        np.testing.assert_array_equal(sess.run(node.name + ":1"), ours)


def test_canned_wide_and_deep_saved_model_has_only_tensorflow_ops(tmp_path):
    """DNNLinearCombinedClassifier with vocabulary-list and crossed columns: its
    export (checked in TF 2.21: same predictions within 3e-8) holds TF's ops only and
    serves, through our loader, what predict() gives."""
    city = fc.categorical_column_with_vocabulary_list("city", ["rome", "oslo", "paris"])
    age = fc.numeric_column("age")
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "model"), dnn_hidden_units=[4],
        linear_feature_columns=[city, fc.crossed_column([city, "color"], 16)],
        dnn_feature_columns=[fc.embedding_column(city, 2), age],
        config=tf.estimator.RunConfig(tf_random_seed=1))
    feats = {"city": np.array([[b"rome"], [b"nyc"], [b"oslo"], [b"paris"]]),
             "color": np.array([[b"red"], [b"blue"], [b"red"], [b"green"]]),
             "age": np.array([[0.1], [0.7], [0.3], [0.9]], np.float32)}
    est.train(lambda: tf.data.Dataset.from_tensor_slices(
        (feats, np.array([[0], [1], [0], [1]]))).repeat().batch(4), steps=3)
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        fc.make_parse_example_spec([city, age, fc.crossed_column([city, "color"], 16)]))
    path = est.export_saved_model(str(tmp_path / "export"), receiver).decode()
    mg = saved_model_pb2.SavedModel.FromString(
        open(os.path.join(path, "saved_model.pb"), "rb").read()).meta_graphs[0]
    assert foreign_ops(mg.graph_def) == {}
    assert {"SparseCross", "HashTableV2", "LookupTableFindV2"} <= {n.op for n in
                                                                  mg.graph_def.node}
    examples = []
    for i in range(4):
        e = tf.train.Example()
        for key in ("city", "color"):
            e.features.feature[key].bytes_list.value.append(feats[key][i, 0])
        e.features.feature["age"].float_list.value.append(float(feats["age"][i, 0]))
        examples.append(e.SerializeToString())
    with tf.Graph().as_default(), tf.Session() as sess:
        loaded = tf.saved_model.loader.load(sess, ["serve"], path)
        sig = loaded.signature_def["predict"]
        served = sess.run(sig.outputs["logistic"].name, {sig.inputs["examples"].name: examples})
    predicted = [p["logistic"][0] for p in est.predict(
        lambda: tf.data.Dataset.from_tensor_slices(feats).batch(4))]
    np.testing.assert_allclose(served.ravel(), predicted, rtol=1e-6)


def test_pruned_nodes_take_their_function_bodies_with_them(tmp_path):
    """A graph with a tf.scan (no TF form) exports its serving part: the scan node is
    pruned and so is its body, which the TF-ops check would otherwise refuse."""
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.0], [2.0]], name="w")
        y = tf.matmul(x, w, name="y")
        tf.scan(lambda a, v: a + tf.reduce_sum(tf.scan(lambda b, u: b + u, v)), x,
                initializer=0.0, name="cumulative")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"y": y})
    mg = saved_model_pb2.SavedModel.FromString(
        (tmp_path / "m" / "saved_model.pb").read_bytes()).meta_graphs[0]
    assert foreign_ops(mg.graph_def) == {}
    assert not mg.graph_def.library.function
    assert "FunctionalScan" in {op.type for op in g.get_operations()}


# Our ops without a TF form (tf_lowering's docstring says why); _Send/_Recv live only
# in partitioned graphs, never in exports.
NOT_LOWERED = {"FunctionalScan", "FunctionalScanGrad", "WhileGrad", "InitializedValueOr",
               "AccumulatorReplicaStatus", "AccumulatorReplicaDeparted",
               "AccumulatorReplicasGone", "_Send", "_Recv",
               "DenseHashTable", "LookupTableRemove", "TensorArrayFlowAddGrads",
               "TensorArrayFlowConcat", "TensorArrayFlowGather", "TensorArrayFlowGradConcat",
               "TensorArrayFlowGradGather", "TensorArrayFlowGradScatter",
               "TensorArrayFlowGradSplit", "TensorArrayFlowNew", "TensorArrayFlowRead",
               "TensorArrayFlowScatter", "TensorArrayFlowSize", "TensorArrayFlowSplit",
               "TensorArrayFlowWrite", "TensorArrayFlowZeros",
               # DeepRec's optimizer kernels: training only, stock TF has none
               "ApplyAdamAsync", "SparseApplyAdamAsync", "ApplyAdagradDecay",
               "SparseApplyAdagradDecay", "KvStamp",
               # DeepRec's WorkQueue: the training job's input, never in an export
               "WorkQueueHandleOp", "WorkQueueTake", "WorkQueueSize", "WorkQueueSave",
               "WorkQueueRestore", "WorkQueueRestoreFromFile"}


def test_every_op_of_ours_tensorflow_lacks_is_lowered_or_listed():
    """A new op registered under a name TF lacks must be lowered for exports (or be
    listed here, with the reason in tf_lowering's docstring)."""
    # In a fresh interpreter: other test modules register test-only ops in this one.
    code = ("import tensorweave\n"
            "import tensorweave.runtime.sendrecv_ops\n"  # the distributed runtime's, loaded
            "from tensorweave.framework.op_def import registered_ops\n"  # with a Server
            "from tensorweave.framework.tf_lowering import lowerable_ops\n"
            "from tensorweave.framework.tf_op_signatures import TF_OP_NAMES\n"
            "print(' '.join(sorted({n for n in registered_ops() if n not in TF_OP_NAMES}"
            " - lowerable_ops())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert set(out.split()) == NOT_LOWERED
