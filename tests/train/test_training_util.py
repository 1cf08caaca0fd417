"""Global-step helpers against TF 1.x's training/training_util_test.py (our own tests).

Deliberate difference: two tensors in the GLOBAL_STEP collection raise TypeError
naming both (TF 1.x logged an error and returned None).
"""
import pytest

import tensorweave as tf
from tensorweave.train import training_util


def _check_step(step, dtype=tf.int64):
    assert step.name == "global_step:0"
    assert step.dtype.base_dtype == dtype
    assert step.get_shape().as_list() == []


def test_invalid_dtype_is_refused_in_default_and_given_graph():
    with tf.Graph().as_default() as g:
        assert tf.train.get_global_step() is None
        tf.Variable(0.0, trainable=False, dtype=tf.float32, name="global_step")
        with pytest.raises(TypeError, match="does not have integer type"):
            tf.train.get_global_step()
    with pytest.raises(TypeError, match="does not have integer type"):
        tf.train.get_global_step(g)


def test_invalid_shape_is_refused():
    with tf.Graph().as_default() as g:
        tf.Variable([0], trainable=False, dtype=tf.int32, name="global_step")
        with pytest.raises(TypeError, match="not scalar"):
            tf.train.get_global_step()
    with pytest.raises(TypeError, match="not scalar"):
        tf.train.get_global_step(g)


def test_create_global_step_and_duplicates():
    with tf.Graph().as_default() as g:
        step = tf.train.create_global_step()
        _check_step(step)
        assert not step.trainable
        assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
        assert step in tf.global_variables() and step not in tf.trainable_variables()
        with pytest.raises(ValueError, match="already exists"):
            tf.train.create_global_step()
        with pytest.raises(ValueError, match="already exists"):
            tf.train.create_global_step(g)
        other = tf.Graph()
        _check_step(tf.train.create_global_step(other))  # another graph has its own
        assert tf.train.get_global_step(other).graph is other


def test_get_global_step_finds_a_variable_by_name():
    with tf.Graph().as_default() as g:
        assert tf.train.get_global_step() is None
        tf.Variable(0, trainable=False, dtype=tf.int32, name="global_step")
        _check_step(tf.train.get_global_step(), tf.int32)
    _check_step(tf.train.get_global_step(g), tf.int32)


def test_get_or_create_global_step_creates_once():
    with tf.Graph().as_default() as g:
        first = tf.train.get_or_create_global_step()
        _check_step(first)
        assert tf.train.get_or_create_global_step(g) is first
        assert len(tf.global_variables()) == 1


def test_global_step_created_under_name_scope_is_still_global_step():
    with tf.Graph().as_default():
        with tf.name_scope("tower_0"):
            _check_step(tf.train.get_or_create_global_step())


def test_assert_global_step_accepts_integer_scalars_only():
    with tf.Graph().as_default():
        tf.train.assert_global_step(tf.Variable(0, dtype=tf.int64))
        tf.train.assert_global_step(tf.constant(3))
        tf.train.assert_global_step(tf.placeholder(tf.int64))  # unknown shape is allowed
        with pytest.raises(TypeError, match="must be a Variable or Tensor"):
            tf.train.assert_global_step(3)
        with pytest.raises(TypeError, match="integer type"):
            tf.train.assert_global_step(tf.constant(1.0))
        with pytest.raises(TypeError, match="not scalar"):
            tf.train.assert_global_step(tf.constant([1, 2]))


def test_two_steps_in_the_collection_is_an_error_naming_them():  # deliberate difference
    with tf.Graph().as_default():
        tf.train.create_global_step()
        tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, tf.Variable(0, name="another_step"))
        with pytest.raises(TypeError, match="another_step"):
            tf.train.get_global_step()


def test_global_step_value_in_a_session():
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        bump = tf.assign_add(step, 5)
        with tf.Session() as sess:
            sess.run(step.initializer)
            assert tf.train.global_step(sess, step) == 0
            sess.run(bump)
            value = tf.train.global_step(sess, step)
            assert value == 5 and isinstance(value, int)


def test_global_step_read_is_none_without_a_step_and_cached():
    with tf.Graph().as_default():
        assert training_util._get_or_create_global_step_read() is None
        tf.train.create_global_step()
        first = training_util._get_or_create_global_step_read()
        assert first is not None
        assert training_util._get_or_create_global_step_read() is first


def test_reads_happen_before_increments_in_one_run():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="get_or_create_global_step"):
            training_util._increment_global_step(1)
        tf.train.create_global_step()
        read = training_util._get_or_create_global_step_read()
        inc_one = training_util._increment_global_step(1)
        inc_three = training_util._increment_global_step(3)
        with tf.train.MonitoredTrainingSession() as sess:
            assert sess.run([read, inc_one])[0] == 0
            assert sess.run([read, inc_three])[0] == 1
            assert sess.run(read) == 4
