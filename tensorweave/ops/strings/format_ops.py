"""StringFormat (`tf.strings.format`): tensors formatted into a template, as `tf.print`
shows them.

Each placeholder of the template is replaced by one input, written as TF's
print-v2 summary: numbers as TF writes them (`1` and `2.5` for floats, `1`/`0` for
bools), strings quoted, nested brackets per dimension, and only the first and last
`summarize` entries of a dimension longer than 2 * summarize, the rest as `...`.

Example:
    >>> tf.strings.format("step {}: loss {}", [step, loss])   # b'step 3: loss 0.25'
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape

__all__ = ["format", "format_value"]


def _float(v: float, short: str, full: str) -> str:
    # TF's FloatToBuffer / DoubleToBuffer: the short form when it reads back exactly.
    text = short % v
    return text if float(np.float32(text) if short == "%.6g" else text) == v else full % v


def _element(v: Any, dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "1" if v else "0"
    if dtype.kind == "f":
        if not np.isfinite(v):
            return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
        if dtype.itemsize <= 4:
            return _float(float(np.float32(v)), "%.6g", "%.9g")
        return _float(float(v), "%.15g", "%.17g")
    if dtype.kind == "c":
        part = np.dtype(np.float64)
        return f"({_element(v.real, part)},{_element(v.imag, part)})"
    if dtype.kind in "OSU":
        b = v if isinstance(v, bytes) else str(v).encode()
        return '"' + b.decode("utf-8", "backslashreplace").encode(
            "unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    return str(v)


def format_value(value: Any, summarize: int) -> str:
    """One tensor's value as TF's print-v2 summary (see the module docstring)."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return _element(arr.item() if arr.dtype.kind != "O" else arr.reshape(-1)[0], arr.dtype)

    def block(a: np.ndarray, level: int) -> str:
        n = a.shape[0]
        cut = 0 <= summarize and 2 * summarize < n
        rows: list[Any] = list(range(summarize)) + [None] + \
            list(range(n - summarize, n)) if cut else list(range(n))
        if a.ndim == 1:
            items = ["..." if i is None else _element(a[i], arr.dtype) for i in rows]
            return "[" + " ".join(items) + "]"
        # Sub-blocks one per line, a blank line more per extra dimension, indented
        # under the opening bracket (as numpy and TF lay them out).
        sep = "\n" * (a.ndim - 1) + " " * (level + 1)
        items = ["..." if i is None else block(a[i], level + 1) for i in rows]
        return "[" + sep.join(items) + "]"
    return block(arr, 0)


string_format_op = define_op("StringFormat", inputs=("inputs*",),
                             attrs={"template": "%s", "placeholder": "%s", "summarize": 3})


@string_format_op.shape
def _(inputs: list[Tensor], *, template: str, placeholder: str, summarize: int) -> Any:
    count = template.count(placeholder)
    if count != len(inputs):
        raise ValueError(f"StringFormat: the template {template!r} has {count} placeholders "
                         f"{placeholder!r} but {len(inputs)} inputs were given; give one "
                         "input per placeholder.")
    return _dt.string, TensorShape([])


@string_format_op.kernel("CPU")
def _(inputs: list[Any], *, template: str, placeholder: str, summarize: int) -> Any:
    pieces = template.split(placeholder)
    if len(pieces) != len(inputs) + 1:
        raise errors.InvalidArgumentError(
            None, None, f"num placeholders in template and num inputs must match: "
            f"{len(pieces) - 1} vs. {len(inputs)}")
    out = [pieces[0]]
    for value, piece in zip(inputs, pieces[1:]):
        out += [format_value(value, summarize), piece]
    return np.array("".join(out).encode("utf-8"), dtype=object)


string_format_op.no_gradient()


def format(template: str, inputs: Any, placeholder: str = "{}",  # noqa: A001 - TF's name
           summarize: int = 3, name: str | None = None) -> Tensor:
    """`tf.strings.format`: a scalar string, `template` with each `placeholder` replaced
    by the next input's summary (only the first and last `summarize` entries of each
    long dimension; -1 for all).

    Example:
        >>> tf.strings.format("x = {}", [tf.range(10)])   # b'x = [0 1 2 ... 7 8 9]'
    """
    if isinstance(inputs, (list, tuple)):
        tensors = [convert_to_tensor(t) for t in inputs]
    else:
        tensors = [convert_to_tensor(inputs)]
    return create_tensor(
        "StringFormat", [tensors], {"template": str(template), "placeholder": str(placeholder),
                    "summarize": int(summarize)},
        name=name or "StringFormat")
