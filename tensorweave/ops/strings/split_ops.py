"""StringSplit and StringSplitV2 (tokens as a SparseTensor) and ReduceJoin.

Example:
    >>> sp = string_split(tf.constant(["hello world", "a"]))
    >>> sess.run(sp).values   # [b"hello", b"world", b"a"]; dense_shape [2, 2]
"""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from tensorweave.framework.arg_aliases import one_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import (constant, constant_value, contains_tensor,
                                           convert_to_tensor)
from tensorweave.framework.graph import get_default_graph
from tensorweave.ops.op_author import create_op, create_tensor, define_op
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.array import fill_ops, shape_ops
from tensorweave.ops.io import tf_checkpoint_ops as _ckpt_ops  # noqa: F401 - StringJoin
from tensorweave.ops.math import binary_ops
from tensorweave.ops.strings.regex_ops import (as_bytes, attr_text, check_string, scalar_bytes,
                                           string_input)


def _sparse_outputs(x: Tensor, sep: Tensor, op_type: str, sep_arg: str) -> Any:
    check_string(x, op_type, "input")
    check_string(sep, op_type, sep_arg)
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"{op_type}: input {x.name} must be a vector, got shape {x.shape}")
    if sep.shape.ndims not in (None, 0):
        raise ValueError(f"{op_type}: {sep_arg} {sep.name} must be a scalar, got shape "
                         f"{sep.shape}")
    return [(_dt.int64, TensorShape([None, 2])), (_dt.string, TensorShape([None])),
            (_dt.int64, TensorShape([2]))]


def _to_sparse(tokens: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    indices = [(row, col) for row, toks in enumerate(tokens) for col in range(len(toks))]
    values = [t for toks in tokens for t in toks]
    width = max((len(toks) for toks in tokens), default=0)
    return (np.asarray(indices, dtype=np.int64).reshape(-1, 2),
            np.asarray(values, dtype=object).reshape(-1),
            np.asarray([len(tokens), width], dtype=np.int64))


def _vector(x: Any, op_type: str) -> list[bytes]:
    arr = np.asarray(x, dtype=object)
    if arr.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"{op_type}: input must be a vector, "
                                                      f"got shape: {list(arr.shape)}")
    return [as_bytes(v) for v in arr]


# ---- StringSplit (TF 1.x tf.string_split) -------------------------------------------------
split_op = define_op("StringSplit", inputs=("input", "delimiter"), attrs={"skip_empty": True})


@split_op.shape
def _(x: Tensor, delimiter: Tensor, *, skip_empty: bool) -> Any:
    return _sparse_outputs(x, delimiter, "StringSplit", "delimiter")


def _split_v1(s: bytes, delim: bytes, skip_empty: bool) -> list[bytes]:
    if not s:
        return []  # an empty string has no tokens, even with skip_empty=False (as TF)
    if not delim:
        return [s[i:i + 1] for i in range(len(s))]  # one token per byte
    if len(delim) == 1:
        parts = s.split(delim)
    else:  # every byte of the delimiter is a delimiter on its own
        parts = re.split(b"[" + b"".join(re.escape(delim[i:i + 1])
                                         for i in range(len(delim))) + b"]", s)
    return [p for p in parts if p] if skip_empty else parts


@split_op.kernel("CPU")
def _(x: Any, delimiter: Any, *, skip_empty: bool) -> tuple[np.ndarray, ...]:
    delim = scalar_bytes(delimiter, "StringSplit", "delimiter")
    return _to_sparse([_split_v1(s, delim, bool(skip_empty)) for s in _vector(x, "StringSplit")])


split_op.no_gradient()


