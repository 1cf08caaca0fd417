"""Turning Python values, NumPy arrays and graph objects into Tensors.

Example:
    >>> t = tf.convert_to_tensor([1, 2, 3])
    >>> t.dtype
    tf.int32
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import Dimension, TensorShape, known_values

_CONVERTERS: list[tuple[type, Callable[..., Tensor]]] = []


_PRIORITIES: list[int] = []  # parallel to _CONVERTERS


def register_tensor_conversion_function(base_type: type,
                                        conversion_func: Callable[..., Tensor],
                                        priority: int = 100) -> None:
    """`tf.register_tensor_conversion_function`: converts `base_type` values with
    `conversion_func(value, dtype=None, name=None, as_ref=False) -> Tensor`; lower
    `priority` is tried first, ties in registration order (as TF).

    Example:
        >>> tf.register_tensor_conversion_function(MyType, lambda v, dtype=None,
        ...     name=None, as_ref=False: tf.constant(v.value, dtype, name=name))
    """
    at = sum(1 for p in _PRIORITIES if p <= priority)
    _CONVERTERS.insert(at, (base_type, conversion_func))
    _PRIORITIES.insert(at, priority)


def to_numpy(value: Any, dtype: _dt.DType | None = None) -> np.ndarray:
    """A Python/NumPy value as an ndarray with TF's default dtypes.

    Python floats become float32, ints int32 (int64 when too large), str bytes.

    Raises:
        TypeError: naming the value when it cannot be converted to `dtype`.
    """
    if dtype is not None and dtype.base_dtype == _dt.string:
        return _to_bytes_array(value)
    if isinstance(value, np.ndarray) and dtype is None:
        return _to_bytes_array(value) if value.dtype.kind in "USO" else value
    if isinstance(value, (Dimension, TensorShape)):
        value = known_values(value)
    arr = np.asarray(value)
    if arr.dtype.kind == "O" and isinstance(value, (list, tuple)):
        value = known_values(value)  # [batch, x.shape[1]]: Dimensions are their sizes
        arr = np.asarray(value)
    if arr.dtype.kind in "USO":
        if dtype is not None:
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
        return _to_bytes_array(value)
    if dtype is None:
        if arr.dtype == np.float64 and not isinstance(value, np.ndarray) and \
                not isinstance(value, np.generic):
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64 and not isinstance(value, (np.ndarray, np.generic)):
            if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
                arr = arr.astype(np.int32)
        return arr
    target = dtype.base_dtype
    if (arr.dtype.kind == "f" and (target.is_integer or target.is_bool)
            and not isinstance(value, np.ndarray)):
        if not np.all(np.equal(np.mod(arr, 1), 0)) or target.is_bool:
            raise TypeError(f"Expected {target.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
    if arr.dtype.kind == "c" and not target.is_complex:
        raise TypeError(f"Expected {target.name}, got complex value {value!r}.")
    return arr.astype(target.as_numpy_dtype, copy=False)


def _to_bytes_array(value: Any) -> np.ndarray:
    arr = np.asarray(value, dtype=object)
    flat = [v.encode() if isinstance(v, str) else bytes(v) if isinstance(v, (bytes, np.bytes_))
            else v for v in arr.reshape(-1)]
    for v in flat:
        if not isinstance(v, bytes):
            raise TypeError(f"Expected string, got {v!r} of type '{type(v).__name__}'.")
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(arr.shape)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const",
             verify_shape: bool = False) -> Tensor:
    """`tf.constant`: a Const op holding `value` (broadcast to `shape` if given).

    Example:
        >>> tf.constant(0.0, shape=[2, 2]).shape.as_list()
        [2, 2]
    """
    dt = _dt.as_dtype(dtype) if dtype is not None else None
    arr = to_numpy(value, dt)
    if shape is not None:
        shape = tuple(int(d) for d in (shape if hasattr(shape, "__iter__") else [shape]))
        if arr.shape != shape:
            if verify_shape:
                raise TypeError(f"Expected Tensor's shape: {shape}, got {arr.shape}.")
            if arr.size == 1:
                arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
            elif arr.size == int(np.prod(shape)):
                arr = arr.reshape(shape)
            else:
                raise TypeError(f"Cannot make a constant of shape {shape} from a value with "
                                f"{arr.size} elements: {value!r}")
    dtype_out = _dt.from_numpy(arr) if dt is None else dt
    g = get_default_graph()
    return g.create_op("Const", [], {"value": arr, "dtype": dtype_out}, name=name).outputs[0]


def convert_to_tensor(value: Any, dtype: Any = None, name: str | None = None,
                      preferred_dtype: Any = None, dtype_hint: Any = None,
                      as_ref: bool = False) -> Tensor:
    """`tf.convert_to_tensor`: Tensors pass through (dtype-checked), others become Const.

    TF 1.x's argument order (value, dtype, name, preferred_dtype, dtype_hint);
    `dtype_hint` is `preferred_dtype`'s newer name.

    Raises:
        ValueError: a Tensor whose dtype differs from `dtype`, naming both.
        TypeError: a value that cannot be a tensor.
    """
    if dtype_hint is not None:
        preferred_dtype = dtype_hint if preferred_dtype is None else preferred_dtype
    dt = _dt.as_dtype(dtype) if dtype is not None else None
    if isinstance(value, (TensorShape, Dimension)):
        value = known_values(value)  # TF's ValueError for an unknown size, as it is
    if isinstance(value, Tensor):
        if dt is not None and not _dtype_ok(value.dtype, dt, as_ref):
            raise ValueError(f"Tensor conversion requested dtype {dt.name} for Tensor "
                             f"{value.name} with dtype {value.dtype.name}")
        if not as_ref and value.dtype.is_ref_dtype:
            return _deref(value)
        return value
    for base, fn in _CONVERTERS:
        if isinstance(value, base):
            out = fn(value, dtype=dt, name=name, as_ref=as_ref)
            if dt is not None and not _dtype_ok(out.dtype, dt, as_ref):
                raise ValueError(f"Tensor conversion requested dtype {dt.name} for "
                                 f"{value!r} with dtype {out.dtype.name}")
            return out
    if hasattr(value, "_as_graph_element"):
        elem = value._as_graph_element()
        if isinstance(elem, Tensor):
            return convert_to_tensor(elem, dtype, name, preferred_dtype, as_ref=as_ref)
    if isinstance(value, (list, tuple)):  # a list is never a reference: as_ref is moot
        inferred = _packed_dtype(value)
        if inferred is not None:  # a (nested) list holding tensors: TF packs it
            if dt is None and preferred_dtype is not None:
                try:
                    return _autopack(value, _dt.as_dtype(preferred_dtype).base_dtype, inferred,
                                     name)
                except (TypeError, ValueError):
                    pass
            return _autopack(value, dt.base_dtype if dt is not None else inferred, inferred,
                             name)
    if dt is None and preferred_dtype is not None:
        try:
            return constant(value, preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    if callable(value) or value is None:
        raise TypeError(f"Failed to convert object of type {type(value).__name__} to Tensor: "
                        f"{value!r}. Pass a Tensor, NumPy array or Python number/list.")
    try:
        return constant(value, dt, name=name or "Const")
    except ValueError as e:
        raise TypeError(f"Failed to convert {value!r} to a Tensor: {e}") from None


def _is_tensor_like(value: Any) -> bool:
    """A Tensor, or a graph object with a registered conversion (a Variable, ...)."""
    return isinstance(value, Tensor) or (
        not isinstance(value, (list, tuple))
        and any(isinstance(value, base) for base, _ in _CONVERTERS))


# Leaves that are never tensors: skipped cheaply when a long list of numbers is scanned.
_PLAIN_LEAVES = (int, float, complex, str, bytes, np.generic, np.ndarray)


def _packed_dtype(values: list[Any] | tuple[Any, ...]) -> _dt.DType | None:
    """The base dtype of the first tensor-like in nested `values` (None: no tensor)."""
    for v in values:
        if isinstance(v, _PLAIN_LEAVES):
            continue
        if _is_tensor_like(v):
            return _dt.as_dtype(v.dtype).base_dtype
        if isinstance(v, (list, tuple)):
            found = _packed_dtype(v)
            if found is not None:
                return found
    return None


def contains_tensor(value: Any) -> bool:
    """Whether `value` is a (nested) list or tuple holding a tensor or variable, which
    `convert_to_tensor` packs (TF's auto-packing) rather than making a constant.

    Example:
        >>> contains_tensor([[0, tf.constant(1)], [0, 0]]), contains_tensor([1, 2])
        (True, False)
    """
    return isinstance(value, (list, tuple)) and _packed_dtype(value) is not None


def _autopack(values: list[Any] | tuple[Any, ...], dtype: _dt.DType, inferred: _dt.DType,
              name: str | None) -> Tensor:
    """TF's auto-packing: a (nested) list mixing tensors, variables and Python values
    becomes `Pack` ops (one per nesting level holding a tensor), as `tf.stack` would.

    The dtype is the requested one, else the first tensor's; when a dtype other than
    the list's own is requested, its tensors are cast to it (TF's rule). Python values
    become Consts of that dtype.

    Raises:
        TypeError: a tensor of another dtype in the list (TF's "Cannot convert a list
            containing a tensor of dtype ..."), naming the tensor and its position.
    """
    graph = get_default_graph()

    def pack(items: list[Any] | tuple[Any, ...], scope_name: str,
             where: str) -> Tensor | list[Any]:
        must_pack = False
        elems: list[Any] = []  # Tensors, sub-lists holding no tensor, plain values
        with graph.name_scope(scope_name) as scope:
            for i, item in enumerate(items):
                if _is_tensor_like(item):
                    t = convert_to_tensor(item)
                    if dtype != inferred and t.dtype.base_dtype != dtype:
                        t = graph.create_op("Cast", [t], {"SrcT": t.dtype.base_dtype,
                                                          "DstT": dtype}).outputs[0]
                    if t.dtype.base_dtype != dtype:
                        raise TypeError(
                            f"Cannot convert a list containing a tensor of dtype "
                            f"{t.dtype.base_dtype.name} to {dtype.name} (Tensor is: {t!r}): "
                            f"it is element {where}[{i}] of the list, whose first tensor "
                            f"has dtype {inferred.name}; tf.cast the elements to one dtype.")
                    elems.append(t)
                    must_pack = True
                elif isinstance(item, (list, tuple)):
                    sub = pack(item, str(i), f"{where}[{i}]")
                    must_pack = must_pack or isinstance(sub, Tensor)
                    elems.append(sub)
                else:
                    elems.append(item)
            if not must_pack:
                return elems
            parts: list[Tensor] = []
            for i, e in enumerate(elems):
                if isinstance(e, Tensor):
                    parts.append(e)
                    continue
                try:
                    parts.append(constant(e, dtype, name=str(i)))
                except (TypeError, ValueError) as err:
                    raise type(err)(f"{err} (element {where}[{i}] of a list packed with "
                                    f"tensors into {dtype.name})") from None
            return graph.create_op("Pack", [parts], {"axis": 0}, name=scope).outputs[0]

    out = pack(values, name or "packed", "")
    assert isinstance(out, Tensor)  # `values` holds a tensor (the caller checked)
    return out


def _dtype_ok(actual: _dt.DType, wanted: _dt.DType, as_ref: bool) -> bool:
    return actual.base_dtype == wanted.base_dtype


def _deref(ref: Tensor) -> Tensor:
    # A reference output read as a value: an Identity snapshot (TF inserts the same).
    return ref.graph.create_op("Identity", [ref], name="Identity").outputs[0]


def convert_n_to_tensor(values: Any, dtype: Any = None, name: str | None = None) -> list[Tensor]:
    return [convert_to_tensor(v, dtype) for v in values]


def constant_value(tensor: Any) -> np.ndarray | None:
    """The value of `tensor` if it is known at graph-build time, else None."""
    if not isinstance(tensor, Tensor):
        if contains_tensor(tensor):  # packed at run time: not known here
            return None
        try:
            return np.asarray(tensor)
        except Exception:  # noqa: BLE001 - anything unconvertible is simply "unknown"
            return None
    op = tensor.op
    folder = _FOLDERS.get(op.type)
    return folder(op, tensor.value_index) if folder else None


_FOLDERS: dict[str, Callable[[Any, int], np.ndarray | None]] = {}


def register_constant_folder(op_type: str, fn: Callable[[Any, int], np.ndarray | None]) -> None:
    """Teaches `constant_value` to see through `op_type` (Shape, Pack, Cast...)."""
    _FOLDERS[op_type] = fn
