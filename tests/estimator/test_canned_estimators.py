"""The canned estimators (tensorweave.estimator.canned), checked as TF 1.x's
head_test, linear_testing_utils, dnn_testing_utils and dnn_linear_combined_test
check theirs (in our words, on tiny data): loss falls, TF's metric and prediction
keys, TF's variable names, label_vocabulary, weight_column, multi-class, export
and serving, wide & deep on sparse and dense columns, ps placement, and errors."""
import json
import os
import re

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.estimator import canned
from tensorweave.estimator import run_setup
from tensorweave.estimator.canned import head as head_lib
from tensorweave.estimator.canned.optimizers import get_optimizer_instance

fc = tf.feature_column
RNG = np.random.RandomState(0)
X = RNG.randn(64, 2).astype(np.float32)
Y_BIN = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
Y_MULTI = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5]).astype(np.int64)  # 0, 1, 2
Y_REG = (2.0 * X[:, 0] - X[:, 1] + 0.5).astype(np.float32)
X_COL = fc.numeric_column("x", shape=[2])

BINARY_METRICS = {"accuracy", "average_loss", "loss", "auc", "auc_precision_recall",
                  "precision", "recall", "prediction/mean", "label/mean",
                  "accuracy_baseline", "global_step"}
BINARY_PREDICTIONS = {"logits", "logistic", "probabilities", "class_ids", "classes",
                      "all_class_ids", "all_classes"}


def input_fn(features, labels=None, epochs=None, batch=16):
    def fn():
        data = features if labels is None else (features, labels)
        ds = tf.data.Dataset.from_tensor_slices(data)
        if epochs is None:
            ds = ds.shuffle(64, seed=1).repeat()
        return ds.batch(batch)
    return fn


def train_eval(est, features, labels, steps=30):
    """(loss before training, loss after, the metrics after)."""
    before = est.evaluate(input_fn(features, labels, epochs=1))["loss"]
    est.train(input_fn(features, labels), steps=steps)
    after = est.evaluate(input_fn(features, labels, epochs=1))
    return before, after["loss"], after


def config():
    return tf.estimator.RunConfig(tf_random_seed=1, save_checkpoints_steps=1000,
                                  log_step_count_steps=None)


# ---- heads ---------------------------------------------------------------------------
def _run(fetches):
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer(),
                  tf.tables_initializer()])
        return sess.run(fetches)


def test_binary_head_loss_is_the_weighted_sum_of_sigmoid_xent():
    with tf.Graph().as_default():
        head = head_lib.BinaryLogisticHead(weight_column="w")
        logits = np.array([[1.0], [-2.0], [0.5]], np.float32)
        labels = np.array([[1], [0], [0]], np.int64)
        w = np.array([1.0, 2.0, 0.5], np.float32)
        spec = head.create_loss({"w": tf.constant(w)}, tf.estimator.ModeKeys.TRAIN,
                                tf.constant(logits), tf.constant(labels))
        xent = np.log1p(np.exp(-logits)) + (1 - labels) * logits  # sigmoid xent
        np.testing.assert_allclose(_run(spec.training_loss), np.sum(w[:, None] * xent),
                                   rtol=1e-5)


def test_multi_class_head_predictions_and_signatures():
    with tf.Graph().as_default():
        head = head_lib.MultiClassHead(3, label_vocabulary=["a", "b", "c"])
        logits = tf.constant([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]])
        spec = head.create_estimator_spec(features={}, mode=tf.estimator.ModeKeys.PREDICT,
                                          logits=logits)
        assert set(spec.export_outputs) == {"serving_default", "classification", "predict"}
        out = _run(spec.predictions)
        np.testing.assert_array_equal(out["class_ids"], [[1], [0]])
        np.testing.assert_array_equal(out["classes"], [[b"b"], [b"a"]])
        np.testing.assert_array_equal(out["all_classes"][0], [b"a", b"b", b"c"])
        np.testing.assert_allclose(out["probabilities"].sum(1), [1.0, 1.0], rtol=1e-6)


