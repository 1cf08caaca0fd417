"""The chief restores the newest checkpoint that verifies (issue 13).

Deliberately beyond TF 1.x (which raises DataLossError and crash-loops on the same
file): a damaged or incomplete checkpoint is logged, moved aside as
`<prefix>.damaged-<n>.*` (never deleted), dropped from the `checkpoint` state file,
and the next older one is restored. `tf.train.latest_checkpoint` keeps TF's meaning.
"""
import logging
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.train import checkpoint_management as cm

pytestmark = pytest.mark.usefixtures("fresh_graph")

FORMATS = ["tensorweave", "tensorflow"]


def _model():
    v = tf.Variable(np.zeros(4, np.float32), name="v")
    step = tf.train.get_or_create_global_step()
    train = tf.group(tf.assign_add(v, tf.ones(4)), tf.assign_add(step, 1))
    return v, step, train


def _save_three(d, fmt):
    """model.ckpt-1..3 in `d`, v == step in each; returns the prefixes."""
    with tf.Graph().as_default():
        _, step, train = _model()
        saver = tf.train.Saver(checkpoint_format=fmt)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = []
            for _ in range(3):
                sess.run(train)
                out.append(saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step))
    return out


def _data_file(prefix, fmt):
    return f"{prefix}-00000-of-00001" if fmt == "tensorweave" \
        else f"{prefix}.data-00000-of-00001"


def _damage(prefix, fmt, kind):
    data, index = _data_file(prefix, fmt), prefix + ".index"
    if kind == "flipped_data":
        with open(data, "r+b") as f:
            raw = bytearray(f.read())
            start = 8 if fmt == "tensorweave" else 0   # past our magic: tensor bytes
            for i in range(start, start + 4):
                raw[i] ^= 0xFF
            f.seek(0)
            f.write(raw)
    elif kind == "missing_data":
        os.remove(data)
    elif kind == "truncated_index":
        size = os.path.getsize(index)
        os.truncate(index, size // 2)
    elif kind == "garbage_index":
        with open(index, "wb") as f:
            f.write(bytes(range(256)) * 3)
    elif kind == "missing_index":   # an unfinished save that is listed anyway
        os.remove(index)
    else:
        raise AssertionError(kind)


def _state_paths(d):
    st = cm.get_checkpoint_state(d)
    return [os.path.basename(p) for p in st.all_model_checkpoint_paths], \
        os.path.basename(st.model_checkpoint_path)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["flipped_data", "missing_data", "truncated_index",
                                  "garbage_index", "missing_index"])
def test_monitored_session_restores_previous_good_checkpoint(tmp_path, caplog, fmt, kind):
    d = str(tmp_path)
    first, good, bad = _save_three(d, fmt)
    _damage(bad, fmt, kind)
    assert cm.checkpoint_damage(good) is None and cm.checkpoint_damage(first) is None
    assert cm.checkpoint_damage(bad)   # says what is wrong
    v, step, train = _model()
    with caplog.at_level(logging.WARNING, logger="tensorweave"):
        with tf.train.MonitoredTrainingSession(checkpoint_dir=d, save_checkpoint_secs=None,
                                               save_checkpoint_steps=100,
                                               save_summaries_steps=None) as sess:
            np.testing.assert_array_equal(sess.run(v), np.full(4, 2.0, np.float32))
            assert sess.run(step) == 2
            sess.run(train)   # trains on
            sess.run(train)
            np.testing.assert_array_equal(sess.run(v), np.full(4, 4.0, np.float32))
    warned = [r for r in caplog.records if r.levelno == logging.WARNING
              and "model.ckpt-3 is damaged or incomplete" in r.getMessage()]
    assert len(warned) == 1, caplog.text
    aside = sorted(f for f in os.listdir(d) if ".damaged-" in f)
    assert aside and all(f.startswith("model.ckpt-3.damaged-1") for f in aside), aside
    assert not any(f.startswith(("model.ckpt-3.", "model.ckpt-3-")) and ".damaged-" not in f
                   for f in os.listdir(d))
    if kind != "missing_data":   # the data file is set aside too, not deleted
        assert os.path.basename(_data_file(bad, fmt)).replace(
            "model.ckpt-3", "model.ckpt-3.damaged-1") in aside
    paths, latest = _state_paths(d)
    assert "model.ckpt-3" not in paths and latest == "model.ckpt-4"   # the final save
    assert cm.checkpoint_damage(os.path.join(d, "model.ckpt-4")) is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_damaged_checkpoints_fall_back_two_steps(tmp_path, fmt):
    d = str(tmp_path)
    first, mid, bad = _save_three(d, fmt)
    _damage(bad, fmt, "flipped_data")
    _damage(mid, fmt, "missing_data")
    assert cm.latest_checkpoint(d) == bad   # TF's meaning: what the state file names
    assert cm.latest_valid_checkpoint(d) == first   # nothing moved without set_aside
    assert os.path.exists(bad + ".index")
    v, _, _ = _model()
    sm = tf.train.SessionManager()
    sess = sm.prepare_session("", init_op=tf.global_variables_initializer(),
                              saver=tf.train.Saver(), checkpoint_dir=d)
    np.testing.assert_array_equal(sess.run(v), np.ones(4, np.float32))
    assert sm.last_session_origin == f"restored checkpoint {first}"
    sess.close()
    assert _state_paths(d) == (["model.ckpt-1"], "model.ckpt-1")
    assert cm.latest_checkpoint(d) == first


