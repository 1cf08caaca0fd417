"""train.slot_creator: slot names, scopes, dtypes, colocation and run-time shapes."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.state import ResourceVariable, is_resource_variable
from tensorweave.train import slot_creator

pytestmark = pytest.mark.usefixtures("graph")


def _init_and_run(fetch):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetch)


def test_slot_from_a_value_is_named_under_the_primary():
    w = tf.Variable([3.0, 4.0], name="w")
    slot = slot_creator.create_slot(w, w.initialized_value() * 2.0, "double")
    assert slot.op.name == "w/double"
    assert not slot.trainable and slot not in tf.trainable_variables()
    np.testing.assert_allclose(_init_and_run(slot), [6.0, 8.0])


def test_second_slot_of_the_same_name_is_made_unique():
    w = tf.Variable([1.0], name="w")
    first = slot_creator.create_zeros_slot(w, "m")
    second = slot_creator.create_zeros_slot(w, "m")
    assert (first.op.name, second.op.name) == ("w/m", "w/m_1")


def test_enclosing_variable_scope_prefixes_the_slot():
    with tf.variable_scope("block"):
        w = tf.Variable([1.0, 2.0], name="w")          # op "block/w"
        slot = slot_creator.create_zeros_slot(w, "acc")
    assert slot.op.name == "block/block/w/acc"


def test_zeros_slot_takes_a_dtype_and_a_tensor_primary():
    c = tf.constant([1.0, 2.0, 3.0], name="c")
    slot = slot_creator.create_zeros_slot(c, "z", dtype=tf.float64)
    assert slot.op.name == "c/z" and slot.dtype.base_dtype == tf.float64
    np.testing.assert_array_equal(_init_and_run(slot), [0.0, 0.0, 0.0])


def test_slot_with_initializer():
    w = tf.Variable(tf.zeros([2, 2]), name="w")
    slot = slot_creator.create_slot_with_initializer(
        w, tf.constant_initializer(0.25), w.get_shape(), tf.float32, "quarter")
    np.testing.assert_allclose(_init_and_run(slot), np.full((2, 2), 0.25))


def test_slot_of_a_run_time_shaped_variable_has_that_shape():
    n = tf.placeholder_with_default(tf.constant([3]), shape=[None])
    w = tf.get_variable("w", initializer=tf.ones(n), validate_shape=False)
    assert not w.shape.is_fully_defined()
    slot = slot_creator.create_zeros_slot(w, "m")
    assert not slot.shape.is_fully_defined()
    np.testing.assert_array_equal(_init_and_run(tf.shape(slot)), [3])


def test_slot_is_colocated_and_on_the_primary_device():
    with tf.device("/job:ps/task:1"):
        w = tf.Variable([1.0], name="w")
    slot = slot_creator.create_zeros_slot(w, "m")
    assert slot.device == w.device
    assert slot.op.colocation_groups() == [b"loc:@w"]
    loose = slot_creator.create_zeros_slot(w, "free", colocate_with_primary=False)
    assert loose.op.colocation_groups() == [b"loc:@w/free"]


def test_slot_kind_follows_the_primary():
    r = ResourceVariable([1.0], name="r")
    assert is_resource_variable(slot_creator.create_zeros_slot(r, "m"))
    plain = tf.Variable([1.0], name="p")
    with tf.variable_scope("s", use_resource=True):
        assert not is_resource_variable(slot_creator.create_zeros_slot(plain, "m"))


def test_slots_of_partitioned_parts_are_slices_of_one_full_slot():
    with tf.variable_scope("lin", partitioner=tf.fixed_size_partitioner(2)):
        pv = tf.get_variable("emb", [4, 3])
        slots = [slot_creator.create_zeros_slot(p, "Adagrad") for p in pv]
    infos = [s._save_slice_info for s in slots]
    assert [s.op.name for s in slots] == ["lin/lin/emb/part_0/Adagrad",
                                          "lin/lin/emb/part_1/Adagrad"]
    assert {i.full_name for i in infos} == {"lin/emb/Adagrad"}
    assert [list(i.var_offset) for i in infos] == [[0, 0], [2, 0]]
    assert all(list(i.full_shape) == [4, 3] for i in infos)
    # The scope's partitioner is back after the slot was made unpartitioned.
    assert tf.get_variable_scope().partitioner is None


def test_scope_partitioner_is_not_applied_to_slots():
    with tf.variable_scope("p", partitioner=tf.fixed_size_partitioner(2)):
        w = tf.Variable(tf.zeros([4, 2]), name="w")
        slot = slot_creator.create_zeros_slot(w, "m")
        assert tf.get_variable_scope().partitioner is not None
    assert isinstance(slot, tf.Variable) and slot.shape.as_list() == [4, 2]


def test_a_primary_without_an_op_is_refused():
    with pytest.raises(TypeError, match="must be a Variable or a Tensor"):
        slot_creator.create_zeros_slot(np.zeros(2), "m")


def test_moving_average_shadows_are_slots():
    with tf.variable_scope("s"):
        v = tf.Variable([1.0], name="v")                # op "s/v"
        ema = tf.train.ExponentialMovingAverage(0.9)
        ema.apply([v])
    assert ema.average(v).op.name == "s/s/v/ExponentialMovingAverage"
    r = ResourceVariable([2.0], name="r")
    ema.apply([r])
    assert is_resource_variable(ema.average(r))
    # A tensor of run-time shape gets an average of that shape.
    t = tf.placeholder_with_default(tf.constant([1.0, 3.0]), shape=[None], name="t")
    update = ema.apply([t])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(update)
        np.testing.assert_allclose(sess.run(ema.average(t)), [0.1, 0.3], rtol=1e-6)


def test_zero_debias_variables_are_named_in_the_shadow_scope():
    from tensorweave.train.moving_averages import assign_moving_average
    with tf.variable_scope("s1") as s1:
        with tf.variable_scope("s2"):
            var = tf.Variable(1.0, name="Var")
            first = assign_moving_average(var, 0.0, 0.99)
            assign_moving_average(var, 0.0, 0.99)
    assert sorted(v.name for v in s1.global_variables()) == [
        "s1/s2/Var:0", "s1/s2/s1/s2/Var/biased:0", "s1/s2/s1/s2/Var/biased_1:0",
        "s1/s2/s1/s2/Var/local_step:0", "s1/s2/s1/s2/Var/local_step_1:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(first) == pytest.approx(0.0)    # debiased: the value itself
