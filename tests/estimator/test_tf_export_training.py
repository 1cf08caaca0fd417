"""Training graphs export with TF's ops only: the sigmoid cross entropy, its gradient,
the sparse GradientDescent / Adam / LazyAdam updates, the softmax / log-softmax /
segment-sum gradients, softmax over any axis and report_uninitialized_variables are
written as TF builds them.

The model of test_tf_export_lowering (partitioned embedding and linear weights on
two ps tasks, vocabulary and crossed columns) trains 3 steps here; its TF-format
meta graph, run by real TF 2.21 from the same initial checkpoint, gave the losses
recorded below (and variables within 6e-8 of ours). The test runs the exported
(lowered) graph here and checks TF's numbers.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import meta_graph as _mg
from tensorweave.framework.tf_graph_compat import to_tensorflow
from tensorweave.framework.tf_graph_import_compat import from_tensorflow
from tensorweave.framework.tf_lowering import foreign_ops
from tensorweave.framework.tf_lowering_lookup import collect_table_initializers
from test_tf_export_lowering import _examples, _model, _set_weights

LABELS = np.array([[1.0], [0.0], [1.0], [0.0]], np.float32)
ADAM_LOSSES = [1.0531319379806519, 0.7242090106010437, 0.4639827013015747]
TF_LOSSES = {"sgd": [1.0531319379806519, 0.762725830078125, 0.5654886960983276],
             "adam": ADAM_LOSSES, "lazy_adam": ADAM_LOSSES}
LOWERED = {"sgd": "SparseApplyGradientDescent", "adam": "SparseApplyAdam",
           "lazy_adam": "SparseApplyLazyAdam"}


def _optimizer(kind):
    if kind == "sgd":
        return tf.train.GradientDescentOptimizer(0.5)
    if kind == "adam":
        return tf.train.AdamOptimizer(0.1)
    return tf.contrib.opt.LazyAdamOptimizer(0.1)


def _train_graph(kind):
    g, serialized, probs, _ = _model()
    with g.as_default():
        labels = tf.placeholder(tf.float32, [None, 1], name="labels")
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=probs.op.inputs[0]), name="loss")
        _optimizer(kind).minimize(loss, global_step=tf.train.get_global_step(), name="train")
        saver = tf.train.Saver(checkpoint_format="tensorflow", name="tf_saver")
    return g, serialized, labels, loss, saver


@pytest.mark.parametrize("kind", sorted(TF_LOSSES))
def test_lowered_training_graph_trains_as_tensorflow_did(kind, tmp_path):
    g, serialized, labels, loss, saver = _train_graph(kind)
    assert LOWERED[kind] in {op.type for op in g.get_operations()}
    feed = {serialized: _examples(), labels: LABELS}
    with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        _set_weights(sess, g)
        saver.save(sess, str(tmp_path / "init"), write_meta_graph=False, write_state=False)
        ours = [sess.run([loss, "train"], feed)[0] for _ in range(3)]
    np.testing.assert_allclose(ours, TF_LOSSES[kind], rtol=1e-6)
    sd = saver.as_saver_def()
    mg = _mg.create_meta_graph_def(graph=g, saver_def=sd, tf_compatible=True,
                                   keep_nodes={"train", "loss", sd.restore_op_name})
    assert foreign_ops(mg.graph_def) == {}
    assert collect_table_initializers(mg)
    for n in mg.graph_def.node:
        n.device = ""
    with tf.Graph().as_default() as g2, tf.Session() as sess:
        _mg.import_meta_graph_def(mg, g2)
        sess.run(sd.restore_op_name, {sd.filename_tensor_name: str(tmp_path / "init")})
        sess.run(tf.tables_initializer())
        feed = {"examples:0": _examples(), "labels:0": LABELS}
        lowered = [sess.run(["loss:0", "train"], feed)[0] for _ in range(3)]
    np.testing.assert_allclose(lowered, TF_LOSSES[kind], rtol=1e-6)


# What TF 2.21 computed from the lowered GraphDef of `_gradients_graph` (for FEED).
TF_GRADIENT = [[-2.547945737838745, -1.4736391305923462, -0.2955132722854614],
               [3.504638433456421, 4.828725814819336, 6.256631374359131],
               [2.6135590076446533, 3.3110568523406982, 4.112375259399414],
               [14.232522010803223, 16.05963134765625, 17.990558624267578]]
FEED = {"x:0": np.arange(12, dtype=np.float32).reshape(4, 3) / 7,
        "ids:0": np.array([0, 2, -1, 2], np.int32), "gi:0": np.array([3, 0, 3, 1, 2])}


def _gradients_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 3], name="x")
        ids = tf.placeholder(tf.int32, [4], name="ids")
        gi = tf.placeholder(tf.int64, [5], name="gi")
        v = tf.Variable(tf.ones([2]), name="v")
        tf.Variable(tf.ones([3]), name="w")
        a, c = tf.nn.softmax(x * 2.0), tf.unsorted_segment_sum(x, ids, 3)
        d = tf.gather(x * 1.5, gi)
        loss = tf.reduce_sum(a * a) + tf.reduce_sum(tf.nn.log_softmax(x, axis=0) * x) + \
            tf.reduce_sum(c * c) + tf.reduce_sum(d * d)
        tf.identity(tf.gradients(loss, [x])[0], name="gx")
        tf.identity(tf.report_uninitialized_variables(), name="uninitialized")
        tf.variables_initializer([v], name="init")
    return g


def test_gradient_ops_and_softmax_axes_lowered():
    g = _gradients_graph()
    ops = {op.type for op in g.get_operations()}
    assert {"SoftmaxGrad", "LogSoftmaxGrad", "UnsortedSegmentSumGrad",
            "ReportUninitialized"} <= ops
    gd, _ = to_tensorflow(g, g.as_graph_def())
    assert foreign_ops(gd) == {}
    assert "axis" not in {n.name: n for n in gd.node}["LogSoftmax"].attr
    with tf.Graph().as_default() as g2, tf.Session() as sess:
        tf.import_graph_def(from_tensorflow(gd), name="")
        assert list(sess.run("uninitialized:0")) == [b"v", b"w"]
        sess.run(g2.get_operation_by_name("init"))
        assert list(sess.run("uninitialized:0")) == [b"w"]
        np.testing.assert_allclose(sess.run("gx:0", FEED), TF_GRADIENT, rtol=2e-6)


# What TF 2.21 computed from the lowered GraphDef of `_mask_graph`: d loss / d x.
TF_MASK_GRADIENT = [
    [[7.199999809265137, 0.4000000059604645, 0.800000011920929, 1.2000000476837158],
     [0.0, 0.0, 0.0, 0.0],
     [3.200000047683716, 3.5999999046325684, 4.0, 4.400000095367432]],
    [[39.0, 8.199999809265137, 8.600000381469727, 13.800000190734863],
     [3.0, 3.0, 7.800000190734863, 3.0],
     [11.0, 16.200000762939453, 11.800000190734863, 12.199999809265137]]]


def _mask_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4], name="x")
        m2 = tf.placeholder(tf.bool, [3, 4], name="m2")
        a = tf.boolean_mask(x, tf.constant([True, False, True]), axis=1)   # 1-D mask, axis 1
        b = tf.boolean_mask(x * 2.0, m2, axis=1)                           # 2-D mask
        c = tf.boolean_mask(x, tf.constant([False, True]))                 # axis 0
        loss = tf.reduce_sum(a * a) + tf.reduce_sum(b * x[:, 0:1, 0]) + tf.reduce_sum(c * 3.0)
        tf.identity(tf.gradients(loss, [x])[0], name="gx")
    return g


def test_boolean_mask_and_its_gradient_lowered():
    g = _mask_graph()
    assert {"BooleanMask", "BooleanMaskGrad"} <= {op.type for op in g.get_operations()}
    gd, _ = to_tensorflow(g, g.as_graph_def())
    assert foreign_ops(gd) == {}
    feed = {"x:0": np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 5,
            "m2:0": np.arange(12).reshape(3, 4) % 3 == 0}
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.import_graph_def(from_tensorflow(gd), name="")
        np.testing.assert_allclose(sess.run("gx:0", feed), TF_MASK_GRADIENT, rtol=1e-6)


# TF 2.21 on the lowered `_slice_graph` (a size read at run time, int64 begin/size).
TF_SLICE_GRADIENT = [[0.0, 0.0, 6.0, 6.0, 0.0],
                     [3.3333332538604736, 4.0, 10.666666030883789, 11.333333969116211, 6.0],
                     [6.666666507720947, 7.333333492279053, 14.0, 14.666666984558105,
                      9.333333015441895],
                     [0.0, 0.0, 0.0, 0.0, 0.0]]


def test_slice_gradient_lowered():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 5], name="x")
        n = tf.placeholder(tf.int32, [], name="n")
        a = tf.slice(x, [1, 0], tf.stack([n, -1]))
        b = tf.slice(x * 2.0, tf.constant([0, 2], tf.int64), tf.constant([3, 2], tf.int64))
        loss = tf.reduce_sum(a * a) + tf.reduce_sum(b * 3.0)
        tf.identity(tf.gradients(loss, [x])[0], name="gx")
    assert "SliceGrad" in {op.type for op in g.get_operations()}
    gd, _ = to_tensorflow(g, g.as_graph_def())
    assert foreign_ops(gd) == {}
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.import_graph_def(from_tensorflow(gd), name="")
        got = sess.run("gx:0", {"x:0": np.arange(20, dtype=np.float32).reshape(4, 5) / 3,
                                "n:0": 2})
    np.testing.assert_allclose(got, TF_SLICE_GRADIENT, rtol=1e-6)


# TF 2.21 on the lowered graph of test_top_k_and_prod_gradients_lowered.
TF_TOP_K_PROD_GRADIENT = [
    [[0.1875, 0.09375, -0.4375, 0.03369140625], [0.328125, 1.2734375, 1.734375, 1.640625],
     [0.46875, 0.3125, 0.232177734375, 0.6875]],
    [[1.109375, 1.59375, 0.65625, 0.328125], [0.9375, 0.705322265625, 1.0625, 1.46875],
     [1.546875, 0.328125, 0.1640625, -0.390625]]]


def test_top_k_and_prod_gradients_lowered():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4], name="x")
        vals, _ = tf.nn.top_k(x * 1.0, k=2)
        loss = tf.reduce_sum(vals * vals) + tf.reduce_sum(tf.reduce_prod(x, axis=[0, 2])) + \
            tf.reduce_sum(tf.reduce_prod(x + 1.0, axis=-1, keepdims=True) * 0.5)
        tf.identity(tf.gradients(loss, [x])[0], name="gx")
    assert {"TopKV2Grad", "ProdGrad"} <= {op.type for op in g.get_operations()}
    gd, _ = to_tensorflow(g, g.as_graph_def())
    assert foreign_ops(gd) == {}
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.import_graph_def(from_tensorflow(gd), name="")
        got = sess.run("gx:0", {"x:0": (np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7
                                        - 3) / 4})
    np.testing.assert_allclose(got, TF_TOP_K_PROD_GRADIENT, rtol=1e-6)


# TF 2.21 on the lowered graph of test_gather_gradient_on_another_axis_lowered.
TF_GATHER_AXIS_GRADIENT = [[[4.5, 6.0, 4.5, 6.0], [12.5, 12.0, 16.5, 12.0],
                            [-1.0, 0.0, 0.0, 0.0]],
                           [[7.0, 6.0, 1.5, 6.0], [11.5, 12.0, 13.5, 12.0],
                            [1.5, 0.0, -3.0, 0.0]]]


def test_gather_gradient_on_another_axis_lowered():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4], name="x")
        a = tf.gather(x * 1.0, tf.constant([[2, 0], [2, 2]]), axis=2)
        c = tf.gather(x * 2.0, tf.constant([1, 1, 0], tf.int64), axis=1)
        tf.identity(tf.gradients(tf.reduce_sum(a * a) + tf.reduce_sum(c * 3.0), [x])[0],
                    name="gx")
    assert "GatherV2Grad" in {op.type for op in g.get_operations()}
    gd, _ = to_tensorflow(g, g.as_graph_def())
    assert foreign_ops(gd) == {}
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.import_graph_def(from_tensorflow(gd), name="")
        got = sess.run("gx:0", {"x:0": (np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7
                                        - 3) / 4})
    np.testing.assert_allclose(got, TF_GATHER_AXIS_GRADIENT, rtol=1e-6)


# TF 2.21 on the lowered graph of test_ops_inside_cond_bodies_lowered: (y, dy2/dx).
TF_COND = {
    True: ([[-0.08409649133682251, 0.08409643173217773, 0.2689414322376251],
            [0.7507631182670593, 1.249236822128296, 1.7310585975646973]],
           [[0.3732016086578369, 0.5459812879562378, 0.5378828644752502],
            [1.7722234725952148, 3.2540507316589355, 4.611995697021484]]),
    False: ([[-2.3333334922790527, -1.6666667461395264, -1.0],
             [2.6666667461395264, 3.3333334922790527, 4.0]],
            [[-19.33333396911621, -16.666667938232422, -14.0],
             [30.666667938232422, 33.333335876464844, 36.0]])}


def test_ops_inside_cond_bodies_lowered():
    """Softmax over axis 0 and the gradients' broadcast helpers inside cond branches
    (and their gradient branches) are lowered in the function bodies."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        training = tf.placeholder(tf.bool, [], name="training")
        keep = tf.placeholder(tf.float32, [], name="keep")
        y = tf.cond(training, lambda: tf.nn.dropout(x, keep) + tf.nn.softmax(x * x, axis=0),
                    lambda: x * 2.0 + tf.reduce_sum(x, axis=1, keepdims=True))
        tf.identity(y, name="y")
        tf.identity(tf.gradients(tf.reduce_sum(y * y), [x])[0], name="gx")
    gd, dropped = to_tensorflow(g, g.as_graph_def(), prune_unknown=True)
    assert dropped == [] and foreign_ops(gd) == {} and len(gd.library.function) == 4
    body_ops = {n.op for f in gd.library.function for n in f.node_def}
    assert {"Transpose", "BroadcastGradientArgs"} <= body_ops
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.import_graph_def(from_tensorflow(gd), name="")
        for flag, (want_y, want_gx) in TF_COND.items():
            got = sess.run(["y:0", "gx:0"], {
                "x:0": (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 3,
                "training:0": flag, "keep:0": 1.0})
            np.testing.assert_allclose(got[0], want_y, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(got[1], want_gx, rtol=1e-6)
