"""`tf.dtypes` (TF 1.x): the DType class, `as_dtype`, the dtypes and the cast functions.

The dtypes are the ones the top-level `tf` namespace has (`tf.dtypes.int64 is tf.int64`);
TF's quantized and bfloat16 types are not offered (no kernel here takes them).

Example:
    >>> tf.dtypes.as_dtype("int64") is tf.dtypes.int64
    True
"""
from tensorweave.framework.dtypes import (  # noqa: F401 - the public names
    DType, as_dtype, bool, complex64, complex128, double, float16, float32, float64, half,
    int8, int16, int32, int64, resource, string, uint8, uint16, uint32, uint64, variant)
from tensorweave.ops.math.complex_ops import complex  # noqa: F401
from tensorweave.ops.math.cwise_ops import cast  # noqa: F401

__all__ = ["DType", "as_dtype", "bool", "cast", "complex", "complex64", "complex128",
           "double", "float16", "float32", "float64", "half", "int8", "int16", "int32",
           "int64", "resource", "string", "uint8", "uint16", "uint32", "uint64", "variant"]
