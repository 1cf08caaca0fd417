"""Calling arbitrary Python from a graph: the PyFunc / PyFuncStateless ops,
`tf.py_func` and `tf.numpy_function`.

The op carries only a string `token`; the Python callable lives in a
process-wide registry under that token, kept alive by the graph that built the
op. The kernel looks the token up, calls `func(*numpy_inputs)` and converts
what it returns to the declared `Tout` dtypes. A graph shipped to another
process (a remote ps or worker, a GraphDef saved and reloaded elsewhere) keeps
the token but not the callable, so such an op runs only in the building process
(in-process servers included) and fails elsewhere with an error saying so.

Example:
    >>> x = tf.constant([1.0, 2.0])
    >>> y = tf.py_func(lambda a: np.sinh(a), [x], tf.float32)
    >>> y.set_shape(x.shape)   # py_func outputs have unknown shapes
    >>> sess.run(y)
    array([1.1752012, 3.6268604], dtype=float32)
"""
from __future__ import annotations

import itertools
import os
import socket
import threading
import traceback
import uuid
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor, to_numpy
from tensorweave.framework.graph import Graph, get_default_graph
from tensorweave.ops.op_author import CONTEXT, REQUIRED, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.runtime.node_errors import node_error


# ==== The registry ===================================================================
class _Callback:
    """A registered Python function, weak-referenceable (the registry holds it weakly;
    bound methods and some builtins are not)."""

    __slots__ = ("func", "__weakref__")

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func


_CALLBACKS: "weakref.WeakValueDictionary[str, _Callback]" = weakref.WeakValueDictionary()
_LOCK = threading.Lock()
_COUNTER = itertools.count()
# A per-process nonce tells this process's tokens from another's even where a pid is
# reused (containers restarting a server under the same pid).
_NONCE = uuid.uuid4().hex[:8]
# The graph attribute holding the graph's callbacks (TF's name).
_KEEP_ATTR = "_py_funcs_used_in_graph"


def _this_process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"  # pid read now: fork changes it


def _root_graph(graph: Graph) -> Graph:
    # Bodies (tf.data map functions, while_loop / cond branches) may be traced again or
    # copied into other bodies; the outermost graph outlives them all.
    outer = getattr(graph, "outer_graph", None)
    while outer is not None:
        graph, outer = outer, getattr(outer, "outer_graph", None)
    return graph


def _register(func: Callable[..., Any], graph: Graph) -> str:
    """Registers `func` for the life of `graph`'s outermost graph; returns its token.

    The strong reference lives in an attribute of the graph, not in a module-level
    WeakKeyDictionary as iterator_ops does for datasets: a callback closing over a
    tensor of its graph (TF issue 18292) references the graph, and a WeakKeyDictionary
    value referencing its own key keeps the key alive forever. As a graph attribute
    the cycle is ordinary garbage that the collector frees with the graph.
    """
    cb = _Callback(func)
    token = f"pyfunc_{next(_COUNTER)}@{_this_process()}:{_NONCE}"
    root = _root_graph(graph)
    with _LOCK:
        _CALLBACKS[token] = cb
        keep = root.__dict__.setdefault(_KEEP_ATTR, [])
        keep.append(cb)
    return token


def _token_origin(token: str) -> tuple[str, str] | None:
    """(host:pid, nonce) of the process that registered `token`; None for a token not
    of ours (e.g. TensorFlow's own "pyfunc_0" from a GraphDef TF wrote)."""
    _, at, where = token.partition("@")
    if not at or where.count(":") < 2:
        return None
    proc, _, nonce = where.rpartition(":")
    return proc, nonce


