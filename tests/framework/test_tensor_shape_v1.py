"""TF 1.x static shapes: `shape[i]` is a tf.Dimension, with unknown kept as None through
arithmetic and comparisons; `enable_v2_tensorshape` switches indexing to plain ints."""
import pickle

import pytest

import tensorweave as tf
from tensorweave.framework import tensor_shape
from tensorweave.framework.tensor_shape import Dimension, TensorShape


@pytest.fixture(autouse=True)
def _v1_shapes():
    tf.disable_v2_tensorshape()
    yield
    tf.disable_v2_tensorshape()


def test_indexing_iteration_and_dims_give_dimensions():
    s = TensorShape([None, 3, 4])
    assert isinstance(s[1], Dimension) and s[1].value == 3
    assert s[0].value is None and s[-1].value == 4
    assert [d.value for d in s] == [None, 3, 4]
    assert [d.value for d in s.dims] == [None, 3, 4]
    assert s.as_list() == [None, 3, 4]
    assert isinstance(s[1:], TensorShape) and s[1:].as_list() == [3, 4]
    assert repr(s) == "TensorShape([Dimension(None), Dimension(3), Dimension(4)])"
    assert str(s) == "(?, 3, 4)"


def test_unknown_rank_shape_indexing():
    s = TensorShape(None)
    assert s.dims is None and s.rank is None
    assert isinstance(s[2], Dimension) and s[2].value is None
    assert s[1:4].as_list() == [None, None, None]
    assert s[1:].rank is None and s[-2:].rank is None
    with pytest.raises(ValueError, match="Steps"):
        s[::2]
    with pytest.raises(ValueError, match="unknown rank"):
        list(s)
    with pytest.raises(ValueError, match="not defined on an unknown TensorShape"):
        s.as_list()
    assert tf.dimension_at_index(s, 3).value is None
    assert tf.dimension_at_index(TensorShape([5, 6]), 1).value == 6


def test_get_shape_value_idiom_on_tensors():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    assert x.get_shape()[-1].value == 4
    assert x.shape[0].value is None
    assert tf.dimension_value(x.shape[1]) == 3
    assert tf.compat.dimension_value(x.shape[0]) is None
    assert tf.dimension_value(7) == 7 and tf.dimension_value(None) is None


def test_dimension_arithmetic_with_ints_and_dimensions():
    d, unknown = Dimension(12), Dimension(None)
    assert (d + 3).value == 15 and (3 + d).value == 15 and (d + Dimension(3)).value == 15
    assert (d - 3).value == 9 and (13 - d).value == 1
    assert (d * 2).value == 24 and (2 * d).value == 24
    assert (d // 5).value == 2 and (30 // d).value == 2
    assert (d % 5).value == 2 and (30 % d).value == 6
    for result in (d + unknown, unknown - 1, 2 * unknown, unknown // d, d % unknown):
        assert isinstance(result, Dimension) and result.value is None
    with pytest.raises(TypeError, match="please use // instead"):
        d / 2
    with pytest.raises(TypeError, match="please use // instead"):
        6 / d
    assert [0] * Dimension(3) == [0, 0, 0]


def test_dimension_comparisons_answer_none_when_unknown():
    d, unknown = Dimension(12), Dimension(None)
    assert d == 12 and d == Dimension(12) and 12 == d and d != 13
    assert (d == unknown) is None and (unknown == unknown) is None
    assert (unknown == None) is None  # noqa: E711 - TF's answer for the ambiguous case
    assert (d != unknown) is None
    assert d < 13 and d <= 12 and d > 11 and d >= 12
    for answer in (d < unknown, unknown <= d, unknown > unknown, d >= unknown):
        assert answer is None
    assert (d == "12") is True and (d == "x") is False and (d == 12.5) is False
    assert max(Dimension(3), Dimension(5)).value == 5


def test_dimension_conversions_and_truthiness():
    d = Dimension(3)
    assert int(d) == 3 and float(d) == 3.0 and [10, 20, 30, 40][d] == 40
    assert list(range(d)) == [0, 1, 2]
    assert "%d" % d == "3" and f"{d}" == "3" and str(Dimension(None)) == "?"
    assert bool(d) and not Dimension(0) and not Dimension(None)
    with pytest.raises(TypeError, match="unknown Dimension"):
        int(Dimension(None))
    with pytest.raises(TypeError, match="unhashable"):
        hash(d)
    assert pickle.loads(pickle.dumps(d)).value == 3
    assert Dimension("7").value == 7
    with pytest.raises(ValueError, match="must be >= 0"):
        Dimension(-1)
    with pytest.raises(ValueError, match="Ambiguous"):
        Dimension(2.5)
    with pytest.raises(TypeError):
        Dimension(tf.float32)


def test_dimension_merge_and_compatibility():
    assert Dimension(None).merge_with(4).value == 4
    assert Dimension(4).merge_with(Dimension(None)).value == 4
    assert Dimension(4).is_compatible_with(None) and not Dimension(4).is_compatible_with(5)
    with pytest.raises(ValueError, match="not compatible"):
        Dimension(4).merge_with(5)
    with pytest.raises(ValueError, match="not compatible"):
        Dimension(4).assert_is_compatible_with(Dimension(5))
    assert tensor_shape.as_dimension(3).value == 3
    d = Dimension(2)
    assert tensor_shape.as_dimension(d) is d


def test_tensor_shape_helpers():
    s = TensorShape([Dimension(3), None, 7])
    assert s.merge_with([None, 4, 7]).as_list() == [3, 4, 7]
    assert TensorShape([2, 1]).most_specific_compatible_shape([5, 1]).as_list() == [None, 1]
    assert TensorShape([1, 2]).most_specific_compatible_shape([1, 2, 3]).dims is None
    assert ([1] + TensorShape([2])).as_list() == [1, 2]
    assert (TensorShape([2]) + Dimension(3)).as_list() == [2, 3]
    s.assert_same_rank([1, 2, 3])
    with pytest.raises(ValueError, match="same rank"):
        s.assert_same_rank([1, 2])
    with pytest.raises(ValueError, match="at most 2"):
        s.with_rank_at_most(2)
    with pytest.raises(ValueError, match="not fully defined"):
        s.assert_is_fully_defined()
    assert pickle.loads(pickle.dumps(s)).as_list() == [3, None, 7]
    assert TensorShape(s.as_proto()).as_list() == [3, None, 7]
    assert tensor_shape.unknown_shape(ndims=2).as_list() == [None, None]
    with pytest.raises(TypeError, match="ambiguous"):
        TensorShape("12")


def test_v2_tensorshape_switch():
    s = TensorShape([None, 3])
    tf.enable_v2_tensorshape()
    assert s[1] == 3 and isinstance(s[1], int) and s[0] is None
    assert list(s) == [None, 3] and TensorShape(None)[0] is None
    assert repr(s) == "TensorShape([None, 3])"
    assert isinstance(s.dims[1], Dimension)  # dims stays Dimensions, as in TF
    tf.disable_v2_tensorshape()
    assert isinstance(s[1], Dimension)
    tf.enable_v2_tensorshape()
    tf.disable_v2_behavior()  # TF's disable_v2_behavior restores TF 1.x shapes too
    assert isinstance(s[1], Dimension)
