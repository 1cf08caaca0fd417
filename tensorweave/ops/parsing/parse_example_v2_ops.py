"""ParseExampleV2: the op TF 1.15+ and TF 2 graphs use for `parse_example`.

Here it serves graphs TF wrote (a SavedModel exported with TF's
`build_parsing_serving_input_receiver_fn`, an imported GraphDef); graphs built here use
ParseExample (parsing_ops.py). The keys are string vectors; ragged features (TF 2's
RaggedFeature) are not supported and are refused by name.

Example:
    >>> tf.import_graph_def(graph_def_written_by_tf)   # its ParseExampleV2 runs here
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.kernels import example_kernel as _k

parse_example_v2_op = define_op(
    "ParseExampleV2",
    inputs=("serialized", "names", "sparse_keys", "dense_keys", "ragged_keys",
            "dense_defaults*"),
    attrs={"Tdense": REQUIRED, "num_sparse": REQUIRED, "sparse_types": REQUIRED,
           "ragged_value_types": [], "ragged_split_types": [], "dense_shapes": REQUIRED})
parse_example_v2_op.no_gradient()  # strings in, parsed values out


def _dense_out(t: Any, s: Any, batch: Any) -> tuple[Any, TensorShape]:
    dims = as_shape(s).as_list()
    return t, TensorShape([batch] + dims if not dims or dims[0] is not None
                          else [batch, None] + dims[1:])


@parse_example_v2_op.shape
def _(serialized: Tensor, names: Tensor, sparse_keys: Tensor, dense_keys: Tensor,
      ragged_keys: Tensor, dense_defaults: list[Tensor], *, Tdense: list[Any],
      num_sparse: int, sparse_types: list[Any], ragged_value_types: list[Any],
      ragged_split_types: list[Any], dense_shapes: list[Any]) -> Any:
    if ragged_value_types:
        raise ValueError("ParseExampleV2: ragged features (tf.io.RaggedFeature) are not "
                         "supported by tensorweave; use VarLenFeature.")
    if serialized.shape.ndims not in (None, 1):
        raise ValueError(f"ParseExampleV2: serialized must be a vector of strings here, got "
                         f"{serialized.name} of shape {serialized.shape}.")
    batch = serialized.shape.as_list()[0] if serialized.shape.ndims == 1 else None
    out: list[Any] = [(_dt.int64, TensorShape([None, 2]))] * num_sparse
    out += [(t, TensorShape([None])) for t in sparse_types]
    out += [(_dt.int64, TensorShape([2]))] * num_sparse
    out += [_dense_out(t, s, batch) for t, s in zip(Tdense, dense_shapes)]
    return out


def _keys(value: Any) -> list[str]:
    return [k.decode() if isinstance(k, bytes) else str(k)
            for k in np.asarray(value, dtype=object).reshape(-1)]


@parse_example_v2_op.kernel("CPU")
def _(serialized: Any, names: Any, sparse_keys: Any, dense_keys: Any, ragged_keys: Any,
      dense_defaults: list[Any], *, Tdense: list[Any], num_sparse: int, sparse_types: list[Any],
      ragged_value_types: list[Any], ragged_split_types: list[Any],
      dense_shapes: list[Any]) -> Any:
    skeys, dkeys = _keys(sparse_keys), _keys(dense_keys)
    if len(skeys) != num_sparse or len(dkeys) != len(Tdense):
        raise errors.InvalidArgumentError(
            None, None, f"ParseExampleV2: {len(skeys)} sparse keys for num_sparse="
            f"{num_sparse}, {len(dkeys)} dense keys for {len(Tdense)} Tdense.")
    label = _keys(names)
    out = _k.parse_batch(serialized, label, list(zip(skeys, sparse_types)),
                         [(k, t, as_shape(s).as_list(), d)
                          for k, t, s, d in zip(dkeys, Tdense, dense_shapes, dense_defaults)])
    return out[0] if len(out) == 1 else out  # one output is returned bare
