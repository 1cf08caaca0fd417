"""tf.estimator.Estimator: construction, train, evaluate and checkpoints (the behaviour
TF 1.x's estimator_test.py checks, in our words; predict is in test_estimator_predict.py),
with a model_fn built from plain ops (tests/estimator_helpers.py)."""
import os

import numpy as np
import pytest

import tensorweave as tf
from estimator_helpers import (
    X_TEST, StepCounter, constant_model_fn, eval_input_fn, linear_model_fn, make_estimator,
    tensor_input_fn, train_input_fn)


# ---- construction -----------------------------------------------------------------------

def test_model_fn_signature_checks():
    with pytest.raises(ValueError, match="must include features"):
        tf.estimator.Estimator(lambda labels, mode: None)
    with pytest.raises(ValueError, match="does not include params.*params"):
        tf.estimator.Estimator(lambda features, labels, mode: None, params={"a": 1})
    with pytest.raises(ValueError, match=r"not expected args: \['extra'\]"):
        tf.estimator.Estimator(lambda features, extra: None)
    with pytest.raises(ValueError, match="model_fn must be provided"):
        tf.estimator.Estimator(None)


def test_model_dir_from_config_or_argument_or_a_temporary_one(tmp_path):
    a = tf.estimator.Estimator(linear_model_fn, config=tf.estimator.RunConfig(
        model_dir=str(tmp_path / "a")), params={})
    assert a.model_dir == str(tmp_path / "a") and a.config.model_dir == a.model_dir
    b = tf.estimator.Estimator(linear_model_fn, model_dir=tmp_path / "b", params={})
    assert b.model_dir == str(tmp_path / "b") and b.config.model_dir == b.model_dir
    c = tf.estimator.Estimator(linear_model_fn, params={})
    assert os.path.isdir(c.model_dir)
    with pytest.raises(ValueError, match="model_dir are set both"):
        tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "x"), params={},
                               config=tf.estimator.RunConfig(model_dir=str(tmp_path / "y")))
    with pytest.raises(TypeError, match="config must be an instance of RunConfig"):
        tf.estimator.Estimator(linear_model_fn, config={"model_dir": "x"}, params={})


def test_params_and_config_are_copies(tmp_path):
    params = {"learning_rate": 0.5}
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path), params=params)
    params["learning_rate"] = 9
    assert est.params == {"learning_rate": 0.5}
    est.params["learning_rate"] = 7
    assert est.params == {"learning_rate": 0.5}
    assert est.config is not est.config


def test_model_fn_gets_the_arguments_it_names(tmp_path):
    seen = {}

    def model_fn(features, labels, mode, params, config):
        seen.update(mode=mode, params=params, config=config)
        return linear_model_fn(features, labels, mode, {"learning_rate": 0.1})

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path), params={"p": 1})
    est.train(train_input_fn, steps=1)
    assert seen["mode"] == "train" and seen["params"] == {"p": 1}
    assert seen["config"].model_dir == str(tmp_path)


def test_input_fn_gets_mode_params_and_config(tmp_path):
    seen = {}

    def input_fn(mode, params, config):
        seen.update(mode=mode, params=params, config=config)
        return eval_input_fn()

    est = make_estimator(tmp_path)
    est.evaluate(input_fn, steps=1)
    assert seen["mode"] == "eval" and seen["params"]["learning_rate"] == 0.5
    assert seen["config"].model_dir == str(tmp_path)


def test_labels_from_input_but_no_labels_argument(tmp_path):
    def model_fn(features, mode):
        raise AssertionError("not reached")
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="model_fn does not take labels"):
        est.train(train_input_fn, steps=1)


def test_model_fn_must_return_an_estimator_spec(tmp_path):
    est = tf.estimator.Estimator(lambda features, labels: {"loss": 1},
                                 model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="should return an EstimatorSpec"):
        est.train(train_input_fn, steps=1)


# ---- train ---------------------------------------------------------------------------------

def test_train_argument_checks(tmp_path):
    est = make_estimator(tmp_path)
    with pytest.raises(ValueError, match="both steps and max_steps"):
        est.train(train_input_fn, steps=1, max_steps=2)
    with pytest.raises(ValueError, match="steps > 0"):
        est.train(train_input_fn, steps=0)
    with pytest.raises(ValueError, match="max_steps > 0"):
        est.train(train_input_fn, max_steps=-1)
    with pytest.raises(TypeError, match="SessionRunHook"):
        est.train(train_input_fn, steps=1, hooks=[object()])


