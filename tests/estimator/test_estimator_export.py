"""Estimator.export_savedmodel / export_saved_model and the Exporters (TF 1.x's
estimator_test.py export cases and exporter_test.py, in our words): a SavedModel of the
PREDICT graph with the checkpoint's variables that tf.saved_model.loader serves."""
import os

import numpy as np
import pytest

import tensorweave as tf
from estimator_helpers import X_TEST, make_estimator, train_input_fn

export = tf.estimator.export


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    est = make_estimator(tmp_path_factory.mktemp("model"))
    est.train(train_input_fn, max_steps=60)
    return est


def _receiver_fn():
    return export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 64])})


def _serve(path, inputs, signature="serving_default"):
    with tf.Graph().as_default(), tf.Session() as sess:
        meta_graph = tf.saved_model.loader.load(sess, ["serve"], os.fsdecode(path))
        sig = meta_graph.signature_def[signature]
        feed = {sig.inputs[k].name: v for k, v in inputs.items()}
        return sess.run({k: v.name for k, v in sig.outputs.items()}, feed), meta_graph


def test_export_serves_the_same_predictions_as_predict(trained, tmp_path):
    path = trained.export_savedmodel(str(tmp_path), _receiver_fn(), strip_default_attrs=True)
    assert isinstance(path, bytes) and os.path.dirname(path) == os.fsencode(tmp_path)
    assert os.path.basename(path).isdigit()  # a timestamped directory
    assert os.path.exists(os.path.join(path, b"saved_model.pb"))
    assert os.listdir(os.path.join(path, b"variables"))
    served, meta_graph = _serve(path, {"x": X_TEST[:7]})
    sig = meta_graph.signature_def["serving_default"]
    assert sig.method_name == "tensorflow/serving/predict"
    assert set(sig.outputs) == {"classes", "probabilities"} and set(sig.inputs) == {"x"}
    predicted = list(trained.predict(
        lambda: tf.data.Dataset.from_tensor_slices({"x": X_TEST[:7]}).batch(7)))
    np.testing.assert_array_equal(served["classes"], [p["classes"] for p in predicted])
    np.testing.assert_allclose(served["probabilities"],
                               [p["probabilities"] for p in predicted], rtol=1e-6)


def test_export_saved_model_as_text_with_extra_assets(trained, tmp_path):
    extra = tmp_path / "vocab.txt"
    extra.write_text("a\nb\n")
    path = trained.export_saved_model(str(tmp_path / "out"), _receiver_fn(), as_text=True,
                                      assets_extra={"some/vocab.txt": str(extra)})
    assert os.path.exists(os.path.join(path, b"saved_model.pbtxt"))
    with open(os.path.join(path, b"assets.extra", b"some", b"vocab.txt")) as f:
        assert f.read() == "a\nb\n"
    assert not [d for d in os.listdir(tmp_path / "out") if d.startswith("temp-")]


def test_export_of_an_older_checkpoint(trained, tmp_path):
    old = os.path.join(trained.model_dir, "model.ckpt-50")
    path = trained.export_savedmodel(str(tmp_path), _receiver_fn(), checkpoint_path=old)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, ["serve"], os.fsdecode(path))
        w = sess.run(tf.get_default_graph().get_tensor_by_name("w:0"))
    np.testing.assert_array_equal(w, tf.train.load_variable(old, "w"))
    assert not np.array_equal(w, trained.get_variable_value("w"))


def test_export_needs_a_receiver_fn_and_a_checkpoint(trained, tmp_path):
    with pytest.raises(ValueError, match="input_receiver_fn must be defined"):
        trained.export_savedmodel(str(tmp_path), None)
    with pytest.raises(ValueError, match="Couldn't find trained model"):
        make_estimator(tmp_path / "empty").export_savedmodel(str(tmp_path), _receiver_fn())
    with pytest.raises(TypeError, match="must return a ServingInputReceiver"):
        trained.export_savedmodel(str(tmp_path), lambda: {"x": 1})