def test_every_checkpoint_damaged_initializes_from_scratch(tmp_path, caplog):
    d = str(tmp_path)
    for p in _save_three(d, "tensorweave"):
        _damage(p, "tensorweave", "flipped_data")
    v, _, _ = _model()
    sm = tf.train.SessionManager()
    with caplog.at_level(logging.WARNING, logger="tensorweave"):
        sess = sm.prepare_session("", init_op=tf.global_variables_initializer(),
                                  saver=tf.train.Saver(), checkpoint_dir=d)
    np.testing.assert_array_equal(sess.run(v), np.zeros(4, np.float32))
    sess.close()
    assert caplog.text.count("is damaged or incomplete") == 3
    assert cm.latest_checkpoint(d) is None
    assert len([f for f in os.listdir(d) if ".damaged-1" in f]) == 9   # 3 x index/data/meta


def test_recover_session_falls_back(tmp_path):
    d = str(tmp_path)
    _, good, bad = _save_three(d, "tensorflow")
    _damage(bad, "tensorflow", "truncated_index")
    v, _, _ = _model()
    sess, ok = tf.train.SessionManager().recover_session("", saver=tf.train.Saver(),
                                                         checkpoint_dir=d)
    assert ok
    np.testing.assert_array_equal(sess.run(v), np.full(4, 2.0, np.float32))
    sess.close()


def test_supervisor_falls_back(tmp_path):
    d = str(tmp_path)
    _, good, bad = _save_three(d, "tensorweave")
    _damage(bad, "tensorweave", "flipped_data")
    v, _, _ = _model()
    sv = tf.train.Supervisor(logdir=d, save_model_secs=0, save_summaries_secs=0)
    with sv.managed_session("") as sess:
        np.testing.assert_array_equal(sess.run(v), np.full(4, 2.0, np.float32))
    assert os.path.exists(bad + ".damaged-1.index")


def test_missing_meta_is_not_damage(tmp_path):
    d = str(tmp_path)
    *_, newest = _save_three(d, "tensorweave")
    os.remove(newest + ".meta")
    assert cm.checkpoint_damage(newest) is None
    v, _, _ = _model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=d, save_checkpoint_secs=None,
                                           save_summaries_steps=None) as sess:
        np.testing.assert_array_equal(sess.run(v), np.full(4, 3.0, np.float32))
    assert not any(".damaged-" in f for f in os.listdir(d))


def test_damaged_again_gets_the_next_number(tmp_path):
    d = str(tmp_path)
    *_, bad = _save_three(d, "tensorweave")
    _damage(bad, "tensorweave", "flipped_data")
    cm.set_aside_checkpoint(bad, "test")
    with tf.Graph().as_default():   # the same step saved again, and damaged again
        v, step, _ = _model()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.assign(step, 3)])
            assert saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step) == bad
    moved = cm.set_aside_checkpoint(bad, "test")
    assert sorted(os.path.basename(m) for m in moved) == [
        "model.ckpt-3.damaged-2-00000-of-00001", "model.ckpt-3.damaged-2.index",
        "model.ckpt-3.damaged-2.meta"]
    assert os.path.exists(bad + ".damaged-1.index")


