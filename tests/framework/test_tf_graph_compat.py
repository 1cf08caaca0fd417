"""GraphDefs in TensorFlow's terms (framework/tf_graph_compat.py).

Without TensorFlow in the tests, the check is against TF's op interfaces
(tf_op_signatures.json, generated from TF's registry): every node of an exported
graph carries each attr TF requires, no attr TF does not know, type attrs that
match the tensors' dtypes. bench/savedmodel_compat.py has real TF load them.
"""
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.proto import saved_model_pb2
from tensorweave.framework.tf_graph_compat import to_tensorflow
from tensorweave.framework.tf_graph_import_compat import from_tensorflow
from tensorweave.framework.tf_op_signatures import SIGNATURES
from suite_paths import TEST_DATA

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _cnn_graph():
    x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="x")
    k = tf.Variable(tf.truncated_normal([3, 3, 1, 2], stddev=0.1), name="k")
    c = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k, [1, 1, 1, 1], "SAME"),
                                  tf.Variable(tf.zeros([2]))))
    p = tf.nn.max_pool(c, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    f = tf.reshape(p, [-1, 32])
    logits = tf.matmul(f, tf.Variable(tf.ones([32, 3])))
    probs = tf.nn.softmax(logits, name="probs")
    classes = tf.argmax(logits, axis=1, output_type=tf.int32, name="classes")
    tf.concat([probs, tf.cast(tf.expand_dims(classes, 1), tf.float32)], 1, name="joined")
    tf.stack([tf.reduce_mean(probs), tf.reduce_sum(probs)], name="stacked")
    tf.train.Saver()
    return tf.get_default_graph()


def test_exported_nodes_match_tensorflow_interfaces():
    g = _cnn_graph()
    gd, dropped = to_tensorflow(g, g.as_graph_def(), prune_unknown=True)
    assert dropped == []   # the Saver's ops are written as TF's (tf_lowering_checkpoint)
    assert {"SaveV2", "RestoreV2", "Assign"} <= {n.op for n in gd.node}
    for node in gd.node:
        ins, outs, attrs = SIGNATURES[node.op]
        required = {k for k, (_, has_default) in attrs.items() if not has_default}
        assert required <= set(node.attr), (node.name, node.op)
        assert {k for k in node.attr if not k.startswith("_")} <= set(attrs), node.name
    by_name = {n.name: n for n in gd.node}
    assert by_name["probs"].attr["T"].type == tf.float32.as_datatype_enum
    assert "axis" not in by_name["probs"].attr   # ours, TF's Softmax has none
    assert by_name["classes"].attr["Tidx"].type == tf.int32.as_datatype_enum
    assert by_name["classes"].attr["output_type"].type == tf.int32.as_datatype_enum
    assert by_name["stacked"].attr["N"].i == 2
    assert by_name["joined"].attr["N"].i == 2


def test_without_pruning_tf_less_ops_stay_and_bad_attrs_are_named():
    g = _cnn_graph()
    tf.scan(lambda a, x: a + x, tf.constant([1.0, 2.0]), name="scan")
    gd, dropped = to_tensorflow(g, g.as_graph_def())
    assert dropped == [] and "FunctionalScan" in {n.op for n in gd.node}
    assert "GatePause" not in {n.op for n in gd.node}   # lowered (dropped, rewired)
    with tf.Graph().as_default() as g2:
        # Over axis 1 of a known rank it is lowered (Transpose); of an unknown rank not.
        tf.nn.softmax(tf.placeholder(tf.float32, [2, 3, 4]), axis=1, name="sm0")
        tf.nn.softmax(tf.placeholder(tf.float32, None), axis=1, name="sm1")
    with pytest.raises(ValueError, match="sm1 .Softmax.: attr axis=1 has no TensorFlow"):
        to_tensorflow(g2, g2.as_graph_def())


def test_kept_node_on_a_tf_less_op_is_refused():
    g = _cnn_graph()
    out = tf.scan(lambda a, x: a + x, tf.constant([1.0, 2.0]), name="scan")
    with pytest.raises(ValueError, match=r"FunctionalScan \(node scan/"):
        to_tensorflow(g, g.as_graph_def(), prune_unknown=True, keep={out.op.name})


def test_tensorflow_written_graph_imports_here():
    path = os.path.join(TEST_DATA, "tf_written", "saved_model",
                        "saved_model.pb")
    mg = saved_model_pb2.SavedModel.FromString(open(path, "rb").read()).meta_graphs[0]
    assert "T" in {n.name: n for n in mg.graph_def.node}["probs"].attr
    gd = from_tensorflow(mg.graph_def)
    assert "T" not in {n.name: n for n in gd.node}["probs"].attr
    with tf.Graph().as_default() as g:
        tf.import_graph_def(gd, name="")
        assert g.get_operation_by_name("probs").type == "Softmax"
        out = g.get_tensor_by_name("probs:0")
        assert out.shape.as_list() == [None, 2]


def test_stand_ins_for_ops_we_lack():
    from tensorweave.framework.proto import graph_pb2
    gd = graph_pb2.GraphDef()
    rnd = gd.node.add(name="rnd", op="StatelessRandomUniformV2")
    rnd.attr["dtype"].type = tf.float32.as_datatype_enum
    rnd.attr["_output_shapes"].list.shape.add().dim.add(size=3)
    gd.node.add(name="key", op="StatelessRandomGetKeyCounter")
    rnd.input.append("key")
    gd.node.add(name="unused", op="SomethingElse")
    gd.node.add(name="y", op="Identity", input=["rnd"]).attr["T"].type = 1
    out = from_tensorflow(gd, stand_ins=True)
    nodes = {n.name: n for n in out.node}
    assert sorted(nodes) == ["rnd", "y"] and nodes["rnd"].op == "Placeholder"
    assert [d.size for d in nodes["rnd"].attr["shape"].shape.dim] == [3]
    multi = graph_pb2.GraphDef()
    multi.node.add(name="two", op="NoSuchSplit")
    multi.node.add(name="y", op="Identity", input=["two:1"])
    with pytest.raises(ValueError, match="NoSuchSplit"):
        from_tensorflow(multi, stand_ins=True)
    assert from_tensorflow(multi).node[0].op == "NoSuchSplit"   # left for the importer


def test_resource_variable_ops_read_as_reference_variables():
    from tensorweave.framework.proto import graph_pb2
    gd = graph_pb2.GraphDef()
    h = gd.node.add(name="emb", op="VarHandleOp")
    h.attr["dtype"].type = tf.float32.as_datatype_enum
    h.attr["shape"].shape.dim.add(size=3)
    h.attr["shape"].shape.dim.add(size=2)
    h.attr["shared_name"].s = b"emb"
    h.attr["allowed_devices"].list.SetInParent()
    init = gd.node.add(name="init_value", op="Const")
    init.attr["dtype"].type = tf.float32.as_datatype_enum
    init.attr["value"].tensor.CopyFrom(_tensor_proto())
    gd.node.add(name="emb/Assign", op="AssignVariableOp", input=["emb", "init_value"])
    ids = gd.node.add(name="ids", op="Const")
    ids.attr["dtype"].type = tf.int32.as_datatype_enum
    ids.attr["value"].tensor.CopyFrom(_int_proto([2, 0]))
    gd.node.add(name="rows", op="ResourceGather", input=["emb", "ids"]).attr["dtype"].type = 1
    gd.node.add(name="read", op="ReadVariableOp", input=["emb"]).attr["dtype"].type = 1
    gd.node.add(name="ready", op="VarIsInitializedOp", input=["emb"])
    with tf.Graph().as_default() as g:
        tf.import_graph_def(from_tensorflow(gd), name="")
        assert g.get_operation_by_name("emb").type == "VariableV2"
        with tf.Session() as sess:
            assert not sess.run("ready:0")
            sess.run("emb/Assign")
            assert sess.run("rows:0").tolist() == [[4.0, 5.0], [0.0, 1.0]]
            assert sess.run("read:0").shape == (3, 2)


def _tensor_proto():
    from tensorweave.framework.graph_protos import tensor_proto_of
    return tensor_proto_of(np.arange(6, dtype=np.float32).reshape(3, 2))


def _int_proto(values):
    from tensorweave.framework.graph_protos import tensor_proto_of
    return tensor_proto_of(np.asarray(values, np.int32))


def test_every_op_with_a_tensorflow_name_has_its_signature():
    """An op added under a TF op's name needs tools/gen_tf_op_signatures.py rerun."""
    from tensorweave.framework.op_def import registered_ops
    from tensorweave.framework.tf_op_signatures import TF_OP_NAMES
    missing = sorted(n for n in registered_ops() if n in TF_OP_NAMES and n not in SIGNATURES)
    assert not missing, ("regenerate tensorweave/framework/tf_op_signatures.json "
                         f"(tools/gen_tf_op_signatures.py): {missing}")


def test_fused_ops_lowered_and_function_bodies_fixed():
    """Dropout's fused mask becomes TF's RealDiv/AddV2/Floor/Mul; cond branches (If
    functions) get TF's attrs too. The lowered graph computes the same here."""
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    dropped = tf.nn.dropout(x, keep_prob=0.5, seed=3)
    flag = tf.placeholder_with_default(True, [], name="flag")
    out = tf.cond(flag, lambda: tf.matmul(dropped, tf.ones([4, 2])), lambda: tf.zeros([1, 2]))
    tf.identity(out, name="out")
    g = tf.get_default_graph()
    gd, dropped_nodes = to_tensorflow(g, g.as_graph_def(), prune_unknown=True, keep={"out"})
    assert dropped_nodes == [] and "ApplyDropoutMask" not in {n.op for n in gd.node}
    assert {"RealDiv", "Floor", "If"} <= {n.op for n in gd.node}
    for fdef in gd.library.function:
        for nd in fdef.node_def:
            required = {k for k, (_, d) in SIGNATURES[nd.op][2].items() if not d}
            assert required <= set(nd.attr), (fdef.signature.name, nd.name)
    batch = np.arange(12, dtype=np.float32).reshape(3, 4)
    with tf.Session() as sess:
        want = sess.run("out:0", {"x:0": batch})
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        tf.import_graph_def(from_tensorflow(gd), name="")
        with tf.Session() as sess:
            got = sess.run("out:0", {"x:0": batch})
    np.testing.assert_allclose(got, want)


def _broadcast_training_graph():
    """Gradients through broadcasting ops and sum/mean reductions of every kind."""
    x = tf.placeholder(tf.float32, [None, 3, 4], name="x")
    b = tf.Variable(tf.ones([3, 1]), name="b")
    w = tf.Variable(tf.fill([4], 0.5), name="w")
    y = x * b + w                                   # SumToShape for b and w
    parts = [tf.reduce_sum(y, axis=1),              # ReduceGradBroadcast, keep_dims=False
             tf.reduce_mean(y, axis=[-1, 0], keepdims=True),   # negative axis, mean, kept
             tf.reduce_sum(y, axis=tf.constant([2], tf.int64)),  # int64 axes
             tf.reduce_mean(y)]                     # every axis (ReductionAllAxes)
    loss = tf.add_n([tf.reduce_sum(tf.square(p)) for p in parts], name="loss")
    grads = tf.gradients(loss, [x, b, w, y])
    tf.identity(tf.broadcast_to(w, tf.shape(x)), name="bcast")  # BroadcastTo's gradient
    tf.gradients(tf.get_default_graph().get_tensor_by_name("bcast:0"), [w])
    return [tf.identity(g, name=f"grad_{i}") for i, g in enumerate(grads)]


def test_training_graph_broadcast_helpers_lowered_to_tensorflow_ops():
    """SumToShape, BroadcastToLike and ReduceGradBroadcast (our gradients' helpers)
    become TF's BroadcastGradientArgs/Sum/Reshape/DynamicStitch/BroadcastTo, so a
    training graph is not cut down on export; the lowered graph gives the same
    gradients here (the same graph run by TF 2.21 gave them too)."""
    grads = _broadcast_training_graph()
    g = tf.get_default_graph()
    assert {"SumToShape", "ReduceGradBroadcast"} <= {op.type for op in g.get_operations()}
    names = [t.op.name for t in grads]
    gd, dropped = to_tensorflow(g, g.as_graph_def(), prune_unknown=True, keep=set(names))
    ops = {n.op for n in gd.node}
    assert dropped == [] and not ops & {"SumToShape", "BroadcastToLike",
                                         "ReduceGradBroadcast", "ReductionAllAxes"}
    assert {"BroadcastGradientArgs", "DynamicStitch", "BroadcastTo"} <= ops
    for node in gd.node:
        required = {k for k, (_, d) in SIGNATURES[node.op][2].items() if not d}
        assert required <= set(node.attr), (node.name, node.op)
    batch = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
    fetches = [n + ":0" for n in names]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(fetches, {"x:0": batch})
    with tf.Graph().as_default():
        tf.import_graph_def(from_tensorflow(gd), name="")
        with tf.Session() as sess:
            sess.run([n.name + "/Assign" for n in gd.node if n.op == "VariableV2"])
            got = sess.run(fetches, {"x:0": batch})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # TF 2.21 (compat.v1): the same model's gradients for b and w.
    np.testing.assert_allclose(want[1], [[163.02], [258.5], [375.1]], rtol=1e-5)
    np.testing.assert_allclose(want[2], [136.5, 140.1, 143.7, 147.3], rtol=1e-5)


@pytest.mark.parametrize("s0,s1,r0,r1,out", [
    ([2, 3, 5], [1], [], [0, 1, 2], [2, 3, 5]),
    ([2, 1, 5], [3, 1], [1], [0, 2], [2, 3, 5]),
    ([3, 1], [2, 1, 5], [0, 2], [1], [2, 3, 5]),
    ([2, 0, 3, 0, 5], [3, 1, 5], [], [0, 1, 3], [2, 0, 3, 0, 5]),
    ([1], [1], [], [], [1]),
    ([2, 1], [1, 1], [1], [0, 1], [2, 1]),
])
def test_broadcast_gradient_args_and_broadcast_args_as_tensorflow(s0, s1, r0, r1, out):
    """Values from TF's bcast_ops_test and TF 2.21 on the same shapes."""
    from tensorweave.ops.math.bcast_ops import broadcast_gradient_args
    with tf.Session() as sess:
        got0, got1 = sess.run(broadcast_gradient_args(s0, s1))
        shape = sess.run(tf.broadcast_dynamic_shape(s0, s1))
    assert got0.tolist() == r0 and got1.tolist() == r1 and shape.tolist() == out


def test_broadcast_shapes_refuse_incompatible_ones():
    from tensorweave.ops.math.bcast_ops import broadcast_gradient_args
    assert tf.broadcast_static_shape(tf.TensorShape([2, 1, None]),
                                     tf.TensorShape([3, None])).as_list() == [2, 3, None]
    assert tf.broadcast_static_shape(tf.TensorShape([None]), tf.TensorShape([4])).as_list() == [4]
    with pytest.raises(ValueError, match=r"Incompatible shapes.*\(2, 3\).*\(4,\)"):
        tf.broadcast_static_shape(tf.TensorShape([2, 3]), tf.TensorShape([4]))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2, 3\] and \[4\]"):
            sess.run(tf.broadcast_dynamic_shape([2, 3], [4]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="rank 1"):
            sess.run(broadcast_gradient_args([[2]], [4]))


def test_tensorflow_written_training_graph_imports_and_runs_here():
    """tf.gradients in TF 2.21 (compat.v1) of the model of _broadcast_training_graph
    (x of unknown rank, so TF builds BroadcastGradientArgs): its gradient ops run
    here and give TF's gradients for x, b and w."""
    from tensorweave.framework.proto import graph_pb2
    path = os.path.join(TEST_DATA, "tf_written", "gradients_graph.pb")
    gd = graph_pb2.GraphDef.FromString(open(path, "rb").read())
    assert {"BroadcastGradientArgs", "DynamicStitch"} <= {n.op for n in gd.node}
    tf.import_graph_def(from_tensorflow(gd), name="")
    batch = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
    with tf.Session() as sess:
        sess.run([n.name + "/Assign" for n in gd.node if n.op == "VariableV2"])
        g_x, g_b, g_w = sess.run(["gradients/mul_grad/Reshape:0",
                                  "gradients/mul_grad/Reshape_1:0",
                                  "gradients/add_grad/Reshape_1:0"], {"Placeholder:0": batch})
    assert g_x.shape == (2, 3, 4)
    np.testing.assert_allclose(g_x[0, 0], [11.05, 11.65, 12.25, 12.85], rtol=1e-5)
    np.testing.assert_allclose(g_b, [[163.02], [258.5], [375.1]], rtol=1e-5)
    np.testing.assert_allclose(g_w, [136.5, 140.1, 143.7, 147.3], rtol=1e-5)


def test_training_savedmodel_keeps_its_train_op_for_tensorflow(tmp_path):
    """A SavedModel of a training graph (TRAINING tag, train op in a collection): TF
    2.21 loads it and trains through the collection's op (loss 1.33 -> 0.08 in 60
    steps). Before the broadcast helpers were lowered, the train op was pruned."""
    x = tf.placeholder(tf.float32, [None, 8], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    logits = tf.layers.dense(tf.nn.dropout(tf.layers.dense(x, 16, tf.nn.relu), 0.9), 3)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=logits), name="loss")
    tf.add_to_collection("train_op", tf.train.AdamOptimizer(0.01).minimize(loss, name="train"))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        builder = tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))
        builder.add_meta_graph_and_variables(sess, [tf.saved_model.tag_constants.TRAINING])
        builder.save()
    mg = saved_model_pb2.SavedModel.FromString(
        (tmp_path / "m" / "saved_model.pb").read_bytes()).meta_graphs[0]
    nodes = {n.name: n for n in mg.graph_def.node}
    assert "train" in nodes and "loss" in nodes
    assert set(mg.collection_def["train_op"].node_list.value) == {"train"}
    for node in nodes.values():
        assert node.op in SIGNATURES, (node.name, node.op)