def test_regression_head_eval_metrics():
    with tf.Graph().as_default():
        head = head_lib.regression_head()
        spec = head.create_estimator_spec(
            features={}, mode=tf.estimator.ModeKeys.EVAL,
            logits=tf.constant([[1.0], [3.0]]), labels=tf.constant([[2.0], [3.0]]))
        assert set(spec.eval_metric_ops) == {"average_loss", "label/mean", "prediction/mean"}
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            sess.run([u for _, u in spec.eval_metric_ops.values()])
            got = sess.run({k: v for k, (v, _) in spec.eval_metric_ops.items()})
            assert sess.run(spec.loss) == pytest.approx(1.0)  # SUM of squared errors
        assert got == pytest.approx({"average_loss": 0.5, "label/mean": 2.5,
                                     "prediction/mean": 2.0})


def test_optimizer_forms():
    with tf.Graph().as_default():
        assert isinstance(get_optimizer_instance("Adagrad", 0.05), tf.train.AdagradOptimizer)
        assert isinstance(get_optimizer_instance(tf.train.FtrlOptimizer, 0.1),
                          tf.train.FtrlOptimizer)
        opt = tf.train.AdamOptimizer(0.01)
        assert get_optimizer_instance(opt) is opt
        assert get_optimizer_instance(lambda: opt) is opt
        with pytest.raises(ValueError, match="Unsupported optimizer name: 'Nope'"):
            get_optimizer_instance("Nope", 0.1)
        with pytest.raises(ValueError, match="not an Optimizer instance"):
            get_optimizer_instance(lambda: 3)


# ---- linear --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def linear_binary(tmp_path_factory):
    est = canned.LinearClassifier([X_COL], model_dir=str(tmp_path_factory.mktemp("lin")),
                                  config=config())
    return est, train_eval(est, {"x": X}, Y_BIN)


def test_linear_classifier_trains_and_reports_tf_keys(linear_binary):
    est, (before, after, metrics) = linear_binary
    assert after < 0.7 * before
    assert set(metrics) == BINARY_METRICS
    assert metrics["accuracy"] > 0.85 and metrics["auc"] > 0.9
    assert metrics["label/mean"] == pytest.approx(Y_BIN.mean())
    preds = list(est.predict(input_fn({"x": X[:5]}, epochs=1)))
    assert len(preds) == 5 and set(preds[0]) == BINARY_PREDICTIONS
    assert preds[0]["classes"][0] == str(preds[0]["class_ids"][0]).encode()
    names = set(est.get_variable_names())
    assert {"linear/linear_model/x/weights", "linear/linear_model/bias_weights",
            "global_step"} <= names


def test_linear_classifier_exports_a_classification_signature(linear_binary, tmp_path):
    est, _ = linear_binary
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        fc.make_parse_example_spec([X_COL]))
    path = os.fsdecode(est.export_savedmodel(str(tmp_path), receiver))
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=list(map(float, row))))
    })).SerializeToString() for row in X[:4]]
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING], path)
        assert {"serving_default", "classification", "regression", "predict"} <= set(
            meta.signature_def)
        sig = meta.signature_def["serving_default"]
        assert sig.method_name == "tensorflow/serving/classify"
        assert set(sig.outputs) == {"classes", "scores"}
        out = sess.run({k: v.name for k, v in sig.outputs.items()},
                       {sig.inputs["inputs"].name: examples})
    expected = [p["probabilities"] for p in est.predict(input_fn({"x": X[:4]}, epochs=1))]
    np.testing.assert_allclose(out["scores"], expected, rtol=1e-5)
    np.testing.assert_array_equal(out["classes"], [[b"0", b"1"]] * 4)


def test_linear_regressor_with_weight_column(tmp_path):
    w = np.where(np.arange(64) % 2 == 0, 1.0, 0.0).astype(np.float32)
    est = canned.LinearRegressor([X_COL], model_dir=str(tmp_path), weight_column="w",
                                 optimizer=tf.train.GradientDescentOptimizer(0.02),
                                 config=config())
    before, after, metrics = train_eval(est, {"x": X, "w": w}, Y_REG, steps=40)
    assert after < 0.3 * before
    assert set(metrics) == {"average_loss", "loss", "label/mean", "prediction/mean",
                            "global_step"}
    # label/mean is weighted: only the even examples count.
    assert metrics["label/mean"] == pytest.approx(Y_REG[::2].mean(), rel=1e-5)
    pred = next(est.predict(input_fn({"x": X[:1]}, epochs=1)))
    assert set(pred) == {"predictions"} and pred["predictions"].shape == (1,)