def test_explicit_checkpoint_file_is_not_replaced(tmp_path):
    # checkpoint_filename_with_path names one checkpoint: its damage is the caller's error.
    d = str(tmp_path)
    *_, bad = _save_three(d, "tensorweave")
    _damage(bad, "tensorweave", "flipped_data")
    _model()
    with pytest.raises(tf.errors.DataLossError, match="model.ckpt-3-00000-of-00001"):
        tf.train.SessionManager().prepare_session(
            "", saver=tf.train.Saver(), checkpoint_filename_with_path=bad)
    assert os.path.exists(bad + ".index")


def _estimator_model_fn(features, labels, mode):
    w = tf.get_variable("w", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(features["x"] * w - labels))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _estimator_input_fn():
    return {"x": tf.constant([[1.0]])}, tf.constant([[1.0]])


def test_estimator_train_with_max_steps_falls_back(tmp_path):
    # The damage hits global_step itself, which max_steps reads before training.
    d = str(tmp_path)
    est = tf.estimator.Estimator(_estimator_model_fn, model_dir=d, config=tf.estimator.RunConfig(
        save_checkpoints_steps=1, keep_checkpoint_max=5))
    est.train(_estimator_input_fn, steps=3)
    bad = est.latest_checkpoint()
    assert os.path.basename(bad) == "model.ckpt-3"
    _damage(bad, "tensorweave", "flipped_data")
    est.train(_estimator_input_fn, max_steps=5)
    assert os.path.basename(est.latest_checkpoint()) == "model.ckpt-5"
    assert os.path.exists(bad + ".damaged-1.index")


def test_estimator_evaluate_predict_and_export_read_the_newest_good_checkpoint(tmp_path):
    # The model's w after 2 steps differs from after 3, so the value shows which one
    # was read. The damaged one is left in place (the chief owns model_dir).
    d = str(tmp_path / "model")
    est = tf.estimator.Estimator(_estimator_model_fn, model_dir=d, config=tf.estimator.RunConfig(
        save_checkpoints_steps=1, keep_checkpoint_max=5))
    est.train(_estimator_input_fn, steps=3)
    w2 = cm.load_variable(os.path.join(d, "model.ckpt-2"), "w")
    bad = est.latest_checkpoint()
    _damage(bad, "tensorweave", "flipped_data")
    metrics = est.evaluate(_estimator_input_fn, steps=1)
    assert metrics["global_step"] == 2
    np.testing.assert_allclose(metrics["loss"], (w2[0] - 1.0) ** 2, rtol=1e-5)

    def predict_fn(features, labels, mode):
        w = tf.get_variable("w", [1], initializer=tf.zeros_initializer())
        return tf.estimator.EstimatorSpec(
            mode, predictions={"y": features["x"] * w},
            export_outputs={"y": tf.estimator.export.PredictOutput({"y": features["x"] * w})})
    pred = tf.estimator.Estimator(predict_fn, model_dir=d)
    p = next(pred.predict(lambda: {"x": tf.constant([[1.0]])}))  # a constant never ends
    np.testing.assert_allclose(p["y"], w2)
    export = pred.export_saved_model(str(tmp_path / "export"), tf.estimator.export
                                     .build_raw_serving_input_receiver_fn(
                                         {"x": tf.placeholder(tf.float32, [None, 1])}))
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, ["serve"], export)
        np.testing.assert_allclose(sess.run("w:0"), w2)
    assert os.path.exists(bad + ".index") and est.latest_checkpoint() == bad


