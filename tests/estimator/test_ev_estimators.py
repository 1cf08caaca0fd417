"""The canned estimators over DeepRec's EmbeddingVariable columns: LinearClassifier
(categorical_column_with_embedding in the linear part), DNNClassifier (embedding_column
over it), DNNLinearCombinedClassifier (both). Each trains, evaluates, predicts, writes
DeepRec's `-keys`/`-values`/`-freqs`/`-versions` layout to model_dir, and restores it
(a new estimator on the same model_dir predicts the same); a fresh model warm-starts
from one; input_layer_partitioner splits a column without partition_num (DeepRec
takes the scope's partitioner), and a model restores onto another number of parts.
Our own tests, on a tiny click log whose label is a function of the user id.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

fc = tf.feature_column
RNG = np.random.RandomState(0)
USERS = RNG.randint(0, 10**12, size=[20]).astype(np.int64)   # ids of no vocabulary
U = USERS[RNG.randint(0, 20, size=[64, 2])]
X = RNG.randn(64, 1).astype(np.float32)
Y = (U[:, 0] % 2).astype(np.int64)


def input_fn(epochs=None):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices(({"user": U, "x": X}, Y))
        return (ds.repeat() if epochs is None else ds).batch(16)
    return fn


def _config():
    return tf.estimator.RunConfig(tf_random_seed=1, save_checkpoints_steps=1000,
                                  log_step_count_steps=None)


def _user(partition_num=2):
    return fc.categorical_column_with_embedding("user", dtype=tf.int64,
                                                partition_num=partition_num)


def _make(kind, model_dir, user=None, **kw):
    user = user or _user()
    deep = [fc.embedding_column(user, 4), fc.numeric_column("x")]
    if kind == "linear":
        return tf.estimator.LinearClassifier(
            [user, fc.numeric_column("x")], model_dir=model_dir, config=_config(),
            optimizer=kw.pop("linear_optimizer", tf.train.FtrlOptimizer(0.3)), **kw)
    if kind == "dnn":
        return tf.estimator.DNNClassifier(
            [8], deep, model_dir=model_dir, config=_config(),
            optimizer=kw.pop("dnn_optimizer", tf.train.AdagradOptimizer(0.3)), **kw)
    kw.setdefault("linear_optimizer", tf.train.FtrlOptimizer(0.3))
    kw.setdefault("dnn_optimizer", tf.train.AdagradOptimizer(0.3))
    return tf.estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir, linear_feature_columns=[user], dnn_feature_columns=deep,
        dnn_hidden_units=[8], config=_config(), **kw)


EV_NAMES = {"linear": ["linear/linear_model/user/weights"],
            "dnn": ["dnn/input_from_feature_columns/input_layer/user_embedding/"
                    "embedding_weights"]}
EV_NAMES["combined"] = EV_NAMES["linear"] + EV_NAMES["dnn"]
SLOT = {"linear/": "Ftrl", "dnn/": "Adagrad"}


def _logits(est):
    return np.array([p["logits"] for p in est.predict(input_fn(1))])


@pytest.mark.parametrize("kind", ["linear", "dnn", "combined"])
def test_trains_evaluates_predicts_and_restores(kind, tmp_path):
    est = _make(kind, str(tmp_path))
    est.train(input_fn(), steps=30)
    metrics = est.evaluate(input_fn(1))
    assert metrics["global_step"] == 30 and metrics["accuracy"] > 0.8
    predicted = list(est.predict(input_fn(1)))
    assert len(predicted) == 64 and {"logits", "probabilities", "class_ids"} <= \
        set(predicted[0])
    names = set(est.get_variable_names())
    for ev in EV_NAMES[kind]:
        slot = SLOT[ev[:ev.index("/") + 1]]
        for part in ("part_0", "part_1"):
            assert {f"{ev}/{part}-{what}" for what in ("keys", "values", "freqs",
                                                       "versions")} <= names
            assert f"{ev}/{part}/{slot}-values" in names
        keys = np.concatenate([est.get_variable_value(f"{ev}/part_{i}-keys")
                               for i in (0, 1)])
        assert sorted(keys.tolist()) == sorted(set(U.reshape(-1).tolist()))
        assert all(k % 2 == 0 for k in est.get_variable_value(f"{ev}/part_0-keys"))
    # A new estimator (fresh graph and session) on model_dir restores the tables.
    np.testing.assert_array_equal(_logits(_make(kind, str(tmp_path))),
                                  np.array([p["logits"] for p in predicted]))


def test_warm_starts_a_fresh_model(tmp_path):
    first = _make("combined", str(tmp_path / "a"))
    first.train(input_fn(), steps=10)
    # Learning rates of 0: after a step the warm-started values are still the saved ones.
    frozen = {"linear_optimizer": tf.train.GradientDescentOptimizer(0.0),
              "dnn_optimizer": tf.train.GradientDescentOptimizer(0.0)}
    second = _make("combined", str(tmp_path / "b"), warm_start_from=str(tmp_path / "a"),
                   **frozen)
    second.train(input_fn(), steps=1)
    for ev in EV_NAMES["combined"]:
        for part in ("part_0", "part_1"):
            rows = [dict(zip(est.get_variable_value(f"{ev}/{part}-keys").tolist(),
                             est.get_variable_value(f"{ev}/{part}-values").tolist()))
                    for est in (first, second)]
            assert rows[0] == rows[1] and rows[0]
    np.testing.assert_allclose(_logits(second), _logits(first), rtol=1e-6)
    renamed = tf.estimator.WarmStartSettings(
        str(tmp_path / "a"), var_name_to_prev_var_name={EV_NAMES["linear"][0]: "other"})
    with pytest.raises(ValueError, match="rename the variable in the model"):
        _make("combined", str(tmp_path / "c"), warm_start_from=renamed).train(
            input_fn(), steps=1)


def test_input_layer_partitioner_splits_tables_and_restores_onto_other_parts(tmp_path):
    user = _user(partition_num=None)
    est = _make("dnn", str(tmp_path), user=user,
                input_layer_partitioner=tf.fixed_size_partitioner(2))
    est.train(input_fn(), steps=10)
    ev = EV_NAMES["dnn"][0]
    assert {f"{ev}/part_0-keys", f"{ev}/part_1-keys"} <= set(est.get_variable_names())
    again = _make("dnn", str(tmp_path), user=user,
                  input_layer_partitioner=tf.fixed_size_partitioner(3))
    np.testing.assert_allclose(_logits(again), _logits(est), rtol=1e-6)