def test_steps_add_up_and_max_steps_is_a_ceiling(tmp_path):
    est = make_estimator(tmp_path)
    est.train(train_input_fn, steps=5)
    assert est.get_variable_value("global_step") == 5
    est.train(train_input_fn, steps=5)
    assert est.get_variable_value("global_step") == 10
    est.train(train_input_fn, max_steps=12)
    assert est.get_variable_value("global_step") == 12
    est.train(train_input_fn, max_steps=4)  # already past: nothing to do
    assert est.get_variable_value("global_step") == 12


def test_training_ends_with_the_input(tmp_path):
    def two_batches():
        return tf.data.Dataset.from_tensor_slices(({"x": X_TEST[:64]},
                                                   np.zeros(64, np.int32))).batch(32)
    est = make_estimator(tmp_path)
    est.train(two_batches)
    assert est.get_variable_value("global_step") == 2


def test_train_on_tensors_from_a_one_shot_iterator(tmp_path):
    est = make_estimator(tmp_path)
    est.train(tensor_input_fn, max_steps=3)
    assert est.get_variable_value("global_step") == 3


def test_trained_model_reaches_90_percent_and_checkpoints_follow_run_config(tmp_path):
    est = make_estimator(tmp_path, save_checkpoints_steps=50, keep_checkpoint_max=3,
                         save_summary_steps=20)
    est.train(train_input_fn, max_steps=300)
    metrics = est.evaluate(eval_input_fn)
    assert metrics["accuracy"] >= 0.9 and metrics["global_step"] == 300
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-200", "model.ckpt-250", "model.ckpt-300"]
    assert est.latest_checkpoint() == str(tmp_path / "model.ckpt-300")
    summaries = [(e.step, v.tag) for f in tmp_path.glob("events.out.tfevents.*")
                 for e in tf.train.summary_iterator(str(f)) for v in e.summary.value]
    loss_steps = sorted(step for step, tag in summaries if tag == "loss")
    assert len(loss_steps) == 15 and set(np.diff(loss_steps)) == {20}  # save_summary_steps


def test_hooks_run_and_saving_listeners_hear_every_save(tmp_path):
    class Counter(tf.train.SessionRunHook):
        runs = 0

        def after_run(self, run_context, run_values):
            Counter.runs += 1

    class Listener(tf.train.CheckpointSaverListener):
        steps = []

        def after_save(self, session, global_step_value):
            Listener.steps.append(global_step_value)

    est = make_estimator(tmp_path, save_checkpoints_steps=10)
    est.train(train_input_fn, max_steps=30, hooks=[Counter()], saving_listeners=[Listener()])
    assert Counter.runs == 30
    assert Listener.steps == [0, 10, 20, 30]


def test_saving_listeners_without_checkpoints_are_refused(tmp_path):
    est = make_estimator(tmp_path, save_checkpoints_steps=None, save_checkpoints_secs=None)
    with pytest.raises(ValueError, match="CheckpointSaverHook to use saving_listeners"):
        est.train(train_input_fn, steps=1, saving_listeners=[tf.train.CheckpointSaverListener()])


def test_training_resumes_from_the_checkpoint(tmp_path):
    est = make_estimator(tmp_path)
    est.train(train_input_fn, max_steps=20)
    w = est.get_variable_value("w")
    again = make_estimator(tmp_path, learning_rate=0.0)  # a new Estimator on the same dir
    again.train(train_input_fn, steps=3)
    np.testing.assert_array_equal(again.get_variable_value("w"), w)
    assert again.get_variable_value("global_step") == 23


def test_nan_loss_stops_training(tmp_path):
    def model_fn(features, labels, mode):
        step = tf.train.get_or_create_global_step()
        loss = tf.reduce_sum(features["x"]) * np.float32("nan")
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.assign_add(step, 1))
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    with pytest.raises(tf.train.NanLossDuringTrainingError):
        est.train(train_input_fn, steps=3)


def test_warm_start_from_another_model_dir(tmp_path):
    first = make_estimator(tmp_path / "first")
    first.train(train_input_fn, max_steps=20)
    warm = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "warm"),
                                  params={"learning_rate": 0.0},
                                  warm_start_from=str(tmp_path / "first"))
    warm.train(train_input_fn, steps=1)
    np.testing.assert_array_equal(warm.get_variable_value("w"), first.get_variable_value("w"))
    assert warm.get_variable_value("global_step") == 1  # the step is not trainable: fresh