def _multi_head_model_fn(features, labels, mode):
    """PREDICT with a classify head, a regress head and a predict head (the default)."""
    tf.train.get_or_create_global_step()
    w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
    x = features["x"]
    scores = tf.nn.softmax(x * w)
    value = tf.reduce_sum(x * w, axis=1)
    return tf.estimator.EstimatorSpec(mode, predictions={"value": value}, export_outputs={
        "serving_default": export.PredictOutput({"value": value}),
        "classify": export.ClassificationOutput(scores=scores),
        "regress": export.RegressionOutput(value=value)})


def test_heads_that_do_not_suit_the_raw_receiver_are_left_out(tmp_path):
    est = tf.estimator.Estimator(_multi_head_model_fn, model_dir=str(tmp_path / "m"))
    # The model_fn has no TRAIN mode: write its checkpoint directly.
    (tmp_path / "m").mkdir()
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        tf.get_variable("w", [2], initializer=tf.constant_initializer([2.0, 3.0]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, str(tmp_path / "m" / "model.ckpt"), global_step=0)
    fn = export.build_raw_serving_input_receiver_fn({"x": tf.placeholder(tf.float32, [None, 2])})
    path = est.export_savedmodel(str(tmp_path / "exp"), fn)
    served, meta_graph = _serve(path, {"x": np.array([[1.0, 1.0]], np.float32)})
    # classify/regress need one string input (serialized examples): left out, as TF does
    assert sorted(meta_graph.signature_def) == ["serving_default"]
    np.testing.assert_allclose(served["value"], [5.0])


def test_latest_exporter_keeps_the_newest(trained, tmp_path):
    exporter = tf.estimator.LatestExporter("digits", _receiver_fn(), exports_to_keep=2)
    ckpt = trained.latest_checkpoint()
    # (export directories are named by the second: the later exports wait for a new one)
    paths = [exporter.export(trained, str(tmp_path), ckpt, {}, False) for _ in range(3)]
    kept = sorted(os.listdir(tmp_path))
    assert kept == sorted(os.fsdecode(os.path.basename(p)) for p in paths[1:])
    with pytest.raises(ValueError, match="exports_to_keep.*positive"):
        tf.estimator.LatestExporter("d", _receiver_fn(), exports_to_keep=0)


def test_final_exporter_exports_only_the_final_evaluation(trained, tmp_path):
    exporter = tf.estimator.FinalExporter("digits", _receiver_fn())
    ckpt = trained.latest_checkpoint()
    assert exporter.export(trained, str(tmp_path), ckpt, {}, False) is None
    assert not os.path.exists(tmp_path / "1") and not os.listdir(tmp_path)
    path = exporter.export(trained, str(tmp_path), ckpt, {}, True)
    assert os.path.exists(os.path.join(path, b"saved_model.pb"))
    assert exporter.name == "digits"
    with pytest.raises(ValueError, match="non-empty name"):
        tf.estimator.FinalExporter("", _receiver_fn())


def test_tensor_serving_input_receiver_hands_the_model_fn_a_tensor(tmp_path):
    def model_fn(features, labels, mode):
        step = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(3.0))
        if mode == "infer":
            assert isinstance(features, tf.Tensor)  # not wrapped in a dict
            return tf.estimator.EstimatorSpec(mode, predictions={"y": features * w})
        return tf.estimator.EstimatorSpec(mode, loss=tf.reduce_sum(features * w),
                                          train_op=tf.assign_add(step, 1))
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "m"))
    est.train(lambda: tf.data.Dataset.from_tensor_slices(np.ones(2, np.float32)), steps=1)

    def receiver_fn():
        x = tf.placeholder(tf.float32, [None], name="x")
        return export.TensorServingInputReceiver(x, {"x": x})
    served, _ = _serve(est.export_savedmodel(str(tmp_path / "exp"), receiver_fn),
                       {"x": np.array([1.0, 2.0], np.float32)})
    np.testing.assert_allclose(served["y"], [3.0, 6.0])
    with pytest.raises(ValueError, match="features must be a Tensor"):
        with tf.Graph().as_default():
            export.TensorServingInputReceiver({"x": tf.constant(1.0)}, tf.constant(1.0))


