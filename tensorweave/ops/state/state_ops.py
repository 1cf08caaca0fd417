"""State ops: VariableV2, Assign*, Scatter*, IsVariableInitialized.

A variable's storage is a `VariableResource` in its device's ResourceMgr, so
sessions sharing a device (a ps task) share the variable, and every update is a
single op that runs where the variable lives. Assign-type ops output the
variable's reference (TF1): fetching one returns the updated value.

Example:
    >>> v = tf.Variable(1.0, name="v")
    >>> with tf.Session() as sess:
    ...     sess.run(v.initializer)
    ...     sess.run(tf.assign_add(v, 2.0))
    3.0
"""
from __future__ import annotations

import contextlib
import weakref
from typing import Any, Iterator

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import get_default_graph
from tensorweave.ops.op_author import REQUIRED, create_colocated, create_tensor, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims
from tensorweave.runtime.resource_mgr import VariableResource
from tensorweave.runtime.update_gate import gated_update, note_variable


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


@contextlib.contextmanager
def _maybe_lock(res: VariableResource, use_locking: bool) -> Iterator[None]:
    # TF's default is lock-free ("hogwild") updates; use_locking serializes them.
    if use_locking:
        with res.lock:
            yield
    else:
        yield


def _check_ref(ref: Tensor, op_type: str) -> None:
    if not ref.dtype.is_ref_dtype:
        raise TypeError(f"{op_type} needs a variable reference as its first input, but "
                        f"{ref.name} has non-ref dtype {ref.dtype.name}. Pass a tf.Variable.")


# ---- VariableV2 --------------------------------------------------------------------
variable_op = define_op("VariableV2", attrs={"shape": None, "dtype": REQUIRED,
                                             "container": "", "shared_name": ""},
                        stateful=True)


@variable_op.shape
def _(*, shape: Any, dtype: _dt.DType, container: str, shared_name: str) -> Any:
    return dtype._as_ref, as_shape(shape)


@variable_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, shape: Any, dtype: _dt.DType, container: str,
      shared_name: str) -> VariableResource:
    name = shared_name or ctx.name
    res = ctx.resources.lookup_or_create(
        container, name, lambda: VariableResource(name, dtype.base_dtype, shape))
    if not isinstance(res, VariableResource):
        raise _invalid(f"Resource {container or '<default>'}/{name} exists but is a "
                       f"{type(res).__name__}, not a variable.")
    note_variable(res, ctx.resources, step, ctx.device)  # lets updates find the task's gate
    return res


variable_op.no_gradient()


def variable_op_v2(shape: Any, dtype: Any, name: str = "Variable", container: str = "",
                   shared_name: str = "") -> Tensor:
    """A raw VariableV2 op's reference output (prefer `tf.Variable`)."""
    shp = plain_dims(shape) if shape is not None else None
    return create_tensor(
        "VariableV2", [], {"shape": shp, "dtype": _dt.as_dtype(dtype).base_dtype,
           "container": container, "shared_name": shared_name},
        name=name)


# ---- Assign ------------------------------------------------------------------------
assign_op = define_op("Assign", inputs=("&ref", "value"),
                      attrs={"validate_shape": True, "use_locking": True}, stateful=True)


@assign_op.shape
def _(ref: Tensor, value: Tensor, *, validate_shape: bool, use_locking: bool) -> Any:
    _check_ref(ref, "Assign")
    if value.dtype.base_dtype != ref.dtype.base_dtype:
        raise TypeError(f"Assign requires a value of the variable's dtype: {ref.name} is "
                        f"{ref.dtype.base_dtype.name}, value {value.name} is "
                        f"{value.dtype.base_dtype.name}")
    if validate_shape:
        if not ref.shape.is_compatible_with(value.shape):
            raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible: cannot "
                             f"assign {value.name} to {ref.name} (use validate_shape=False "
                             "to change the variable's shape)")
        return ref.dtype, ref.shape.merge_with(value.shape)
    return ref.dtype, value.shape