def _lookup(ctx: Any, token: str) -> _Callback:
    cb = _CALLBACKS.get(token)
    if cb is not None:
        return cb
    origin = _token_origin(token)
    here = _this_process()
    head = (f"{ctx.type} op {ctx.name!r}: the Python function of py_func token {token!r} "
            f"(TensorFlow's 'callback {token} is not found') is not registered in this "
            f"process ({here}, device {ctx.device or '<local>'}).")
    if origin is not None and origin[1] == _NONCE:
        raise errors.InvalidArgumentError(
            None, None, f"{head} This process built it, but the graph that called "
            "tf.py_func was garbage-collected, which released the function. Keep that "
            "graph alive while running ops imported from it, or call tf.py_func again "
            "in the graph you run.")
    built_by = f"the Python process {origin[0]}" if origin is not None else \
        "another Python process (this token is not in tensorweave's format: perhaps a " \
        "GraphDef written by TensorFlow)"
    raise errors.InvalidArgumentError(
        None, None, f"{head} It was registered by {built_by}. A py_func runs only in the "
        "process whose Python code built its graph: a graph sent to a remote ps or "
        "worker, or a GraphDef/MetaGraph loaded elsewhere, keeps the op but not the "
        "function. Place the op on a device of the building process: its local CPU, or "
        "the task of the client's in-process server, e.g. "
        "`with tf.device(\"/job:worker/task:N\"): tf.py_func(...)` where task N is the "
        "tf.train.Server started in this script.")


