"""tf.train.NewCheckpointReader / list_variables / load_variable / init_from_checkpoint.

Each runs on both checkpoint formats (ours, and TF's tensor bundle), plus the
checkpoint real TensorFlow wrote (tests/data/tf_written). Cases follow what TF
1.x's checkpoint_utils_test.py checks: values and shapes read back, errors for
missing checkpoints and names, and every assignment_map form (name to name,
name to Variable, scope to scope, root "/" to scope, partitioned variables,
scopes not capturing look-alike prefixes, shape mismatches).
"""
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from suite_paths import TEST_DATA

pytestmark = pytest.mark.usefixtures("fresh_graph")

TF_CKPT = os.path.join(TEST_DATA, "tf_written", "ckpt")
V1 = np.arange(6, dtype=np.float32).reshape(2, 3)
V2 = np.full((3, 3), 2.0, np.float32)
V3 = np.float32(7.0)
V4 = np.arange(16, dtype=np.float32).reshape(4, 4)
EMB = np.arange(12, dtype=np.float32).reshape(6, 2)


@pytest.fixture(params=["tensorweave", "tensorflow"])
def ckpt_dir(request, tmp_path):
    with tf.Graph().as_default():
        tf.Variable(V1, name="var1")
        tf.Variable(V2, name="var2")
        tf.Variable(V3, name="var3")
        with tf.variable_scope("useful_scope"):
            tf.get_variable("var4", initializer=V4)
        tf.get_variable("emb", [6, 2], partitioner=tf.fixed_size_partitioner(2),
                        initializer=tf.constant_initializer(0.0))
        saver = tf.train.Saver(checkpoint_format=request.param)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for part, rows in zip(tf.global_variables()[-2:], (EMB[:3], EMB[3:])):
                sess.run(tf.assign(part, rows))
            saver.save(sess, str(tmp_path / "model"))
    return str(tmp_path)


def test_reader_and_list_variables(ckpt_dir):
    assert tf.train.list_variables(ckpt_dir) == [
        ("emb", [6, 2]), ("useful_scope/var4", [4, 4]), ("var1", [2, 3]), ("var2", [3, 3]),
        ("var3", [])]
    reader = tf.train.NewCheckpointReader(tf.train.latest_checkpoint(ckpt_dir))
    assert reader.has_tensor("var1") and not reader.has_tensor("var9")
    assert reader.get_variable_to_dtype_map()["var2"] == tf.float32
    assert reader.get_variable_to_shape_map()["useful_scope/var4"] == [4, 4]
    np.testing.assert_array_equal(reader.get_tensor("emb"), EMB)
    np.testing.assert_array_equal(tf.train.load_variable(ckpt_dir, "useful_scope/var4"), V4)
    assert tf.train.load_variable(ckpt_dir, "var3:0") == V3


def test_missing_checkpoint_and_name(ckpt_dir, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="Couldn't find a checkpoint"):
        tf.train.list_variables(str(empty))
    with pytest.raises(errors.NotFoundError, match="var9"):
        tf.train.load_variable(ckpt_dir, "var9")
    with pytest.raises(errors.NotFoundError):
        tf.train.NewCheckpointReader(str(tmp_path / "nothing_here"))


def test_tensorflow_written_checkpoint():
    assert dict(tf.train.list_variables(TF_CKPT))["emb"] == [6, 2]
    np.testing.assert_array_equal(tf.train.load_variable(TF_CKPT, "emb"), EMB)
    assert tf.train.load_variable(TF_CKPT, "global_step") == 7


def _run_init():
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(tf.global_variables())


def test_init_name_to_name_and_variable(ckpt_dir):
    with tf.variable_scope("some_scope"):
        my1 = tf.get_variable("my1", [2, 3])
        with tf.variable_scope("some_other_scope"):
            my2 = tf.get_variable("my2", [3, 3])
            with tf.variable_scope("other_useless_scope"):
                my4 = tf.get_variable("var4", [4, 4])
    my3 = tf.get_variable("my3", [])
    tf.train.init_from_checkpoint(ckpt_dir, {
        "var1": "some_scope/my1",
        "useful_scope/": "some_scope/some_other_scope/other_useless_scope/"})
    tf.train.init_from_checkpoint(ckpt_dir, {"var2": "some_scope/some_other_scope/my2",
                                             "var3": my3})
    assert my1.initial_value.op.type == "RestoreV2"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        v1, v2, v3, v4 = sess.run([my1, my2, my3, my4])
    np.testing.assert_array_equal(v1, V1)
    np.testing.assert_array_equal(v2, V2)
    assert v3 == V3
    np.testing.assert_array_equal(v4, V4)


def test_init_scope_does_not_capture_suffixes(ckpt_dir):
    with tf.variable_scope("useful_scope"):
        my4 = tf.get_variable("var4", [4, 4])
    with tf.variable_scope("useful_scope_1"):
        my5 = tf.get_variable("var5", initializer=[[1.0, 2.0], [3.0, 4.0]])
    tf.train.init_from_checkpoint(ckpt_dir, {"useful_scope/": "useful_scope/"})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(my4), V4)
        np.testing.assert_array_equal(sess.run(my5), [[1.0, 2.0], [3.0, 4.0]])


def test_init_from_root_into_scope(ckpt_dir):
    with tf.variable_scope("some_scope"):
        my1 = tf.get_variable("var1", [2, 3])
        my2 = tf.get_variable("var2", [3, 3])
        with tf.variable_scope("useful_scope"):
            my4 = tf.get_variable("var4", [4, 4])
    tf.train.init_from_checkpoint(ckpt_dir, {"/": "some_scope/"})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(my1), V1)
        np.testing.assert_array_equal(sess.run(my2), V2)
        np.testing.assert_array_equal(sess.run(my4), V4)


def test_init_partitioned(ckpt_dir):
    with tf.variable_scope("some_scope"):
        emb = tf.get_variable("emb", [6, 2], partitioner=tf.fixed_size_partitioner(3))
    tf.train.init_from_checkpoint(ckpt_dir, {"emb": "some_scope/emb"})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(np.concatenate(sess.run(list(emb))), EMB)


def test_init_from_tensorflow_checkpoint():
    k = tf.get_variable("kernel", [4, 3])
    tf.train.init_from_checkpoint(TF_CKPT, {"dense/kernel": k})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(k), np.arange(12).reshape(4, 3) / 10, rtol=1e-6)


def test_init_errors(ckpt_dir):
    with tf.variable_scope("some_scope"):
        tf.get_variable("my1", [2, 3])
        tf.get_variable("wrong_shape", [5])
    with pytest.raises(ValueError, match="var9 is not found"):
        tf.train.init_from_checkpoint(ckpt_dir, {"var9": "some_scope/my1"})
    with pytest.raises(ValueError, match="Shape of variable some_scope/wrong_shape"):
        tf.train.init_from_checkpoint(ckpt_dir, {"var1": "some_scope/wrong_shape"})
    with pytest.raises(ValueError, match="scope only"):
        tf.train.init_from_checkpoint(ckpt_dir, {"var1": "some_scope/"})
    with pytest.raises(ValueError, match="is not found"):
        tf.train.init_from_checkpoint(ckpt_dir, {"useful_scope/": "some_scope/"})
