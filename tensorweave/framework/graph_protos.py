"""Python values <-> GraphDef proto pieces: shapes, TensorProtos and AttrValues.

Shared by `graph_export` (values to protos) and `graph_import` (protos to values).

Example:
    >>> proto = tensor_proto_of(np.arange(3, dtype=np.int32))
    >>> tensor_value_of(proto)
    array([0, 1, 2], dtype=int32)
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tensor_shape import TensorShape, dimension_value


def _is_shape_key(key: str) -> bool:
    """Attrs holding one shape (`shape`, `element_shape`...), as TF names them."""
    return key == "shape" or key.endswith("_shape")


def _is_shapes_key(key: str) -> bool:
    """Attrs holding a list of shapes (`output_shapes`, `shapes`)."""
    return key == "shapes" or key.endswith("_shapes")


def _shape_proto(dims: Any, out: Any) -> None:
    if dims is None or (isinstance(dims, TensorShape) and dims.ndims is None):
        out.unknown_rank = True
        return
    dims = dims.as_list() if isinstance(dims, TensorShape) else dims
    del out.dim[:]
    for d in dims:
        d = dimension_value(d)
        out.dim.add(size=-1 if d is None else int(d))


def tensor_proto_of(value: Any, dtype: _dt.DType | None = None) -> Any:
    """A numpy value as a TensorProto: numbers in `tensor_content`, strings in `string_val`.

    Example:
        >>> tensor_proto_of(np.arange(3, dtype=np.int32)).tensor_content
        b'\\x00\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x02\\x00\\x00\\x00'
    """
    arr = np.asarray(value)
    dt = dtype.base_dtype if dtype is not None else _dt.from_numpy(arr)
    proto = graph_pb2.TensorProto(dtype=graph_pb2.DataType.ValueType(dt.as_datatype_enum))
    _shape_proto(list(arr.shape), proto.tensor_shape)
    if dt == _dt.string:
        for v in arr.reshape(-1):
            proto.string_val.append(v.encode() if isinstance(v, str) else bytes(v))
    elif dt in (_dt.resource, _dt.variant):
        raise TypeError(f"Cannot serialize a {dt.name} tensor value into a TensorProto")
    else:
        # TensorProto content is little-endian, like TF's in-memory layout on x86/ARM.
        npd = np.dtype(dt.as_numpy_dtype).newbyteorder("<")
        proto.tensor_content = np.ascontiguousarray(arr, dtype=npd).tobytes()
    return proto


def _parse_shape(proto: Any) -> list[int | None] | None:
    if proto.unknown_rank:
        return None
    return [None if d.size < 0 else int(d.size) for d in proto.dim]


_VAL_FIELDS = {
    "float32": "float_val", "float64": "double_val", "int32": "int_val", "int16": "int_val",
    "int8": "int_val", "uint8": "int_val", "uint16": "int_val", "int64": "int64_val",
    "bool": "bool_val", "uint32": "uint32_val", "uint64": "uint64_val",
    "complex64": "scomplex_val", "complex128": "dcomplex_val", "float16": "half_val",
}


def tensor_value_of(proto: Any) -> np.ndarray:
    """The numpy value of a TensorProto (tensor_content or the typed *_val fields).

    As in TF, a *_val field shorter than the shape repeats its last element.

    Raises:
        ValueError: naming the dtype and sizes when the content does not fit the shape.
    """
    dt = _dt.as_dtype(proto.dtype)
    # A TensorProto's shape is fully defined.
    shape = cast(tuple[int, ...], tuple(_parse_shape(proto.tensor_shape) or []))
    n = int(np.prod(shape)) if shape else 1
    if dt == _dt.string:
        vals = list(proto.string_val)
        out = np.empty(len(vals), dtype=object)
        out[:] = vals
        return _fill_to(out, n, shape, dt)
    npd = np.dtype(dt.as_numpy_dtype)
    if proto.tensor_content:
        arr = np.frombuffer(proto.tensor_content, dtype=npd.newbyteorder("<"))
        if arr.size != n:
            raise ValueError(f"TensorProto of dtype {dt.name} and shape {list(shape)} holds "
                             f"{arr.size} values in tensor_content; expected {n}")
        return arr.astype(npd, copy=False).reshape(shape)
    field = _VAL_FIELDS.get(dt.name)
    if field is None:
        raise ValueError(f"Cannot read a TensorProto of dtype {dt.name}")
    vals = list(getattr(proto, field))
    if dt == _dt.float16:
        arr = np.asarray(vals, dtype=np.uint16).view(np.float16)
    elif dt.is_complex:
        arr = np.asarray(vals[0::2], npd) + 1j * np.asarray(vals[1::2], npd)
        arr = arr.astype(npd)
    else:
        arr = np.asarray(vals, dtype=npd)
    return _fill_to(arr, n, shape, dt)


def _fill_to(arr: np.ndarray, n: int, shape: tuple, dt: _dt.DType) -> np.ndarray:
    if arr.size == n:
        return arr.reshape(shape)
    if arr.size == 0:
        zero = b"" if dt == _dt.string else 0
        out = np.full(n, zero, dtype=arr.dtype)
        return out.reshape(shape)
    if arr.size > n:
        raise ValueError(f"TensorProto of dtype {dt.name} and shape {list(shape)} holds "
                         f"{arr.size} values; expected at most {n}")
    out = np.empty(n, dtype=arr.dtype)
    out[:arr.size] = arr
    out[arr.size:] = arr[-1]
    return out.reshape(shape)


# The attr that carries an op's creation site (file:line) to another task: errors
# raised there name the user's line, not the thread that imported the graph. Only
# graphs sent between our own tasks have it ("_" attrs are internal, as in TF).
SITE_ATTR = "_tw_site"


def _parse_attr(attr: Any, key: str, functions: Any) -> Any:
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    if kind == "s":
        if key == "_class":
            return attr.s
        try:
            return attr.s.decode("utf-8")
        except UnicodeDecodeError:
            return attr.s
    if kind in ("i", "f", "b"):
        return getattr(attr, kind)
    if kind == "type":
        return _dt.as_dtype(attr.type)
    if kind == "shape":
        return _parse_shape(attr.shape)
    if kind == "tensor":
        return tensor_value_of(attr.tensor)
    if kind == "func":
        return functions(attr.func.name)
    if kind == "placeholder":
        return attr.placeholder
    lst = attr.list
    if key == "_class":
        return list(lst.s)
    for field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        values = getattr(lst, field)
        if not len(values):
            continue
        if field == "s":
            return [v.decode("utf-8", "surrogateescape") for v in values]
        if field == "type":
            return [_dt.as_dtype(v) for v in values]
        if field == "shape":
            return [_parse_shape(v) for v in values]
        if field == "tensor":
            return [tensor_value_of(v) for v in values]
        if field == "func":
            return [functions(v.name) for v in values]
        return list(values)
    return []