def string_split(source: Any, sep: Any = None, skip_empty: bool = True,
                 delimiter: Any = None, result_type: str = "SparseTensor",
                 name: str | None = None) -> SparseTensor:
    """`tf.string_split` (TF 1.x): splits each string of a vector into tokens.

    Each byte of `delimiter` is a delimiter on its own ("," and ";" for ",;"); an
    empty delimiter splits into single bytes. Row i of the result holds the tokens
    of `source[i]`; dense_shape is [len(source), most tokens in a row].

    Args:
        source: a 1-D string tensor.
        sep: a scalar string (default " ").
        skip_empty: drop empty tokens (default True). An empty string gives no
            tokens either way.
        delimiter: TF's deprecated name for `sep` (give one of them).
        result_type: "SparseTensor" (tensorweave has no RaggedTensor).
        name: the op name.

    Returns:
        A SparseTensor of string tokens (indices [n, 2], values [n], shape [2]).

    Raises:
        TypeError: a non-string `source` or `delimiter` (naming it).
        ValueError: `source` not a vector, both `sep` and a different `delimiter`, or
            a `result_type` other than "SparseTensor".

    Example:
        >>> tf.string_split(tf.constant(["a b", "c"])).values   # [b"a", b"b", b"c"]
    """
    _sparse_result_only(result_type, "string_split")
    if sep is not None and delimiter is not None and not _same(sep, delimiter):
        raise ValueError("string_split: give `sep` or `delimiter` (its deprecated name), "
                         "not both")
    delimiter = sep if sep is not None else delimiter if delimiter is not None else " "
    x = string_input(source, "StringSplit", "input")
    d = string_input(delimiter, "StringSplit", "delimiter")
    op = create_op("StringSplit", [x, d], {"skip_empty": bool(skip_empty)},
                   name=name or "StringSplit")
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


# ---- StringSplitV2 (tf.strings.split) ---------------------------------------------------
split_v2_op = define_op("StringSplitV2", inputs=("input", "sep"), attrs={"maxsplit": -1})


@split_v2_op.shape
def _(x: Tensor, sep: Tensor, *, maxsplit: int) -> Any:
    return _sparse_outputs(x, sep, "StringSplitV2", "sep")


@split_v2_op.kernel("CPU")
def _(x: Any, sep: Any, *, maxsplit: int) -> tuple[np.ndarray, ...]:
    sep_b = scalar_bytes(sep, "StringSplitV2", "sep")
    # Python's str.split semantics, which TF's kernel follows: an empty sep splits on
    # runs of ASCII whitespace and drops empty tokens; a sep string keeps them.
    return _to_sparse([s.split(sep_b or None, int(maxsplit))
                       for s in _vector(x, "StringSplitV2")])


split_v2_op.no_gradient()


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, (str, bytes)) and isinstance(b, (str, bytes)) and a == b


def _sparse_result_only(result_type: str, fn: str) -> None:
    if result_type != "SparseTensor":
        raise ValueError(f"{fn}: result_type={result_type!r} is not supported: tensorweave "
                         "has no RaggedTensor; use result_type='SparseTensor'.")


def split(input: Any = None, sep: Any = None, maxsplit: int = -1,  # noqa: A002 - TF's
          result_type: str = "SparseTensor", source: Any = None,
          name: str | None = None) -> SparseTensor:
    """`tf.strings.split` as in TF 1.13: Python `str.split` on each string of a vector.

    `sep=None` (or "") splits on runs of whitespace and drops empty tokens; a `sep`
    string (of any length, matched whole) keeps empty tokens ("a,,b" -> a, "", b).
    TF 1.x's arguments (input, sep, maxsplit, result_type, source, name); tensorweave
    has no RaggedTensor, so `result_type` must be "SparseTensor" (TF 1.x's default).

    Args:
        input: a 1-D string tensor (`source`: its deprecated name).
        sep: the separator; None for whitespace.
        maxsplit: at most this many splits per string (-1: no limit).
        result_type: "SparseTensor".
        source: TF's deprecated name for `input`.
        name: the op name.

    Returns:
        A SparseTensor of string tokens, dense_shape [len(source), most tokens].

    Raises:
        TypeError: a non-string `input` or `sep`. ValueError: `input` not a vector, or
            neither/both of `input` and `source`.

    Example:
        >>> tf.strings.split(tf.constant(["a,,b"]), sep=",").values   # [b"a", b"", b"b"]
    """
    _sparse_result_only(result_type, "strings.split")
    x = string_input(one_of("strings.split", "input", input, "source", source),
                     "StringSplitV2", "input")
    s = string_input("" if sep is None else sep, "StringSplitV2", "sep")
    op = create_op("StringSplitV2", [x, s], {"maxsplit": int(maxsplit)},
                   name=name or "StringSplitV2")
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


# ---- ReduceJoin -------------------------------------------------------------------------
reduce_join_op = define_op("ReduceJoin", inputs=("inputs", "reduction_indices"),
                           attrs={"keep_dims": False, "separator": ""})


def _reduction_axes(axes: Any, ndims: int, err: Callable[[str], Exception]) -> list[int]:
    out: list[int] = []
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -ndims <= a < ndims:
            raise err(f"Invalid reduction dimension {a} for input with {ndims} dimension(s)")
        a %= ndims
        if a in out:
            raise err(f"Duplicate reduction dimension {a}")
        out.append(a)
    return out


