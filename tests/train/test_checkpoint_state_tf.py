"""The `checkpoint` state file's path rules as TF 1.x: relative dirs, collisions, bad files."""
from __future__ import annotations

import os

import pytest

import tensorweave as tf
from tensorweave.train import checkpoint_management as cm

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_generate_state_rewrites_paths_relative_to_a_relative_dir(tmp_path):
    st = tf.train.generate_checkpoint_state_proto("train", os.path.join("train", "model-0"))
    assert st.model_checkpoint_path == "model-0"
    assert st.all_model_checkpoint_paths == ["model-0"]
    absolute = str(tmp_path / "model-0")
    for given, count in ((None, 1), ([], 1), (["model-2"], 2)):
        st = tf.train.generate_checkpoint_state_proto(str(tmp_path), absolute, given)
        assert st.model_checkpoint_path == absolute
        assert st.all_model_checkpoint_paths[-1] == absolute
        assert len(st.all_model_checkpoint_paths) == count
        if given is not None:   # as TF: the caller's list is extended in place
            assert given[-1] == absolute
    with pytest.raises(ValueError, match="timestamps"):
        tf.train.generate_checkpoint_state_proto(str(tmp_path), absolute, [], [1.0, 2.0])


def test_relative_train_dir_round_trips(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("train")
    v = tf.Variable(0.0)
    inc = v.assign_add(1.0)
    saver = tf.train.Saver({"v0": v})
    with tf.Session() as sess:
        sess.run(v.initializer)
        for step in range(3):
            saver.save(sess, os.path.join("train", "snapshot"), global_step=step)
            sess.run(inc)
    assert tf.train.latest_checkpoint("train") == os.path.join("train", "snapshot-2")
    with open(os.path.join("train", "checkpoint")) as f:
        assert '"snapshot-2"' in f.read()   # stored relative to the directory, as TF
    cm.update_checkpoint_state("train", os.path.join("train", "model-2"),
                               [str(tmp_path / "model-0"), os.path.join("train", "model-2")])
    st = tf.train.get_checkpoint_state("train")
    assert st.model_checkpoint_path == os.path.join("train", "model-2")
    assert st.all_model_checkpoint_paths == [str(tmp_path / "model-0"),
                                             os.path.join("train", "model-2")]


def test_saving_onto_the_state_file_name_is_refused(tmp_path):
    tf.Variable(0.0)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(ValueError, match="collides with"):
            saver.save(sess, str(tmp_path / "checkpoint"))
        assert saver.save(sess, str(tmp_path / "checkpoint"), global_step=1)
        assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-1")


def test_a_state_file_naming_nothing_is_invalid(tmp_path):
    (tmp_path / "checkpoint").write_text("")
    with pytest.raises(ValueError, match="Invalid checkpoint state"):
        tf.train.get_checkpoint_state(str(tmp_path))
    (tmp_path / "checkpoint").write_text(
        '  model_checkpoint_path: "./model.ckpt-9"\n'
        '  all_model_checkpoint_paths: "./model.ckpt-8"\n'
        '  all_model_checkpoint_paths: "./model.ckpt-9"\n')
    st = tf.train.get_checkpoint_state(str(tmp_path))
    assert st.model_checkpoint_path == os.path.join(str(tmp_path), "./model.ckpt-9")
    assert st.all_model_checkpoint_paths[0] == os.path.join(str(tmp_path), "./model.ckpt-8")
