"""The Saver and checkpoint helpers as TF 1.x defines them: errors, bookkeeping, readers."""
from __future__ import annotations

import os

import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.train import checkpoint_management as cm

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _saved(tmp_path, **saver_kw):
    v = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], name="v0")
    saver = tf.train.Saver({"v0": v}, **saver_kw)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return v, saver, sess


def test_saver_def_property_and_filename_default(tmp_path):
    v = tf.Variable(0, name="v")
    saver = tf.train.Saver({"v": v}, filename=b"somefile")
    sd = saver.saver_def
    assert sd.restore_op_name == "save/restore_all"
    with tf.Session() as sess:
        assert sess.run(sd.filename_tensor_name) == b"somefile"
    # A Saver adopting a SaverDef under a scope finds its nodes there.
    with tf.Graph().as_default():
        tf.train.import_meta_graph(saver.export_meta_graph(), import_scope="imp")
        adopted = tf.train.Saver(saver_def=sd, name="imp")
        assert adopted.saver_def.save_tensor_name.startswith("imp/save/")


def test_deferred_build_rules():
    v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="defer_build"):
        tf.train.Saver([v], defer_build=True)
    saver = tf.train.Saver(defer_build=True)
    with tf.Session() as sess, pytest.raises(RuntimeError, match="build"):
        saver.save(sess, "never")


def test_invalid_restore_path_and_missing_parent_are_value_errors(tmp_path):
    _v, saver, sess = _saved(tmp_path)
    with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint:"):
        saver.restore(sess, str(tmp_path / "invalid path"))
    target = str(tmp_path / "no_such_dir" / "ckpt")
    with pytest.raises(ValueError) as e:
        saver.save(sess, target)
    assert str(e.value) == f"Parent directory of {target} doesn't exist, can't save."


def test_file_uri_paths_save_and_restore(tmp_path):
    _v, saver, sess = _saved(tmp_path)
    prefix = saver.save(sess, "file://" + str(tmp_path / "uri"))
    assert prefix == str(tmp_path / "uri") and cm.checkpoint_exists(prefix)
    saver.restore(sess, "file://" + prefix)


def test_max_to_keep_none_or_zero_tracks_and_deletes_nothing(tmp_path):
    _v, _, sess = _saved(tmp_path)
    for keep in (None, 0):
        saver = tf.train.Saver(max_to_keep=keep)
        paths = [saver.save(sess, str(tmp_path / f"k{keep}-{i}")) for i in range(3)]
        assert saver.last_checkpoints == []
        assert all(cm.checkpoint_exists(p) for p in paths)


def test_meta_graph_file_names_and_removal(tmp_path):
    assert cm.meta_graph_filename("d/model.ckpt-7") == "d/model.ckpt-7.meta"
    assert cm.meta_graph_filename("d/m-00000-of-00002", "txt") == "d/m.txt"
    assert cm.meta_graph_filename("d/m-?????-of-00002") == "d/m.meta"
    _v, saver, sess = _saved(tmp_path)
    with_meta = saver.save(sess, str(tmp_path / "a"))
    without = saver.save(sess, str(tmp_path / "b"), write_meta_graph=False)
    assert os.path.exists(cm.meta_graph_filename(with_meta))
    assert not os.path.exists(cm.meta_graph_filename(without))
    times = tf.train.get_checkpoint_mtimes([with_meta, str(tmp_path / "absent"), without])
    assert len(times) == 2 and all(t > 0 for t in times)
    tf.train.remove_checkpoint(with_meta)
    assert not cm.checkpoint_exists(with_meta)
    assert not os.path.exists(cm.meta_graph_filename(with_meta))


def test_reader_debug_string_and_tf_error_phrases(tmp_path):
    _v, saver, sess = _saved(tmp_path)
    for fmt in ("tensorweave", "tensorflow"):
        prefix = tf.train.Saver({"v0": tf.global_variables()[0]}, checkpoint_format=fmt).save(
            sess, str(tmp_path / fmt))
        reader = tf.train.NewCheckpointReader(prefix)
        assert reader.debug_string() == b"v0 (DT_FLOAT) [2,3]\n"
        with pytest.raises(errors.NotFoundError, match="v3 not found in checkpoint"):
            reader.get_tensor("v3")
    with pytest.raises(errors.NotFoundError, match="Unsuccessful TensorSliceReader"):
        tf.train.NewCheckpointReader(str(tmp_path / "non-existent"))