@reduce_join_op.shape
def _(x: Tensor, axes: Tensor, *, keep_dims: bool, separator: str) -> Any:
    check_string(x, "ReduceJoin", "inputs")
    if axes.dtype.base_dtype != _dt.int32:
        raise TypeError(f"ReduceJoin: reduction_indices {axes.name} must be int32, got "
                        f"{axes.dtype.base_dtype.name}")
    known = constant_value(axes)
    if known is None or x.shape.ndims is None:
        return _dt.string, TensorShape(None)
    red = _reduction_axes(known, x.shape.ndims, ValueError)
    dims = x.shape.as_list()
    if keep_dims:
        return _dt.string, TensorShape([1 if i in red else d for i, d in enumerate(dims)])
    return _dt.string, TensorShape([d for i, d in enumerate(dims) if i not in red])


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


@reduce_join_op.kernel("CPU")
def _(x: Any, axes: Any, *, keep_dims: bool, separator: str) -> np.ndarray:
    arr = np.asarray(x, dtype=object)
    red = _reduction_axes(axes, arr.ndim, _invalid)
    kept = [d for d in range(arr.ndim) if d not in red]
    # The first listed axis varies fastest in the joined order (TF: [0, 1] -> "acbd").
    order = kept + red[::-1]
    kept_shape = [arr.shape[d] for d in kept]
    width = int(np.prod([arr.shape[d] for d in red], dtype=np.int64))
    rows = arr.transpose(order).reshape(int(np.prod(kept_shape, dtype=np.int64)), width)
    sep = as_bytes(attr_text(separator))
    out = np.asarray([sep.join(as_bytes(v) for v in row) for row in rows],
                     dtype=object).reshape(kept_shape)
    if keep_dims:
        out = out.reshape([1 if d in red else arr.shape[d] for d in range(arr.ndim)])
    return out


reduce_join_op.no_gradient()


def reduce_join(inputs: Any, axis: Any = None, keep_dims: bool = False, separator: str = "",
                name: str | None = None, reduction_indices: Any = None) -> Tensor:
    """`tf.reduce_join`: joins strings across the given dimensions.

    The first listed axis varies fastest: for [["a", "b"], ["c", "d"]], axis [0, 1]
    gives "acbd" and [1, 0] gives "abcd". `axis=None` joins all dimensions (as
    [rank-1, ..., 0]); `axis=[]` joins nothing.

    Args:
        inputs: a string tensor.
        axis: int or list of ints (int32 tensor), the dimensions to join.
        keep_dims: keep the joined dimensions with size 1.
        separator: inserted between joined strings.
        name: the op name.
        reduction_indices: the deprecated name of `axis`.

    Raises:
        TypeError: a non-string `inputs`.
        ValueError: both `axis` and `reduction_indices`, or (statically known) an
            axis out of range or repeated; at run time InvalidArgumentError.

    Example:
        >>> tf.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), 1)   # [b"ab", b"cd"]
    """
    x = string_input(inputs, "ReduceJoin", "inputs")
    if reduction_indices is not None:
        if axis is not None:
            raise ValueError("Can't specify both 'axis' and 'reduction_indices'.")
        axis = reduction_indices
    g = get_default_graph()
    if axis is None:
        if x.shape.ndims is not None:
            axis = constant(np.arange(x.shape.ndims - 1, -1, -1, dtype=np.int32))
        else:
            axis = fill_ops.range(binary_ops.subtract(shape_ops.rank(x), 1), -1, -1)
    a = axis if isinstance(axis, Tensor) or contains_tensor(axis) else np.asarray(
        axis, dtype=np.int32)
    a = convert_to_tensor(a)
    return g.create_op("ReduceJoin", [x, a], {"keep_dims": bool(keep_dims),
                                              "separator": separator},
                       name=name or "ReduceJoin").outputs[0]


def string_join(inputs: Any, separator: str = "", name: str | None = None) -> Tensor:
    """`tf.string_join` / `tf.strings.join`: joins the strings of `inputs` element-wise
    (scalars broadcast), with `separator` between them.

    Example:
        >>> tf.string_join([["a", "b"], "x"], separator="-")   # [b"a-x", b"b-x"]
    """
    tensors = [string_input(t, "StringJoin", f"inputs[{i}]") for i, t in enumerate(inputs)]
    return create_tensor("StringJoin", [tensors], {"separator": separator},
                         name=name or "StringJoin")
