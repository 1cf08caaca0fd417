"""`tf.print` (TF 1.13+): PrintV2 of a StringFormat, as TF builds it.

Unlike `tf.Print` (an identity with a side effect), `tf.print` returns the print op
itself: run it, or make other ops depend on it (`tf.control_dependencies`). Its
inputs are Python values and tensors in any nesting; tensors are shown as TF's
print-v2 summary (see `ops.strings.format_ops`), Python strings as they are.

Example:
    >>> print_op = tf.print("loss:", loss, "step:", step, output_stream=sys.stdout)
    >>> with tf.control_dependencies([print_op]):
    ...     train_op = tf.group(train_op)
"""
from __future__ import annotations

import logging
import sys
from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.strings.format_ops import format as string_format

__all__ = ["print_v2"]

_LOG_LEVELS = {"log(info)": logging.INFO, "log(warning)": logging.WARNING,
               "log(error)": logging.ERROR}

print_v2_op = define_op("PrintV2", inputs=("input",),
                        attrs={"output_stream": "stderr", "end": "\n"}, stateful=True)


@print_v2_op.shape
def _(inp: Tensor, *, output_stream: str, end: str) -> Any:
    if inp.dtype.base_dtype != _dt.string or inp.shape.ndims not in (None, 0):
        raise ValueError(f"PrintV2 prints one scalar string, got {inp.name} "
                         f"({inp.dtype.base_dtype.name}, shape {inp.shape}).")
    _check_stream(output_stream)
    return []


def _check_stream(stream: str) -> None:
    if stream not in ("stdout", "stderr") and stream not in _LOG_LEVELS \
            and not stream.startswith("file://"):
        raise ValueError(f"PrintV2: output_stream {stream!r} is not one of stdout, stderr, "
                         f"log(info), log(warning), log(error) or file://<path>.")


@print_v2_op.kernel("CPU")
def _(inp: Any, *, output_stream: str, end: str) -> None:
    value = inp.reshape(-1)[0] if hasattr(inp, "reshape") else inp
    text = (value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value))
    if output_stream in ("stdout", "stderr"):
        stream = sys.stdout if output_stream == "stdout" else sys.stderr
        stream.write(text + end)
        stream.flush()
    elif output_stream in _LOG_LEVELS:
        logging.getLogger("tensorweave").log(_LOG_LEVELS[output_stream], "%s", text)
    else:
        path = output_stream[len("file://"):]
        try:
            with open(path, "a", encoding="utf-8") as f:
                f.write(text + end)
        except OSError as e:
            raise errors.InvalidArgumentError(None, None, f"PrintV2 could not append to "
                                              f"{path!r}: {e}") from None
    return None


print_v2_op.no_gradient()


class _Slot:
    """Stands for a tensor in a printed structure: its repr is the placeholder."""

    def __init__(self, placeholder: str) -> None:
        self.placeholder = placeholder

    def __repr__(self) -> str:
        return self.placeholder


# The streams as they were at import (tf.print's default argument) and as they are
# now (a test harness or notebook may have replaced them): each names its stream.
_STDOUT, _STDERR = sys.stdout, sys.stderr


def _stream_name(stream: Any) -> str:
    if any(stream is s for s in (sys.stdout, _STDOUT, sys.__stdout__)):
        return "stdout"
    if any(stream is s for s in (sys.stderr, _STDERR, sys.__stderr__)):
        return "stderr"
    for level, name in ((logging.INFO, "log(info)"), (logging.WARNING, "log(warning)"),
                        (logging.ERROR, "log(error)")):
        if getattr(stream, "__name__", None) == logging.getLevelName(level).lower():
            return name
    if isinstance(stream, str):
        _check_stream(stream)
        return stream
    raise ValueError(f"tf.print: output_stream {stream!r} is not sys.stdout, sys.stderr, "
                     "tf.logging.info/warning/error or a 'file://<path>' string.")


def print_v2(*inputs: Any, output_stream: Any = sys.stderr, summarize: int = 3,
             sep: str = " ", end: str = "\n", name: str | None = None) -> Operation:
    """`tf.print`: an op printing `inputs` (tensors and Python values, nested in
    lists, tuples and dicts as you like) separated by `sep` and followed by `end`.

    Args:
        *inputs: what to print; tensors are formatted when the op runs.
        output_stream: sys.stderr (default), sys.stdout, tf.logging.info / warning /
            error, or a "file://<path>" string to append to.
        summarize: entries shown at each end of a long dimension (-1: all).
        sep, end: as for Python's print.
        name: the op name.

    Returns:
        The PrintV2 op.

    Example:
        >>> sess.run(tf.print("x =", x, {"norm": tf.norm(x)}, output_stream=sys.stdout))
    """
    stream = _stream_name(output_stream)
    texts = [x for x in inputs if isinstance(x, str)]
    placeholder = "{}"
    while any(placeholder in t for t in texts):  # a placeholder no given text contains
        placeholder = "{" + placeholder + "}"
    tensors: list[Any] = []

    def slot(x: Any) -> Any:
        if isinstance(x, Tensor) or hasattr(x, "_as_graph_element"):
            tensors.append(x)
            return _Slot(placeholder)
        if isinstance(x, dict):
            return {k: slot(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(slot(v) for v in x)
        return x
    parts = []
    for x in inputs:
        filled = slot(x)
        parts.append(filled if isinstance(filled, str) else
                     placeholder if isinstance(filled, _Slot) else str(filled))
    formatted = string_format(sep.join(parts), tensors, placeholder=placeholder,
                              summarize=summarize)
    return create_op("PrintV2", [formatted],
                     {"output_stream": stream, "end": end},
                     name=name or "PrintV2")