# ---- variables and checkpoints --------------------------------------------------------------

def test_variables_need_a_checkpoint(tmp_path):
    est = make_estimator(tmp_path)
    assert est.latest_checkpoint() is None
    with pytest.raises(ValueError, match="Could not find trained model in model_dir"):
        est.get_variable_names()
    with pytest.raises(ValueError, match="Train the Estimator first"):
        est.get_variable_value("w")
    est.train(train_input_fn, steps=2)
    assert set(est.get_variable_names()) == {"w", "b", "global_step"}
    assert est.get_variable_value("w").shape == (64, 10)


# ---- evaluate ----------------------------------------------------------------------------------

def test_evaluate_steps_name_and_checkpoint_path(tmp_path):
    est = make_estimator(tmp_path, save_checkpoints_steps=10)
    est.train(train_input_fn, max_steps=20)
    with pytest.raises(ValueError, match="steps > 0"):
        est.evaluate(eval_input_fn, steps=0)
    first = est.evaluate(eval_input_fn, steps=1, name="one_batch",
                         checkpoint_path=str(tmp_path / "model.ckpt-10"))
    assert first["global_step"] == 10
    assert os.listdir(tmp_path / "eval_one_batch")
    full = est.evaluate(eval_input_fn)
    assert full["global_step"] == 20 and set(full) == {"accuracy", "loss", "global_step"}
    assert full["loss"] < first["loss"]
    tags = {v.tag for f in (tmp_path / "eval").glob("events.*")
            for e in tf.train.summary_iterator(str(f)) for v in e.summary.value}
    assert {"accuracy", "loss"} <= tags


def test_evaluate_without_a_checkpoint_uses_the_initial_model(tmp_path):
    metrics = make_estimator(tmp_path).evaluate(eval_input_fn, steps=2)
    assert metrics["global_step"] == 0
    assert metrics["loss"] == pytest.approx(np.log(10), rel=1e-5)  # all-zero weights


def test_evaluate_loss_is_the_mean_over_batches(tmp_path):
    batches = [np.float32(v) for v in (1.0, 2.0, 6.0)]

    def model_fn(features, labels, mode):
        tf.train.get_or_create_global_step()
        return tf.estimator.EstimatorSpec(mode, loss=tf.reduce_mean(features))

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(np.array(batches)[:, None]).batch(1)
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    assert est.evaluate(input_fn)["loss"] == pytest.approx(3.0)


@pytest.mark.parametrize("name", ["loss", "global_step"])
def test_reserved_metric_names(tmp_path, name):
    def model_fn(features, labels, mode):
        loss = tf.reduce_mean(features["x"])
        return tf.estimator.EstimatorSpec(mode, loss=loss,
                                          eval_metric_ops={name: (loss, tf.no_op())})
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match=f"Metric with name '{name}' is not allowed"):
        est.evaluate(eval_input_fn, steps=1)


def test_evaluate_hooks_and_evaluation_hooks_run(tmp_path):
    spec_hook = StepCounter()

    def model_fn(features, labels, mode):
        return tf.estimator.EstimatorSpec(
            mode, loss=tf.constant(0.0), evaluation_hooks=[spec_hook],
            train_op=tf.assign_add(tf.train.get_or_create_global_step(), 1))
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    est.train(train_input_fn, steps=1)
    assert spec_hook.steps == 0  # evaluation hooks do not run in training
    counter = StepCounter()
    est.evaluate(train_input_fn, steps=5, hooks=[counter])
    assert counter.steps == 5 and spec_hook.steps == 5


def test_evaluate_loss_is_the_mean_of_each_batch_loss(tmp_path):
    def model_fn(features, labels, mode):
        weight = tf.Variable(0.0, name="local_weight", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        loss = 2 * tf.assign_add(weight, 1.0)  # 2, 4, 6, ... one per batch
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, train_op=tf.assign_add(tf.train.get_or_create_global_step(), 1))
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    est.train(train_input_fn, steps=1)
    assert est.evaluate(train_input_fn, steps=5)["loss"] == pytest.approx(6.0)


