"""A kernel's failure as the tf.errors exception TF would raise: its class (a
Python argument error is an InvalidArgumentError, a MemoryError a
ResourceExhaustedError, ...) and a message naming node, op, device and the line
that created it.

Example:
    >>> raise node_error(op, ValueError("bad shape"))   # InvalidArgumentError
"""
from __future__ import annotations

import re

from tensorweave.framework import errors
from tensorweave.framework.device import device_task
from tensorweave.framework.tensor import Operation

_ARG_ERRORS = (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError,
               FloatingPointError, OverflowError, AssertionError)


def node_error(op: Operation, exc: BaseException) -> errors.OpError:
    """Re-raises a kernel failure as a tf.errors class naming node, op, device, site."""
    if isinstance(exc, errors.OpError) and "[[node " in exc.message:
        return exc  # already attributed (e.g. inside a function body)
    where = (f"[[node {op.name} (op {op.type}) on device {op.device or '<local>'}, "
             f"created at {op.traceback}]]")
    if isinstance(exc, errors.OpError):
        cls: type = type(exc)
        msg = exc.message
    elif isinstance(exc, MemoryError):
        cls, msg = errors.ResourceExhaustedError, f"Out of memory: {exc}"
    elif isinstance(exc, _ARG_ERRORS):
        cls, msg = errors.InvalidArgumentError, _in_tf_terms(exc)
    else:
        cls, msg = errors.InternalError, f"{type(exc).__name__}: {exc}"
    if cls is errors.DeadlineExceededError and op.type == "_Recv":
        msg = f"{msg} {_awaited(op)}"  # a tensor that never came: say from where
    err = cls(None, exc.op if isinstance(exc, errors.OpError) and exc.op is not None else op,
              f"{msg}\n\t {where}")
    err.__cause__ = exc
    return err


def _awaited(op: Operation) -> str:
    """"It was waiting for T from TASK." for a _Recv (its Send's task, or device)."""
    device = op.get_attr("send_device")
    try:
        source = device_task(device)
    except ValueError:  # a device without a job: name it whole
        source = device
    return f"It was waiting for {op.get_attr('tensor_name')} from {source}."


# numpy's text for element-wise operands that do not broadcast, e.g. "operands could
# not be broadcast together with shapes (2,3) (4,) ".
_NUMPY_BROADCAST = re.compile(r"operands could not be broadcast together with shapes "
                              r"\(([\d,\s]*)\)\s+\(([\d,\s]*)\)\s*$")


def _in_tf_terms(exc: BaseException) -> str:
    """A kernel's Python error as TF would word it where we know TF's words (shape
    mismatches of broadcasting ops), else its own type and text."""
    text = str(exc)
    m = _NUMPY_BROADCAST.search(text)
    if m:
        dims = ["[" + ",".join(d for d in g.replace(" ", "").split(",") if d) + "]"
                for g in m.groups()]
        return f"Incompatible shapes: {dims[0]} vs. {dims[1]}"
    return f"{type(exc).__name__}: {text}"
