"""Data types: TF's DType objects, their enum numbers and NumPy mapping.

Example:
    >>> from tensorweave.framework import dtypes
    >>> dtypes.as_dtype("float32").as_numpy_dtype
    <class 'numpy.float32'>
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

_REF_OFFSET = 100


class DType:
    """A tensor element type, compatible with TensorFlow's `tf.DType`.

    Example:
        >>> tf.float32.name
        'float32'
    """

    __slots__ = ("_enum", "_name", "_np")

    def __init__(self, type_enum: int, name: str | None = None, np_type: Any = None) -> None:
        # TF's signature is DType(type_enum): the name and NumPy type follow from it.
        if name is None:
            known = _BY_ENUM.get(int(type_enum))
            if known is None:
                raise TypeError(f"Did not find type_enum {type_enum!r} among the DataType "
                                "values tensorweave knows (types_pb2.DataType).")
            name, np_type = known.name, known.as_numpy_dtype
        self._enum = type_enum
        self._name: str = name
        self._np: Any = np_type

    @property
    def name(self) -> str:
        return self._name

    @property
    def as_datatype_enum(self) -> int:
        return self._enum

    @property
    def as_numpy_dtype(self) -> Any:
        return self._np

    @property
    def is_ref_dtype(self) -> builtins.bool:
        return self._enum > _REF_OFFSET

    @property
    def base_dtype(self) -> "DType":
        return _BY_ENUM[self._enum - _REF_OFFSET] if self.is_ref_dtype else self

    @property
    def _as_ref(self) -> "DType":
        return self if self.is_ref_dtype else _BY_ENUM[self._enum + _REF_OFFSET]

    @property
    def is_floating(self) -> builtins.bool:
        return self.base_dtype._name in ("float16", "float32", "float64", "bfloat16")

    @property
    def is_integer(self) -> builtins.bool:
        return self.base_dtype._name in ("int8", "int16", "int32", "int64", "uint8", "uint16",
                                         "uint32", "uint64")

    @property
    def is_unsigned(self) -> builtins.bool:
        return self.base_dtype._name.startswith("uint")

    @property
    def is_bool(self) -> builtins.bool:
        return self.base_dtype._name == "bool"

    @property
    def is_complex(self) -> builtins.bool:
        return self.base_dtype._name.startswith("complex")

    @property
    def is_numeric(self) -> builtins.bool:
        return self.is_floating or self.is_integer or self.is_complex

    @property
    def size(self) -> int:
        if self.base_dtype._name == "string":
            return 1
        return np.dtype(self._np).itemsize

    @property
    def min(self) -> Any:
        info = np.finfo(self._np) if self.is_floating else np.iinfo(self._np)
        return info.min

    @property
    def max(self) -> Any:
        info = np.finfo(self._np) if self.is_floating else np.iinfo(self._np)
        return info.max

    def is_compatible_with(self, other: Any) -> builtins.bool:
        return self.base_dtype == as_dtype(other).base_dtype

    def __eq__(self, other: object) -> builtins.bool:
        if isinstance(other, DType):
            return self._enum == other._enum
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return False

    def __ne__(self, other: object) -> builtins.bool:
        return not self == other

    def __hash__(self) -> int:
        return self._enum

    def __repr__(self) -> str:
        return f"tf.{self._name}"

    def __reduce__(self):  # pickling by name keeps identity
        return as_dtype, (self._name,)


_SPECS = [
    (1, "float32", np.float32), (2, "float64", np.float64), (3, "int32", np.int32),
    (4, "uint8", np.uint8), (5, "int16", np.int16), (6, "int8", np.int8),
    (7, "string", np.object_), (8, "complex64", np.complex64), (9, "int64", np.int64),
    (10, "bool", np.bool_), (17, "uint16", np.uint16), (18, "complex128", np.complex128),
    (19, "float16", np.float16), (20, "resource", np.object_), (21, "variant", np.object_),
    (22, "uint32", np.uint32), (23, "uint64", np.uint64),
]
_BY_ENUM: dict[int, DType] = {}
_BY_NAME: dict[str, DType] = {}
for _enum, _name, _np_type in _SPECS:
    _d = DType(_enum, _name, _np_type)
    _r = DType(_enum + _REF_OFFSET, _name + "_ref", _np_type)
    _BY_ENUM[_enum] = _d
    _BY_ENUM[_enum + _REF_OFFSET] = _r
    _BY_NAME[_name] = _d
    _BY_NAME[_name + "_ref"] = _r

float32 = _BY_NAME["float32"]
float64 = _BY_NAME["float64"]
float16 = _BY_NAME["float16"]
half = float16
double = float64
int8 = _BY_NAME["int8"]
int16 = _BY_NAME["int16"]
int32 = _BY_NAME["int32"]
int64 = _BY_NAME["int64"]
uint8 = _BY_NAME["uint8"]
uint16 = _BY_NAME["uint16"]
uint32 = _BY_NAME["uint32"]
uint64 = _BY_NAME["uint64"]
bool = _BY_NAME["bool"]  # noqa: A001 - TF's public name
string = _BY_NAME["string"]
complex64 = _BY_NAME["complex64"]
complex128 = _BY_NAME["complex128"]
resource = _BY_NAME["resource"]
variant = _BY_NAME["variant"]

_ALIASES = {"float": float32, "double": float64, "half": float16, "int": int32, "long": int64}
_NP_TO_DTYPE = {np.dtype(d._np): d for d in (float32, float64, float16, int8, int16, int32,
                                             int64, uint8, uint16, uint32, uint64, complex64,
                                             complex128)}
_NP_TO_DTYPE[np.dtype(np.bool_)] = _BY_NAME["bool"]


def as_dtype(type_value: Any) -> DType:
    """Converts a DType, name, enum number, NumPy dtype or Python type to a DType.

    Raises:
        TypeError: if `type_value` names no known type.

    Example:
        >>> as_dtype(np.float32) == tf.float32
        True
    """
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        found = _BY_NAME.get(type_value) or _ALIASES.get(type_value)
        if found is None:
            raise TypeError(f"Cannot convert {type_value!r} to a tensorweave DType: unknown name. "
                            f"Known names: {sorted(_BY_NAME)}")
        return found
    if type(type_value) is int and type_value in _BY_ENUM:
        return _BY_ENUM[type_value]
    # Identity checks: NumPy dtypes compare equal to Python's float/int.
    if type_value is float:
        return float32
    if type_value is int:
        return int32
    if type_value is builtins.bool:
        return _BY_NAME["bool"]
    if type_value is str or type_value is bytes:
        return string
    try:
        npd = np.dtype(type_value)
    except TypeError:
        raise TypeError(f"Cannot convert {type_value!r} to a tensorweave DType.") from None
    if npd in _NP_TO_DTYPE:
        return _NP_TO_DTYPE[npd]
    if npd.kind in ("U", "S", "O"):
        return string
    raise TypeError(f"Cannot convert NumPy dtype {npd} to a tensorweave DType.")


def from_numpy(array: np.ndarray) -> DType:
    """The DType of a NumPy array (str/bytes/object arrays are `string`)."""
    dt = array.dtype
    found = _NP_TO_DTYPE.get(dt)
    if found is not None:
        return found
    if dt.kind in ("U", "S", "O"):
        return string
    raise TypeError(f"Unsupported NumPy dtype {dt} for a tensor.")
