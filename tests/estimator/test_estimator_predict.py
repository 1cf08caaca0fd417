"""tf.estimator.Estimator.predict (TF 1.x's estimator_test.py predict cases, in our words):
one prediction per example or per batch, predict_keys, hooks, and the warning for input
that never ends."""
import numpy as np
import pytest

import tensorweave as tf
from estimator_helpers import (
    X_TEST, StepCounter, constant_model_fn, make_estimator, train_input_fn)


# ---- predict ----------------------------------------------------------------------------------

def _predict_input():
    return tf.data.Dataset.from_tensor_slices({"x": X_TEST[:5]}).batch(2)


def test_predict_yields_one_dict_per_example(tmp_path):
    est = make_estimator(tmp_path)
    est.train(train_input_fn, max_steps=100)
    preds = list(est.predict(_predict_input))
    assert len(preds) == 5 and set(preds[0]) == {"classes", "probabilities"}
    assert preds[0]["probabilities"].shape == (10,)
    assert preds[0]["classes"] == np.argmax(preds[0]["probabilities"])


def test_predict_keys_and_whole_batches(tmp_path):
    est = make_estimator(tmp_path)
    est.train(train_input_fn, steps=5)
    only = list(est.predict(_predict_input, predict_keys="classes"))
    assert all(set(p) == {"classes"} for p in only)
    batches = list(est.predict(_predict_input, predict_keys=["probabilities"],
                               yield_single_examples=False))
    assert [b["probabilities"].shape for b in batches] == [(2, 10), (2, 10), (1, 10)]
    with pytest.raises(ValueError, match="at least one output"):
        list(est.predict(_predict_input, predict_keys=["nope"]))


def test_predict_a_single_tensor_and_mismatched_batches(tmp_path):
    def model_fn(features, mode):
        tf.train.get_or_create_global_step()
        if mode == "infer" and isinstance(features, dict):
            return tf.estimator.EstimatorSpec(
                mode, predictions={"a": features["x"], "b": tf.constant([1.0])})
        return tf.estimator.EstimatorSpec(mode, predictions=features * 2.0)
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    doubled = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices(
        np.arange(3, dtype=np.float32)).batch(2)))
    assert doubled == [0.0, 2.0, 4.0]
    with pytest.raises(ValueError, match="Batch length of predictions should be same"):
        list(est.predict(_predict_input))
    with pytest.raises(ValueError, match="predict_keys argument is not valid"):
        list(est.predict(lambda: tf.data.Dataset.from_tensor_slices(
            np.arange(3, dtype=np.float32)).batch(2), predict_keys=["x"]))


def test_predict_hooks_run_once_per_batch(tmp_path):
    est = tf.estimator.Estimator(constant_model_fn, model_dir=str(tmp_path))
    est.train(train_input_fn, steps=1)
    counter = StepCounter()
    results = est.predict(lambda: {"x": tf.constant([[0.0]])}, hooks=[counter])
    assert counter.steps == 0  # a generator: nothing runs before the first next()
    assert next(results) == [10.0] and counter.steps == 1
    assert next(results) == [12.0] and counter.steps == 1  # the same batch
    next(results)
    assert counter.steps == 2
    with pytest.raises(TypeError, match="SessionRunHook"):
        next(est.predict(_predict_input, hooks=["NotAHook"]))


def test_predict_warns_when_its_input_never_ends(tmp_path, caplog):
    est = tf.estimator.Estimator(constant_model_fn, model_dir=str(tmp_path))
    est.train(train_input_fn, steps=1)
    with caplog.at_level("WARNING", logger="tensorweave"):
        next(est.predict(lambda: {"x": tf.constant([[0.0]])}))
    assert "predict yields forever" in caplog.text
    caplog.clear()
    linear = make_estimator(tmp_path / "linear")
    linear.train(train_input_fn, steps=1)
    with caplog.at_level("WARNING", logger="tensorweave"):
        assert len(list(linear.predict(_predict_input))) == 5
    assert "predict yields forever" not in caplog.text
