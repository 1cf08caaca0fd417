"""An op's outputs as TF's generated op wrappers return them.

TF's Python wrapper of an op with several outputs returns a namedtuple named after
the op, with the op's output names as fields: `tf.nn.top_k(x, 2)` is
`TopKV2(values=..., indices=...)`, `tf.unique(x)` is `Unique(y=..., idx=...)`. TF1
programs read the fields (`tf.nn.top_k(x).indices`), so every public function of ours
that returns a multi-output op's outputs returns them through `op_result`. The field
names come from TF's op interfaces (`tf_op_signatures`), so they are TF's by
construction.
"""
from __future__ import annotations

import collections
from typing import Any

from tensorweave.framework.tensor import Operation
from tensorweave.framework.tf_op_signatures import SIGNATURES

_TYPES: dict[str, type] = {}


def output_tuple_type(op_type: str) -> type:
    """The namedtuple class TF returns for `op_type`'s outputs (one per op type).

    Raises:
        KeyError: `op_type` is not a TensorFlow op with several outputs.

    Example:
        >>> output_tuple_type("TopKV2")._fields   # ('values', 'indices')
    """
    cls = _TYPES.get(op_type)
    if cls is None:
        outputs = SIGNATURES[op_type][1] if op_type in SIGNATURES else ()
        if len(outputs) < 2:
            raise KeyError(f"{op_type!r} is not a TensorFlow op with several outputs; only "
                           "those return a namedtuple of their outputs.")
        cls = _TYPES[op_type] = collections.namedtuple(op_type, [o[0] for o in outputs])
    return cls


def op_result(op: Operation) -> Any:
    """`op`'s outputs as TF's wrapper returns them: `OpType(field=tensor, ...)`.

    Example:
        >>> values, indices = op_result(top_k_op)   # also .values / .indices
    """
    return output_tuple_type(op.type)(*op.outputs)
