"""tf.saved_model: builder, simple_save, loader, tags, signatures, assets, init ops.

What TF 1.x's saved_model_test.py and loader tests check, in our own tests: the
directory layout (saved_model.pb + variables/ in TF's checkpoint format), one
variables save then more meta graphs sharing it, tag-set selection, the errors
for a reused export dir / a second add_meta_graph_and_variables / unknown tags,
signatures surviving the round trip, main_op and legacy_init_op run on load,
assets copied and fed, text format, import_scope.
"""
import os

import numpy as np
import pytest

import tensorweave as tf
from saved_model_helpers import batch as _batch, dense_model as _dense_model
from tensorweave.framework import tensor_bundle
from tensorweave.framework.proto import saved_model_pb2

pytestmark = pytest.mark.usefixtures("fresh_graph")

SERVE = tf.saved_model.tag_constants.SERVING
TRAIN = tf.saved_model.tag_constants.TRAINING


def test_simple_save_layout_and_round_trip(tmp_path):
    export = str(tmp_path / "export" / "1")
    x, probs = _dense_model()
    tf.train.Saver()   # a user's Saver: its tensorweave-only ops stay out of saved_model.pb
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(probs, {x: _batch()})
        tf.saved_model.simple_save(sess, export, {"x": x}, {"probs": probs})
    assert sorted(os.listdir(export)) == ["saved_model.pb", "variables"]
    assert sorted(os.listdir(os.path.join(export, "variables"))) == [
        "variables.data-00000-of-00001", "variables.index"]
    assert tensor_bundle.is_bundle(os.path.join(export, "variables", "variables"))
    with tf.Graph().as_default(), tf.Session() as sess:
        mg = tf.saved_model.loader.load(sess, [SERVE], export)
        sig = mg.signature_def[tf.saved_model.signature_constants
                               .DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        assert sig.method_name == "tensorflow/serving/predict"
        got = sess.run(sig.outputs["probs"].name, {sig.inputs["x"].name: _batch()})
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_export_dir_must_be_new_or_empty(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(AssertionError, match="already exists"):
        tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "taken"))


def test_variables_saved_once_then_more_meta_graphs(tmp_path):
    export = str(tmp_path / "m")
    x, probs = _dense_model()
    b = tf.saved_model.builder.SavedModelBuilder(export)
    with pytest.raises(AssertionError, match="add_meta_graph_and_variables"):
        b.add_meta_graph([TRAIN])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(probs, {x: _batch()})
        b.add_meta_graph_and_variables(sess, [SERVE])
        with pytest.raises(AssertionError, match="add_meta_graph"):
            b.add_meta_graph_and_variables(sess, [TRAIN])
    b.add_meta_graph([TRAIN, "gpu"])
    path = b.save()
    assert path == os.fsencode(os.path.join(export, "saved_model.pb"))
    for tags in ([SERVE], [TRAIN, "gpu"], ["gpu", TRAIN]):
        with tf.Graph().as_default(), tf.Session() as sess:
            tf.saved_model.loader.load(sess, tags, export)
            np.testing.assert_allclose(sess.run("probs:0", {"x:0": _batch()}), want,
                                       rtol=1e-6)
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError, match="could not be found"):
            tf.saved_model.loader.load(sess, [TRAIN], export)


def test_main_op_and_legacy_init_op_run_on_load(tmp_path):
    for kind in ("main_op", "legacy_init_op"):
        with tf.Graph().as_default():
            v = tf.Variable(1.0, name="v")
            counter = tf.Variable(0.0, name="counter", collections=[
                tf.GraphKeys.LOCAL_VARIABLES])
            init = tf.group(tf.assign(counter, v + 41.0), name="init_op")
            export = str(tmp_path / kind)
            b = tf.saved_model.builder.SavedModelBuilder(export)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                b.add_meta_graph_and_variables(sess, [SERVE], **{kind: init})
            b.save()
        with tf.Graph().as_default(), tf.Session() as sess:
            tf.saved_model.loader.load(sess, [SERVE], export)
            assert sess.run("counter:0") == 42.0


