"""Resource variables: how a TF1 program makes one and what it sees of it."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.state import ResourceVariable, is_resource_variable

pytestmark = pytest.mark.usefixtures("graph")


def _run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


@pytest.mark.parametrize("make", [
    lambda: ResourceVariable([1.0, 2.0], name="r"),
    lambda: tf.Variable([1.0, 2.0], name="r", use_resource=True),
    lambda: tf.get_variable("r", initializer=tf.constant([1.0, 2.0]), use_resource=True),
])
def test_every_spelling_makes_a_resource_variable_with_the_value_dtype(make):
    v = make()
    assert isinstance(v, ResourceVariable) and is_resource_variable(v)
    assert v.dtype == tf.float32 and not v.dtype.is_ref_dtype
    assert v.name == "r:0" and v.shape.as_list() == [2]
    assert v in tf.global_variables() and v in tf.trainable_variables()
    np.testing.assert_allclose(_run(v), [1.0, 2.0])


def test_a_plain_variable_stays_a_ref_variable():
    v = tf.Variable(1.0)
    assert not is_resource_variable(v)
    assert v.dtype.is_ref_dtype and v.dtype.base_dtype == tf.float32


def test_variable_scope_use_resource_is_inherited_and_can_be_turned_off():
    with tf.variable_scope("outer", use_resource=True):
        a = tf.get_variable("a", [3])
        with tf.variable_scope("inner"):
            b = tf.get_variable("b", [3])
        c = tf.get_variable("c", [3], use_resource=False)
    assert is_resource_variable(a) and is_resource_variable(b)
    assert not is_resource_variable(c)
    assert b.name == "outer/inner/b:0"


def test_partitioned_get_variable_makes_resource_parts():
    with tf.variable_scope("emb", use_resource=True,
                           partitioner=tf.fixed_size_partitioner(2)):
        pv = tf.get_variable("table", [4, 2])
    parts = list(pv)
    assert len(parts) == 2 and all(is_resource_variable(p) for p in parts)


def test_enable_resource_variables_changes_the_default():
    assert not tf.resource_variables_enabled()
    tf.enable_resource_variables()
    try:
        assert tf.resource_variables_enabled()
        assert is_resource_variable(tf.Variable(1.0))
        assert is_resource_variable(tf.get_variable("x", [2]))
        assert not is_resource_variable(tf.Variable(1.0, use_resource=False))
    finally:
        tf.disable_resource_variables()
    assert not is_resource_variable(tf.Variable(1.0))


def test_chained_assign_adds_under_control_dependencies_all_land():
    v = tf.Variable(0.0, use_resource=True)
    first = tf.assign_add(v, 0.7)
    with tf.control_dependencies([first]):
        second = v.assign_add(0.5)
    assert _run(second) == pytest.approx(1.2)


def test_assign_returns_the_new_value_or_the_op():
    v = ResourceVariable([1.0, 2.0])
    new_value = v.assign([5.0, 6.0])
    op = v.assign_sub([1.0, 1.0], read_value=False)
    assert isinstance(op, tf.Operation)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(new_value), [5.0, 6.0])
        sess.run(op)
        np.testing.assert_allclose(sess.run(v), [4.0, 5.0])


def test_sparse_read_and_scatter_updates_rows():
    v = ResourceVariable([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    rows = v.sparse_read([2, 0])
    add = v.scatter_add(tf.IndexedSlices(tf.constant([[10.0, 10.0]]), tf.constant([1])))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(rows), [[3.0, 3.0], [1.0, 1.0]])
        sess.run(add)
        np.testing.assert_allclose(sess.run(v)[1], [12.0, 12.0])


def test_gradient_through_a_lookup_is_indexed_slices():
    v = ResourceVariable([[1.0, 2.0], [3.0, 4.0]])
    loss = tf.reduce_sum(tf.nn.embedding_lookup(v, [1, 1]))
    (grad,) = tf.gradients(loss, [v])
    assert isinstance(grad, tf.IndexedSlices)
    values, indices = _run([grad.values, grad.indices])
    np.testing.assert_array_equal(indices, [1, 1])
    np.testing.assert_allclose(values, np.ones((2, 2)))


def test_shape_argument_and_its_mismatch_error():
    v = ResourceVariable(tf.zeros([2, 3]), shape=[2, 3])
    assert v.shape.as_list() == [2, 3]
    loose = ResourceVariable(tf.zeros([2, 3]), shape=tf.TensorShape([None, 3]),
                             validate_shape=False)
    assert loose.shape.as_list() == [None, 3]
    with pytest.raises(ValueError, match="not compatible with shape"):
        ResourceVariable(tf.zeros([2, 3]), shape=[3, 2])


def test_variable_def_round_trip_keeps_the_kind():
    v = ResourceVariable(1.5, name="kept")
    proto = v.to_proto()
    assert proto.is_resource
    again = tf.Variable.from_proto(proto)
    assert is_resource_variable(again) and again.name == "kept:0"
    wrapped = tf.Variable(variable_def=tf.Variable(2.0, name="plain").to_proto())
    assert not is_resource_variable(wrapped) and wrapped.name == "plain:0"


def test_replica_device_setter_places_resource_variables_on_ps():
    setter = tf.train.replica_device_setter(ps_tasks=2)
    with tf.device(setter):
        a = ResourceVariable([1, 2])
        b = tf.Variable([3, 4], use_resource=True)
    assert a.device == "/job:ps/task:0" and b.device == "/job:ps/task:1"
    assert a.initializer.device == a.device


def test_saver_round_trips_a_resource_variable(tmp_path):
    v = ResourceVariable([1.0, 2.0], name="saved")
    saver = tf.train.Saver([v])
    path = str(tmp_path / "ckpt")
    with tf.Session() as sess:
        sess.run(v.initializer)
        saver.save(sess, path)
        sess.run(v.assign([0.0, 0.0]))
        saver.restore(sess, path)
        np.testing.assert_allclose(sess.run(v), [1.0, 2.0])


def test_constraint_must_be_callable():
    with pytest.raises(ValueError, match="must be a callable"):
        ResourceVariable(1.0, constraint=3.0)


def test_caching_device_places_the_read_there():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0], caching_device="/job:worker/task:1", name="v")
    assert v.device == "/job:ps/task:0"
    assert v.value().device == "/job:worker/task:1"
    with tf.variable_scope("s", caching_device="/job:worker/task:2"):
        w = tf.get_variable("w", [1], use_resource=True)
        u = tf.get_variable("u", [1], caching_device="/job:worker/task:3")
    assert w.value().device == "/job:worker/task:2"
    assert u.value().device == "/job:worker/task:3"


@pytest.mark.cluster_shape(ps=1, workers=1)
def test_cached_reads_train_across_tasks(inprocess_cluster):
    _, servers = inprocess_cluster
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            ref = tf.Variable([1.0, 2.0], caching_device="/job:worker/task:0")
            res = ResourceVariable([1.0, 2.0], caching_device="/job:worker/task:0")
        with tf.device("/job:worker/task:0"):
            loss = tf.reduce_sum(ref * ref) + tf.reduce_sum(res * res)
            train = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
        with tf.Session(servers[("worker", 0)].target) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            for v in (ref, res):
                np.testing.assert_allclose(sess.run(v.value()), [0.5, 1.0])


def test_gather_nd_reads_elements():
    v = ResourceVariable([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(_run(v.gather_nd([[0, 1], [1, 0]])), [2.0, 3.0])


def test_ref_variable_is_every_non_resource_variable():
    from tensorweave.state import RefVariable
    plain, resource = tf.Variable(1.0), tf.Variable(1.0, use_resource=True)
    assert isinstance(plain, RefVariable) and not isinstance(resource, RefVariable)
    made = RefVariable([1.0, 2.0])
    assert isinstance(made, tf.Variable) and made.dtype.is_ref_dtype
    tf.enable_resource_variables()
    try:
        assert not is_resource_variable(RefVariable(1.0))
    finally:
        tf.disable_resource_variables()


def test_repr_shows_the_kind_of_variable():
    assert repr(tf.Variable(tf.zeros([5, 5]), name="ref")) == \
        "<tf.Variable 'ref:0' shape=(5, 5) dtype=float32_ref>"
    assert repr(ResourceVariable(tf.zeros([2]), name="res")) == \
        "<tf.Variable 'res:0' shape=(2,) dtype=float32>"


@pytest.mark.parametrize("use_resource", [False, True])
def test_synchronization_and_aggregation(use_resource):
    on_read = tf.VariableSynchronization.ON_READ
    v = tf.Variable(1.0, synchronization=on_read, use_resource=use_resource,
                    aggregation=tf.VariableAggregation.MEAN)
    assert not v.trainable and v not in tf.trainable_variables()
    assert tf.Variable(1.0, synchronization=on_read, trainable=True).trainable
    assert (v.synchronization, v.aggregation) == (on_read, tf.VariableAggregation.MEAN)
    again = tf.Variable.from_proto(v.to_proto())
    assert (again.synchronization, again.aggregation) == (on_read,
                                                          tf.VariableAggregation.MEAN)
    w = tf.get_variable("w", [1], synchronization=on_read, use_resource=use_resource)
    assert not w.trainable
    plain = tf.Variable(1.0)
    assert plain.synchronization == tf.VariableSynchronization.AUTO
    assert plain.aggregation == tf.VariableAggregation.NONE
    with pytest.raises(ValueError, match="Invalid variable synchronization mode: 9"):
        tf.Variable(1.0, synchronization=9)


def test_aggregation_modes_of_both_generations_are_equal():
    from tensorweave.state import VariableAggregationV2
    assert tf.VariableAggregation.ONLY_FIRST_TOWER == VariableAggregationV2.ONLY_FIRST_REPLICA
    assert VariableAggregationV2.SUM == tf.VariableAggregation.SUM
    assert tf.VariableAggregation.SUM != VariableAggregationV2.MEAN


def test_legacy_variable_def_without_initial_value_round_trips():
    proto = tf.Variable(tf.constant(3.0), name="old").to_proto()
    proto.ClearField("initial_value_name")
    v = tf.Variable(variable_def=proto)
    assert v.initial_value is None and v.to_proto() == proto
    with pytest.raises(ValueError, match="old:0 has no initial value"):
        v.initialized_value()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(v) == 3.0


def test_set_shape_narrows_a_loose_variable():
    v = tf.Variable(tf.zeros([2, 3]), validate_shape=False)
    assert v.shape.ndims is None
    v.set_shape([2, 3])
    assert v.shape.as_list() == [2, 3] and v.value().shape.as_list() == [2, 3]
    with pytest.raises(ValueError):
        v.set_shape([4])