@assign_op.kernel("CPU")
def _(ref: VariableResource, value: np.ndarray, *, validate_shape: bool,
      use_locking: bool) -> VariableResource:
    new = np.array(value, dtype=ref.dtype.as_numpy_dtype)  # a private, writable copy
    if validate_shape and ref.shape is not None:
        want = as_shape(ref.shape)
        if not want.is_compatible_with(new.shape):
            raise _invalid(f"Assign requires shapes of both tensors to match. lhs shape= "
                           f"{want} rhs shape= {list(new.shape)} (variable {ref.name})")
    with gated_update(ref), _maybe_lock(ref, use_locking):  # a save sees all or none
        ref.value = new
    return ref


assign_op.no_gradient()


def _update_op(op_type: str, fn: Any) -> Any:
    op = define_op(op_type, inputs=("&ref", "value"), attrs={"use_locking": False},
                   stateful=True)

    @op.shape
    def _(ref: Tensor, value: Tensor, *, use_locking: bool) -> Any:
        _check_ref(ref, op_type)
        if value.dtype.base_dtype != ref.dtype.base_dtype:
            raise TypeError(f"{op_type} requires a value of the variable's dtype: {ref.name} "
                            f"is {ref.dtype.base_dtype.name}, value {value.name} is "
                            f"{value.dtype.base_dtype.name}")
        if not ref.shape.is_compatible_with(value.shape):
            raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible for "
                             f"{op_type} of {value.name} to {ref.name}")
        return ref.dtype, ref.shape

    @op.kernel("CPU")
    def _(ref: VariableResource, value: np.ndarray, *, use_locking: bool) -> Any:
        with gated_update(ref), _maybe_lock(ref, use_locking):
            cur = ref.read()
            if cur.shape != np.shape(value):
                raise _invalid(f"{op_type} requires shapes of both tensors to match. lhs "
                               f"shape= {list(cur.shape)} rhs shape= {list(np.shape(value))} "
                               f"(variable {ref.name})")
            fn(cur, value, out=cur, casting="unsafe")
        return ref

    op.no_gradient()
    return op


assign_add_op = _update_op("AssignAdd", np.add)
assign_sub_op = _update_op("AssignSub", np.subtract)


# ---- IsVariableInitialized -----------------------------------------------------------
is_init_op = define_op("IsVariableInitialized", inputs=("&ref",), stateful=True)


@is_init_op.shape
def _(ref: Tensor) -> Any:
    _check_ref(ref, "IsVariableInitialized")
    return _dt.bool, TensorShape([])


@is_init_op.kernel("CPU")
def _(ref: VariableResource) -> np.ndarray:
    return np.asarray(ref.value is not None)


is_init_op.no_gradient()


# ---- InitializedValueOr: the variable's value, or `default` before initialization ----
value_or_op = define_op("InitializedValueOr", inputs=("&ref", "default"), stateful=True)


@value_or_op.shape
def _(ref: Tensor, default: Tensor) -> Any:
    _check_ref(ref, "InitializedValueOr")
    if default.dtype.base_dtype != ref.dtype.base_dtype:
        raise TypeError(f"InitializedValueOr: default {default.name} is "
                        f"{default.dtype.base_dtype.name} but {ref.name} is "
                        f"{ref.dtype.base_dtype.name}")
    return ref.dtype.base_dtype, ref.shape.merge_with(default.shape) \
        if ref.shape.is_compatible_with(default.shape) else ref.shape


@value_or_op.kernel("CPU")
def _(ref: VariableResource, default: np.ndarray) -> np.ndarray:
    # Without a lock: like a plain read, this may race with a concurrent initializer.
    value = ref.value
    return default if value is None else value.copy()


value_or_op.no_gradient()


# ---- ReportUninitialized: names whose flag is False (runs on the client's device) ----
report_op = define_op("ReportUninitialized", inputs=("flags*",), attrs={"names": REQUIRED})


@report_op.shape
def _(flags: list[Tensor], *, names: list[str]) -> Any:
    if len(flags) != len(names):
        raise ValueError(f"ReportUninitialized got {len(flags)} flags for {len(names)} names")
    return _dt.string, TensorShape([None])