def test_assets_are_copied_and_fed(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\n")
    export = str(tmp_path / "m")
    with tf.Graph().as_default():
        asset = tf.constant(str(vocab), name="asset_path")
        tf.add_to_collection(tf.GraphKeys.ASSET_FILEPATHS, asset)
        seen = tf.Variable("", name="seen", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        init = tf.group(tf.assign(seen, asset), name="init_op")
        tf.Variable(0.0, name="v")
        b = tf.saved_model.builder.SavedModelBuilder(export)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            b.add_meta_graph_and_variables(
                sess, [SERVE], assets_collection=tf.get_collection(
                    tf.GraphKeys.ASSET_FILEPATHS), main_op=init)
        b.save()
    assert (tmp_path / "m" / "assets" / "vocab.txt").read_text() == "a\nb\n"
    with tf.Graph().as_default(), tf.Session() as sess:
        mg = tf.saved_model.loader.load(sess, [SERVE], export)
        assert mg.asset_file_def[0].filename == "vocab.txt"
        assert sess.run("seen:0") == os.path.join(export, "assets", "vocab.txt").encode()


def test_text_format_and_import_scope(tmp_path):
    export = str(tmp_path / "m")
    x, probs = _dense_model()
    b = tf.saved_model.builder.SavedModelBuilder(export)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(probs, {x: _batch()})
        b.add_meta_graph_and_variables(sess, [SERVE])
    b.save(as_text=True)
    assert os.path.exists(os.path.join(export, "saved_model.pbtxt"))
    assert tf.saved_model.loader.maybe_saved_model_directory(export)
    assert not tf.saved_model.loader.maybe_saved_model_directory(str(tmp_path))
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.load(sess, [SERVE], export, import_scope="imported")
        got = sess.run("imported/probs:0", {"imported/x:0": _batch()})
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_missing_saved_model_is_an_error(tmp_path):
    with tf.Session() as sess, pytest.raises(OSError, match="SavedModel file does not exist"):
        tf.saved_model.loader.load(sess, [SERVE], str(tmp_path))


def test_signature_tensor_must_exist(tmp_path):
    x, probs = _dense_model()
    with tf.Graph().as_default():
        other = tf.placeholder(tf.float32, [2], name="elsewhere_only")
        sig = tf.saved_model.signature_def_utils.predict_signature_def({"o": other},
                                                                        {"o": other})
    b = tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises((KeyError, ValueError), match="elsewhere_only"):
            b.add_meta_graph_and_variables(sess, [SERVE], signature_def_map={"s": sig})


def test_signature_def_utils():
    sdu = tf.saved_model.signature_def_utils
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    examples = tf.placeholder(tf.string, [None], name="examples")
    classes = tf.constant(["a", "b"], name="classes")
    scores = tf.nn.softmax(x, name="scores")
    info = tf.saved_model.utils.build_tensor_info(x)
    assert (info.name, info.dtype, [d.size for d in info.tensor_shape.dim]) == \
        ("x:0", tf.float32.as_datatype_enum, [-1, 3])
    sig = sdu.build_signature_def({"in": info}, {"out": info}, "custom/method")
    assert sig.method_name == "custom/method" and not sdu.is_valid_signature(sig)
    c = sdu.classification_signature_def(examples, classes, scores)
    assert set(c.outputs) == {"classes", "scores"} and sdu.is_valid_signature(c)
    assert c.method_name == tf.saved_model.signature_constants.CLASSIFY_METHOD_NAME
    r = sdu.regression_signature_def(examples, scores)
    assert list(r.inputs) == ["inputs"] and list(r.outputs) == ["outputs"]
    assert sdu.is_valid_signature(r)
    p = sdu.predict_signature_def({"x": x}, {"y": scores})
    assert sdu.is_valid_signature(p)
    with pytest.raises(ValueError, match="inputs cannot be None or empty"):
        sdu.predict_signature_def({}, {"y": scores})
    with pytest.raises(ValueError, match="outputs cannot be None or empty"):
        sdu.predict_signature_def({"x": x}, None)
    with pytest.raises(ValueError, match="examples must be a string Tensor"):
        sdu.classification_signature_def(x, classes, scores)
    with pytest.raises(ValueError, match="classes must be a string Tensor"):
        sdu.classification_signature_def(examples, scores, None)
    with pytest.raises(ValueError, match="scores must be a float Tensor"):
        sdu.classification_signature_def(examples, None, classes)
    with pytest.raises(ValueError, match="predictions must be a float Tensor"):
        sdu.regression_signature_def(examples, classes)
    with pytest.raises(ValueError, match="needs a Tensor"):
        tf.saved_model.utils.build_tensor_info(scores.op)


def test_training_graph_with_input_pipeline_exports_its_serving_part(tmp_path):
    """Ops TF lacks (our dataset iterator) and what depends on them are pruned; a
    fed input whose default came from the pipeline becomes a Placeholder."""
    export = str(tmp_path / "m")
    feats = np.random.RandomState(0).rand(16, 4).astype(np.float32)
    fx, fy = tf.data.Dataset.from_tensor_slices((feats, np.arange(16) % 3)).batch(4) \
        .repeat().make_one_shot_iterator().get_next()
    x = tf.placeholder_with_default(fx, [None, 4], name="x")
    w = tf.Variable(np.ones((4, 3), np.float32), name="w")
    logits = tf.matmul(x, w)
    probs = tf.nn.softmax(logits, name="probs")
    loss = tf.losses.sparse_softmax_cross_entropy(fy, tf.nn.dropout(logits, 0.5))
    train = tf.train.AdamOptimizer(0.1).minimize(loss, tf.train.get_or_create_global_step())
    tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        want = sess.run(probs, {x: _batch()})
        tf.saved_model.simple_save(sess, export, {"x": x}, {"probs": probs})
    with tf.Graph().as_default() as g, tf.Session() as sess:
        tf.saved_model.loader.load(sess, [SERVE], export)
        assert g.get_operation_by_name("x").type == "Placeholder"
        assert not [op for op in g.get_operations() if op.type == "OneShotIterator"]
        np.testing.assert_allclose(sess.run("probs:0", {"x:0": _batch()}), want, rtol=1e-6)


def test_main_op_module_and_proto_names(tmp_path):
    v = tf.Variable(3.0, name="v")
    local = tf.Variable(0.0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    op = tf.saved_model.main_op.main_op()
    with tf.Session() as sess:
        sess.run(op)
        assert sess.run([v, local]) == [3.0, 0.0]
    assert tf.train.SaverDef.V2 == 2
    assert isinstance(tf.train.export_meta_graph(), tf.MetaGraphDef)


def test_graph_without_variables_and_bad_files(tmp_path):
    x = tf.placeholder(tf.float32, [None], name="x")
    tf.multiply(x, 2.0, name="y")
    export = str(tmp_path / "novars")
    b = tf.saved_model.builder.SavedModelBuilder(export)
    with tf.Session() as sess:
        b.add_meta_graph_and_variables(sess, [SERVE])
    b.save()
    with tf.Graph().as_default(), tf.Session() as sess:
        mg = tf.saved_model.loader.load(sess, [SERVE], export)
        assert not mg.saver_def.restore_op_name
        assert sess.run("y:0", {"x:0": [1.0, 2.0]}).tolist() == [2.0, 4.0]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "saved_model.pb").write_bytes(b"\xff\xff\xff not a proto")
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(OSError, match="Cannot parse file"):
            tf.saved_model.loader.load(sess, [SERVE], str(tmp_path / "bad"))


def test_main_op_and_legacy_init_op_together_are_refused(tmp_path):
    tf.Variable(1.0, name="v")
    op = tf.no_op(name="noop")
    b = tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(ValueError, match="only one of main_op and legacy_init_op"):
            b.add_meta_graph_and_variables(sess, [SERVE], main_op=op, legacy_init_op=op)
    assert not os.path.exists(tmp_path / "m" / "variables")


def test_later_meta_graph_from_another_graph_shares_the_first_variables(tmp_path):
    export = str(tmp_path / "m")
    b = tf.saved_model.builder.SavedModelBuilder(export)
    for tags, value in ((["foo"], 42.0), (["bar"], 43.0)):
        with tf.Graph().as_default(), tf.Session() as sess:
            v = tf.Variable(value, name="v")
            sess.run(v.initializer)
            if tags == ["foo"]:
                b.add_meta_graph_and_variables(sess, tags)
            else:
                b.add_meta_graph(tags)   # its own graph; the values saved first are kept
    b.save(as_text=True)
    for tags in (["foo"], ["bar"]):
        with tf.Graph().as_default(), tf.Session() as sess:
            tf.saved_model.loader.load(sess, tags, export)
            assert sess.run(tf.global_variables()[0]) == 42.0


def test_sparse_tensor_info_round_trip():
    sp = tf.sparse_placeholder(tf.float32, name="sp")
    info = tf.saved_model.utils.build_tensor_info(sp)
    assert info.WhichOneof("encoding") == "coo_sparse"
    assert info.coo_sparse.values_tensor_name == sp.values.name
    back = tf.saved_model.utils.get_tensor_from_tensor_info(info)
    assert isinstance(back, tf.SparseTensor) and back.indices.name == sp.indices.name


def test_cond_and_while_loop_graphs_round_trip(tmp_path):
    """Function bodies (If/While) are written with TF's output names and read back."""
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    training = tf.placeholder_with_default(False, [], name="training")
    h = tf.cond(training, lambda: x[:, :2] * 0.0, lambda: tf.nn.top_k(x, k=2)[0] * 2.0)
    _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v + 1.0), [0, h])
    probs = tf.nn.softmax(y, name="probs")
    with tf.Session() as sess:
        want = sess.run(probs, {x: _batch()})
        tf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"probs": probs})
    sm = saved_model_pb2.SavedModel.FromString(
        open(tmp_path / "m" / "saved_model.pb", "rb").read())
    refs = [r for f in sm.meta_graphs[0].graph_def.library.function for r in f.ret.values()]
    assert refs and not [r for r in refs if ":output:" in r]   # TF's "node:<arg>:<i>"
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, [SERVE], str(tmp_path / "m"))
        np.testing.assert_allclose(sess.run("probs:0", {"x:0": _batch()}), want, rtol=1e-6)


def test_init_op_recorded_as_a_signature_runs_on_load(tmp_path):
    """TF 2's SavedModel builders name the init op in a "__saved_model_init_op" signature."""
    v = tf.Variable(1.0, name="v")
    local = tf.Variable(0.0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    init = tf.group(tf.assign(local, v + 1.0), name="init_op")
    b = tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))
    key = tf.saved_model.constants.INIT_OP_SIGNATURE_KEY
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sig = tf.saved_model.signature_def_utils.build_signature_def(
            outputs={key: tf.saved_model.utils.build_tensor_info(
                tf.identity(tf.constant(0.0), name="unused"))})
        sig.outputs[key].name = init.name
        b.add_meta_graph_and_variables(sess, [SERVE], signature_def_map={key: sig})
    b.save()
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, [SERVE], str(tmp_path / "m"))
        assert sess.run("local:0") == 2.0