def test_linear_classifier_string_labels_with_vocabulary(tmp_path):
    labels = np.array([b"no", b"yes"])[Y_BIN]
    est = canned.LinearClassifier([X_COL], model_dir=str(tmp_path), config=config(),
                                  label_vocabulary=["no", "yes"],
                                  optimizer=lambda: tf.train.FtrlOptimizer(0.3))
    before, after, metrics = train_eval(est, {"x": X}, labels)
    assert after < before and metrics["accuracy"] > 0.85
    classes = [p["classes"][0] for p in est.predict(input_fn({"x": X[:8]}, epochs=1))]
    assert set(classes) <= {b"no", b"yes"}
    assert np.mean(np.array(classes) == labels[:8]) >= 0.75


# ---- dnn -----------------------------------------------------------------------------
def test_dnn_classifier_multi_class(tmp_path):
    est = canned.DNNClassifier([8, 4], [X_COL], model_dir=str(tmp_path), n_classes=3,
                               optimizer=tf.train.AdamOptimizer(0.05), config=config())
    before, after, metrics = train_eval(est, {"x": X}, Y_MULTI, steps=40)
    assert after < 0.7 * before
    assert set(metrics) == {"accuracy", "average_loss", "loss", "global_step"}
    pred = next(est.predict(input_fn({"x": X[:1]}, epochs=1)))
    assert set(pred) == {"logits", "probabilities", "class_ids", "classes",
                         "all_class_ids", "all_classes"}
    assert pred["probabilities"].shape == (3,)
    names = set(est.get_variable_names())
    assert {"dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_1/kernel",
            "dnn/logits/kernel", "dnn/logits/bias"} <= names
    assert est.get_variable_value("dnn/hiddenlayer_0/kernel").shape == (2, 8)


def test_dnn_classifier_warm_starts_from_another_model_dir(tmp_path):
    first = canned.DNNClassifier([4], [X_COL], model_dir=str(tmp_path / "a"), config=config())
    first.train(input_fn({"x": X}, Y_BIN), steps=5)
    # A learning rate of 0 keeps the warm-started values through one step.
    second = canned.DNNClassifier([4], [X_COL], model_dir=str(tmp_path / "b"),
                                  optimizer=tf.train.GradientDescentOptimizer(0.0),
                                  warm_start_from=first.model_dir, config=config())
    second.train(input_fn({"x": X}, Y_BIN), steps=1)
    for name in ("dnn/hiddenlayer_0/kernel", "dnn/logits/bias"):
        np.testing.assert_array_equal(second.get_variable_value(name),
                                      first.get_variable_value(name))


def test_dnn_regressor_with_string_optimizer_and_batch_norm(tmp_path):
    est = canned.DNNRegressor([8], [X_COL], model_dir=str(tmp_path), optimizer="Adagrad",
                              batch_norm=True, dropout=0.1, config=config())
    before, after, _ = train_eval(est, {"x": X}, Y_REG, steps=40)
    assert after < before
    assert "dnn/hiddenlayer_0/batchnorm_0/moving_mean" in est.get_variable_names()


def test_dnn_classifier_vocabulary_multi_class(tmp_path):
    labels = np.array([b"lo", b"mid", b"hi"])[Y_MULTI]
    est = canned.DNNClassifier([8], [X_COL], model_dir=str(tmp_path), n_classes=3,
                               label_vocabulary=["lo", "mid", "hi"], config=config(),
                               optimizer=tf.train.AdamOptimizer(0.05))
    est.train(input_fn({"x": X}, labels), steps=30)
    assert est.evaluate(input_fn({"x": X}, labels, epochs=1))["accuracy"] > 0.6
    pred = next(est.predict(input_fn({"x": X[:1]}, epochs=1)))
    assert pred["classes"][0] in (b"lo", b"mid", b"hi")


# ---- wide & deep ---------------------------------------------------------------------
CITIES = np.array([b"paris", b"rome", b"oslo", b"lima"])


def _wide_deep_data():
    city_ids = RNG.randint(0, 4, 64)
    age = RNG.uniform(0, 1, (64, 1)).astype(np.float32)
    label = ((city_ids % 2 == 0) ^ (age[:, 0] > 0.5)).astype(np.int64)
    return {"city": CITIES[city_ids], "age": age}, label