def test_receiver_alternatives_add_signatures_named_receiver_colon_output(trained, tmp_path):
    def receiver_fn():
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        doubled = tf.placeholder(tf.float32, [None, 64], name="doubled")
        return export.ServingInputReceiver({"x": x}, {"x": x},
                                           receiver_tensors_alternatives={"alt": {"d": doubled}})
    path = trained.export_savedmodel(str(tmp_path), receiver_fn)
    _, meta_graph = _serve(path, {"x": X_TEST[:1]})
    assert sorted(meta_graph.signature_def) == ["alt:serving_default", "serving_default"]
    assert set(meta_graph.signature_def["alt:serving_default"].inputs) == {"d"}


def test_latest_exporter_without_a_limit_keeps_every_export(trained, tmp_path):
    exporter = tf.estimator.LatestExporter("digits", _receiver_fn(), exports_to_keep=None)
    ckpt = trained.latest_checkpoint()
    paths = [exporter.export(trained, str(tmp_path), ckpt, {}, False) for _ in range(2)]
    assert sorted(os.listdir(tmp_path)) == sorted(os.fsdecode(os.path.basename(p))
                                                  for p in paths)


def test_best_exporter_exports_only_improvements(trained, tmp_path):
    exporter = tf.estimator.BestExporter(serving_input_receiver_fn=_receiver_fn(),
                                         event_file_pattern=None, exports_to_keep=None)
    ckpt = trained.latest_checkpoint()
    assert exporter.name == "best_exporter"
    first = exporter.export(trained, str(tmp_path), ckpt, {"loss": 0.5, "global_step": 1}, False)
    assert first is not None
    assert exporter.export(trained, str(tmp_path), ckpt, {"loss": 0.7, "global_step": 2},
                           False) is None
    better = exporter.export(trained, str(tmp_path), ckpt, {"loss": 0.4, "global_step": 3},
                             False)
    assert better is not None and len(os.listdir(tmp_path)) == 2


def test_best_exporter_remembers_earlier_evaluations_from_the_event_files(tmp_path):
    est = make_estimator(tmp_path / "m")
    est.train(train_input_fn, max_steps=30)
    first = est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(
        ({"x": X_TEST[:50]}, np.zeros(50, np.int32))).batch(50))  # written to model_dir/eval
    exporter = tf.estimator.BestExporter(serving_input_receiver_fn=_receiver_fn())
    worse = {"loss": float(first["loss"]) + 1.0, "global_step": 31}
    assert exporter.export(est, str(tmp_path / "e"), est.latest_checkpoint(), worse,
                           False) is None
    better = {"loss": float(first["loss"]) - 0.01, "global_step": 32}
    assert exporter.export(est, str(tmp_path / "e"), est.latest_checkpoint(), better,
                           False) is not None


def test_best_exporter_checks_compare_fn():
    with pytest.raises(ValueError, match="`compare_fn` must not be None"):
        tf.estimator.BestExporter(serving_input_receiver_fn=_receiver_fn(), compare_fn=None)
    with pytest.raises(ValueError, match="best_eval_result and current_eval_result"):
        tf.estimator.BestExporter(serving_input_receiver_fn=_receiver_fn(),
                                  compare_fn=lambda a, b: True)
    with pytest.raises(ValueError, match="no loss is found"):
        exporter = tf.estimator.BestExporter(serving_input_receiver_fn=_receiver_fn(),
                                             event_file_pattern=None)
        exporter._compare_fn(best_eval_result={"acc": 1}, current_eval_result={"loss": 1})
