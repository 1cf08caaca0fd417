"""Custom getters and a variable scope's collection views, as TF 1.x has them."""
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def test_scope_getter_sees_full_names_and_can_change_the_result():
    seen = []

    def doubled(getter, name, *args, **kwargs):
        seen.append((name, kwargs["shape"], kwargs["trainable"]))
        return getter(name, *args, **kwargs) * 2.0

    with tf.variable_scope("m", custom_getter=doubled):
        w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
    assert seen == [("m/w", [2], True)]
    assert w.op.type != "VariableV2"             # the getter's result, not the variable
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(w).tolist() == [2.0, 2.0]
    assert [v.name for v in tf.global_variables()] == ["m/w:0"]


def test_nested_getters_run_inner_first_through_the_outer():
    calls = []

    def tag(label):
        def getter_fn(getter, name, *args, **kwargs):
            calls.append(label)
            return getter(name, *args, **kwargs)
        return getter_fn

    with tf.variable_scope("outer", custom_getter=tag("outer")):
        with tf.variable_scope("inner", custom_getter=tag("inner")):
            v = tf.get_variable("v", [1])
    assert calls == ["inner", "outer"] and v.name == "outer/inner/v:0"


def test_get_variable_custom_getter_and_the_getter_can_rename():
    def renamed(getter, name, *args, **kwargs):
        return getter(name + "_x", *args, **kwargs)
    v = tf.get_variable("v", [1], custom_getter=renamed)
    assert v.name == "v_x:0"


def test_constraint_only_for_getters_that_take_it():
    got = {}

    def old_style(getter, name, shape=None, dtype=None, initializer=None, regularizer=None,
                  reuse=None, trainable=None, collections=None, caching_device=None,
                  partitioner=None, validate_shape=True, use_resource=None,
                  synchronization=None, aggregation=None):
        got["called"] = True
        return getter(name, shape=shape, dtype=dtype, initializer=initializer)

    tf.get_variable("a", [1], custom_getter=old_style, constraint=lambda x: x)
    assert got["called"]


def test_a_non_callable_getter_is_refused():
    with pytest.raises(ValueError, match="custom_getter which is not callable"):
        with tf.variable_scope("bad", custom_getter=3):
            pass


def test_scope_collections():
    with tf.variable_scope("a") as a:
        tf.get_variable("w", [1])
        tf.get_variable("s", [1], trainable=False)
        tf.get_variable("l", [1], trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES])
    with tf.variable_scope("ab"):
        tf.get_variable("w", [1])
    assert [v.name for v in a.global_variables()] == ["a/w:0", "a/s:0"]
    assert [v.name for v in a.trainable_variables()] == ["a/w:0"]
    assert [v.name for v in a.local_variables()] == ["a/l:0"]
    assert len(tf.get_variable_scope().global_variables()) == 3


def test_getter_ops_ignore_name_scopes_and_see_the_scope_reuse():
    def tagged(getter, *args, **kwargs):
        var = getter(*args, **kwargs)
        return tf.identity(var, name="reused" if kwargs["reuse"] else "fresh")

    with tf.name_scope("ns"):
        with tf.variable_scope("s", custom_getter=tagged) as scope:
            first = tf.get_variable("v", [1])
        with tf.variable_scope(scope, reuse=True):
            again = tf.get_variable("v", [1])
    assert (first.name, again.name) == ("fresh:0", "reused:0")


def test_get_variable_refuses_a_non_callable_getter():
    with pytest.raises(ValueError, match="custom_getter which is not callable: 3"):
        tf.get_variable("v", [1], custom_getter=3)


def test_constant_initializer_and_explicit_dtype_must_agree():
    with pytest.raises(ValueError, match="Initializer type 'int32' and explicit dtype "
                                         "'float64' don't match"):
        tf.get_variable("s", initializer=tf.constant(1), dtype=tf.float64)
    assert tf.get_variable("t", initializer=tf.constant(1)).dtype.base_dtype == tf.int32


def test_get_local_variable():
    v = tf.get_local_variable("count", [], tf.int64, initializer=tf.zeros_initializer(),
                              collections=["extra"])
    assert v in tf.local_variables() and v in tf.get_collection("extra")
    assert v not in tf.global_variables() and v not in tf.trainable_variables()


def test_shape_needed_for_an_initializer_that_takes_it():
    with pytest.raises(ValueError, match="must be fully defined.*The initializer passed "
                                         "is not valid"):
        tf.get_variable("x", initializer=tf.ones_initializer())


def test_variable_creator_scope_wraps_every_variable_made_inside():
    seen = []

    def record(next_creator, **kwargs):
        seen.append((kwargs["name"], kwargs["synchronization"], kwargs["use_resource"]))
        return next_creator(**kwargs)

    def rename(next_creator, **kwargs):
        kwargs["name"] = "forced"
        return next_creator(**kwargs)

    with tf.variable_creator_scope(record):
        with tf.variable_creator_scope(rename):
            v = tf.Variable(1.0, name="asked")
        w = tf.get_variable("w", [], use_resource=True,
                            synchronization=tf.VariableSynchronization.ON_WRITE)
    plain = tf.Variable(2.0, name="outside")
    assert v.name == "forced:0" and plain.name == "outside:0"
    assert seen == [("forced", None, None),
                    ("w", tf.VariableSynchronization.ON_WRITE, True)]
    assert w.synchronization == tf.VariableSynchronization.ON_WRITE


def test_a_creator_may_return_something_else():
    def constant_instead(next_creator, **kwargs):
        return tf.constant(7.0, name="not_a_variable")
    with tf.variable_creator_scope(constant_instead):
        t = tf.Variable(1.0)
    assert t.op.type == "Const" and tf.global_variables() == []
