"""tf.contrib.framework.arg_scope / add_arg_scope / has_arg_scope / arg_scoped_arguments /
current_arg_scope.

Specification: TF 1.x tensorflow/contrib/framework/python/ops/arg_scope_test.py
(semantics re-derived, tests our own).
"""
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
fw = tf.contrib.framework


@fw.add_arg_scope
def func1(*args, **kwargs):
    """Returns what it was called with."""
    return args, kwargs


@fw.add_arg_scope
def func2(*args, **kwargs):
    return args, kwargs


def undecorated(*args, **kwargs):
    return args, kwargs


@fw.add_arg_scope
def func3(args, a=None, b=1, c=2):
    """Some cool doc string."""
    return args, a, b, c


def test_decorator_keeps_name_and_doc():
    assert func3.__name__ == "func3"
    assert func3.__doc__ == "Some cool doc string."
    assert fw.has_arg_scope(func1) and not fw.has_arg_scope(undecorated)


def test_empty_and_cleared_scope():
    with fw.arg_scope([]) as sc:
        assert sc == {}
    with fw.arg_scope([func1], a=1, b=None, c=[1]):
        assert fw.current_arg_scope() != {}
        with fw.arg_scope({}):
            assert fw.current_arg_scope() == {}
            assert func1(0) == ((0,), {})
        assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})
    assert fw.current_arg_scope() == {}


def test_undecorated_function_is_an_error_naming_it():
    with pytest.raises(ValueError, match="undecorated.*add_arg_scope"):
        with fw.arg_scope([undecorated], a=1):
            pass
    with pytest.raises(TypeError, match="list/tuple"):
        with fw.arg_scope(func1, a=1):
            pass
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with fw.arg_scope({}, a=1):
            pass
    with pytest.raises(ValueError, match="undecorated"):
        fw.arg_scoped_arguments(undecorated)


def test_simple_scope_list_and_tuple():
    for ops in ([func1], (func1,)):
        with fw.arg_scope(ops, a=1, b=None, c=[1]):
            assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})
    assert func1(0) == ((0,), {})  # gone after the block


def test_call_kwargs_win_over_scope():
    with fw.arg_scope([func1], a=1, b=None, c=[1]):
        assert func1(0, b=2) == ((0,), {"a": 1, "b": 2, "c": [1]})
    with fw.arg_scope([func3], b=10):
        assert func3(0) == (0, None, 10, 2)
        assert func3(0, b=5, c=7) == (0, None, 5, 7)


def test_nested_scopes_override_and_keep_outer_values():
    with fw.arg_scope([func1], a=1, b=None, c=[1]):
        with fw.arg_scope([func1], b=2, d=[2]):
            assert func1(0) == ((0,), {"a": 1, "b": 2, "c": [1], "d": [2]})
        assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})


def test_shared_and_partially_shared_scopes():
    with fw.arg_scope([func1, func2], a=1, b=None, c=[1]):
        assert func1(0)[1] == func2(0)[1] == {"a": 1, "b": None, "c": [1]}
        with fw.arg_scope([func2], b=2, d=[2]):
            assert func1(0)[1] == {"a": 1, "b": None, "c": [1]}
            assert func2(0)[1] == {"a": 1, "b": 2, "c": [1], "d": [2]}


def test_current_scope_and_reuse():
    with fw.arg_scope([func1], a=1, b=None, c=[1]) as sc1:
        key = func1._key_op
        assert fw.current_arg_scope() == {key: {"a": 1, "b": None, "c": [1]}}
        with fw.arg_scope([func2], b=2) as sc2:
            assert fw.current_arg_scope() is sc2
            assert sc2[key] == {"a": 1, "b": None, "c": [1]}
            assert sc2[func2._key_op] == {"b": 2}
    with fw.arg_scope(sc1) as again:
        assert again == sc1
        assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})
        assert func2(0) == ((0,), {})
    with fw.arg_scope(sc2):
        assert func2(0) == ((0,), {"b": 2})


def test_arg_scoped_arguments():
    assert fw.arg_scoped_arguments(func3) == ["a", "b", "c"]
    names = fw.arg_scoped_arguments(tf.contrib.layers.conv2d)
    assert "activation_fn" in names and "scope" in names and "inputs" not in names


def test_scope_belongs_to_the_default_graph():
    with fw.arg_scope([func1], a=1):
        with tf.Graph().as_default():
            assert func1(0) == ((0,), {})
        assert func1(0) == ((0,), {"a": 1})


def test_layers_take_defaults_from_scope():
    x = tf.ones([2, 4])
    with fw.arg_scope([tf.contrib.layers.fully_connected], activation_fn=None,
                      weights_initializer=tf.ones_initializer()):
        y = tf.contrib.layers.fully_connected(x, 3)
        z = tf.contrib.layers.fully_connected(x, 3, activation_fn=tf.nn.relu)
    assert y.op.name == "fully_connected/BiasAdd"
    assert z.op.name == "fully_connected_1/Relu"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y).tolist() == [[4.0] * 3] * 2