def test_input_fn_may_return_plain_python_values(tmp_path):
    seen = {}
    features, labels = {"f": [[1], [1]]}, {"l": [[1], [1]]}

    def model_fn(features, labels, mode):
        seen.update(features=features, labels=labels, mode=mode)
        return constant_model_fn(features, labels, mode)
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    est.train(lambda: (features, labels), steps=1)
    est.evaluate(lambda: (features, labels), steps=1)
    assert seen == {"features": features, "labels": labels, "mode": "eval"}


def test_warm_start_settings_select_and_rename_variables(tmp_path):
    first = make_estimator(tmp_path / "first")
    first.train(train_input_fn, max_steps=20)
    only_w = tf.estimator.WarmStartSettings(str(tmp_path / "first"), vars_to_warm_start="w")
    warm = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "warm"),
                                  params={"learning_rate": 0.0}, warm_start_from=only_w)
    warm.train(train_input_fn, steps=1)
    np.testing.assert_array_equal(warm.get_variable_value("w"), first.get_variable_value("w"))
    assert not warm.get_variable_value("b").any()  # left at its initial zeros

    def renamed_model_fn(features, labels, mode, params):
        with tf.variable_scope("new"):
            return linear_model_fn(features, labels, mode, params)
    renames = tf.estimator.WarmStartSettings(
        str(tmp_path / "first"), vars_to_warm_start=".*",
        var_name_to_prev_var_name={"new/w": "w", "new/b": "b"})
    moved = tf.estimator.Estimator(renamed_model_fn, model_dir=str(tmp_path / "moved"),
                                   params={"learning_rate": 0.0}, warm_start_from=renames)
    moved.train(train_input_fn, steps=1)
    np.testing.assert_array_equal(moved.get_variable_value("new/b"),
                                  first.get_variable_value("b"))


def test_warm_start_partitioned_variables_by_their_full_name(tmp_path):
    # A partitioned variable is checkpointed under its full name ("emb", in slices),
    # not its parts' op names ("emb/part_0"); selection and renames use the full name.
    def embedding():
        return tf.get_variable("emb", [6, 2], partitioner=tf.fixed_size_partitioner(2),
                               initializer=tf.random_normal_initializer(seed=1))

    def model_fn(features, labels, mode, params):
        if params.get("scope"):
            with tf.variable_scope(params["scope"]):
                emb = embedding()
        else:
            emb = embedding()
        ids = tf.cast(tf.range(tf.shape(features["x"])[0]) % 6, tf.int64)
        pred = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids), 1)
        loss = tf.losses.mean_squared_error(labels, pred)
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(params["lr"]).minimize(loss, step)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)
    first = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "first"),
                                   params={"lr": 0.1})
    first.train(train_input_fn, max_steps=5)
    trained = first.get_variable_value("emb")
    assert "emb" in first.get_variable_names() and trained.shape == (6, 2)
    warm = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "warm"),
                                  params={"lr": 0.0}, warm_start_from=tf.estimator.
                                  WarmStartSettings(str(tmp_path / "first"), "emb"))
    warm.train(train_input_fn, steps=1)
    np.testing.assert_array_equal(warm.get_variable_value("emb"), trained)
    moved = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "moved"),
                                   params={"lr": 0.0, "scope": "new"},
                                   warm_start_from=tf.estimator.WarmStartSettings(
                                       str(tmp_path / "first"), "new/emb",
                                       var_name_to_prev_var_name={"new/emb": "emb"}))
    moved.train(train_input_fn, steps=1)
    np.testing.assert_array_equal(moved.get_variable_value("new/emb"), trained)


def test_warm_start_names_the_variables_the_checkpoint_lacks(tmp_path):
    first = make_estimator(tmp_path / "first")
    first.train(train_input_fn, max_steps=2)

    def other_model_fn(features, labels, mode, params):
        with tf.variable_scope("other"):
            return linear_model_fn(features, labels, mode, params)
    est = tf.estimator.Estimator(other_model_fn, model_dir=str(tmp_path / "x"),
                                 params={"learning_rate": 0.1},
                                 warm_start_from=str(tmp_path / "first"))
    with pytest.raises(ValueError, match=r"\['other/b', 'other/w'\] are not in the checkpoint"):
        est.train(train_input_fn, steps=1)
    with pytest.raises(ValueError, match="has no checkpoint"):
        tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "y"),
                               params={"learning_rate": 0.1},
                               warm_start_from=str(tmp_path / "empty")).train(
            train_input_fn, steps=1)