def test_restoring_under_other_names_reports_the_missing_key(tmp_path):
    v, saver, sess = _saved(tmp_path)
    prefix = saver.save(sess, str(tmp_path / "named"))
    other = tf.train.Saver({"elsewhere": v})
    with pytest.raises(errors.NotFoundError, match="elsewhere not found in checkpoint"):
        other.restore(sess, prefix)


@pytest.mark.parametrize("fmt", ["tensorweave", "tensorflow"])
def test_reshape_on_restore_and_tf_mismatch_messages(tmp_path, fmt):
    v = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        prefix = tf.train.Saver(checkpoint_format=fmt).save(sess, str(tmp_path / "r"))
    with tf.Graph().as_default(), tf.Session() as sess:
        w = tf.Variable(tf.zeros([3, 2]), name="v")
        with pytest.raises(errors.InvalidArgumentError, match=(
                "mismatch between the current graph and the graph(.|\n)*Assign requires "
                "shapes of both tensors to match")):
            tf.train.Saver(checkpoint_format=fmt).restore(sess, prefix)
        tf.train.Saver(reshape=True, checkpoint_format=fmt).restore(sess, prefix)
        assert sess.run(w).tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.Variable(tf.zeros([2, 3], tf.int32), name="v")
        with pytest.raises(errors.InvalidArgumentError, match="original dtype"):
            tf.train.Saver(checkpoint_format=fmt).restore(sess, prefix)


def test_checkpoint_exists_takes_patterns_and_files_as_tf(tmp_path):
    _v, saver, sess = _saved(tmp_path)
    prefix = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=3)
    assert tf.train.checkpoint_exists(prefix)
    assert tf.train.checkpoint_exists(str(tmp_path / "model.ckpt-*"))
    assert tf.train.checkpoint_exists(cm.meta_graph_filename(prefix))   # TF's V1 rule
    assert not tf.train.checkpoint_exists(str(tmp_path / "other-*"))


def test_empty_saver_writes_only_the_meta_graph_and_unstated_saves_are_untracked(tmp_path):
    tf.constant(1, name="c")
    empty = tf.train.Saver(allow_empty=True)
    with tf.Session() as sess:
        assert empty.save(sess, str(tmp_path / "e")) is None
    assert os.path.exists(str(tmp_path / "e.meta"))
    assert not cm.checkpoint_exists(str(tmp_path / "e"))
    _v, saver, sess = _saved(tmp_path)
    quiet = saver.save(sess, str(tmp_path / "q"), write_state=False)
    assert saver.last_checkpoints == [] and cm.checkpoint_exists(quiet)
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None


def test_save_and_restore_run_by_name_in_the_sessions_graph(tmp_path):
    # As TF: a Saver built in one graph drives a session on another graph that holds
    # nodes of the same names (a SessionManager made before the graph was rebuilt).
    g1 = tf.Graph()
    with g1.as_default():
        v1 = tf.Variable([1.0, 2.0], name="v")
        tf.train.Saver({"v": v1})
        sess = tf.Session(graph=g1)
        sess.run(v1.initializer)
    with tf.Graph().as_default():
        v2 = tf.Variable([0.0, 0.0], name="v")
        saver2 = tf.train.Saver({"v": v2})
        prefix = saver2.save(sess, str(tmp_path / "by_name"))   # runs g1's save nodes
        sess.run(v1.assign([5.0, 5.0]))
        saver2.restore(sess, prefix)
    assert sess.run(v1).tolist() == [1.0, 2.0]


def test_bad_arguments_are_named_with_tf_wording(tmp_path):
    _v, saver, sess = _saved(tmp_path)
    with pytest.raises(ValueError, match="'latest_filename' must be a base name"):
        saver.save(sess, str(tmp_path / "m"), latest_filename="sub/checkpoint")
    with pytest.raises(TypeError, match="Variable to save is not a Variable: 3"):
        tf.train.Saver([3])