@pytest.mark.cluster_shape(ps=2, workers=1)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sharded_save_across_ps_tasks_missing_shard_falls_back(tmp_path, inprocess_cluster,
                                                                fmt):
    # Each ps task writes its own shard; the one ps:1 wrote is lost for the newest save.
    spec, servers = inprocess_cluster
    target = servers[("worker", 0)].target
    d = str(tmp_path)

    def build():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            a = tf.Variable(np.zeros(3, np.float32), name="a")   # ps:0
            b = tf.Variable(np.zeros(3, np.float32), name="b")   # ps:1
            step = tf.train.get_or_create_global_step()
        return a, b, step, tf.group(tf.assign_add(a, tf.ones(3)), tf.assign_add(b, tf.ones(3)),
                                    tf.assign_add(step, 1))

    with tf.Graph().as_default():
        _, _, step, train = build()
        saver = tf.train.Saver(sharded=True, checkpoint_format=fmt)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
                bad = saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step)
    data = sorted(f for f in os.listdir(d) if f.startswith("model.ckpt-3") and "-of-" in f)
    assert len(data) >= 2, data   # one per ps task at least
    os.remove(os.path.join(d, data[-1]))
    a, b, step, train = build()
    with tf.train.MonitoredTrainingSession(master=target, is_chief=True, checkpoint_dir=d,
                                           save_checkpoint_secs=None,
                                           save_summaries_steps=None) as sess:
        assert sess.run(step) == 2
        np.testing.assert_array_equal(sess.run(b), np.full(3, 2.0, np.float32))
        sess.run(train)
        np.testing.assert_array_equal(sess.run(a), np.full(3, 3.0, np.float32))
    assert os.path.exists(bad + ".damaged-1.index")
    assert cm.latest_checkpoint(d) == os.path.join(d, "model.ckpt-2")


def test_relative_state_paths_are_dropped_too(tmp_path):
    d = str(tmp_path)
    with tf.Graph().as_default():
        _, step, train = _model()
        saver = tf.train.Saver(save_relative_paths=True)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(2):
                sess.run(train)
                bad = saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step)
    with open(os.path.join(d, "checkpoint")) as f:
        assert 'model_checkpoint_path: "model.ckpt-2"' in f.read()
    _damage(bad, "tensorweave", "truncated_index")
    assert cm.latest_valid_checkpoint(d, set_aside_damaged=True) == os.path.join(
        d, "model.ckpt-1")
    with open(os.path.join(d, "checkpoint")) as f:
        text = f.read()
    assert "model.ckpt-2" not in text and 'model_checkpoint_path: "model.ckpt-1"' in text


def test_restore_error_after_verifying_sets_aside_and_tries_older(tmp_path, monkeypatch):
    # The newest verifies, but its restore fails (changed on disk in between): the
    # creator moves it aside and restores the next one rather than crash-looping.
    d = str(tmp_path)
    _, good, newest = _save_three(d, "tensorweave")
    v, _, _ = _model()
    saver = tf.train.Saver()
    real = saver.restore
    def restore(sess, path, fallback=False):
        if path == newest:
            _damage(newest, "tensorweave", "flipped_data")
        return real(sess, path)
    monkeypatch.setattr(saver, "restore", restore)
    sess = tf.train.SessionManager().prepare_session("", saver=saver, checkpoint_dir=d)
    np.testing.assert_array_equal(sess.run(v), np.full(4, 2.0, np.float32))
    sess.close()
    assert os.path.exists(newest + ".damaged-1.index")
    assert cm.latest_checkpoint(d) == good


def test_unreadable_state_file_is_set_aside_and_rebuilt(tmp_path, caplog):
    d = str(tmp_path)
    first, good, bad = _save_three(d, "tensorflow")
    _damage(bad, "tensorflow", "garbage_index")
    cm.set_aside_checkpoint(bad, "test")   # an earlier casualty must stay aside
    with open(os.path.join(d, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "unterminated\n')
    with pytest.raises(tf.errors.DataLossError, match="checkpoint"):
        cm.latest_valid_checkpoint(d)   # read-only: reports, moves nothing
    v, _, _ = _model()
    with caplog.at_level(logging.WARNING, logger="tensorweave"):
        sess = tf.train.SessionManager().prepare_session("", saver=tf.train.Saver(),
                                                         checkpoint_dir=d)
    np.testing.assert_array_equal(sess.run(v), np.full(4, 2.0, np.float32))
    sess.close()
    assert "rebuilt it from the checkpoints" in caplog.text
    assert os.path.exists(os.path.join(d, "checkpoint.damaged-1"))
    assert _state_paths(d) == (["model.ckpt-1", "model.ckpt-2"], "model.ckpt-2")