def test_dnn_linear_combined_classifier_sparse_and_dense(tmp_path):
    city = fc.categorical_column_with_hash_bucket("city", 20)
    age = fc.numeric_column("age")
    est = canned.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path), config=config(),
        linear_feature_columns=[city, fc.bucketized_column(age, [0.5])],
        linear_optimizer=tf.train.FtrlOptimizer(0.5),
        dnn_feature_columns=[fc.embedding_column(city, 3), age],
        dnn_optimizer=tf.train.AdagradOptimizer(0.3), dnn_hidden_units=[8])
    features, labels = _wide_deep_data()
    before, after, metrics = train_eval(est, features, labels, steps=40)
    assert after < 0.8 * before
    assert set(metrics) == BINARY_METRICS and metrics["global_step"] == 40
    names = set(est.get_variable_names())
    assert {"linear/linear_model/city/weights", "linear/linear_model/age_bucketized/weights",
            "linear/linear_model/bias_weights", "dnn/hiddenlayer_0/kernel",
            "dnn/logits/bias",
            "dnn/input_from_feature_columns/input_layer/city_embedding/embedding_weights"
            } <= names
    pred = next(est.predict(input_fn(features, epochs=1)))
    assert set(pred) == BINARY_PREDICTIONS


def test_dnn_linear_combined_regressor_linear_only(tmp_path):
    est = canned.DNNLinearCombinedRegressor(model_dir=str(tmp_path), config=config(),
                                            linear_feature_columns=[X_COL],
                                            linear_optimizer="SGD")
    before, after, _ = train_eval(est, {"x": X}, Y_REG, steps=30)
    assert after < before
    assert not [n for n in est.get_variable_names() if n.startswith("dnn/")]


def test_variables_go_to_the_ps_and_partition(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["localhost:2220"], "ps": ["localhost:2221", "localhost:2222"]},
        "task": {"type": "chief", "index": 0}}))
    cfg = tf.estimator.RunConfig()
    assert cfg.num_ps_replicas == 2
    city = fc.categorical_column_with_hash_bucket("city", 100)
    est = canned.DNNLinearCombinedClassifier(
        config=cfg, linear_feature_columns=[city],
        dnn_feature_columns=[fc.embedding_column(city, 4)], dnn_hidden_units=[4],
        input_layer_partitioner=tf.fixed_size_partitioner(2))
    with tf.Graph().as_default(), tf.device(run_setup.device_fn(est.config)):
        tf.train.get_or_create_global_step()
        features = {"city": tf.constant([[b"rome"], [b"oslo"]])}
        est.model_fn(features, tf.constant([[1], [0]]), tf.estimator.ModeKeys.TRAIN,
                     est.config)
        variables = {v.op.name: v.device for v in tf.global_variables()}
    parts = [n for n in variables if re.fullmatch(r"linear/linear_model/city/weights/part_\d", n)]
    emb = [n for n in variables if re.search(r"city_embedding/embedding_weights/part_\d$", n)]
    assert len(parts) == 2 and len(emb) == 2
    assert all(d.startswith("/job:ps/") for d in variables.values())
    assert {variables[n] for n in parts} == {"/job:ps/task:0", "/job:ps/task:1"}


# ---- errors --------------------------------------------------------------------------
def test_constructor_errors():
    with pytest.raises(ValueError, match="n_classes=1"):
        canned.LinearClassifier([X_COL], n_classes=1)
    with pytest.raises(ValueError, match="feature_columns must not be empty"):
        canned.LinearClassifier([])
    with pytest.raises(ValueError, match="hidden_units .* got None"):
        canned.DNNClassifier(None, [X_COL])
    with pytest.raises(ValueError, match="Either linear_feature_columns or dnn_feature"):
        canned.DNNLinearCombinedClassifier()
    with pytest.raises(ValueError, match="dnn_hidden_units must be defined"):
        canned.DNNLinearCombinedClassifier(dnn_feature_columns=[X_COL])
    with pytest.raises(ValueError, match="Invalid loss_reduction"):
        canned.DNNRegressor([2], [X_COL], loss_reduction=tf.losses.Reduction.NONE)


def test_string_labels_without_vocabulary_fail_clearly(tmp_path):
    est = canned.LinearClassifier([X_COL], model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="no label_vocabulary"):
        est.train(input_fn({"x": X}, np.array([b"a", b"b"])[Y_BIN]), steps=1)


def test_label_out_of_range_fails_at_run_time(tmp_path):
    est = canned.DNNClassifier([2], [X_COL], model_dir=str(tmp_path), n_classes=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must <= n_classes - 1"):
        est.train(input_fn({"x": X}, Y_MULTI + 1), steps=2)
