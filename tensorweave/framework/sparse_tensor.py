"""SparseTensor: a tensor given by its non-zero entries (TF's COO layout).

`indices` is int64 [N, rank] (one row per entry), `values` is [N], `dense_shape`
is int64 [rank]. A SparseTensor is three dense graph tensors; `Session.run` feeds
and fetches it as a `SparseTensorValue` of three arrays, so nothing below the
client (executor, Send/Recv, remote workers) ever sees a sparse value.

Example:
    >>> sp = tf.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
    >>> sess.run(sp)        # SparseTensorValue(indices=..., values=..., dense_shape=...)
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.tensor import Tensor, _run_using_default_session
from tensorweave.framework.tensor_shape import TensorShape, dimension_value

SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])


class SparseTensor:
    """A sparse tensor: `values[i]` sits at `indices[i]` of a tensor of `dense_shape`.

    Args:
        indices: int64 [N, rank] coordinates of the entries.
        values: [N] values of the entries (any dtype).
        dense_shape: int64 [rank], the shape of the dense tensor it stands for.

    Raises:
        ValueError: indices not rank 2, values not rank 1, dense_shape not rank 1,
            or sizes that disagree (naming them).

    Example:
        >>> sp = tf.SparseTensor([[0, 1]], [5], [2, 3])
        >>> sp.get_shape().as_list()
        [2, 3]
    """

    @classmethod
    def from_value(cls, sparse_tensor_value: Any) -> "SparseTensor":
        """A SparseTensor of constants from a SparseTensorValue (or SparseTensor)."""
        value = sparse_tensor_value
        if isinstance(value, SparseTensor):
            return value
        return cls(value.indices, value.values, value.dense_shape)

    def __init__(self, indices: Any, values: Any, dense_shape: Any) -> None:
        self._indices = convert_to_tensor(indices, dtype=_dt.int64, name="indices")
        self._values = values if isinstance(values, Tensor) else \
            convert_to_tensor(values, name="values")
        self._dense_shape = convert_to_tensor(dense_shape, dtype=_dt.int64, name="dense_shape")
        if self._indices.dtype.base_dtype != _dt.int64:
            raise TypeError(f"SparseTensor indices must be int64, got {self._indices.dtype.name} "
                            f"({self._indices.name}); cast them with tf.to_int64.")
        ishape, vshape, sshape = self._indices.shape, self._values.shape, self._dense_shape.shape
        if ishape.ndims not in (None, 2):
            raise ValueError(f"SparseTensor indices must be a matrix [N, rank], got shape "
                             f"{ishape} ({self._indices.name}).")
        if vshape.ndims not in (None, 1):
            raise ValueError(f"SparseTensor values must be a vector [N], got shape {vshape} "
                             f"({self._values.name}).")
        if sshape.ndims not in (None, 1):
            raise ValueError(f"SparseTensor dense_shape must be a vector [rank], got shape "
                             f"{sshape} ({self._dense_shape.name}).")
        if ishape.ndims == 2 and vshape.ndims == 1 and \
                not ishape[:1].is_compatible_with(vshape):
            raise ValueError(f"SparseTensor has {ishape[0]} indices but {vshape[0]} values.")
        if ishape.ndims == 2 and sshape.ndims == 1 and \
                not ishape[1:].is_compatible_with(sshape):
            raise ValueError(f"SparseTensor indices have rank {ishape[1]} but dense_shape has "
                             f"{sshape[0]} dimensions.")
        self._shape_hint: TensorShape | None = None

    @property
    def indices(self) -> Tensor:
        """int64 [N, rank]: the coordinates of the entries."""
        return self._indices

    @property
    def values(self) -> Tensor:
        """[N]: the entries' values."""
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        """int64 [rank]: the dense tensor's shape."""
        return self._dense_shape

    @property
    def dtype(self) -> _dt.DType:
        return self._values.dtype

    @property
    def op(self) -> Any:
        return self._values.op

    @property
    def graph(self) -> Any:
        return self._indices.graph

    @property
    def name(self) -> str:
        return self._values.name

    def get_shape(self) -> TensorShape:
        """The static dense shape: known dims from a constant dense_shape or the placeholder."""
        value = constant_value(self._dense_shape)
        if value is not None:
            return TensorShape([int(d) for d in value])
        shape = TensorShape(None)
        if self._dense_shape.shape.ndims == 1 and \
                dimension_value(self._dense_shape.shape[0]) is not None:
            shape = TensorShape([None] * int(self._dense_shape.shape[0]))
        elif self._indices.shape.ndims == 2 and dimension_value(self._indices.shape[1]) is not None:
            shape = TensorShape([None] * int(self._indices.shape[1]))
        if self._shape_hint is not None:
            shape = shape.merge_with(self._shape_hint)
        return shape

    @property
    def shape(self) -> TensorShape:
        return self.get_shape()

    def eval(self, feed_dict: Any = None, session: Any = None) -> SparseTensorValue:
        """Runs this sparse tensor in `session` (default: the default session)."""
        return _run_using_default_session(self, feed_dict, self.graph, session)

    def consumers(self) -> list[Any]:
        ops = [c for t in (self._indices, self._values, self._dense_shape) for c in t.consumers()]
        return list(dict.fromkeys(ops))

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices}, values={self._values}, "
                f"dense_shape={self._dense_shape})")


def is_sparse(x: Any) -> bool:
    """True for a SparseTensor or SparseTensorValue."""
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_tensor_or_sparse_tensor(value: Any, dtype: Any = None,
                                       name: str | None = None) -> Any:
    """`tf.convert_to_tensor_or_sparse_tensor`: SparseTensor(Value)s stay sparse.

    Raises:
        RuntimeError: a SparseTensor whose dtype differs from `dtype` (as TF).

    Example:
        >>> tf.convert_to_tensor_or_sparse_tensor(tf.SparseTensorValue([[0]], [1.0], [2]))
    """
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and not _dt.as_dtype(dtype).is_compatible_with(value.dtype):
            raise RuntimeError(f"Sparse dtype: requested = {_dt.as_dtype(dtype).name}, actual = "
                               f"{value.dtype.name} ({value.values.name})")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def sparse_feed_parts(key: "SparseTensor", value: Any) -> list[tuple[Tensor, Any]]:
    """The three dense feeds a SparseTensor key with `value` expands to (as TF's client).

    Raises:
        TypeError: `value` is not a SparseTensorValue or an (indices, values, shape) triple.
    """
    if isinstance(value, SparseTensor):
        raise TypeError(f"The value of a feed cannot be a tf.SparseTensor object (feeding "
                        f"{key.name!r}); feed a tf.SparseTensorValue of arrays.")
    if not isinstance(value, (SparseTensorValue, tuple, list)) or len(value) != 3:
        raise TypeError(f"Cannot feed {type(value).__name__} {value!r:.80} to SparseTensor "
                        f"{key.name!r}: feed a tf.SparseTensorValue or a tuple "
                        "(indices, values, dense_shape).")
    indices, values, dense_shape = value
    indices = np.asarray(indices, dtype=np.int64)
    dense_shape = np.asarray(dense_shape, dtype=np.int64)
    if indices.size == 0:
        indices = indices.reshape((0, np.size(dense_shape)))
    static = key.get_shape()
    if dense_shape.ndim == 1 and not static.is_compatible_with(TensorShape(dense_shape.tolist())):
        raise ValueError(f"Cannot feed a sparse value of dense shape {dense_shape.tolist()} "
                         f"to SparseTensor {key.name!r}, which has shape {static}.")
    return [(key.indices, indices), (key.values, values), (key.dense_shape, dense_shape)]
