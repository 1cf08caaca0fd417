"""Default node names match TensorFlow 1.x's: operators, op wrappers, random ops.

TF1 users find nodes by name (`get_tensor_by_name("add:0")`, TensorBoard, exported
graphs), so the names are API. TF_NAMES below were recorded from real TensorFlow with
tools/compare_tf_op_names.py (`--side tf --record`), which also holds the CASES that build
these graphs; this test runs the same CASES with tensorweave and needs no TensorFlow.
Where TF 2.21 departs from TF 1.15, TF 1.15's names are recorded: a default
`random_uniform` keeps its /min, /max, /sub, /mul ops, and `ones_like` names its static
shape "ones_like/Shape" (2.21: "ones_like/Shape/shape_as_tensor").
"""
from __future__ import annotations

import importlib.util
from typing import Any

import pytest

import tensorweave as tf
from suite_paths import REPO_ROOT

_TOOL = REPO_ROOT / "tools" / "compare_tf_op_names.py"


def _load_tool() -> Any:
    spec = importlib.util.spec_from_file_location("compare_tf_op_names", _TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _load_tool()

TF_NAMES: dict[str, list[str]] = {
    "operators": [
        "x", "y", "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "Neg",
        "Abs", "Less", "LessEqual", "Greater", "GreaterEqual",
    ],
    "operators_python_operand": [
        "x", "y", "add/y", "add", "mul/x", "mul", "sub/x", "sub", "truediv/y", "truediv",
        "truediv_1/x", "truediv_1", "pow/y", "pow", "pow_1/x", "pow_1", "floordiv/y", "floordiv",
        "mod/x", "mod",
    ],
    "operators_int_and_bool": [
        "i", "a", "b", "truediv/y", "truediv/Cast", "truediv/Cast_1", "truediv", "floordiv/y",
        "floordiv", "mod/y", "mod", "LogicalNot", "and", "or", "xor/LogicalOr", "xor/LogicalAnd",
        "xor/LogicalNot", "xor", "Neg",
    ],
    "operators_indexing": [
        "x", "y", "strided_slice/stack", "strided_slice/stack_1", "strided_slice/stack_2",
        "strided_slice", "strided_slice_1/stack", "strided_slice_1/stack_1",
        "strided_slice_1/stack_2", "strided_slice_1", "strided_slice_2/stack",
        "strided_slice_2/stack_1", "strided_slice_2/stack_2", "strided_slice_2",
        "strided_slice_3/stack", "strided_slice_3/stack_1", "strided_slice_3/stack_2",
        "strided_slice_3", "strided_slice_4/stack", "strided_slice_4/stack_1",
        "strided_slice_4/stack_2", "strided_slice_4",
    ],
    "operators_variables": [
        "v/initial_value", "v", "v/Assign", "v/read", "add/y", "add", "mul", "sub", "truediv/y",
        "truediv", "Neg", "strided_slice/stack", "strided_slice/stack_1", "strided_slice/stack_2",
        "strided_slice", "matmul", "Abs",
    ],
    "math_functions": [
        "x", "y", "Add", "Sub", "Mul", "truediv", "truediv_1", "MatMul", "Square", "Sqrt", "Exp",
        "Log", "Maximum", "Minimum", "Abs", "Neg", "Sign", "AddN", "Pow", "floordiv", "FloorMod",
    ],
    "reductions": [
        "x", "y", "b", "Const", "Sum", "Mean/reduction_indices", "Mean", "Const_1", "Max",
        "Const_2", "Min", "Const_3", "Prod", "Const_4", "All", "Const_5", "Any", "Sum_1/input",
        "Sum_1/reduction_indices", "Sum_1", "Mean_1/reduction_indices", "Mean_1",
    ],
    "fill_functions": [
        "x", "y", "zeros", "ones", "zeros_like", "ones_like/Shape", "ones_like/Const",
        "ones_like", "Fill/dims", "Fill/value", "Fill", "range/start", "range/limit",
        "range/delta", "range", "range_1/start", "range_1/limit", "range_1/delta", "range_1",
        "one_hot/on_value", "one_hot/off_value", "one_hot/indices", "one_hot/depth", "one_hot",
        "Greater/y", "Greater", "Neg", "Select", "zeros_1/shape_as_tensor", "zeros_1/Const",
        "zeros_1", "Shape", "ones_1/Const", "ones_1", "Placeholder", "zeros_like_1", "Const",
    ],
    "random_functions": [
        "random_uniform/shape", "random_uniform/min", "random_uniform/max",
        "random_uniform/RandomUniform", "random_uniform/sub", "random_uniform/mul",
        "random_uniform", "random_uniform_1/shape", "random_uniform_1/min",
        "random_uniform_1/max", "random_uniform_1/RandomUniform", "random_uniform_1/sub",
        "random_uniform_1/mul", "random_uniform_1", "random_uniform_2/shape",
        "random_uniform_2/min", "random_uniform_2/max", "random_uniform_2", "random_normal/shape",
        "random_normal/mean", "random_normal/stddev", "random_normal/RandomStandardNormal",
        "random_normal/mul", "random_normal", "truncated_normal/shape", "truncated_normal/mean",
        "truncated_normal/stddev", "truncated_normal/TruncatedNormal", "truncated_normal/mul",
        "truncated_normal", "RandomShuffle/value", "RandomShuffle", "multinomial/logits",
        "multinomial/Multinomial/num_samples", "multinomial/Multinomial",
    ],
    "clip_by_value": [
        "x", "y", "clip_by_value/Minimum/y", "clip_by_value/Minimum", "clip_by_value/y",
        "clip_by_value", "Const", "Max", "clip_by_value_1/Minimum", "clip_by_value_1/y",
        "clip_by_value_1",
    ],
    "nn_functions": [
        "x", "y", "labels", "Relu", "Relu6", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "L2Loss",
        "BiasAdd/bias", "BiasAdd", "strided_slice/stack", "strided_slice/stack_1",
        "strided_slice/stack_2", "strided_slice", "BiasAdd_1", "l2_normalize/Square",
        "l2_normalize/Sum/reduction_indices", "l2_normalize/Sum", "l2_normalize/Maximum/y",
        "l2_normalize/Maximum", "l2_normalize/Rsqrt", "l2_normalize",
        "moments/mean/reduction_indices", "moments/mean", "moments/StopGradient",
        "moments/SquaredDifference", "moments/variance/reduction_indices", "moments/variance",
        "moments/Squeeze", "moments/Squeeze_1",
    ],
    "embedding_lookup": [
        "emb/initial_value", "emb", "emb/Assign", "emb/read", "embedding_lookup/ids",
        "embedding_lookup/axis", "embedding_lookup", "embedding_lookup/Identity",
    ],
    "arg_and_scan": [
        "x", "y", "ArgMax/dimension", "ArgMax", "ArgMin/dimension", "ArgMin", "ArgMax_1/input",
        "ArgMax_1/dimension", "ArgMax_1", "Cumsum/axis", "Cumsum", "Cumprod/axis", "Cumprod",
        "running/x", "running/axis", "running",
    ],
    "array_functions": [
        "x", "y", "Reshape/shape", "Reshape", "concat/axis", "concat", "stack", "unstack",
        "GatherV2/indices", "GatherV2/axis", "GatherV2", "Cast", "transpose/perm", "transpose",
        "ExpandDims/dim", "ExpandDims", "ExpandDims_1/dim", "ExpandDims_1", "Squeeze",
        "Tile/multiples", "Tile", "split/split_dim", "split", "Const", "split_1/split_dim",
        "split_1", "Slice/begin", "Slice/size", "Slice", "Shape", "Size", "Rank", "Identity",
        "ReverseV2/axis", "ReverseV2", "MirrorPad/paddings", "MirrorPad",
    ],
    "plain_arguments": [
        "x", "y", "Abs/x", "Abs", "Square/x", "Square", "Sqrt/x", "Sqrt", "Exp/x", "Exp", "Neg/x",
        "Neg", "Const", "Sign", "Relu/features", "Relu", "Sigmoid/x", "Sigmoid", "Tanh/x", "Tanh",
        "Const_1", "Softmax", "Cast/x", "Cast", "Identity/input", "Identity", "Shape/Const",
        "Shape", "Size/Const", "Size", "Rank/Const", "Rank", "Squeeze/input", "Squeeze",
        "Maximum/y", "Maximum", "Equal/y", "Equal", "AddN", "StopGradient/input", "StopGradient",
        "Floor/x", "Floor", "x_1", "Round", "Reciprocal/x", "Reciprocal",
    ],
}


@pytest.mark.parametrize("case", sorted(TF_NAMES))
def test_case_names_match_tf(case: str) -> None:
    assert TOOL.node_names(tf, case) == TF_NAMES[case]


def test_operator_names_inside_a_user_scope_and_lookup_by_name() -> None:
    with tf.Graph().as_default() as g:
        x = tf.constant([1.0, 2.0], name="x")
        with tf.name_scope("layer"):
            y = x * 2.0 + 1.0
        z = x + x
        assert y.name == "layer/add:0"
        assert [op.name for op in g.get_operations()][1:] == [
            "layer/mul/y", "layer/mul", "layer/add/y", "layer/add", "add"]
        assert g.get_tensor_by_name("add:0") is z
        with tf.Session() as sess:
            assert sess.run(y).tolist() == [3.0, 5.0]


def test_explicit_names_win_and_variables_keep_their_names() -> None:
    with tf.Graph().as_default() as g:
        v = tf.Variable([1.0, 2.0], name="v")
        r = tf.random_uniform([2], 1.0, 3.0, seed=1, name="noise")
        d = tf.truediv(tf.constant([4, 6]), 2, name="half")
        s = tf.add(v, 1.0)
        assert (r.name, d.name, s.name) == ("noise:0", "half:0", "Add:0")
        assert g.get_tensor_by_name("Add/y:0").op.type == "Const"
        assert [x.op.name for x in tf.global_variables()] == ["v"]
        assert d.dtype == tf.float64  # int operands cast inside the "half" scope
        assert g.get_operation_by_name("half/Cast").type == "Cast"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = sess.run(r)
            assert ((out >= 1.0) & (out < 3.0)).all()
            assert sess.run(d).tolist() == [2.0, 3.0]


def test_operator_with_a_foreign_operand_still_converts_with_the_tensor_dtype() -> None:
    with tf.Graph().as_default():
        x = tf.constant([1.5], name="x")
        y = 2 ** x           # reflected: the Python value is "x", converted to float32
        assert y.op.inputs[0].op.name == "pow/x"
        assert y.op.inputs[0].dtype == tf.float32
        i = tf.constant([3], name="i")
        with pytest.raises((TypeError, ValueError)):
            _ = i + 1.5      # as TF: 1.5 is not an int32


def test_zeros_and_ones_are_tf_shaped_graphs_with_the_same_values() -> None:
    with tf.Graph().as_default():
        small = tf.zeros([2, 3], tf.int32)            # one Const, as TF builds it
        assert tf.zeros([]).op.type == "Const" and tf.ones((), name="one").op.name == "one"
        big = tf.ones([40, 40])                       # shape_as_tensor, Const, Fill
        p = tf.placeholder(tf.float32, [None, 2])
        zl, ol = tf.zeros_like(p), tf.ones_like(p, dtype=tf.int64)
        assert (small.op.type, big.op.type, zl.op.type, ol.op.type) == (
            "Const", "Fill", "ZerosLike", "Fill")
        assert big.op.inputs[0].op.name == "ones/shape_as_tensor"
        assert ol.shape.as_list() == [None, 2] and ol.dtype == tf.int64
        r = tf.range(2, 8, 3)
        assert [i.op.name for i in r.op.inputs] == ["range/start", "range/limit", "range/delta"]
        with tf.Session() as sess:
            s, b, z, o, rv = sess.run([small, big, zl, ol, r], {p: [[1.0, 2.0]]})
        assert s.tolist() == [[0, 0, 0]] * 2 and float(b.sum()) == 1600.0
        assert z.tolist() == [[0.0, 0.0]] and o.tolist() == [[1, 1]] and rv.tolist() == [2, 5]


def test_metric_mean_value_and_update_op_names() -> None:
    with tf.Graph().as_default():
        value, update = tf.metrics.mean([1.0, 3.0])
        assert (value.op.name, update.op.name) == ("mean/value", "mean/update_op")
        assert value.op.type == update.op.type == "DivNoNan"
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(value) == 0.0      # nothing seen yet: 0, not NaN
            sess.run(update)
            assert sess.run(value) == 2.0


def test_clip_by_norm_is_tf_named_and_finite_at_a_zero_norm() -> None:
    with tf.Graph().as_default() as g:
        v = tf.Variable([0.0, 0.0], name="v")
        clipped = tf.clip_by_norm(v, 1.0)
        assert clipped.name == "clip_by_norm:0" and clipped.op.type == "Identity"
        assert g.get_operation_by_name("clip_by_norm/truediv").type == "RealDiv"
        grad = tf.gradients(tf.reduce_sum(clipped), v)[0]
        big = tf.clip_by_norm(tf.constant([[3.0, 4.0]]), 1.0, axes=[1])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(grad).tolist() == [1.0, 1.0]   # TF's Select trick: no NaN
            assert sess.run(big).tolist() == [[0.6000000238418579, 0.800000011920929]]


def test_sparse_softmax_cross_entropy_names_as_tf() -> None:
    with tf.Graph().as_default():
        logits = tf.constant([[1.0, 2.0]], name="logits")
        default = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1], logits=logits)
        named = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0], logits=logits,
                                                               name="xentropy")
        assert default.op.name == ("SparseSoftmaxCrossEntropyWithLogits/"
                                   "SparseSoftmaxCrossEntropyWithLogits")
        assert named.name == "xentropy/xentropy:0"
        with tf.Session() as sess:
            a, b = sess.run([default, named])
        assert abs(float(a[0]) - 0.3132617) < 1e-6 and abs(float(b[0]) - 1.3132617) < 1e-6
