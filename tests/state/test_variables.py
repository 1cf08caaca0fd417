"""Variables, state ops, initializers, variable scopes and collections."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


# ---- tf.Variable basics -----------------------------------------------------------------
def test_variable_names_ops_and_properties():
    v = tf.Variable([1.0, 2.0], name="v")
    assert v.name == "v:0"
    assert v.op.name == "v" and v.op.type == "VariableV2"
    assert v.dtype == tf.float32._as_ref and v.dtype.base_dtype == tf.float32
    assert v.shape.as_list() == [2] and v.get_shape().as_list() == [2]
    assert v.initializer.name == "v/Assign" and v.initializer.type == "Assign"
    assert v.value().name == "v/read:0" and v.value().dtype == tf.float32
    assert v.initial_value.name == "v/initial_value:0"
    assert v.graph is tf.get_default_graph()
    # a second variable with the same name is made unique
    assert tf.Variable(0.0, name="v").name == "v_1:0"
    assert tf.Variable(0.0).name == "Variable:0"


def test_initialize_read_and_two_sessions_are_independent():
    v = tf.Variable([1.0, 2.0], name="v")
    inc = tf.assign_add(v, [1.0, 1.0])
    with tf.Session() as s1, tf.Session() as s2:
        s1.run(tf.global_variables_initializer())
        s2.run(v.initializer)
        s1.run(inc)
        s1.run(inc)
        np.testing.assert_allclose(s1.run(v), [3.0, 4.0])
        np.testing.assert_allclose(s2.run(v), [1.0, 2.0])
        np.testing.assert_allclose(v.eval(session=s2), [1.0, 2.0])


def test_uninitialized_read_raises_failed_precondition_naming_variable():
    v = tf.Variable(3.0, name="weights")
    y = v * 2.0
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value weights"):
            sess.run(y)
        with pytest.raises(tf.errors.FailedPreconditionError, match="weights"):
            sess.run(v)


def test_assign_ops_return_new_value():
    v = tf.Variable([1.0, 2.0, 3.0], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(v.assign([4.0, 5.0, 6.0])), [4, 5, 6])
        np.testing.assert_allclose(sess.run(tf.assign(v, [0.0, 0.0, 0.0])), [0, 0, 0])
        np.testing.assert_allclose(sess.run(v.assign_add([1.0, 2.0, 3.0])), [1, 2, 3])
        np.testing.assert_allclose(sess.run(tf.assign_sub(v, [1.0, 1.0, 1.0])), [0, 1, 2])
        np.testing.assert_allclose(sess.run(v.assign_sub([0.5, 0.5, 0.5])), [-0.5, 0.5, 1.5])


def test_fetched_values_are_snapshots_not_aliases():
    v = tf.Variable([1.0, 2.0], name="v")
    inc = tf.assign_add(v, [1.0, 1.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        read = sess.run(v.value())
        sess.run(inc)
        np.testing.assert_allclose(before, [1.0, 2.0])
        np.testing.assert_allclose(read, [1.0, 2.0])


def test_scatter_ops_with_duplicates():
    v = tf.Variable(np.zeros((4, 2), np.float32), name="table")
    with tf.Session() as sess:
        sess.run(v.initializer)
        out = sess.run(tf.scatter_add(v, [0, 0, 3], [[1, 1], [2, 2], [5, 5]]))
        np.testing.assert_allclose(out, [[3, 3], [0, 0], [0, 0], [5, 5]])
        out = sess.run(tf.scatter_sub(v, [3], [[1, 2]]))
        np.testing.assert_allclose(out[3], [4, 3])
        out = sess.run(tf.scatter_update(v, [1, 2], [[7, 7], [8, 8]]))
        np.testing.assert_allclose(out, [[3, 3], [7, 7], [8, 8], [4, 3]])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = 9"):
            sess.run(tf.scatter_add(v, [9], [[1, 1]]))


def test_assign_shape_checks():
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match="incompatible"):
        tf.assign(v, [1.0, 2.0, 3.0])
    w = tf.Variable([1.0, 2.0], validate_shape=False, name="w")
    grow = tf.assign(w, [1.0, 2.0, 3.0], validate_shape=False)
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(grow), [1, 2, 3])


def test_variable_arithmetic_and_conversion():
    v = tf.Variable([1.0, 2.0], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(v + 1.0), [2, 3])
        np.testing.assert_allclose(sess.run(2.0 * v), [2, 4])
        np.testing.assert_allclose(sess.run(-v), [-1, -2])
        np.testing.assert_allclose(sess.run(v[1]), 2.0)
        np.testing.assert_allclose(sess.run(tf.identity(v)), [1, 2])
        np.testing.assert_allclose(sess.run(tf.convert_to_tensor(v)), [1, 2])
    assert tf.convert_to_tensor(v) is v.value()
    assert tf.convert_to_tensor(v, as_ref=True) is v._ref()


def test_callable_initial_value_is_colocated_and_dtype():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(lambda: tf.ones([2, 3]), name="v", dtype=tf.float32)
    inits = [op for op in tf.get_default_graph().get_operations()
             if op.name.startswith("v/Initializer/")]
    assert inits
    for op in inits:
        assert op.get_attr("_class") == [b"loc:@v"]
        assert op.device == v.device
    assert v.initializer.get_attr("_class") == [b"loc:@v"]
    assert "ps" in v.device
    # A local session has no ps task: soft placement runs the ps ops here.
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(v), np.ones((2, 3)))


def test_load_and_initialized_value():
    v = tf.Variable([0.0, 0.0], name="v")
    w = tf.Variable(v.initialized_value() + 1.0, name="w")
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(w), [1.0, 1.0])
        v.load([5.0, 6.0], sess)
        np.testing.assert_allclose(sess.run(v), [5.0, 6.0])
        # once v is initialized, its current value is used and v is not re-assigned
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(w), [6.0, 7.0])
        np.testing.assert_allclose(sess.run(v), [5.0, 6.0])


def test_variable_errors():
    with pytest.raises(ValueError, match="initial_value must be specified"):
        tf.Variable()
    with pytest.raises(ValueError, match="expected_shape"):
        tf.Variable([1.0, 2.0], expected_shape=[3])
    v = tf.Variable(1.0, name="v")
    with pytest.raises(TypeError, match="not iterable"):
        iter(v)


# ---- collections and initializers ---------------------------------------------------------
def test_collections():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(1.0, trainable=False, name="b")
    c = tf.Variable(1.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="c")
    d = tf.Variable(1.0, collections=[tf.GraphKeys.GLOBAL_VARIABLES,
                                      tf.GraphKeys.MODEL_VARIABLES], name="d")
    assert tf.global_variables() == [a, b, d]
    assert tf.trainable_variables() == [a, c, d]
    assert tf.local_variables() == [c]
    assert tf.model_variables() == [d]
    assert tf.global_variables(scope="a") == [a]


def test_report_uninitialized_and_initializers():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    loc = tf.Variable(3.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="loc")
    report = tf.report_uninitialized_variables()
    assert report.dtype == tf.string
    with tf.Session() as sess:
        assert list(sess.run(report)) == [b"a", b"b", b"loc"]
        assert not sess.run(tf.is_variable_initialized(a))
        with pytest.raises(tf.errors.FailedPreconditionError, match="a"):
            sess.run(tf.assert_variables_initialized())
        sess.run(tf.variables_initializer([a]))
        assert sess.run(tf.is_variable_initialized(a))
        assert list(sess.run(report)) == [b"b", b"loc"]
        sess.run(tf.global_variables_initializer())
        assert list(sess.run(report)) == [b"loc"]
        sess.run(tf.local_variables_initializer())
        assert list(sess.run(report)) == []
        assert sess.run(tf.report_uninitialized_variables([])).shape == (0,)
        sess.run(tf.assert_variables_initialized())
        assert sess.run(loc) == 3.0 and sess.run(b) == 2.0
    assert tf.initialize_all_variables().type == "NoOp"
    assert tf.variables_initializer([]).type == "NoOp"


def test_initializer_functions():
    tf.set_random_seed(1)
    shapes = [3, 4]
    cases = {
        "zeros": (tf.zeros_initializer(), lambda x: np.all(x == 0)),
        "ones": (tf.ones_initializer(), lambda x: np.all(x == 1)),
        "const": (tf.constant_initializer(0.5), lambda x: np.all(x == 0.5)),
        "const_list": (tf.constant_initializer(list(range(12))),
                       lambda x: np.array_equal(x.reshape(-1), np.arange(12))),
        "normal": (tf.random_normal_initializer(0.0, 0.1), lambda x: np.abs(x).max() < 1),
        "trunc": (tf.truncated_normal_initializer(stddev=0.1),
                  lambda x: np.abs(x).max() <= 0.2 + 1e-6),
        "uniform": (tf.random_uniform_initializer(-0.1, 0.1), lambda x: np.abs(x).max() <= .1),
        "glorot_u": (tf.glorot_uniform_initializer(),
                     lambda x: np.abs(x).max() <= np.sqrt(6 / 7) + 1e-6),
        "glorot_n": (tf.glorot_normal_initializer(), lambda x: x.std() > 0),
        "vs": (tf.variance_scaling_initializer(2.0, "fan_in", "uniform"),
               lambda x: np.abs(x).max() <= np.sqrt(3 * 2.0 / 3) + 1e-6),
        "tf.initializers": (tf.initializers.glorot_uniform(), lambda x: x.std() > 0),
    }
    vs = {k: tf.get_variable(k.replace(".", "_"), shapes, initializer=init)
          for k, (init, _) in cases.items()}
    with tf.Session() as sess:
        sess.run(tf.initializers.global_variables())
        for k, (_, check) in cases.items():
            val = sess.run(vs[k])
            assert val.shape == (3, 4) and val.dtype == np.float32, k
            assert check(val), (k, val)
    with pytest.raises(ValueError, match="mode"):
        tf.variance_scaling_initializer(mode="bad")


def test_variance_scaling_statistics():
    tf.set_random_seed(3)
    w = tf.get_variable("w", [400, 300], initializer=tf.variance_scaling_initializer(
        scale=2.0, mode="fan_in", distribution="untruncated_normal"))
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert abs(sess.run(w).std() - np.sqrt(2.0 / 400)) < 0.005


# ---- variable scopes ----------------------------------------------------------------------
def test_get_variable_names_defaults_and_reuse():
    with tf.variable_scope("foo"):
        w = tf.get_variable("w", [2, 3])
        with tf.variable_scope("bar"):
            b = tf.get_variable("b", [3], initializer=tf.zeros_initializer())
            step = tf.get_variable("i", [], dtype=tf.int64)
            c = tf.constant(1.0, name="c")
    assert w.name == "foo/w:0" and b.name == "foo/bar/b:0" and c.name == "foo/bar/c:0"
    assert step.dtype.base_dtype == tf.int64
    with tf.variable_scope("foo", reuse=True):
        assert tf.get_variable("w") is w
        assert tf.get_variable("w", [2, 3]) is w
        with tf.variable_scope("bar"):
            assert tf.get_variable_scope().reuse is True
            assert tf.get_variable("b") is b
    with tf.variable_scope("foo") as scope:
        scope.reuse_variables()
        assert tf.get_variable("w") is w
    with tf.variable_scope("foo", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("w") is w
        fresh = tf.get_variable("fresh", [1])
    assert fresh.name == "foo/fresh:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        wv = sess.run(w)
        assert np.abs(wv).max() <= np.sqrt(6 / 5) and wv.std() > 0  # glorot_uniform default
        assert sess.run(step) == 0


def test_reuse_errors_match_tf1():
    with tf.variable_scope("foo"):
        tf.get_variable("w", [1])
    with pytest.raises(ValueError, match=r"Variable foo/w already exists, disallowed\. Did "
                       r"you mean to set reuse=True or reuse=tf\.AUTO_REUSE in VarScope\?"):
        with tf.variable_scope("foo"):
            tf.get_variable("w", [1])
    with pytest.raises(ValueError, match=r"Variable foo/nope does not exist, or was not "
                       r"created with tf\.get_variable\(\)"):
        with tf.variable_scope("foo", reuse=True):
            tf.get_variable("nope", [1])
    with pytest.raises(ValueError, match="Trying to share variable foo/w, but specified shape"):
        with tf.variable_scope("foo", reuse=True):
            tf.get_variable("w", [2])
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("noshape")
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape"):
        tf.get_variable("const", [2], initializer=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with tf.variable_scope(None, default_name="x", reuse=True):
            pass


def test_scope_objects_default_names_and_inheritance():
    init = tf.constant_initializer(7.0)
    with tf.variable_scope("outer", initializer=init) as outer:
        a = tf.get_variable("a", [1])
    with tf.variable_scope(outer):
        b = tf.get_variable("b", [1])  # inherits the captured scope's initializer
        c = tf.constant(0.0, name="c")
    assert b.name == "outer/b:0"
    assert c.name == "outer_1/c:0"  # re-entering a scope object opens a new name scope
    with tf.variable_scope(None, default_name="layer") as s1:
        pass
    with tf.variable_scope(None, default_name="layer") as s2:
        pass
    assert (s1.name, s2.name) == ("layer", "layer_1")
    assert tf.get_variable_scope().name == ""
    v = tf.get_variable("from_value", initializer=np.array([1, 2], np.int32))
    assert v.dtype.base_dtype == tf.int32 and v.shape.as_list() == [2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(a)[0] == 7.0 and sess.run(b)[0] == 7.0


def test_regularizer_collects_losses_and_partitioner_is_stored():
    def reg(w):
        return tf.reduce_sum(tf.square(w))
    part = tf.fixed_size_partitioner(1)
    with tf.variable_scope("p", partitioner=part) as pscope:
        pass
    assert pscope.partitioner is part
    with tf.variable_scope("s", regularizer=reg):
        w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
        tf.get_variable("nr", [2], regularizer=tf.no_regularizer)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 1 and losses[0].name.startswith("s/w/Regularizer/")
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(losses[0]) == 2.0


def test_variable_scope_is_per_graph():
    g2 = tf.Graph()
    with tf.variable_scope("a"):
        with g2.as_default():
            assert tf.get_variable_scope().name == ""
            v = tf.get_variable("w", [1])
    assert v.name == "w:0" and v.graph is g2


def test_state_ops_inside_while_and_cond_bodies_update_the_variable():
    counter = tf.Variable(0, name="counter")

    def body(i):
        with tf.control_dependencies([tf.assign_add(counter, 1)]):
            return i + 1
    loop = tf.while_loop(lambda i: i < 4, body, [tf.constant(0)])
    v = tf.Variable(10.0, name="v")
    pred = tf.placeholder(tf.bool, [])
    out = tf.cond(pred, lambda: tf.assign(v, 5.0) * 1.0, lambda: tf.identity(v))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="counter"):
            sess.run(loop)
        sess.run(tf.global_variables_initializer())
        assert sess.run(loop) == 4 and sess.run(counter) == 4
        assert sess.run(loop) == 4 and sess.run(counter) == 8
        assert sess.run(out, {pred: False}) == 10.0 and sess.run(v) == 10.0
        assert sess.run(out, {pred: True}) == 5.0 and sess.run(v) == 5.0


def test_assert_variables_initialized_is_a_rank_tensor_or_none():
    assert tf.assert_variables_initialized() is None
    v, w = tf.Variable([1, 2]), tf.Variable([[3]])
    one = tf.assert_variables_initialized([v])
    both = tf.assert_variables_initialized()
    with tf.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value"):
            sess.run(one)
        sess.run(v.initializer)
        assert sess.run(one) == 1 and sess.run(both).tolist() == [1, 2]


def test_initial_values_reading_other_variables_initialize_in_any_order():
    v = tf.Variable(2, name="v")
    w = tf.Variable(v * 3, name="w")
    noise = tf.random_uniform([3], seed=1)
    r = tf.Variable(noise + tf.cast(v, tf.float32), name="r")
    assert w.initial_value.op.type == "Mul"          # the expression as written
    with tf.Session() as sess:
        sess.run([w.initializer, r.initializer])     # before v's initializer
        assert sess.run(w) == 6
        assert not sess.run(tf.is_variable_initialized(v))
        sess.run(v.initializer)
        sess.run(v.assign(10))
        sess.run(w.initializer)                      # v set: its current value counts
        assert sess.run(w) == 30
    # Only the ops between the read of v and the initial value were copied.
    copied = [op.type for op in tf.get_default_graph().get_operations()
              if op.name.endswith("_r")]
    assert "RandomUniform" not in copied
    assert any(t in copied for t in ("AddV2", "Add"))