@report_op.kernel("CPU")
def _(flags: list[np.ndarray], *, names: list[str]) -> np.ndarray:
    out = [n.encode() for n, f in zip(names, flags) if not bool(f)]
    arr = np.empty(len(out), dtype=object)
    arr[:] = out
    return arr


report_op.no_gradient()


# ---- Python wrappers -----------------------------------------------------------------
_LOCAL_REFS: "weakref.WeakKeyDictionary[Any, dict[int, Tensor]]" = weakref.WeakKeyDictionary()


def _ref_of(ref: Any) -> Tensor:
    t = convert_to_tensor(ref, as_ref=True)
    _check_ref(t, "state op")
    return _ref_in_body(t)


def _ref_in_body(t: Tensor) -> Tensor:
    """Inside a cond/while body, a reference to the same variable storage.

    A captured reference reaches a body only as a snapshot, so an update built
    there on the outer tensor would run once, outside the loop. Instead the body
    gets its own VariableV2 op whose shared_name is the outer variable's storage
    key: it finds the same VariableResource in the device's ResourceMgr. (The
    body must run on the variable's device, as it does in a local session.)
    """
    g = get_default_graph()
    if t.graph is g or not _encloses(t.graph, g):
        return t
    cache = _LOCAL_REFS.setdefault(g, {})
    local = cache.get(id(t.op))
    if local is None:
        op = t.op
        if op.type != "VariableV2":
            raise ValueError(f"Cannot update {t.name} (op {op.type}) inside a function body; "
                             "only variables can be updated there.")
        local = cache[id(t.op)] = g.create_op(
            "VariableV2", [], {"shape": op.get_attr("shape"), "dtype": op.get_attr("dtype"),
                               "container": op.get_attr("container"),
                               "shared_name": op.get_attr("shared_name") or op.name},
            name=op.name.replace("/", "_") + "_ref").outputs[0]
    return local


def _encloses(outer: Any, inner: Any) -> bool:
    g = getattr(inner, "outer_graph", None)
    while g is not None:
        if g is outer:
            return True
        g = getattr(g, "outer_graph", None)
    return False


def assign(ref: Any, value: Any, validate_shape: bool | None = None,
           use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """`tf.assign`: stores `value` in the variable; returns the variable's reference.

    Example:
        >>> sess.run(tf.assign(v, [1.0, 2.0]))
        array([1., 2.], dtype=float32)
    """
    r = _ref_of(ref)
    with r.graph.as_default():
        val = convert_to_tensor(value, dtype=r.dtype.base_dtype)
    return create_colocated("Assign", [r, val], {
        "validate_shape": True if validate_shape is None else bool(validate_shape),
        "use_locking": True if use_locking is None else bool(use_locking)}, name)


def _binary(op_type: str, ref: Any, value: Any, use_locking: bool | None,
            name: str | None) -> Tensor:
    r = _ref_of(ref)
    with r.graph.as_default():
        val = convert_to_tensor(value, dtype=r.dtype.base_dtype)
    return create_colocated(op_type, [r, val], {"use_locking": bool(use_locking)}, name)


def assign_add(ref: Any, value: Any, use_locking: bool | None = None,
               name: str | None = None) -> Tensor:
    """`tf.assign_add`: adds `value` to the variable in place; returns its reference.

    Example:
        >>> step = tf.assign_add(global_step, 1)
    """
    return _binary("AssignAdd", ref, value, use_locking, name)


def assign_sub(ref: Any, value: Any, use_locking: bool | None = None,
               name: str | None = None) -> Tensor:
    """`tf.assign_sub`: subtracts `value` from the variable in place.

    Example:
        >>> sess.run(tf.assign_sub(v, 1.0))
    """
    return _binary("AssignSub", ref, value, use_locking, name)


def is_variable_initialized(ref: Any, name: str | None = None) -> Tensor:
    """`tf.is_variable_initialized`: a bool scalar, computed where the variable lives.

    Example:
        >>> sess.run(tf.is_variable_initialized(v))
        False
    """
    r = _ref_of(ref)
    return create_colocated("IsVariableInitialized", [r], {}, name or "IsVariableInitialized")


__all__ = ["assign", "assign_add", "assign_sub", "is_variable_initialized", "variable_op_v2"]