# ==== Converting values in and out ===================================================
def _describe(func: Callable[..., Any]) -> str:
    """`func` as the error names it: its qualified name and where it was defined."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    code = getattr(func, "__code__", None)
    if code is not None:
        return f"{name} (defined at {code.co_filename}:{code.co_firstlineno})"
    return name


def _input_value(value: Any, dtype: _dt.DType) -> Any:
    # A copy: the function may modify its arguments in place (`x[x < 0] = 0`, common in
    # TF1 code), and the runtime hands kernels the very buffers of constants, variables'
    # snapshots and other ops' outputs.
    arr = np.array(value, dtype=object if dtype == _dt.string else dtype.as_numpy_dtype)
    # As TF (PyArray_Return): a scalar arrives as a NumPy scalar, a string scalar as
    # bytes, so TF1 code like `filename.decode()` in a dataset map works.
    return arr[()] if arr.ndim == 0 else arr


class _ConversionError(Exception):
    """A result that cannot become its declared output (InvalidArgumentError)."""


def _output_array(value: Any, dtype: _dt.DType, index: int, fresh: set[int]) -> np.ndarray:
    """Converts the function's `index`-th result to an ndarray of `dtype`.

    Raises:
        _ConversionError: naming the value's type and the dtype it cannot become.
    """
    if dtype == _dt.string:
        try:
            return to_numpy(value, _dt.string)  # str encodes as UTF-8; bytes as is
        except (TypeError, ValueError) as e:
            raise _ConversionError(f"result {index} cannot be a string tensor: {e}") from e
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged nested lists
        raise _ConversionError(f"result {index} ({_type_name(value)}) is not an array of "
                               f"{dtype.name}: {e}") from e
    if arr.dtype.kind not in "biufc":
        raise _ConversionError(
            f"result {index} is {_type_name(value)} of numpy dtype {arr.dtype}, which "
            f"cannot become {dtype.name}.")
    target = np.dtype(dtype.as_numpy_dtype)
    if arr.dtype != target:
        # Python floats are float64 and ints int64: narrowing within a kind is what a
        # user declaring Tout=tf.float32 means; changing kind (float -> int, complex ->
        # float, int -> bool) would silently lose information, so it is an error.
        # Signed and unsigned integers are one kind here: the range check below
        # guards the conversion (a Python int for a tf.uint8 pixel is common).
        if not (np.can_cast(arr.dtype, target, "same_kind")
                or arr.dtype.kind in "iu" and target.kind in "iu"):
            raise _ConversionError(
                f"result {index} has dtype {arr.dtype.name}, which does not convert to "
                f"{dtype.name} without changing its kind (would lose information); return "
                f"{dtype.name} values (e.g. np.asarray(v, np.{target.name})) or declare "
                f"Tout accordingly.")
        if target.kind in "iu" and arr.dtype.kind in "iu" and arr.size:
            info = np.iinfo(target)
            lo, hi = arr.min(), arr.max()
            if lo < info.min or hi > info.max:
                raise _ConversionError(
                    f"result {index} holds values in [{lo}, {hi}], out of the range of "
                    f"{dtype.name} [{info.min}, {info.max}].")
        return arr.astype(target, order="C")
    if arr is value and id(value) not in fresh or not arr.flags.c_contiguous:
        # An array the function keeps (state it returns and later mutates) must not be
        # shared with the step's other ops and the fetched result.
        return np.array(arr, order="C")
    return arr


def _type_name(value: Any) -> str:
    return f"a {type(value).__name__}"


def _results(result: Any) -> list[Any]:
    """The function's return value as a list of per-output values.

    As in TF, a list or tuple holds one value per output (return np.array([...]) for
    one vector output), whether Tout was given as one dtype or a list; None means no
    outputs.
    """
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return list(result)
    return [result]


_ERROR_CLASSES: tuple[tuple[type[BaseException], type[errors.OpError]], ...] = (
    # TF's mapping of a py_func's Python exception (python/lib/core/py_func.cc).
    (ValueError, errors.InvalidArgumentError),
    (TypeError, errors.InvalidArgumentError),
    (StopIteration, errors.OutOfRangeError),  # a generator-backed input is exhausted
    (MemoryError, errors.ResourceExhaustedError),
    (NotImplementedError, errors.UnimplementedError),
)


def _error_class(exc: BaseException) -> type[errors.OpError]:
    if isinstance(exc, errors.OpError):
        return type(exc)  # a tf error raised on purpose keeps its class
    for py_cls, tf_cls in _ERROR_CLASSES:
        if isinstance(exc, py_cls):
            return tf_cls
    return errors.UnknownError


def _fail(ctx: Any, cls: type[errors.OpError], message: str,
          cause: BaseException | None) -> errors.OpError:
    # Attributed here (node, device, creation site), so the executor passes it on as is
    # and the original Python exception stays the __cause__.
    err = node_error(ctx.op, cls(None, None, message))
    err.__cause__ = cause
    return err


def _call(ctx: Any, token: str, inputs: list[Any], Tin: list[Any], Tout: list[Any]) -> Any:
    cb = _lookup(ctx, token)
    tin = [_dt.as_dtype(t).base_dtype for t in Tin]
    tout = [_dt.as_dtype(t).base_dtype for t in Tout]
    args = [_input_value(v, d) for v, d in zip(inputs, tin)]
    where = f"{ctx.type} op {ctx.name!r} calling {_describe(cb.func)}"
    try:
        result = cb.func(*args)
    except Exception as e:  # noqa: BLE001 - every failure of user code becomes a tf error
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next
                                                if e.__traceback__ else None))
        text = e.message if isinstance(e, errors.OpError) else str(e)
        raise _fail(ctx, _error_class(e), f"{where} raised {type(e).__name__}: {text}\n"
                    f"{tb.rstrip()}", e) from e
    values = _results(result)
    if len(values) != len(tout):
        hint = (" (a list or tuple holds one value per output: return np.array([...]) "
                "for a single vector output)" if isinstance(result, (list, tuple)) else "")
        raise _fail(ctx, errors.InvalidArgumentError,
                    f"{where}: the function returned {len(values)} value(s) but Tout "
                    f"declares {len(tout)} ({[d.name for d in tout]}){hint}.", None)
    fresh = {id(a) for a in args}
    outs: list[np.ndarray] = []
    for i, (v, d) in enumerate(zip(values, tout)):
        try:
            outs.append(_output_array(v, d, i, fresh))
        except _ConversionError as e:
            # The cause is numpy's own error where there is one; the _ConversionError
            # is ours and its text is already in the message.
            raise _fail(ctx, errors.InvalidArgumentError, f"{where}: {e}",
                        e.__cause__) from e.__cause__
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


# ==== The ops ========================================================================
def _define(name: str, stateful: bool) -> None:
    op = define_op(name, inputs=("input*",), attrs={"token": REQUIRED, "Tin": [], "Tout": []},
                   stateful=stateful)

    @op.shape
    def _(inputs: list[Tensor], *, token: str, Tin: list[Any], Tout: list[Any]) -> Any:
        # What the function returns is known only when it runs (as in TF): users call
        # set_shape on the outputs.
        return [(_dt.as_dtype(t).base_dtype, TensorShape(None)) for t in Tout]

    @op.kernel("CPU", kind=CONTEXT)
    def _(ctx: Any, step: Any, inputs: list[Any], *, token: str, Tin: list[Any],
          Tout: list[Any]) -> Any:
        return _call(ctx, token, inputs, Tin, Tout)

    op.no_gradient()  # TF registers none: gradients stop at a py_func


_define("PyFunc", stateful=True)
_define("PyFuncStateless", stateful=False)


# ==== Python API =====================================================================
def py_func(func: Callable[..., Any], inp: Sequence[Any] | Tensor, Tout: Any,
            stateful: bool = True, name: str | None = None
            ) -> Tensor | list[Tensor] | Operation:
    """`tf.py_func`: an op that calls the Python function `func` on NumPy arrays.

    Each run calls `func(*arrays)` with the values of `inp` as NumPy arrays (copies: the
    function may modify them; strings as object arrays of bytes) and converts what it
    returns to `Tout`: NumPy arrays, Python scalars or nested lists, bytes or str for
    tf.string. A list or tuple holds one value per output; None means no outputs.
    Values convert within their kind (a Python float to tf.float32); a float where an
    integer is declared is an error.

    The op runs only in the Python process that built the graph (local devices and
    in-process servers), has unknown output shapes (use `set_shape`) and no gradient.

    Args:
        func: the Python callable.
        inp: the input tensors (or values convertible to tensors).
        Tout: one dtype (the op returns one tensor), a list or tuple of dtypes (a list
            of tensors), or [] (the op itself, run for its side effects).
        stateful: True (default) if `func` has side effects or depends on state: the op
            is never deduplicated or folded. False makes a PyFuncStateless op.
        name: the op's name.

    Returns:
        A Tensor for a single dtype, a list of Tensors for a list, or the Operation
        when Tout is empty.

    Raises:
        TypeError: if `func` is not callable.

    Running the op raises a tf.errors error naming the op and `func` (with `func`'s
    traceback in the message and its exception as `__cause__`) if `func` raises
    (ValueError and TypeError: InvalidArgumentError; StopIteration: OutOfRangeError;
    MemoryError: ResourceExhaustedError; NotImplementedError: UnimplementedError; a
    tf.errors error keeps its class; others: UnknownError), returns a wrong number of
    values or a value that does not convert (InvalidArgumentError).

    Example:
        >>> def parse(line):
        ...     return np.array([int(v) for v in line.split(b",")], np.int64)
        >>> ds = tf.data.Dataset.from_tensor_slices([b"1,2", b"3,4"])
        >>> ds = ds.map(lambda s: tf.py_func(parse, [s], tf.int64))
    """
    if not callable(func):
        raise TypeError(f"py_func expects a callable, got {func!r} of type "
                        f"{type(func).__name__}.")
    single = not isinstance(Tout, (list, tuple))
    tout = [_dt.as_dtype(t).base_dtype for t in ([Tout] if single else Tout)]
    inputs = [convert_to_tensor(x) for x in ([inp] if isinstance(inp, Tensor) else inp)]
    g = get_default_graph()
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    attrs = {"token": _register(func, g),
             "Tin": [t.dtype.base_dtype for t in inputs], "Tout": tout}
    op = g.create_op(op_type, [inputs], attrs, name=name or op_type)
    if not tout:
        return op
    return op.outputs[0] if single else list(op.outputs)


def numpy_function(func: Callable[..., Any], inp: Sequence[Any] | Tensor, Tout: Any,
                   name: str | None = None) -> Tensor | list[Tensor] | Operation:
    """`tf.numpy_function` (TF 1.14): `py_func(func, inp, Tout, stateful=True, name)`.

    Example:
        >>> y = tf.numpy_function(np.sort, [x], tf.float32)
    """
    return py_func(func, inp, Tout, stateful=True, name=name)
